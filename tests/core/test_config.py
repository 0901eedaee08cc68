"""cocoplus.toml: defaults, checking, environment overrides, and the hook's compiled copy."""

from __future__ import annotations

import os

import pytest

from cocoplus import config
from cocoplus.core import fsio, settings
from cocoplus.core.errors import ConfigInvalid
from cocoplus.core.paths import Layout

# The seed's [session] defaults, and cocoplus' own for the other sections.
EXPECTED_DEFAULTS = {
    "session.max_iterations": 200,
    "session.iteration_warn_at": 160,
    "session.budget_limit": 0.0,
    "session.budget_reserve_fraction": 0.10,
    "session.budget_enforcement": "stage-boundary",
    "session.stop_is_boundary": True,
    "session.handoff_stale_hours": 24.0,
    "session.running_stale_hours": 6.0,
    "session.loop_guard_repeats": 8,
    "session.count_failed_tools": True,
    "hooks.lock_timeout_s": 5.0,
    "hooks.timeout_s": 10,
    "ctx.enabled": True,
    "ctx.command": "cortex",
    "ctx.timeout_s": 3.0,
    "chat.controller": "",
    "chat.default_model": "",
    "chat.default_effort": "medium",
    "chat.reply_timeout_s": 600.0,
    "supervision.max_turns": 60,
    "supervision.quiet_window_s": 2.0,
    "supervision.max_wait_s": 10.0,
    "supervision.reconcile_s": 30.0,
    "supervision.auto_supervise": True,
}


def write_toml(directory, text: str) -> str:
    path = os.path.join(str(directory), "cocoplus.toml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def toml_literal(value) -> str:
    import tomli_w

    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_literal(v)}" for k, v in value.items()) + " }"
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def assert_one_line_naming(exc: ConfigInvalid, *parts: str) -> None:
    text = str(exc)
    assert "\n" not in text, text
    for p in parts:
        assert p in text, (p, text)


def test_every_key_has_its_default(tmp_path):
    assert {k.dotted for k in settings.KEYS} == set(EXPECTED_DEFAULTS)
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.path is None
    for dotted, value in EXPECTED_DEFAULTS.items():
        got = cfg.get(dotted)
        assert got == value and type(got) is type(value), dotted
        assert cfg.origins[dotted] == "default"


def test_an_empty_file_is_all_defaults(tmp_path):
    write_toml(tmp_path, "# nothing here\n")
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.path == os.path.join(str(tmp_path), "cocoplus.toml")
    assert all(cfg.get(k) == v for k, v in EXPECTED_DEFAULTS.items())


def test_file_values_and_origins(tmp_path):
    write_toml(
        tmp_path,
        '[session]\nmax_iterations = 50\niteration_warn_at = 40\nbudget_limit = 5\n'
        'budget_enforcement = "off"\n[chat]\ndefault_effort = "high"\n',
    )
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.session["max_iterations"] == 50
    assert cfg.session["budget_limit"] == 5.0 and isinstance(cfg.session["budget_limit"], float)
    assert cfg.get("chat.default_effort") == "high"
    assert cfg.origins["session.max_iterations"] == "file"
    assert cfg.origins["session.budget_reserve_fraction"] == "default"


def _wrong_values(key: settings.Key) -> list:
    by_kind = {
        "int": ["10", 1.5, True, [1], {"a": 1}],
        "float": ["1.0", True, [1.0]],
        "bool": [1, "yes", "true", 0],
        "enum": ["bogus", 1, True],
        "str": [5, True, ["a"]],
        "argv": ["a b", [1, 2]],
    }
    return by_kind[key.kind]


def _out_of_range(key: settings.Key) -> list:
    out = []
    if key.minimum is not None:
        out.append(int(key.minimum) - 1 if key.kind == "int" else key.minimum - 0.5)
    if key.maximum is not None:
        out.append(int(key.maximum) + 1 if key.kind == "int" else key.maximum + 0.5)
    if key.below is not None:
        out.append(key.below)
    return out


BAD_CASES = [
    (k, v, "type") for k in settings.KEYS for v in _wrong_values(k)
] + [(k, v, "range") for k in settings.KEYS for v in _out_of_range(k)]


@pytest.mark.parametrize("key, value, why", BAD_CASES, ids=lambda x: getattr(x, "dotted", repr(x)))
def test_wrong_type_or_range_is_one_line_naming_file_key_and_expectation(tmp_path, key, value, why):
    write_toml(tmp_path, f"[{key.section}]\n{key.name} = {toml_literal(value)}\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", f"[{key.section}] {key.name}", "expected " + key.expected())


def test_every_range_key_has_a_range_case():
    ranged = {k.dotted for k in settings.KEYS if k.minimum is not None or k.maximum is not None or k.below is not None}
    tested = {k.dotted for k, _, why in BAD_CASES if why == "range"}
    assert ranged == tested and "session.budget_reserve_fraction" in tested


def test_nan_and_infinity_are_rejected(tmp_path):
    for literal in ("nan", "inf", "-inf"):
        write_toml(tmp_path, f"[session]\nbudget_limit = {literal}\n")
        with pytest.raises(ConfigInvalid) as info:
            config.load(str(tmp_path), environ={})
        assert_one_line_naming(info.value, "cocoplus.toml", "[session] budget_limit")


def test_unknown_key_and_section(tmp_path):
    write_toml(tmp_path, "[session]\nmax_iteration = 5\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "[session]", 'unknown key "max_iteration"', "max_iterations")

    write_toml(tmp_path, "[sesion]\nmax_iterations = 5\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "unknown section [sesion]", "[session]")

    write_toml(tmp_path, "max_iterations = 5\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "max_iterations")


def test_warn_at_above_max_iterations(tmp_path):
    write_toml(tmp_path, "[session]\nmax_iterations = 100\niteration_warn_at = 150\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "iteration_warn_at", "max_iterations", "150")
    write_toml(tmp_path, "[session]\nmax_iterations = 100\niteration_warn_at = 100\n")
    assert config.load(str(tmp_path), environ={}).session["iteration_warn_at"] == 100


def test_bad_toml_syntax_and_encoding(tmp_path):
    write_toml(tmp_path, "[session\nmax_iterations = \n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "not valid TOML")

    with open(tmp_path / "cocoplus.toml", "wb") as fh:
        fh.write(b"[session]\nmax_iterations = 5 # \xff\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "UTF-8")

    os.unlink(tmp_path / "cocoplus.toml")
    os.mkdir(tmp_path / "cocoplus.toml")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", "directory")


def test_env_override_and_its_origin(tmp_path):
    write_toml(tmp_path, "[session]\nmax_iterations = 250\n")
    env = {"COCOPLUS_SESSION_MAX_ITERATIONS": "300", "COCOPLUS_SESSION_STOP_IS_BOUNDARY": "off"}
    cfg = config.load(str(tmp_path), environ=env)
    assert cfg.session["max_iterations"] == 300
    assert cfg.origins["session.max_iterations"] == "env COCOPLUS_SESSION_MAX_ITERATIONS"
    assert cfg.session["stop_is_boundary"] is False
    assert cfg.origins["session.iteration_warn_at"] == "default"


def test_env_override_lowering_the_cap_with_warn_at(tmp_path):
    env = {"COCOPLUS_SESSION_MAX_ITERATIONS": "50", "COCOPLUS_SESSION_ITERATION_WARN_AT": "40"}
    cfg = config.load(str(tmp_path), environ=env)
    assert (cfg.session["max_iterations"], cfg.session["iteration_warn_at"]) == (50, 40)


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("COCOPLUS_SESSION_MAX_ITERATIONS", "lots", "an integer >= 1"),
        ("COCOPLUS_SESSION_MAX_ITERATIONS", "0", "an integer >= 1"),
        ("COCOPLUS_SESSION_BUDGET_LIMIT", "nan", "a number >= 0"),
        ("COCOPLUS_SESSION_STOP_IS_BOUNDARY", "maybe", "true or false"),
        ("COCOPLUS_CHAT_DEFAULT_EFFORT", "extreme", '"low", "medium", "high"'),
    ],
)
def test_bad_env_override_names_the_variable(tmp_path, name, value, expected):
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={name: value})
    assert_one_line_naming(info.value, f"environment {name}", expected)


def test_unrelated_environment_is_ignored(tmp_path):
    cfg = config.load(str(tmp_path), environ={"COCOPLUS_OPERATOR": "x", "COCOPLUS_DIR": "/nope", "COCOPLUS_SESSION_": "1"})
    assert all(o == "default" for o in cfg.origins.values())


def test_pricing_and_accounts_are_checked(tmp_path):
    write_toml(tmp_path, '[pricing."m1"]\ninput = 1\noutput = 2\n[accounts.local]\nkind = "command"\ncommand = ["x"]\n')
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.pricing == {"m1": {"input": 1.0, "output": 2.0}}
    assert cfg.accounts["local"]["kind"] == "command"
    for text, needle in [
        ('[pricing."m1"]\ninput = -1\noutput = 2\n', "input"),
        ('[pricing."m1"]\ninput = 1\n', "output: missing"),
        ('[accounts.local]\nkind = "telepathy"\n', "kind"),
        ('[accounts.local]\nkind = "command"\n', "command: missing"),
        ('[accounts."../x"]\nkind = "claude"\n', "account names"),
    ]:
        write_toml(tmp_path, text)
        with pytest.raises(ConfigInvalid) as info:
            config.load(str(tmp_path), environ={})
        assert_one_line_naming(info.value, "cocoplus.toml", needle)


def test_example_toml_is_valid_and_lists_every_key(tmp_path):
    text = config.example_toml()
    write_toml(tmp_path, text)
    cfg = config.load(str(tmp_path), environ={})
    for k in settings.KEYS:
        assert f"\n{k.name} = " in text
        assert cfg.get(k.dotted) == k.default
        assert cfg.origins[k.dotted] == "file"


# -- the hook's compiled copy ------------------------------------------------------


@pytest.fixture
def layout(tmp_path):
    state = tmp_path / ".cocoplus"
    state.mkdir()
    return Layout(str(state))


def bump_mtime(path: str) -> None:
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_for_hook_compiles_then_follows_changes(layout):
    values, problem = config.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 200
    assert os.path.exists(layout.hook_config)

    write_toml(layout.project, "[session]\nmax_iterations = 30\niteration_warn_at = 20\n")
    values, problem = config.for_hook(layout, {})
    assert problem is None
    assert values["session"]["max_iterations"] == 30 and values["session"]["iteration_warn_at"] == 20
    assert fsio.read_json(layout.hook_config)["values"]["session"]["max_iterations"] == 30

    # Same size, different content: the mtime in the stamp still notices.
    write_toml(layout.project, "[session]\nmax_iterations = 31\niteration_warn_at = 20\n")
    bump_mtime(layout.config)
    values, _ = config.for_hook(layout, {})
    assert values["session"]["max_iterations"] == 31


def test_for_hook_keeps_last_good_values_on_a_bad_toml(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 30\niteration_warn_at = 20\n")
    assert config.for_hook(layout, {})[0]["session"]["max_iterations"] == 30

    write_toml(layout.project, "[session]\nmax_iterations = 'many'\n")
    bump_mtime(layout.config)
    values, problem = config.for_hook(layout, {})
    assert values["session"]["max_iterations"] == 30
    assert problem is not None and "cocoplus.toml" in problem and "max_iterations" in problem
    assert fsio.read_json(layout.hook_config)["values"]["session"]["max_iterations"] == 30  # not overwritten

    write_toml(layout.project, "[session]\nmax_iterations = 40\niteration_warn_at = 20\n")
    bump_mtime(layout.config)
    values, problem = config.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 40


def test_for_hook_with_bad_toml_and_no_compiled_copy_uses_defaults(layout):
    write_toml(layout.project, "[session\n")
    values, problem = config.for_hook(layout, {})
    assert {s: values[s] for s in settings.SECTIONS} == settings.defaults()
    assert problem and "cocoplus.toml" in problem


def test_for_hook_applies_env_over_compiled_values(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    values, problem = config.for_hook(layout, {"COCOPLUS_SESSION_MAX_ITERATIONS": "500"})
    assert problem is None and values["session"]["max_iterations"] == 500
    # The environment never leaks into the compiled copy.
    assert fsio.read_json(layout.hook_config)["values"]["session"]["max_iterations"] == 300
    values, problem = config.for_hook(layout, {"COCOPLUS_SESSION_MAX_ITERATIONS": "x"})
    assert values["session"]["max_iterations"] == 300
    assert problem and "COCOPLUS_SESSION_MAX_ITERATIONS" in problem


def test_for_hook_survives_a_damaged_compiled_copy(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    config.for_hook(layout, {})
    with open(layout.hook_config, "wb") as fh:
        fh.write(b"\x00garbage")
    values, problem = config.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 300
    assert fsio.read_json(layout.hook_config)["values"]["session"]["max_iterations"] == 300


def test_warn_at_follows_a_lowered_cap_unless_set(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cocoplus import config as config_mod

    cfg = config_mod.load(str(tmp_path), {"COCOPLUS_SESSION_MAX_ITERATIONS": "50"})
    assert cfg.get("session.iteration_warn_at") == 40
    assert cfg.origins["session.iteration_warn_at"].startswith("derived")
    (tmp_path / "cocoplus.toml").write_text("[session]\nmax_iterations = 10\niteration_warn_at = 3\n")
    cfg = config_mod.load(str(tmp_path), {})
    assert cfg.get("session.iteration_warn_at") == 3 and cfg.origins["session.iteration_warn_at"] == "file"
    (tmp_path / "cocoplus.toml").write_text("[session]\nmax_iterations = 10\niteration_warn_at = 30\n")
    with pytest.raises(ConfigInvalid, match="iteration_warn_at"):
        config_mod.load(str(tmp_path), {})


def test_hook_keeps_good_env_overrides_when_one_is_bad(project) -> None:  # type: ignore[no-untyped-def]
    from cocoplus import config as config_mod

    values, problem = config_mod.for_hook(project, {"COCOPLUS_SESSION_MAX_ITERATIONS": "12", "COCOPLUS_SESSION_LOOP_GUARD_REPEATS": "many"})
    assert values["session"]["max_iterations"] == 12
    assert values["session"]["iteration_warn_at"] == 9  # derived: 80% of 12
    assert values["session"]["loop_guard_repeats"] == 8
    assert problem is not None and "COCOPLUS_SESSION_LOOP_GUARD_REPEATS" in problem
