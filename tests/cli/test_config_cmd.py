"""`cocoplus config show|example` and what a bad cocoplus.toml does to commands."""

from __future__ import annotations

import json
import os

import pytest

from cocoplus.core import settings
from tests.conftest import assert_no_traceback, run_cli_subprocess


def write_toml(project_dir: str, text: str) -> None:
    with open(os.path.join(project_dir, "cocoplus.toml"), "w") as fh:
        fh.write(text)


def test_config_show_json_origins(cli, project, monkeypatch):
    write_toml(project.project, "[session]\nbudget_limit = 12.5\nmax_iterations = 250\n")
    monkeypatch.setenv("COCOPLUS_SESSION_MAX_ITERATIONS", "300")
    code, out, err = cli("config", "show", "--json", cwd=project.project)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["file"] == project.config
    vals = doc["values"]
    assert set(vals) == {k.dotted for k in settings.KEYS}
    assert vals["session.budget_limit"] == {"value": 12.5, "origin": "file"}
    assert vals["session.max_iterations"] == {"value": 300, "origin": "env COCOPLUS_SESSION_MAX_ITERATIONS"}
    assert vals["session.iteration_warn_at"] == {"value": 160, "origin": "default"}
    assert vals["chat.default_effort"] == {"value": "medium", "origin": "default"}


def test_config_show_text(cli, project):
    write_toml(project.project, "[ctx]\nenabled = false\n")
    code, out, err = cli("config", "show", cwd=project.project)
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if "ctx.enabled" in ln)
    assert "False" in line and "file" in line
    assert "session.max_iterations" in out and "default" in out


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
    for k in settings.KEYS:
        assert data[k.section][k.name] == k.default
