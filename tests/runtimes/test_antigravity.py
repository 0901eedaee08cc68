"""The Antigravity CLI (`agy`): its adapter, driven with fixture payloads built from its documented hook protocol.

No `agy` can be installed here (its installer is a script from Google's site),
so these run the real hook command exactly as agy's plugin runs it: the
payloads of tests/fixtures/hook-payloads/antigravity-*.json on stdin (the
sources of each are in tests/fixtures/hook-payloads/antigravity-SOURCES.md and
docs/runtimes.md), in a directory that is not the project (agy's plugin hooks
are global: the project comes from the payload's `workspacePaths`), and the
answers are held to agy's shapes (tests/fixtures/hook-payloads/outputs/
antigravity-*.json).  agy refuses a tool whose PreToolUse printed no
well-formed decision, so every case checks there is one.  The end-to-end
kill switch runs through tests/support/agy_standin.py, a stand-in `agy`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.install import doctor, plugin_hooks
from cocoplus.install import hooks as install
from cocoplus.runtimes import registry
from cocoplus.session import killswitch, permissions, steering, stops
from cocoplus.session import registry as sessions_registry
from tests.hook.helpers import expected, fixture, hook_argv, hook_env, run_hook, same_shape
from tests.support import agy_standin, vouched
from tests.support.trusting import trust_project
from tests.support.typed import present
from tests.support.waiting import wait_until

agy = registry.get("antigravity")
CONVERSATION = fixture("antigravity-stop.json")["conversationId"]
PRE = ("--timeout", "10", "--count-before-call")  # as the plugin's PreToolUse command passes them


def payload(name: str, project: Layout | None, **extra: Any) -> dict[str, Any]:
    return {**fixture(name), "workspacePaths": [project.project] if project else [], **extra}


def command_line(line: str, project: Layout) -> dict[str, Any]:
    return payload(
        "antigravity-pretooluse-run-command.json",
        project,
        toolCall={"name": "run_command", "args": {"CommandLine": line, "Cwd": project.project}},
    )


def hook(project: Layout | None, event: str, data: Any, *extra: str, env: dict[str, str] | None = None) -> Any:
    """The hook as agy's plugin runs it: not in the project, no cocoplus variable; the answer, which must be one."""
    args = PRE if event == "PreToolUse" else ("--timeout", "10")
    r = run_hook(
        None,
        event,
        data,
        "antigravity",
        *args,
        *extra,
        cwd=os.path.dirname(project.project) if project else "/",
        env=env or hook_env(None),
    )
    assert r.code == 0, r
    assert r.out.strip(), f"agy refuses a tool on a missing answer, and every event gets one: {r}"
    return r.json


def write_config(project: Layout, text: str) -> None:
    with open(project.config, "a") as fh:
        fh.write(text)
    trust_project(project)


# -- the hook, through the fixtures ---------------------------------------------------------------------------------


def test_no_stop_a_call_passes_with_agys_neutral_answer(project: Layout) -> None:
    out = hook(project, "PreToolUse", payload("antigravity-pretooluse-view-file.json", project))
    same_shape(out, expected("antigravity-pretooluse-allow.json"))
    (rec,) = sessions_registry.list_sessions(project)[0]
    assert (rec["runtime"], rec["alias"], rec["runtime_session_id"]) == ("antigravity", "ag1", CONVERSATION)
    assert json.loads(Path(project.iteration_budget).read_text())["consumed"] == 1  # counted before the call


def test_outside_a_cocoplus_project_every_event_passes(tmp_path: Path) -> None:
    elsewhere = {**fixture("antigravity-pretooluse-run-command.json"), "workspacePaths": [str(tmp_path)]}
    assert hook(None, "PreToolUse", elsewhere) == {"decision": "allow"}
    assert hook(None, "Stop", {**fixture("antigravity-stop.json"), "workspacePaths": [str(tmp_path)]}) == {}
    assert hook(None, "PreInvocation", {**fixture("antigravity-preinvocation.json"), "workspacePaths": []}) == {}


@pytest.mark.parametrize(
    "name", ["antigravity-pretooluse-run-command.json", "antigravity-pretooluse-write-to-file.json"]
)
def test_session_stop_denies_in_agys_shape(project: Layout, name: str) -> None:
    killswitch.stop(project, "alice", "deploy in progress")
    out = hook(project, "PreToolUse", payload(name, project))
    same_shape(out, expected("antigravity-pretooluse-deny.json"))
    assert "alice" in out["reason"] and "deploy in progress" in out["reason"]
    assert "cocoplus session resume" in out["reason"]


def test_a_stop_of_one_session_denies_that_conversation_only(project: Layout) -> None:
    hook(project, "PreToolUse", payload("antigravity-pretooluse-view-file.json", project))  # registers it
    (rec,) = sessions_registry.list_sessions(project)[0]
    stops.stop(project, rec, "bob", "this one loops")
    assert hook(project, "PreToolUse", payload("antigravity-pretooluse-view-file.json", project))["decision"] == "deny"
    other = payload("antigravity-pretooluse-view-file.json", project, conversationId="another-conversation")
    assert hook(project, "PreToolUse", other) == {"decision": "allow"}


def test_a_pending_steer_reaches_the_model_from_pre_invocation_once(project: Layout) -> None:
    steering.steer(project, "the release branch is frozen; changes go to feature/next.")
    out = hook(project, "PreInvocation", payload("antigravity-preinvocation.json", project))
    want = expected("antigravity-preinvocation-inject.json")
    assert set(out) == set(want) and len(out["injectSteps"]) == 1
    same_shape(out["injectSteps"][0], want["injectSteps"][0])
    assert "feature/next" in out["injectSteps"][0]["userMessage"]
    assert hook(project, "PreInvocation", payload("antigravity-preinvocation.json", project)) == {}


def test_the_iteration_cap_stops_the_agent_before_the_call_past_it(project: Layout) -> None:
    with open(project.config, "w") as fh:
        fh.write("[session]\nmax_iterations = 2\niteration_warn_at = 1\n")
    view = payload("antigravity-pretooluse-view-file.json", project)
    assert hook(project, "PreToolUse", view) == {"decision": "allow"}
    assert hook(project, "PreToolUse", view) == {"decision": "allow"}  # the call that reaches the cap runs
    assert killswitch.stop_present(project)  # and the agent is stopped for the next
    third = hook(project, "PreToolUse", view)
    same_shape(third, expected("antigravity-pretooluse-deny.json"))
    assert "max_iterations" in third["reason"] or "iteration" in third["reason"]


def test_a_permission_without_a_rule_is_put_to_the_person_watching(project: Layout) -> None:
    out = hook(project, "PreToolUse", command_line("git push origin main", project))
    same_shape(out, expected("antigravity-pretooluse-force-ask.json"))
    assert "Bash(git push origin main)" in out["reason"]
    # A tool agy does not review itself passes: only its review prompt is forced.
    assert hook(project, "PreToolUse", payload("antigravity-pretooluse-view-file.json", project)) == {
        "decision": "allow"
    }


def test_a_permission_rule_decides_before_agy_asks(project: Layout) -> None:
    write_config(project, '[permissions]\nallow = ["Bash(pytest *)"]\ndeny = ["Bash(git push *)"]\n')
    assert hook(project, "PreToolUse", command_line("pytest -q", project)) == {"decision": "allow"}
    denied = hook(project, "PreToolUse", command_line("git push origin main", project))
    same_shape(denied, expected("antigravity-pretooluse-deny.json"))
    assert "git push" in denied["reason"]


@pytest.mark.parametrize("data", [b"not json at all", b"[1, 2, 3]", b"", b'{"toolCall": '])
def test_a_malformed_payload_gets_a_well_formed_deny(project: Layout, data: bytes) -> None:
    out = hook(project, "PreToolUse", data)
    same_shape(out, expected("antigravity-pretooluse-deny.json"))
    assert "cannot be read" in out["reason"]


def test_turn_end_and_post_tool_answer_an_empty_object(project: Layout) -> None:
    assert hook(project, "PostToolUse", payload("antigravity-posttooluse.json", project)) == {}
    assert hook(project, "Stop", payload("antigravity-stop.json", project)) == {}
    (rec,) = sessions_registry.list_sessions(project)[0]
    assert rec["attention"] == "pending"


def _failing(project: Layout, event: str, data: dict[str, Any], patch: str, timeout: str = "10") -> Any:
    """The hook's entry point in its own process, after `patch` broke a part of cocoplus, as agy's plugin runs it."""
    code = f"import sys, time\nfrom cocoplus.hook import entry, runner, tools, turns\n{patch}\nsys.exit(entry.main())\n"
    extra = ("--count-before-call",) if event == "PreToolUse" else ()
    r = subprocess.run(
        [sys.executable, "-c", code, event, "--runtime", "antigravity", "--timeout", timeout, *extra],
        input=json.dumps(data).encode(),
        capture_output=True,
        env=hook_env(None),
        cwd="/",
        timeout=120,
    )
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def test_an_exception_in_the_hook_denies_the_tool_and_answers_other_events(project: Layout) -> None:
    boom = "def _boom(*a, **k):\n    raise RuntimeError('disk went away (injected)')\n"
    out = _failing(
        project,
        "PreToolUse",
        payload("antigravity-pretooluse-view-file.json", project),
        boom + "tools.on_pre_tool = _boom",
    )
    same_shape(out, expected("antigravity-pretooluse-deny.json"))
    assert "disk went away" in out["reason"] and "fails closed" in out["reason"]
    assert _failing(project, "Stop", payload("antigravity-stop.json", project), boom + "turns.on_stop = _boom") == {}


def test_a_hook_that_runs_out_of_time_denies_before_agy_kills_it(project: Layout) -> None:
    hang = "def _hang(*a, **k):\n    time.sleep(60)\ntools.on_pre_tool = _hang"
    out = _failing(project, "PreToolUse", payload("antigravity-pretooluse-view-file.json", project), hang, "4")
    same_shape(out, expected("antigravity-pretooluse-deny.json"))
    assert "did not finish within its 4 s timeout" in out["reason"]


def test_launch_refuses_with_the_reason() -> None:
    with pytest.raises(ValueError, match="reports no workspace"):
        agy.launch_argv(["agy"], "task", None, None)


# -- install, as agy loads it ---------------------------------------------------------------------------------------


def _project_files(project: Layout) -> set[str]:
    out: set[str] = set()
    for root, dirs, names in os.walk(project.project):
        dirs[:] = [d for d in dirs if d != ".cocoplus"]
        out.update(os.path.relpath(os.path.join(root, n), project.project) for n in names)
    return out


def test_install_writes_the_plugin_in_agys_layout_and_says_the_command(project: Layout, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no agy
    before = _project_files(project)
    result = install.install("antigravity", project.project, timeout_s=12)
    source = Path(plugin_hooks.directory(agy))
    assert result["commit"] == [] and result["do_not_commit"] == [] and _project_files(project) == before
    assert any(f"agy plugin install {source}" in t for t in result["todo"])
    assert json.loads((source / "plugin.json").read_text())["name"] == "cocoplus"
    doc = json.loads((source / "hooks.json").read_text())
    assert set(doc) == {"cocoplus"} and doc["cocoplus"]["enabled"] is True
    parsed = agy_standin.parse_hooks(source / "hooks.json")  # as agy parses it: a named hook, events inside
    assert set(parsed) == {"PreToolUse", "PreInvocation", "Stop"}
    pre = doc["cocoplus"]["PreToolUse"][0]
    assert pre["matcher"] == "*" and pre["hooks"][0]["type"] == "command"
    assert isinstance(pre["hooks"][0]["timeout"], int) and pre["hooks"][0]["timeout"] >= 12
    assert "--runtime antigravity" in pre["hooks"][0]["command"] and "--count-before-call" in pre["hooks"][0]["command"]
    assert "matcher" not in doc["cocoplus"]["Stop"][0] and "command" in doc["cocoplus"]["Stop"][0]
    again = install.install("antigravity", project.project, timeout_s=12)
    assert not any("written" in c for c in again["changes"])
    install.uninstall("antigravity", project.project)
    assert not source.exists()


@pytest.fixture
def agy_on_path(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    agy_standin.install(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir


def standin(*args: str) -> dict[str, Any]:
    r = subprocess.run(["agy", *args], capture_output=True, text=True, timeout=120, env={**hook_env(None)})
    assert r.returncode == 0, r
    return dict(json.loads(r.stdout))


def test_install_runs_agys_plugin_command_and_doctor_sees_it_loaded(project: Layout, agy_on_path: Path) -> None:
    result = install.install("antigravity", project.project)
    assert any("plugin installed: `agy plugin install" in c for c in result["changes"]), result
    where = agy.plugin_active(os.environ)
    assert where is not None and where.endswith("/.gemini/config/plugins/cocoplus")
    assert install.install("antigravity", project.project)["changed"] is False  # idempotent: nothing to do
    standin("run", "--workspace", project.project, "--tool", "view_file", "--arg", "AbsolutePath=/etc/hostname")
    info = plugin_hooks.loaded(agy)
    assert info["listed"] is True and "loaded 1 named hooks from 1 hooks.json file(s)" in str(info["log"])
    assert plugin_hooks.notes(agy) == []
    info = doctor.doctor(project)["runtimes"]["antigravity"]
    assert info["wired"] and not info["outdated"] and not info["missing"] and info["plugin_notes"] == []
    assert info["settings"] == os.path.join(str(where), "hooks.json") and "twice" not in info
    removed = install.uninstall("antigravity", project.project)
    assert any("agy plugin uninstall cocoplus" in c for c in removed["changes"]), removed
    assert agy.plugin_active(os.environ) is None
    assert "is not installed" in plugin_hooks.notes(agy)[0]


def test_kill_switch_holds_end_to_end_through_the_stand_in_agy(project: Layout, agy_on_path: Path) -> None:
    """The plugin `install antigravity` wrote, installed with (stand-in) `agy plugin install`, run by (stand-in) agy
    the way agy's documents describe: a tool call runs; after `session stop` it is denied, with the reason, and does
    not run; after `session resume` it runs again."""
    write_config(project, '[permissions]\nallow = ["Bash(touch *)"]\n')
    install.install("antigravity", project.project)
    project_dir = Path(project.project)

    def touch(name: str) -> dict[str, Any]:
        return standin(
            "run", "--workspace", project.project, "--conversation", CONVERSATION, "--tool", "run_command",
            "--arg", f"CommandLine=touch {name}", "--arg", f"Cwd={project.project}",
        )  # fmt: skip

    first = touch("before-stop")
    assert first["outcome"] == "ran", first
    assert (project_dir / "before-stop").exists()
    killswitch.stop(project, "alice", "incident review")
    second = touch("during-stop")
    assert second["outcome"] == "denied" and "incident review" in second["reason"], second
    assert not (project_dir / "during-stop").exists()
    killswitch.resume(project, "alice")
    third = touch("after-resume")
    assert third["outcome"] == "ran", third
    assert (project_dir / "after-resume").exists()


def test_with_no_cocoplus_for_the_user_the_plugin_still_answers_and_denies(project: Layout, agy_on_path: Path) -> None:
    """The pointer gone and no `cocoplus` on PATH: the plugin's own command prints agy's deny, never nothing."""
    install.install("antigravity", project.project)
    os.unlink(install.launcher.pointer_path())
    doc = json.loads((Path(plugin_hooks.directory(agy)) / "hooks.json").read_text())
    command = doc["cocoplus"]["PreToolUse"][0]["hooks"][0]["command"]
    r = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload("antigravity-pretooluse-view-file.json", project)).encode(),
        capture_output=True,
        env={**hook_env(None), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    out = json.loads(r.stdout)
    same_shape(out, expected("antigravity-pretooluse-deny.json"))
    assert "agy plugin uninstall cocoplus" in out["reason"]
    stop = doc["cocoplus"]["Stop"][0]["command"]
    r = subprocess.run(
        ["sh", "-c", stop],
        input=b"{}",
        capture_output=True,
        env={**hook_env(None), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert json.loads(r.stdout) == {}


def test_hook_argv_is_the_plugins() -> None:
    assert hook_argv("PreToolUse", "antigravity")[-2:] == ["--runtime", "antigravity"]
    assert present(agy.deny_tool("PreToolUse", "x")) == {"decision": "deny", "reason": "x"}


def test_a_hook_installed_without_runtime_recognises_agy_from_its_payload(project: Layout) -> None:
    killswitch.stop(project, "carol", "shape test")
    r = run_hook(None, "PreToolUse", payload("antigravity-pretooluse-run-command.json", project), None, cwd="/")
    assert r.code == 0, r
    same_shape(r.json, expected("antigravity-pretooluse-deny.json"))


def test_every_timeout_fits_the_configured_waits(project: Layout, monkeypatch) -> None:
    """The pre-tool hook is agy's permission prompt: its timeout fits `[permissions] wait_s` (a headless session's
    call waits there), the turn end's fits the hold; each command carries its timeout."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    Path(project.project, "cocoplus.toml").write_text(
        "[hooks]\ntimeout_s = 7\n[supervision]\nhold_turn_end_s = 50\n[permissions]\nwait_s = 900\n"
    )
    install.install("antigravity", project.project)
    doc = json.loads((Path(plugin_hooks.directory(agy)) / "hooks.json").read_text())["cocoplus"]
    for event, handler, want in (
        ("PreToolUse", doc["PreToolUse"][0]["hooks"][0], 907),
        ("PreInvocation", doc["PreInvocation"][0], 7),
        ("Stop", doc["Stop"][0], 57),
    ):
        assert handler["timeout"] == want and f"--timeout {want}" in handler["command"], event
        assert handler["command"] == install.hook_command("antigravity", event, project.project)


def test_install_gemini_says_in_one_line_that_consumer_accounts_moved_to_agy(project: Layout) -> None:
    said = [t for t in install.install("gemini", project.project)["todo"] if "Antigravity CLI" in t]
    assert len(said) == 1 and "cocoplus install antigravity" in said[0] and "\n" not in said[0]


def test_uninstall_twice_changes_nothing_the_second_time(project: Layout, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    install.install("antigravity", project.project)
    assert install.uninstall("antigravity", project.project)["changed"]
    again = install.uninstall("antigravity", project.project)
    assert not again["changed"] and again["changes"] == []


def test_launch_antigravity_refuses_with_the_reason(project: Layout, cli, agy_on_path: Path) -> None:
    code, _out, err = cli("launch", "antigravity", "fix the tests", cwd=project.project)
    assert code != 0 and "reports no workspace" in err and "Traceback" not in err, err


def test_a_headless_sessions_call_with_no_rule_waits_for_an_answer(project: Layout) -> None:
    """As with Claude Code's PermissionRequest: a worker no one watches waits in the permission routing, here at
    agy's PreToolUse (it has no permission event), and the operator's answer decides the call."""
    write_config(project, "[permissions]\nwait_s = 30\n")
    vouched.sealed_worker(project, "w1")
    argv = [*vouched.prefix("worker", project.root, "w1"), *hook_argv("PreToolUse", "antigravity")]
    argv += ["--timeout", "40", "--count-before-call"]
    sent = Path(project.project).parent / "payload.json"
    sent.write_text(json.dumps(command_line("git push origin main", project)))
    with open(sent, "rb") as stdin:
        proc = subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hook_env(None), cwd="/"
        )
    try:
        (req,) = wait_until(lambda: permissions.requests(project), timeout=30)
        assert req["tool"] == "Bash" and req["rule"] == "Bash(git push origin main)"
        permissions.answer(project, req["id"], "allow", principal="operator", by="tester")
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out) == {"decision": "allow"}
