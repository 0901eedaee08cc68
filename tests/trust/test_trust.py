"""Trust, piece by piece: the user's own file, the record, `cocoplus trust` and its options, and the key table."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from cocoplus import config
from cocoplus.core import keys, keytypes, userfiles
from tests.conftest import assert_no_traceback
from tests.support.trusting import trust_project
from tests.support.typed import present
from tests.trust.conftest import Clone

MARKER_SCRIPT = """\
#!/bin/sh
echo ran >> "{marker}"
echo '{{"tasks": [], "steps": [], "discoveries": []}}'
"""


def user_config(text: str) -> Path:
    """Write the user's own config.toml (in the test's private home, as its password database names it)."""
    path = Path(userfiles.config_file())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_program(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A ctx stand-in outside the repo that leaves `marker` when it runs: (script, marker)."""
    marker = tmp_path / f"{name}.ran"
    script = tmp_path / name
    script.write_text(MARKER_SCRIPT.format(marker=marker))
    script.chmod(0o755)
    return script, marker


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "cocoplus trust" in line]


@pytest.mark.slow
def test_the_user_file_needs_no_trust_and_the_project_file_wins_for_other_keys(clone: Clone, tmp_path: Path) -> None:
    script, marker = user_program(tmp_path, "my-ctx")
    user = user_config(f'[session]\nmax_iterations = 7\nbudget_limit = 3.5\n[ctx]\ncommand = "{script}"\n')
    r = clone.cli("session", "status")
    assert r.code == 0, r.err
    # The repo's tools/cortex is ignored; the user's own ctx command applies in its place.
    assert marker.exists(), "the user's own [ctx] command did not run"
    assert not clone.ctx_ran(), "the untrusted repo's tools/cortex ran"
    assert len(notes(r.err)) == 1, r.err

    r = clone.cli("config", "show", "--json")
    doc = json.loads(r.out)
    vals = doc["values"]
    assert doc["files"] == [str(user), str(clone.config)]
    assert vals["session.max_iterations"] == {**vals["session.max_iterations"], "value": 42, "file": str(clone.config)}
    assert vals["session.budget_limit"] == {
        **vals["session.budget_limit"],
        "value": 3.5,
        "origin": "file",
        "file": str(user),
    }
    assert vals["ctx.command"]["value"] == str(script) and vals["ctx.command"]["file"] == str(user)
    assert vals["ctx.command"]["ignored"]["value"] == "tools/cortex"
    assert doc["trust"]["trusted"] is False and doc["trust"]["reason"] == "is not trusted"

    r = clone.cli("config", "show")
    lines = {
        line.split("=")[0].strip(): line for line in r.out.splitlines() if "=" in line and not line.startswith("#")
    }
    assert lines["budget_limit"].endswith(f"# {userfiles.shown(str(user))}") and "# ~/" in lines["budget_limit"], r.out
    assert lines["max_iterations"].endswith("# cocoplus.toml"), r.out
    assert 'IGNORED cocoplus.toml: [ctx] command = "tools/cortex"' in lines["command"], r.out
    assert "[accounts.x] is not used" in r.out

    # Trusted, the project's file wins for the command too.
    marker.unlink()
    assert clone.cli("trust", "--yes").code == 0
    r = clone.cli("session", "status")
    assert clone.ctx_ran() and not marker.exists(), r.err
    vals = json.loads(clone.cli("config", "show", "--json").out)["values"]
    assert vals["ctx.command"]["value"] == "tools/cortex" and vals["ctx.command"]["file"] == str(clone.config)


@pytest.mark.slow
def test_the_environment_needs_no_trust(clone: Clone, tmp_path: Path) -> None:
    script, marker = user_program(tmp_path, "env-ctx")
    r = clone.cli("session", "progress", env={"COCOPLUS_CTX_COMMAND": str(script)})
    assert r.code == 0, r.err
    assert marker.exists() and not clone.ctx_ran()


@pytest.mark.slow
def test_the_record_is_kept_in_the_user_config_dir_by_path_and_hash(clone: Clone) -> None:
    before = sorted(p.relative_to(clone.root) for p in clone.root.rglob("*") if ".git" not in p.parts)
    r = clone.cli("trust", "--yes", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["state"] == "trusted" and out["recorded"] is True
    record = Path(userfiles.trust_file())
    assert record.parent == Path(userfiles.home()) / ".config" / "cocoplus"  # the password database's home
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    doc = json.loads(record.read_text())
    entry = doc["projects"][os.path.realpath(clone.root)]
    assert entry["sha256"] == hashlib.sha256(clone.config.read_bytes()).hexdigest() == out["sha256"]
    assert entry["keys"] == ["[ctx] command", "[accounts.x] command"]
    # Nothing about trust is written inside the repository (only the hooks' copy of the configuration changes).
    after = sorted(p.relative_to(clone.root) for p in clone.root.rglob("*") if ".git" not in p.parts)
    assert [p for p in after if p not in before] == []
    assert not any("trusted" in p.name for p in after)


@pytest.mark.slow
def test_trust_show_changes_nothing_and_trust_without_a_terminal_needs_yes(clone: Clone) -> None:
    r = clone.cli("trust", "--show")
    assert r.code == 0, r.err
    assert 'command = "tools/cortex"' in r.out and "runs a program" in r.out and "not trusted" in r.out, r.out
    assert notes(r.err) == [], r.err  # the command shows it itself; no note on top
    assert not Path(userfiles.trust_file()).exists()

    r = clone.cli("trust")  # stdin is not a terminal
    assert r.code != 0
    assert_no_traceback(r.out, r.err)
    assert "--yes" in r.err and "nothing was trusted" in r.err, r.err
    assert not Path(userfiles.trust_file()).exists()
    r = clone.cli("session", "status")
    assert not clone.ctx_ran() and len(notes(r.err)) == 1


@pytest.mark.slow
def test_revoke_withdraws_the_trust(clone: Clone) -> None:
    assert clone.cli("trust", "--yes").code == 0
    clone.cli("session", "status")
    assert clone.ctx_ran()
    clone.forget_canaries()
    r = clone.cli("trust", "--revoke")
    assert r.code == 0, r.err
    assert "trust withdrawn" in r.out
    r = clone.cli("session", "status")
    assert not clone.ctx_ran() and len(notes(r.err)) == 1, r.err
    r = clone.cli("trust", "--revoke")
    assert r.code == 0 and "was not trusted" in r.out


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["garbage", "world-writable"])
def test_a_record_that_cannot_be_used_trusts_nothing(clone: Clone, damage: str) -> None:
    assert clone.cli("trust", "--yes").code == 0
    record = Path(userfiles.trust_file())
    if damage == "garbage":
        record.write_text("{not json")
    else:
        record.chmod(0o666)
    kept = (record.read_bytes(), record.stat().st_mode)
    r = clone.cli("session", "status")
    assert r.code == 0, r.err
    assert_no_traceback(r.out, r.err)
    assert not clone.ctx_ran()
    [note] = notes(r.err)
    assert "trusted.json" in note and "cannot be used" in note, note
    # Trusting again says what is wrong with the record, in one line, and does not overwrite it.
    r = clone.cli("trust", "--yes")
    assert r.code != 0
    assert_no_traceback(r.out, r.err)
    assert "trusted.json" in r.err, r.err
    assert (record.read_bytes(), record.stat().st_mode) == kept


def test_the_hooks_copy_never_carries_an_untrusted_value(clone: Clone) -> None:
    config.compile_for_hook(clone.layout)
    compiled = json.loads(Path(clone.layout.hook_config).read_text())
    assert compiled["values"]["ctx"]["command"] == compiled["effective"]["ctx"]["command"] == "cortex"
    assert compiled["values"]["session"]["max_iterations"] == 42
    assert clone.cli("trust", "--yes").code == 0  # rebuilds the copy: trust changes no file stamp
    compiled = json.loads(Path(clone.layout.hook_config).read_text())
    assert compiled["values"]["ctx"]["command"] == "tools/cortex"


def test_a_symlinked_path_to_the_project_is_the_same_project(clone: Clone, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(clone.root)
    assert clone.cli("trust", "--yes").code == 0
    cfg = config.load(str(link), environ={})
    assert cfg.get("ctx.command") == "tools/cortex" and cfg.ignored == []


# -- the key table decides ------------------------------------------------------------


def sample(key: keytypes.Key) -> Any:
    """A valid value of the key's kind (a new kind must say what a sample of it is)."""
    if key.kind == "enum":
        return present(key.choices)[0]
    if key.kind == "bool":
        return True
    if key.kind in ("int", "float"):
        low = key.minimum if key.minimum is not None else 1
        return int(low) + 1 if key.kind == "int" else float(low) + 1.0
    if key.kind == "str":
        return "https://example.invalid/x" if key.sends_data else "some-program"
    if key.kind == "argv":
        return ["some-program"]
    raise AssertionError(f"no sample for kind {key.kind!r}")


def trust_keys() -> list[str]:
    fixed = [k.dotted for k in keys.KEYS if k.needs_trust]
    fields = [f"{t.section}.{f.name}" for t in keys.TABLES for f in t.fields if f.needs_trust]
    return fixed + fields


def test_every_key_that_runs_a_program_sends_data_or_grants_authority_needs_trust() -> None:
    declared = {k.dotted for k in keys.KEYS if k.names_program or k.sends_data or k.grants}
    declared |= {
        f"{t.section}.{f.name}" for t in keys.TABLES for f in t.fields if f.names_program or f.sends_data or f.grants
    }
    assert set(trust_keys()) == declared
    assert {"ctx.command", "accounts.command", "accounts.binary", "accounts.base_url"} <= declared
    # The keys that grant authority (docs/authority.md) take effect only from a trusted file.
    assert {"permissions.allow", "permissions.deny", "permissions.brain_may_allow"} <= declared


@pytest.mark.parametrize("dotted", trust_keys())
def test_a_key_needing_trust_is_ignored_from_an_untrusted_project_file(tmp_path: Path, dotted: str) -> None:
    section, name = dotted.split(".", 1)
    table = keys.TABLES_BY_SECTION.get(section)
    if table is None:
        key = keys.BY_DOTTED[dotted]
        body = {section: {name: sample(key)}}
        label = f"[{section}] {name}"
    else:
        field = table.field(name)
        assert field is not None
        entry = {f.name: sample(f) for f in table.fields if f.required and f.name != name}
        entry[name] = sample(field)
        body = {section: {"e": entry}}
        label = f"{table.label('e')} {name}"
    (tmp_path / "cocoplus.toml").write_text(_toml(body))

    cfg = config.load(str(tmp_path), environ={})
    assert [i["label"] for i in cfg.ignored] == [label]
    if table is None:
        assert cfg.get(dotted) == keys.BY_DOTTED[dotted].default and cfg.origins[dotted] == "default"
    else:
        assert name not in cfg.table(section).get("e", {})

    trust_project(tmp_path)
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.ignored == []
    got = cfg.get(dotted) if table is None else cfg.table(section)["e"][name]
    assert got == (body[section][name] if table is None else body[section]["e"][name])


def _toml(body: dict[str, dict[str, Any]]) -> str:
    lines = []
    for section, content in body.items():
        if section in keys.TABLES_BY_SECTION:
            for entry, fields in content.items():
                lines.append(f"[{section}.{entry}]")
                lines += [f"{k} = {keytypes.toml_value(v)}" for k, v in fields.items()]
        else:
            lines.append(f"[{section}]")
            lines += [f"{k} = {keytypes.toml_value(v)}" for k, v in content.items()]
    return "\n".join(lines) + "\n"
