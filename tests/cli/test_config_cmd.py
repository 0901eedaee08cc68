"""`cocoplus config show|example` and what a bad cocoplus.toml does to commands."""

from __future__ import annotations

import json
import os

import pytest

from cocoplus.core import keys
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.support.trusting import trust_project


def write_toml(project_dir: str, text: str) -> None:
    with open(os.path.join(project_dir, "cocoplus.toml"), "w") as fh:
        fh.write(text)


def test_config_show_json_origins(cli, project, monkeypatch):
    write_toml(project.project, "[session]\nbudget_limit = 12.5\nmax_iterations = 250\n")
    monkeypatch.setenv("COCOPLUS_SESSION_MAX_ITERATIONS", "300")
    monkeypatch.setenv("JARVIS_SUPERVISION_STALL_THRESHOLD_S", "60")
    code, out, err = cli("config", "show", "--json", cwd=project.project)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["file"] == project.config and doc["files"] == [project.config]
    vals = doc["values"]
    assert set(vals) == {k.dotted for k in keys.KEYS}
    assert vals["session.budget_limit"] == {
        "value": 12.5,
        "origin": "file",
        "file": project.config,
        "needs_trust": False,
        "ignored": None,
    }
    assert vals["session.max_iterations"] == {
        "value": 300,
        "origin": "env COCOPLUS_SESSION_MAX_ITERATIONS",
        "file": None,
        "needs_trust": False,
        "ignored": None,
    }
    assert vals["session.iteration_warn_at"] == {
        "value": 160,
        "origin": "default",
        "file": None,
        "needs_trust": False,
        "ignored": None,
    }
    assert vals["chat.default_effort"] == {
        "value": "medium",
        "origin": "default",
        "file": None,
        "needs_trust": False,
        "ignored": None,
    }
    assert vals["supervision.stall_threshold_s"] == {
        "value": 60.0,
        "origin": "env JARVIS_SUPERVISION_STALL_THRESHOLD_S",
        "file": None,
        "needs_trust": False,
        "ignored": None,
    }
    assert vals["supervision.restore_ttl_s"] == {
        "value": 900.0,
        "origin": "default",
        "file": None,
        "needs_trust": False,
        "ignored": None,
    }


def test_config_show_text_is_toml_with_where_each_value_came_from(cli, project, monkeypatch):
    import tomllib

    write_toml(
        project.project,
        '[ctx]\nenabled = false\n[session]\nbudget_enforcement = "off"\n'
        '[accounts.local]\nkind = "command"\ncommand = ["my-agent", '
        '"{model}"]\n[pricing."m-1.5"]\ninput = 1\noutput = 2\n',
    )
    trust_project(project)  # an account's command takes effect from a trusted file only
    monkeypatch.setenv("JARVIS_SUPERVISION_RESTORE_TTL_S", "120")
    code, out, err = cli("config", "show", cwd=project.project)
    assert code == 0, err
    lines = out.splitlines()

    def line(start: str) -> str:
        return next(ln for ln in lines if ln.startswith(start))

    assert line("enabled = ").split("#") == [line("enabled = ").split("#")[0], " cocoplus.toml"]
    assert line("enabled = ").startswith("enabled = false ")  # TOML, not Python's False
    assert line("budget_enforcement = ").startswith('budget_enforcement = "off" ') and line(
        "budget_enforcement"
    ).endswith("# cocoplus.toml")
    assert line("max_iterations = ").startswith("max_iterations = 200 ") and line("max_iterations").endswith(
        "# default"
    )
    assert line("restore_ttl_s = ").startswith("restore_ttl_s = 120.0 ")
    assert line("restore_ttl_s").endswith("# env JARVIS_SUPERVISION_RESTORE_TTL_S")
    for dotted in (
        "supervision.stall_watchdog_interval_s",
        "supervision.stall_threshold_s",
        "supervision.stall_cooldown_s",
        "supervision.stall_watchdog_startup_delay_s",
    ):
        assert line(dotted.split(".")[1] + " = ").endswith("# default")
    assert line("[accounts.local]").endswith("# cocoplus.toml") and line('[pricing."m-1.5"]').endswith(
        "# cocoplus.toml"
    )
    assert "True" not in out and "'" not in out
    # The whole output is TOML that reads back as the effective configuration.
    shown = tomllib.loads(out)
    from cocoplus import config

    cfg = config.load(project.project)
    for k in keys.KEYS:
        assert shown[k.section][k.name] == cfg.get(k.dotted), k.dotted
    assert shown["accounts"] == cfg.accounts and shown["pricing"] == cfg.pricing


def test_config_show_names_the_variable_of_a_bad_seed_value(cli, project, monkeypatch):
    monkeypatch.setenv("JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S", "often")
    code, out, err = cli("config", "show", cwd=project.project)
    assert code == 1 and out == ""
    assert_no_traceback(out, err)
    assert err.splitlines()[0] == (
        "cocoplus: error: environment JARVIS_SUPERVISION_STALL_WATCHDOG_INTERVAL_S: "
        '[supervision] stall_watchdog_interval_s: expected a number <= 86400, got "often"'
    )


def test_supervisor_run_refuses_a_bad_seed_value(project):
    r = run_cli_subprocess("supervisor", "run", cwd=project.project, env={"JARVIS_SUPERVISION_RESTORE_TTL_S": "-5"})
    assert r.code == 1
    assert_no_traceback(r.out, r.err)
    assert r.err.startswith(
        "cocoplus: error: environment JARVIS_SUPERVISION_RESTORE_TTL_S: [supervision] restore_ttl_s: "
        "expected a number >= 0"
    )


def test_config_show_without_a_project_uses_the_working_directory(cli, tmp_path):
    code, out, err = cli("config", "show", "--json", cwd=tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["file"] is None
    assert all(v["origin"] == "default" for v in doc["values"].values())


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[session]\nmax_iterations = 'lots'\n", "max_iterations"),
        ("[session]\nmax_iterations = 0\n", "max_iterations"),
        ("[session\n", "not valid TOML"),
        ("[sessions]\nx = 1\n", "unknown section"),
        ("[session]\nmax_iteration = 5\n", "unknown key"),
        ("[session]\nmax_iterations = 100\niteration_warn_at = 101\n", "iteration_warn_at"),
    ],
)
@pytest.mark.parametrize("argv", [("config", "show"), ("config", "show", "--json"), ("init",)])
def test_bad_toml_is_one_line_naming_the_file(cli, project_dir, text, needle, argv):
    write_toml(project_dir, text)
    code, out, err = cli(*argv, cwd=project_dir)
    assert code == 1
    assert_no_traceback(out, err)
    errors = [ln for ln in err.splitlines() if ln.startswith("cocoplus: error:")]
    assert len(errors) == 1, err
    assert "cocoplus.toml" in errors[0] and needle in errors[0]
    assert out == ""
    if argv == ("init",):
        assert not os.path.exists(os.path.join(project_dir, ".cocoplus"))


def test_lots_of_iterations_is_one_line_naming_file_key_expected_and_found(cli, project):
    write_toml(project.project, '[session]\nmax_iterations = "lots"\n')
    code, out, err = cli("config", "show", cwd=project.project)
    assert code == 1
    assert err.splitlines() == [
        'cocoplus: error: cocoplus.toml: [session] max_iterations: expected an integer >= 1 and <= 1000000, got "lots"'
    ]


def test_bad_toml_in_a_real_process(project_dir):
    write_toml(project_dir, "[session]\nbudget_limit = -1\n")
    r = run_cli_subprocess("config", "show", cwd=project_dir)
    assert r.code == 1
    assert_no_traceback(r.out, r.err)
    assert r.err.startswith("cocoplus: error: cocoplus.toml: [session] budget_limit: expected a number >= 0")


def test_bad_env_override_is_one_line(cli, project, monkeypatch):
    monkeypatch.setenv("COCOPLUS_SESSION_MAX_ITERATIONS", "many")
    code, out, err = cli("config", "show", cwd=project.project)
    assert code == 1 and "COCOPLUS_SESSION_MAX_ITERATIONS" in err
    assert_no_traceback(out, err)


def test_bad_toml_does_not_block_the_kill_switch(cli, project):
    write_toml(project.project, "[session\n")
    code, out, err = cli("session", "stop", "--reason", "config is broken", cwd=project.project)
    assert code == 0, err
    assert os.path.exists(project.agent_stop)
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1 and "cocoplus.toml" in err


def test_config_example_is_valid_toml_for_every_key(cli, tmp_path):
    code, out, err = cli("config", "example", cwd=tmp_path)
    assert code == 0
    import tomllib

    data = tomllib.loads(out)
    for k in keys.KEYS:
        if k.user_only:  # the user's own file only (`[inbox]`): never in a project's example
            assert k.section not in data or k.name not in data[k.section]
            continue
        assert data[k.section][k.name] == k.default
    assert (
        "# an integer >= 1 and <= 1000000; environment COCOPLUS_SESSION_MAX_ITERATIONS\nmax_iterations = 200\n" in out
    )
    assert "# a number >= 0 and <= 604800; environment JARVIS_SUPERVISION_RESTORE_TTL_S\nrestore_ttl_s = 900.0\n" in out
