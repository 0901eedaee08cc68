"""Trust covers the programs the trusted file names inside the project: their content is pinned beside the file's.

With real processes: a project whose `[ctx] command` is ./tools/ctx.sh is
trusted, `session status` runs it; the script changes, and it no longer
runs (the note names it), `trust --show` shows the old and new hash,
`trust --yes` pins the new content and it runs again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from cocoplus import trust as trust_mod
from cocoplus.core import settings, userfiles
from cocoplus.ops import trust as trust_ops
from tests.conftest import Result, assert_no_traceback, run_cli_subprocess

CTX = """#!/bin/sh
# A ctx stand-in: says which version of it ran, then answers like `cortex ctx show all`.
echo "{version}" >> "$(dirname "$0")/../CTX_RAN"
echo '{{"tasks": [], "steps": [], "discoveries": []}}'
"""


class Project:
    """A project directory with .cocoplus/, a cocoplus.toml and the programs it names."""

    def __init__(self, root: Path, config: str) -> None:
        self.root = root
        root.mkdir()
        (root / "tools").mkdir()
        self.ctx = root / "tools" / "ctx.sh"
        self.write_ctx("v1")
        (root / "cocoplus.toml").write_text(config)
        assert self.cli("init").code == 0

    def write_ctx(self, version: str) -> None:
        self.ctx.write_text(CTX.format(version=version))
        self.ctx.chmod(0o755)

    def cli(self, *argv: str) -> Result:
        return run_cli_subprocess(*argv, cwd=self.root)

    def ran(self) -> list[str]:
        path = self.root / "CTX_RAN"
        return path.read_text().split() if path.exists() else []

    def sha(self) -> str:
        return hashlib.sha256(self.ctx.read_bytes()).hexdigest()


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "cocoplus trust" in line]


@pytest.fixture
def proj(tmp_path: Path) -> Project:
    return Project(tmp_path / "proj", '[ctx]\ncommand = "./tools/ctx.sh"\n')


@pytest.mark.slow
def test_a_changed_program_is_no_longer_trusted_until_it_is_trusted_again(proj: Project) -> None:
    first = proj.sha()
    r = proj.cli("trust", "--yes", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["state"] == "trusted" and [p["path"] for p in out["programs"]] == ["tools/ctx.sh"], out
    entry = json.loads(Path(userfiles.trust_file()).read_text())["projects"][os.path.realpath(proj.root)]
    assert entry["programs"] == {"tools/ctx.sh": first}  # beside the file's own hash

    r = proj.cli("session", "status")
    assert r.code == 0 and proj.ran() == ["v1"] and notes(r.err) == [], r.err

    # A pull changes the program: cocoplus does not run the new one, and says which program changed.
    proj.write_ctx("v2")
    second = proj.sha()
    r = proj.cli("session", "status")
    assert_no_traceback(r.out, r.err)
    assert proj.ran() == ["v1"], "the changed tools/ctx.sh ran"
    (note,) = notes(r.err)
    assert note.startswith(
        "cocoplus: note: cocoplus.toml names tools/ctx.sh, which has changed since it was trusted"
    ), note
    assert "[ctx] command" in note and "`cocoplus trust` again" in note, note

    r = proj.cli("trust", "--show")
    assert r.code == 0, r.err
    assert "changed since it was trusted" in r.out and f"tools/ctx.sh: sha256 {first} -> {second}" in r.out, r.out
    doc = json.loads(proj.cli("trust", "--show", "--json").out)
    assert doc["state"] == trust_ops.CHANGED and doc["trusted"] is False
    assert doc["programs"] == [
        {
            "path": "tools/ctx.sh",
            "file": str(proj.ctx),
            "named_by": ["[ctx] command"],
            "sha256": second,
            "trusted_sha256": first,
            "changed": True,
        }
    ]
    assert proj.ran() == ["v1"]  # showing runs nothing

    # Trusting again pins the new content: it runs.
    assert proj.cli("trust", "--yes").code == 0
    r = proj.cli("session", "status")
    assert proj.ran() == ["v1", "v2"] and notes(r.err) == [], r.err
    entry = json.loads(Path(userfiles.trust_file()).read_text())["projects"][os.path.realpath(proj.root)]
    assert entry["programs"] == {"tools/ctx.sh": second}


@pytest.mark.slow
def test_a_program_that_went_missing_or_appeared_is_a_change(proj: Project) -> None:
    first = proj.sha()
    assert proj.cli("trust", "--yes").code == 0
    proj.ctx.unlink()
    r = proj.cli("trust", "--show")
    assert f"tools/ctx.sh: sha256 {first} -> missing" in r.out, r.out
    assert "which has changed since it was trusted" in notes(proj.cli("session", "status").err)[0]
    # Trusted while missing, the program that then appears is a change too.
    assert proj.cli("trust", "--yes").code == 0
    assert json.loads(Path(userfiles.trust_file()).read_text())["projects"][os.path.realpath(proj.root)][
        "programs"
    ] == {"tools/ctx.sh": None}
    proj.write_ctx("v3")
    r = proj.cli("session", "status")
    assert proj.ran() == [] and len(notes(r.err)) == 1, r.err
    assert f"tools/ctx.sh: sha256 missing -> {proj.sha()}" in proj.cli("trust", "--show").out


@pytest.mark.slow
def test_an_entry_trusted_before_programs_were_pinned_needs_trust_again(proj: Project) -> None:
    assert proj.cli("trust", "--yes").code == 0
    path = Path(userfiles.trust_file())
    doc = json.loads(path.read_text())
    del doc["projects"][os.path.realpath(proj.root)]["programs"]  # as an earlier cocoplus wrote it
    path.write_text(json.dumps(doc))
    r = proj.cli("session", "status")
    assert proj.ran() == [], "a program nobody pinned ran"
    (note,) = notes(r.err)
    assert "was trusted before cocoplus pinned the programs it names (tools/ctx.sh)" in note, note
    assert proj.cli("trust", "--yes").code == 0
    proj.cli("session", "status")
    assert proj.ran() == ["v1"]


@pytest.mark.slow
def test_trust_refuses_a_program_that_changed_while_it_was_shown(proj: Project) -> None:
    shown = trust_ops.show(str(proj.root))
    proj.write_ctx("v2")
    with pytest.raises(trust_mod.CocoplusError, match="tools/ctx.sh changed while it was shown"):
        trust_ops.trust(str(proj.root), shown["sha256"], programs={p["path"]: p["sha256"] for p in shown["programs"]})
    assert trust_mod.entry(str(proj.root)) is None


def flagged(toml_values: dict[str, Any], tables: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return settings.needing_trust(toml_values, tables or {})


def test_which_named_programs_are_pinned(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    inside = str(project / "bin" / "agent")
    accounts = {
        "a": {"kind": "command", "command": ["scripts/brain.py", "--model", "{model}"]},
        "b": {"kind": "command", "command": ["python3", "-u", "tools/brain.py", "data/prompt.txt"]},
        "c": {"kind": "command", "command": ["brain-on-path", "x"]},
        "d": {"kind": "command", "command": ["/usr/bin/env", "x"]},
        "e": {"kind": "claude", "binary": inside},
        "f": {"kind": "codex", "binary": "../elsewhere/codex"},
    }
    found = trust_mod.programs_named(
        str(project), flagged({"ctx": {"command": "./tools/ctx.sh"}}, {"accounts": accounts})
    )
    assert found == {
        "tools/ctx.sh": str(project / "tools" / "ctx.sh"),  # relative: the project's
        "scripts/brain.py": str(project / "scripts" / "brain.py"),
        "tools/brain.py": str(project / "tools" / "brain.py"),  # the script an interpreter runs, not its data
        "bin/agent": inside,  # absolute, under the project
        "../elsewhere/codex": str(project / ".." / "elsewhere" / "codex"),  # named relatively: pinned
    }  # a name looked up on PATH, and a program elsewhere by its absolute path, are not
    # A symlinked path to the project is the project.
    link = tmp_path / "link"
    link.symlink_to(project)
    pinned = trust_mod.programs_named(str(project), flagged({"ctx": {"command": str(link / "tools" / "ctx.sh")}}))
    assert list(pinned) == ["tools/ctx.sh"]
