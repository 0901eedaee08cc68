"""Every hook ends within the timeout it was installed with, whatever the configuration says since.

Each test runs `cocoplus install`, changes a setting afterwards (a longer
turn-end hold, a longer permission wait, a longer `[hooks] timeout_s`), and
runs the command `install` wrote, through `sh -c` as the runtimes do, in a
real process.  The test waits for it as its runtime would: until the
timeout written beside the command, after which the runtime kills the hook
and whatever it would have said is lost.  The hook must have answered by then.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.hook import timeouts
from cocoplus.install import doctor, plugin_hooks
from cocoplus.install import hooks as runtimes
from cocoplus.runtimes import registry
from cocoplus.runtimes.protocol import Adapter
from cocoplus.session import holds, permissions
from cocoplus.session import registry as sessions
from cocoplus.supervision import autonomy
from tests.hardening.support import held_by_stopped_process
from tests.hook.helpers import fixture, hook_env
from tests.support import agy_standin, vouched
from tests.support.typed import present
from tests.support.waiting import wait_until

HOOK_LOCKS = ("iteration-budget", "progress", "steps", "sessions", "signals", "steer", "kill-switch",
              "cost", "spend", "budget-state", "stage", "task-queue", "holds")  # fmt: skip


def configure(layout: Layout, text: str) -> None:
    Path(layout.project, "cocoplus.toml").write_text(text)


def installed(layout: Layout, runtime: str, event: str) -> tuple[str, float]:
    """The command `install` wrote for `event` and the timeout its runtime applies to it (seconds)."""
    adapter = registry.get(runtime)
    if adapter.PLUGIN is not None:  # its hooks are the plugin's that the runtime installed
        entries = plugin_hooks.installed_hooks(adapter)[event]
    else:
        entries = json.loads(Path(runtimes.settings_path(adapter, layout.project)).read_text())["hooks"][event]
    (handler,) = [h for h in doctor._handlers(entries) if runtimes.is_ours(h["command"])]
    told = timeouts.in_command(handler["command"])
    written = adapter.entry_timeout(handler)
    assert told is not None
    if written is not None:  # what the command tells the hook is what the runtime applies (Cursor writes none)
        assert told == written, (told, written)
    return handler["command"], told


def payload(layout: Layout, runtime: str, name: str, **extra: Any) -> dict[str, Any]:
    p = fixture(name)
    p.pop("transcript_path", None)
    p["cwd"] = layout.project
    if "workspace_roots" in p:
        p["workspace_roots"] = [layout.project]
    if "workspacePaths" in p:
        p["workspacePaths"] = [layout.project]
    p.pop("transcriptPath", None)
    p.update(extra)
    return p


class AsTheRuntimeRuns:
    """The installed command in a real process (`sh -c`, in the project, the payload on stdin), started now."""

    def __init__(
        self, layout: Layout, runtime: str, command: str, data: dict[str, Any], below: list[str] | None = None,
        **env: str,
    ) -> None:  # fmt: skip
        own = registry.get(runtime).PROJECT_ENV
        environ = hook_env(None, **({own[0]: layout.project} if own else {}), **env)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [*(below or []), "sh", "-c", command], cwd=layout.project, env=environ,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(data).encode())
        self.proc.stdin.close()
        self.proc.stdin = None  # sent: `communicate` only reads from now on

    def answer(self, timeout_s: float) -> tuple[int, str, str]:
        """What the hook said, if it ended before its runtime kills it (`timeout_s` after it started)."""
        try:
            out, err = self.proc.communicate(timeout=max(0.0, self.started + timeout_s - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            pytest.fail(f"the hook was still running when its runtime would have killed it ({timeout_s:g} s)")
        return self.proc.returncode, out.decode(), err.decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def steps(layout: Layout, event: str) -> list[dict[str, Any]]:
    return [s for s in jsonl.read_jsonl(layout.steps).records if s["event"] == event]


def hook_log(layout: Layout) -> str:
    return Path(layout.hook_log).read_text() if Path(layout.hook_log).exists() else ""


def turn_end(adapter: Adapter) -> str:
    return next(e for e, k, m in adapter.EVENTS if k == "stop" and m is not None)


HOLDERS = [a.NAME for a in registry.ordered() if any(k == "stop" and m is not None for _e, k, m in a.EVENTS)]


@pytest.mark.slow
@pytest.mark.parametrize("runtime", HOLDERS)
def test_a_hold_raised_after_install_ends_inside_the_installed_timeout(
    project: Layout, cli: Any, runtime: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = registry.get(runtime)
    if adapter.PLUGIN is not None:  # installed with its own plugin command: the stand-in agy on PATH
        monkeypatch.setenv("PATH", f"{agy_standin.install(tmp_path / 'bin').parent}:{os.environ['PATH']}")
    event = turn_end(adapter)
    configure(project, "[hooks]\ntimeout_s = 4\n[supervision]\nhold_turn_end_s = 2\n")
    assert cli("install", runtime, cwd=project.project).code == 0
    command, timeout_s = installed(project, runtime, event)
    assert timeout_s == 6 and "--timeout 6" in command  # [hooks] timeout_s + [supervision] hold_turn_end_s
    configure(project, "[hooks]\ntimeout_s = 4\n[supervision]\nhold_turn_end_s = 600\n")  # raised, not installed again
    autonomy.enable(project, task_hint="keep going")
    data = payload(project, runtime, f"{runtime}-{event.lower()}.json")
    cs = sessions.cs_id_for(present(adapter.session_id(data)))
    with Lock(project.lock("supervisor")):  # a watcher to wake the brain: the turn end is held
        hook = AsTheRuntimeRuns(project, runtime, command, data)
        try:
            wait_until(lambda: holds.current(project, cs) is not None or hook.proc.poll() is not None, timeout=30)
            assert holds.current(project, cs) is not None, "the turn end was not held"
            code, out, err = hook.answer(timeout_s)
        finally:
            hook.kill()
    assert code == 0 and err == "", (code, out, err)
    assert out.strip() in ("", "{}"), out  # released: the turn ends normally
    assert [s["outcome"] for s in steps(project, "hold_ended")] == ["released: no decision within 2s"]
    assert holds.current(project, cs) is None
    assert (
        "[supervision] hold_turn_end_s is 600 s, but this hook was installed with a timeout of 6 s: "
        "it waits at most 2 s" in hook_log(project)
    )
    # doctor says the setting needs `install` again, and install writes a timeout that fits.
    info = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"][runtime]
    assert info["upgrade_available"] and event in info["outdated"]
    (note,) = info["timeouts"]
    assert f"{event}: 6 s written, 604 s for [hooks] timeout_s + [supervision] hold_turn_end_s now" in note
    assert (
        "the turn-end hold lasts at most 2 s, not 600 s" in note and f"run `cocoplus install {runtime}` again" in note
    )
    assert f"run `cocoplus install {runtime}` again" in cli("doctor", cwd=project.project).out
    assert cli("install", runtime, cwd=project.project).code == 0
    assert installed(project, runtime, event)[1] == 604
    info = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"][runtime]
    assert info["timeouts"] == [] and not info["outdated"] and not info["upgrade_available"]


@pytest.mark.slow
def test_a_permission_wait_raised_after_install_ends_inside_the_installed_timeout(project: Layout, cli: Any) -> None:
    configure(project, "[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 2\n")
    assert cli("install", "claude", cwd=project.project).code == 0
    command, timeout_s = installed(project, "claude", "PermissionRequest")
    assert timeout_s == 6  # [hooks] timeout_s + [permissions] wait_s
    configure(project, "[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 600\n")
    data = payload(project, "claude", "claude-permissionrequest-bash.json")
    vouched.sealed_worker(project, "w1")  # a worker no one watches: its runtime runs below its runner
    hook = AsTheRuntimeRuns(project, "claude", command, data, vouched.prefix("worker", project.root, "w1"))
    try:
        (req,) = wait_until(lambda: permissions.requests(project), timeout=30)
        assert req["wait_s"] == 2  # the request says how long it really waits
        code, out, err = hook.answer(timeout_s)
    finally:
        hook.kill()
    assert code == 0 and err == "", (code, out, err)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "no one answered within 2 s" in decision["message"]
    assert present(permissions.read_request(project, req["id"]))["state"] == "expired"
    assert (
        "[permissions] wait_s is 600 s, but this hook was installed with a timeout of 6 s: it waits at most 2 s"
        in hook_log(project)
    )
    (note,) = json.loads(cli("doctor", "--json", cwd=project.project).out)["runtimes"]["claude"]["timeouts"]
    assert "PermissionRequest: 6 s written, 604 s for [hooks] timeout_s + [permissions] wait_s now" in note
    assert "a permission request waits at most 2 s for an answer, not 600 s" in note


def test_an_answer_within_the_wait_still_decides(project: Layout, cli: Any) -> None:
    """The wait is cut to fit, not skipped: an answer inside it lets the tool run."""
    configure(project, "[hooks]\ntimeout_s = 4\n[permissions]\nwait_s = 20\n")
    assert cli("install", "claude", cwd=project.project).code == 0
    command, timeout_s = installed(project, "claude", "PermissionRequest")
    assert timeout_s == 24
    vouched.sealed_worker(project, "w1")
    hook = AsTheRuntimeRuns(
        project,
        "claude",
        command,
        payload(project, "claude", "claude-permissionrequest-bash.json"),
        vouched.prefix("worker", project.root, "w1"),
    )
    try:
        (req,) = wait_until(lambda: permissions.requests(project), timeout=30)
        permissions.answer(project, req["id"], "allow", principal="operator", by="tester")
        code, out, _err = hook.answer(timeout_s)
    finally:
        hook.kill()
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["decision"]["behavior"] == "allow"


@pytest.mark.slow
def test_with_every_lock_held_each_event_answers_inside_a_timeout_shorter_than_the_configured_one(
    project: Layout, cli: Any
) -> None:
    """Installed with `[hooks] timeout_s = 6`, then set to 60: the hooks keep to the 6 s they were installed with."""
    configure(project, "[hooks]\ntimeout_s = 6\n[supervision]\nhold_turn_end_s = 0\n")
    assert cli("install", "claude", cwd=project.project).code == 0
    configure(project, "[hooks]\ntimeout_s = 60\nlock_timeout_s = 60\n[supervision]\nhold_turn_end_s = 0\n")
    events = {
        "PreToolUse": "claude-pretooluse-bash.json",  # it counts the call (no PostToolUse is installed)
        "UserPromptSubmit": "claude-userpromptsubmit.json",
        "SessionStart": "claude-sessionstart-startup.json",
        "Stop": "claude-stop.json",
        "Notification": "claude-notification-idle.json",
    }
    with held_by_stopped_process(*(project.lock(n) for n in HOOK_LOCKS)):
        hooks = {}
        for event, name in events.items():
            command, timeout_s = installed(project, "claude", event)
            assert timeout_s == 6
            hooks[event] = (AsTheRuntimeRuns(project, "claude", command, payload(project, "claude", name)), timeout_s)
        try:
            for event, (hook, timeout_s) in hooks.items():
                code, _out, err = hook.answer(timeout_s)
                assert code == 0 and err == "", (event, err)
        finally:
            for hook, _t in hooks.values():
                hook.kill()
