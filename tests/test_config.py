"""cocoplus.toml: defaults, checking, environment overrides, and the hook's compiled copy."""

from __future__ import annotations

import os
from typing import Any

import pytest

from cocoplus import config
from cocoplus.core import fsio, hookconfig, keys, keytypes, settings, vocab
from cocoplus.core.errors import ConfigInvalid
from cocoplus.core.paths import Layout
from cocoplus.session import values as hook_values
from tests.support.trusting import trust_project
from tests.support.typed import present

# The seed's [session] defaults, and cocoplus' own for the other sections.
EXPECTED_DEFAULTS = {
    "session.max_iterations": 200,
    "session.project_max_iterations": 0,
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
    "supervision.hold_turn_end_s": 120,
    # seed 000's environment variables, as keys (SPEC section 7)
    "supervision.restore_ttl_s": 900.0,
    "supervision.stall_watchdog_interval_s": 90.0,
    "supervision.stall_threshold_s": 900.0,
    "supervision.stall_cooldown_s": 1800.0,
    "supervision.stall_watchdog_startup_delay_s": 45.0,
    "notify.urls": [],
    "notify.events": list(vocab.NOTIFY_EVENTS),
    "notify.repeat_after_s": 300.0,
    "notify.max_per_minute": 10,
    "notify.forecast_warn_s": 1800.0,
    "fleet.url": "",
    "fleet.name": "default",
    "fleet.machine": "",
    "fleet.project": "",
    "fleet.user": "",
    "fleet.password_env": "",
    "fleet.token_env": "",
    "fleet.creds_file": "",
    "fleet.nkey_file": "",
    "fleet.tls_ca": "",
    "fleet.tls_cert": "",
    "fleet.tls_key": "",
    "fleet.replicas": 0,
    "fleet.heartbeat_s": 5.0,
    "fleet.ack_wait_s": 10.0,
    "fleet.max_command_age_s": 7 * 86400.0,
    "workers.max_parallel": 4,
    "workers.log_max_bytes": 8 * 1024 * 1024,
    "workers.limit_retry_s": 300.0,
    "workers.failover": [],
    "workers.failover_after_s": 900.0,
    "workers.failover_return": False,
    "workers.worktree": False,
    "workers.worktree_dir": "",
    "workers.sandbox": "none",
    "sandbox.network": ["all"],
    "sandbox.network_wait_s": 300.0,
    "sandbox.write_wait_s": 600.0,
    "inbox.channels": [],
    "inbox.ntfy_server": "https://ntfy.sh",
    "inbox.ntfy_topic": "",
    "inbox.ntfy_token": "",
    "inbox.ntfy_reply_topic": "",
    "inbox.ntfy_reply_token": "",
    "inbox.telegram_token": "",
    "inbox.telegram_chat": "",
    "inbox.telegram_api": "https://api.telegram.org",
    "inbox.presence_s": 120.0,
    "inbox.presence_file": "",
    "inbox.escalate_after_s": 60.0,
    "inbox.page_url": "",
    "telemetry.endpoint": "",
    "telemetry.headers": "",
    "telemetry.interval_s": 5.0,
    "telemetry.log_content": False,
    "supervision.brain_may_merge": False,
    "permissions.allow": [],
    "permissions.deny": [],
    "permissions.brain_may_allow": [],
    "permissions.wait_s": 600,
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
    assert {k.dotted for k in keys.KEYS} == set(EXPECTED_DEFAULTS)
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
        "[session]\nmax_iterations = 50\niteration_warn_at = 40\nbudget_limit = 5\n"
        'budget_enforcement = "off"\n[chat]\ndefault_effort = "high"\n',
    )
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.session["max_iterations"] == 50
    assert cfg.session["budget_limit"] == 5.0 and isinstance(cfg.session["budget_limit"], float)
    assert cfg.get("chat.default_effort") == "high"
    assert cfg.origins["session.max_iterations"] == "file"
    assert cfg.origins["session.budget_reserve_fraction"] == "default"


def _wrong_values(key: keytypes.Key) -> list:
    by_kind: dict[str, list[Any]] = {
        "int": ["10", 1.5, True, [1], {"a": 1}],
        "float": ["1.0", True, [1.0]],
        "bool": [1, "yes", "true", 0],
        "enum": ["bogus", 1, True],
        "str": [5, True, ["a"]],
        "argv": ["a b", [1, 2]],
    }
    return by_kind[key.kind]


def _out_of_range(key: keytypes.Key) -> list:
    out = []
    if key.minimum is not None:
        out.append(int(key.minimum) - 1 if key.kind == "int" else key.minimum - 0.5)
    if key.maximum is not None:
        out.append(int(key.maximum) + 1 if key.kind == "int" else key.maximum + 0.5)
    if key.below is not None:
        out.append(key.below)
    return out


BAD_CASES = [(k, v, "type") for k in keys.KEYS for v in _wrong_values(k)] + [
    (k, v, "range") for k in keys.KEYS for v in _out_of_range(k)
]


@pytest.mark.parametrize("key, value, why", BAD_CASES, ids=lambda x: getattr(x, "dotted", repr(x)))
def test_wrong_type_or_range_is_one_line_naming_file_key_and_expectation(tmp_path, key, value, why):
    write_toml(tmp_path, f"[{key.section}]\n{key.name} = {toml_literal(value)}\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "cocoplus.toml", f"[{key.section}] {key.name}", "expected " + key.expected())


def test_every_range_key_has_a_range_case():
    ranged = {k.dotted for k in keys.KEYS if k.minimum is not None or k.maximum is not None or k.below is not None}
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
    cfg = config.load(
        str(tmp_path), environ={"COCOPLUS_OPERATOR": "x", "COCOPLUS_DIR": "/nope", "COCOPLUS_SESSION_": "1"}
    )
    assert all(o == "default" for o in cfg.origins.values())


def test_pricing_and_accounts_load_with_their_values_checked(tmp_path):
    write_toml(
        tmp_path,
        '[pricing."m1"]\ninput = 1\noutput = 2\n'
        '[accounts.local]\nkind = "command"\ncommand = ["x", "{model}"]\ntimeout_s = 30\n'
        'default_reasoning_effort = "high"\n',
    )
    trust_project(tmp_path)  # an account's command takes effect from a trusted file only
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.pricing == {"m1": {"input": 1.0, "output": 2.0}}
    assert cfg.accounts == {
        "local": {"kind": "command", "command": ["x", "{model}"], "timeout_s": 30.0, "default_reasoning_effort": "high"}
    }
    assert type(cfg.accounts["local"]["timeout_s"]) is float  # coerced like a float key
    path = os.path.join(str(tmp_path), "cocoplus.toml")
    assert cfg.entry_files == {"pricing.m1": path, "accounts.local": path}


# One valid entry per table, so that one field at a time can be made wrong.
VALID_ENTRY: dict[str, dict[str, Any]] = {
    "pricing": {"input": 1.0, "output": 2.0},
    "accounts": {"kind": "command", "command": ["x"]},
}
ENTRY_NAME = {"pricing": "m1", "accounts": "local"}


def _table_cases():
    for table in keys.TABLES:
        for key in table.fields:
            for value in _wrong_values(key) + _out_of_range(key) + ([[]] if key.kind == "argv" else []):
                yield table, key, value


@pytest.mark.parametrize(
    "table, key, value",
    list(_table_cases()),
    ids=lambda x: getattr(x, "dotted", None) or getattr(x, "section", None) or repr(x),
)
def test_table_fields_are_checked_by_the_same_path_as_every_key(tmp_path, table, key, value):
    entry = dict(VALID_ENTRY[table.section], **{key.name: value})
    name = ENTRY_NAME[table.section]
    write_toml(
        tmp_path,
        f"[{table.section}.{toml_literal(name)}]\n" + "".join(f"{k} = {toml_literal(v)}\n" for k, v in entry.items()),
    )
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    label = table.label(name)
    assert_one_line_naming(info.value, f"cocoplus.toml: {label} {key.name}: expected {key.expected()}, got ")
    # The very message Key.coerce gives for a fixed key: one coercion, one error path.
    with pytest.raises(ConfigInvalid) as direct:
        key.coerce(value, "cocoplus.toml", label)
    assert str(info.value) == str(direct.value)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[pricing."m1"]\ninput = 1\n',
            'cocoplus.toml: [pricing."m1"] output: missing (expected a number >= 0 and <= 10000)',
        ),
        (
            '[accounts.local]\ncommand = ["x"]\n',
            'cocoplus.toml: [accounts.local] kind: missing (expected one of "claude", "codex", "openai", "command")',
        ),
        (
            '[accounts.local]\nkind = "command"\n',
            'cocoplus.toml: [accounts.local] command: missing (needed when kind = "command"; '
            "expected a non-empty list of strings)",
        ),
        (
            '[accounts.local]\nkind = "claude"\nmodel = "m"\n',
            'cocoplus.toml: [accounts.local] unknown key "model" (known: kind, command, binary, base_url, '
            "api_key_env, default_model, default_reasoning_effort, timeout_s)",
        ),
        (
            '[pricing."m1"]\ninput = 1\noutput = 2\ncached = 1\n',
            'cocoplus.toml: [pricing."m1"] unknown key "cached" (known: input, output, cache_read, cache_write, '
            "cache_write_1h)",
        ),
        (
            '[accounts."../x"]\nkind = "claude"\n',
            'cocoplus.toml: [accounts."../x"]: names in [accounts] use A-Z a-z 0-9 _ - . (1-128 characters, no ..)',
        ),
        (
            '[accounts]\nlocal = "claude"\n',
            "cocoplus.toml: [accounts.local]: expected a table (accounts that can run the master agent; [chat] "
            'controller picks one), got "claude"',
        ),
        ("accounts = 3\n", "cocoplus.toml: [accounts]: expected tables [accounts.NAME], got 3"),
        (
            '[session]\nmax_iterations = "lots"\n',
            'cocoplus.toml: [session] max_iterations: expected an integer >= 1 and <= 1000000, got "lots"',
        ),
        (
            '[notify]\nevents = ["stalled", "lunch"]\n',
            'cocoplus.toml: [notify] events: expected a list of "ask_human", "awaiting_authorization", "pending", '
            '"stalled", "limited", "failover", "hand_back", "request_expired", '
            '"operator_stop", "budget_reserve", "budget_exhausted", "budget_stop", '
            '"budget_forecast", "iteration_cap", '
            '"loop_guard", "supervision_finished", "round_failed", "collision", "summary", got ["stalled", "lunch"]',
        ),
        (
            "max_iterations = 5\n",
            'cocoplus.toml: "max_iterations" is outside any section; it belongs under [session] (sections: [session], '
            "[hooks], [ctx], [chat], [supervision], [permissions], [notify], [fleet], [workers], [sandbox], [inbox], "
            "[telemetry], [pricing], [accounts])",
        ),
    ],
)
def test_table_and_key_errors_read_the_same(tmp_path, text, message):
    write_toml(tmp_path, text)
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert str(info.value) == message


def test_hostile_names_and_values_stay_on_one_line(tmp_path):
    write_toml(tmp_path, '[accounts."a\\nb"]\nkind = "claude"\n')
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert str(info.value).startswith('cocoplus.toml: [accounts."a\\nb"]: names in [accounts]')
    write_toml(tmp_path, '[session]\nbudget_enforcement = "x\\ny"\n')
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, 'got "x\\ny"')
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={"COCOPLUS_CHAT_DEFAULT_EFFORT": "hi\nthere"})
    assert "\n" not in str(info.value)


# -- bounds: numbers no run can reach are refused -----------------------------------------


@pytest.mark.parametrize("literal", ["99999999999999999999", "1000001", str(2**200)])
def test_max_iterations_has_an_upper_bound(tmp_path, literal):
    write_toml(tmp_path, f"[session]\nmax_iterations = {literal}\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert str(info.value).startswith(
        "cocoplus.toml: [session] max_iterations: expected an integer >= 1 and <= 1000000, got "
    )
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path / "elsewhere"), environ={"COCOPLUS_SESSION_MAX_ITERATIONS": literal})
    assert_one_line_naming(info.value, "environment COCOPLUS_SESSION_MAX_ITERATIONS", "<= 1000000")
    write_toml(tmp_path, "[session]\nmax_iterations = 1000000\n")
    assert config.load(str(tmp_path), environ={}).session["max_iterations"] == 1_000_000


def test_an_integer_beyond_any_float_is_refused_not_a_crash(tmp_path):
    write_toml(tmp_path, f"[session]\nbudget_limit = {10**400}\n")
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={})
    assert_one_line_naming(info.value, "[session] budget_limit: expected a number >= 0 and <= 1000000")


def test_every_number_has_an_upper_bound():
    numbers = [k for k in keys.KEYS if k.kind in ("int", "float")]
    numbers += [f for t in keys.TABLES for f in t.fields if f.kind in ("int", "float")]
    assert [k.dotted for k in numbers if k.maximum is None and k.below is None] == []


# -- the supervision seed's environment variables -------------------------------------------

SEED_ENV = {
    "supervision.restore_ttl_s": ("JARVIS_SUPERVISION_RESTORE_TTL_S", 900.0),
    "supervision.stall_watchdog_interval_s": ("JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S", 90.0),
    "supervision.stall_threshold_s": ("JARVIS_SUPERVISION_STALL_THRESHOLD_S", 900.0),
    "supervision.stall_cooldown_s": ("JARVIS_SUPERVISION_STALL_COOLDOWN_S", 1800.0),
    "supervision.stall_watchdog_startup_delay_s": ("JARVIS_SUPERVISION_STALL_WATCHDOG_STARTUP_DELAY_S", 45.0),
}


def test_the_seed_variables_are_keys_with_their_own_names():
    for dotted, (env, default) in SEED_ENV.items():
        key = keys.BY_DOTTED[dotted]
        assert (key.env, key.default) == (env, default)
    assert not any(k.env and k.env.startswith("JARVIS_") for k in keys.KEYS if k.dotted not in SEED_ENV)


def test_the_seed_variables_override_the_file(tmp_path):
    write_toml(tmp_path, "[supervision]\nrestore_ttl_s = 60\nstall_threshold_s = 30\nstall_watchdog_interval_s = -1\n")
    cfg = config.load(
        str(tmp_path), environ={"JARVIS_SUPERVISION_STALL_THRESHOLD_S": "5", "COCOPLUS_SUPERVISION_RESTORE_TTL_S": "1"}
    )
    assert cfg.get("supervision.restore_ttl_s") == 60.0 and cfg.origins["supervision.restore_ttl_s"] == "file"
    assert cfg.get("supervision.stall_threshold_s") == 5.0
    assert cfg.origins["supervision.stall_threshold_s"] == "env JARVIS_SUPERVISION_STALL_THRESHOLD_S"
    assert "supervision.stall_threshold_s" not in cfg.files
    assert cfg.get("supervision.stall_watchdog_interval_s") == -1.0  # <= 0 disables the watchdog: allowed
    assert (
        cfg.get("supervision.stall_cooldown_s") == 1800.0 and cfg.origins["supervision.stall_cooldown_s"] == "default"
    )


@pytest.mark.parametrize("env, value", [(e, v) for e, _ in SEED_ENV.values() for v in ("soon", "nan", "1e9")])
def test_a_bad_seed_variable_is_an_error_naming_it_not_a_default(tmp_path, env, value):
    with pytest.raises(ConfigInvalid) as info:
        config.load(str(tmp_path), environ={env: value})
    assert_one_line_naming(info.value, f"environment {env}: [supervision] ", f'got "{value}"')


def test_the_file_each_value_came_from(tmp_path):
    path = write_toml(tmp_path, "[session]\nmax_iterations = 50\n")
    cfg = config.load(str(tmp_path), environ={})
    assert cfg.files == {"session.max_iterations": path}
    assert cfg.read == [path] and cfg.path == path
    cfg = config.load(str(tmp_path), environ={"COCOPLUS_SESSION_MAX_ITERATIONS": "70"})
    assert cfg.files == {} and cfg.origins["session.max_iterations"] == "env COCOPLUS_SESSION_MAX_ITERATIONS"


def test_problem_says_why_the_config_cannot_be_used(tmp_path):
    state = tmp_path / ".cocoplus"
    state.mkdir()
    lay = Layout(str(state))
    assert config.problem(lay, {}) is None
    write_toml(tmp_path, '[session]\nmax_iterations = "lots"\n')
    assert (
        config.problem(lay, {})
        == 'cocoplus.toml: [session] max_iterations: expected an integer >= 1 and <= 1000000, got "lots"'
    )
    write_toml(tmp_path, "")
    got = config.problem(lay, {"JARVIS_SUPERVISION_RESTORE_TTL_S": "later"})
    assert got is not None and got.startswith("environment JARVIS_SUPERVISION_RESTORE_TTL_S: ")


def test_toml_value_writes_toml():
    import tomllib

    for value in (True, False, 0, 200, 0.1, 24.0, 1e-05, "stage-boundary", 'a "q" \\ \n\t\x01', ["a", "{model}"], []):
        assert tomllib.loads(f"v = {keytypes.toml_value(value)}")["v"] == value
    assert keytypes.toml_value(True) == "true" and keytypes.toml_value("off") == '"off"'


def test_example_toml_is_valid_and_lists_every_key(tmp_path):
    text = config.example_toml()
    write_toml(tmp_path, text)
    trust_project(tmp_path)  # [ctx] command is in it
    cfg = config.load(str(tmp_path), environ={})
    for k in keys.KEYS:
        if k.user_only:  # commented out: a project's file cannot set it
            assert f"\n# {k.expected()}; your own file only\n# {k.name} = " in text
            assert cfg.get(k.dotted) == k.default and cfg.origins[k.dotted] == "default"
            continue
        # what it accepts (bounds included) and its variable, just above the key
        assert f"\n# {k.expected()}; environment {k.env}\n{k.name} = " in text
        assert cfg.get(k.dotted) == k.default
        assert cfg.origins[k.dotted] == "file"
    assert (
        "# an integer >= 1 and <= 1000000; environment COCOPLUS_SESSION_MAX_ITERATIONS\nmax_iterations = 200\n" in text
    )
    for table in keys.TABLES:
        for f in table.fields:
            assert f"\n#     {f.expected()}\n" in text


def test_the_commented_table_examples_are_valid(tmp_path):
    text = config.example_toml()
    import re

    body = "\n".join(line[2:] for line in text.splitlines() if re.fullmatch(r"# (\[[^\]]+\]|[a-z_0-9]+ = .*)", line))
    write_toml(tmp_path, body)
    trust_project(tmp_path)  # the accounts name programs and endpoints
    cfg = config.load(str(tmp_path), environ={})
    assert set(cfg.accounts) == {"local", "api", "cc"} and set(cfg.pricing) == {"my-local-model"}


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
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 200
    assert os.path.exists(layout.hook_config)

    write_toml(layout.project, "[session]\nmax_iterations = 30\niteration_warn_at = 20\n")
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None
    assert values["session"]["max_iterations"] == 30 and values["session"]["iteration_warn_at"] == 20
    assert present(fsio.read_json(layout.hook_config))["values"]["session"]["max_iterations"] == 30

    # Same size, different content: the mtime in the stamp still notices.
    write_toml(layout.project, "[session]\nmax_iterations = 31\niteration_warn_at = 20\n")
    bump_mtime(layout.config)
    values, _ = hook_values.for_hook(layout, {})
    assert values["session"]["max_iterations"] == 31


def test_for_hook_keeps_last_good_values_on_a_bad_toml(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 30\niteration_warn_at = 20\n")
    assert hook_values.for_hook(layout, {})[0]["session"]["max_iterations"] == 30

    write_toml(layout.project, "[session]\nmax_iterations = 'many'\n")
    bump_mtime(layout.config)
    values, problem = hook_values.for_hook(layout, {})
    assert values["session"]["max_iterations"] == 30
    assert problem is not None and "cocoplus.toml" in problem and "max_iterations" in problem
    assert present(fsio.read_json(layout.hook_config))["values"]["session"]["max_iterations"] == 30  # not overwritten

    write_toml(layout.project, "[session]\nmax_iterations = 40\niteration_warn_at = 20\n")
    bump_mtime(layout.config)
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 40


def test_for_hook_with_bad_toml_and_no_compiled_copy_uses_defaults(layout):
    write_toml(layout.project, "[session\n")
    values, problem = hook_values.for_hook(layout, {})
    assert {s: values[s] for s in keys.SECTIONS} == settings.defaults()
    assert problem and "cocoplus.toml" in problem


def test_for_hook_applies_env_over_compiled_values(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    values, problem = hook_values.for_hook(layout, {"COCOPLUS_SESSION_MAX_ITERATIONS": "500"})
    assert problem is None and values["session"]["max_iterations"] == 500
    # The environment never leaks into the compiled copy.
    assert present(fsio.read_json(layout.hook_config))["values"]["session"]["max_iterations"] == 300
    values, problem = hook_values.for_hook(layout, {"COCOPLUS_SESSION_MAX_ITERATIONS": "x"})
    assert values["session"]["max_iterations"] == 300
    assert problem and "COCOPLUS_SESSION_MAX_ITERATIONS" in problem


def test_for_hook_survives_a_damaged_compiled_copy(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    hook_values.for_hook(layout, {})
    with open(layout.hook_config, "wb") as fh:
        fh.write(b"\x00garbage")
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 300
    assert present(fsio.read_json(layout.hook_config))["values"]["session"]["max_iterations"] == 300


def test_warn_at_follows_a_lowered_cap_unless_set(tmp_path) -> None:
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


def test_hook_keeps_good_env_overrides_when_one_is_bad(project) -> None:
    values, problem = hookconfig.for_hook(
        project, {"COCOPLUS_SESSION_MAX_ITERATIONS": "12", "COCOPLUS_SESSION_LOOP_GUARD_REPEATS": "many"}
    )
    assert values["session"]["max_iterations"] == 12
    assert values["session"]["iteration_warn_at"] == 9  # derived: 80% of 12
    assert values["session"]["loop_guard_repeats"] == 8
    assert problem is not None and "COCOPLUS_SESSION_LOOP_GUARD_REPEATS" in problem


def test_for_hook_checks_a_hand_edited_copy_against_the_key_table(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    hook_values.for_hook(layout, {})
    doc = present(fsio.read_json(layout.hook_config))
    doc["effective"]["session"]["max_iterations"] = "lots"  # the checksum no longer holds
    fsio.atomic_write_json(layout.hook_config, doc)
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 300
    doc["values"]["session"]["max_iterations"] = "lots"  # and a stored value the key rejects falls back to the default
    fsio.atomic_write_json(layout.hook_config, doc)
    values, problem = hook_values.for_hook(layout, {})
    assert values["session"]["max_iterations"] == settings.defaults()["session"]["max_iterations"]


def test_for_hook_fresh_copy_derives_relations_once(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 10\n")
    values, problem = hook_values.for_hook(layout, {})  # compiles
    again, _ = hook_values.for_hook(layout, {})  # reads the fresh copy as it is
    assert problem is None and values == again
    assert again["session"]["iteration_warn_at"] == 8  # 80% of a lowered cap, as config.load says
    assert again["session"] == config.load(layout.project, {}).session


def test_for_hook_compiles_again_a_copy_written_by_another_version(layout):
    write_toml(layout.project, "[session]\nmax_iterations = 300\n")
    hook_values.for_hook(layout, {})
    doc = present(fsio.read_json(layout.hook_config))
    doc["schema_version"] = hookconfig.VERSION - 1
    doc["checksum"] = 0  # an older release's checksum: not this version's
    fsio.atomic_write_json(layout.hook_config, doc)
    values, problem = hook_values.for_hook(layout, {})
    assert problem is None and values["session"]["max_iterations"] == 300
    again = present(fsio.read_json(layout.hook_config))
    assert again["schema_version"] == hookconfig.VERSION and again["checksum"] == hookconfig.checksum(
        again["effective"]
    )
