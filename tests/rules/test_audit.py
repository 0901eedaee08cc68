"""The audit log records what ran, and an approval never claims what did not happen (issue: permission rules that
mean what they say, item 5), with the real permission hook below a process cocoplus vouches for as the worker's
runner (tests/support/vouched.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.ops import permissions as ops
from cocoplus.session import permissions
from tests.hook.helpers import hook_argv, hook_env, run_hook
from tests.support import vouched
from tests.support.waiting import wait_until


def _payload(layout: Layout, command: str) -> dict[str, Any]:
    return {
        "session_id": "s-audit", "hook_event_name": "PermissionRequest", "cwd": layout.project,
        "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": command},
    }  # fmt: skip


def _as_worker(layout: Layout, allow: list[str]) -> list[str]:
    vouched.sealed_worker(layout, "w1", allow=allow)
    return vouched.prefix("worker", layout.root, "w1")


def _decisions(layout: Layout) -> list[dict[str, Any]]:
    path = Path(layout.permission_log)
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_a_rule_decision_records_the_whole_command_and_its_principal(project: Layout) -> None:
    command = 'echo "a)" b'
    r = run_hook(project, "PermissionRequest", _payload(project, command), cwd=project.project,
                 env=hook_env(project, COCOPLUS_WORKER="w1"), below=_as_worker(project, ["Bash(echo *)"]))  # fmt: skip
    assert r.json is not None and r.json["hookSpecificOutput"]["decision"]["behavior"] == "allow", r
    [entry] = _decisions(project)
    assert (entry["call"], entry["input"]) == ('Bash(echo "a)" b)', 'echo "a)" b')  # not just `Bash`
    assert (entry["rule"], entry["where"], entry["principal"], entry["how"]) == (
        "Bash(echo *)", "launch --allow", "operator", "rule",
    )  # fmt: skip


def test_a_logged_command_is_inert(project: Layout) -> None:
    with open(project.config, "a") as fh:
        fh.write('[permissions]\ndeny = ["Bash(rm *)"]\n')
    from tests.support.trusting import trust_project

    trust_project(project)
    command = "rm -rf x \x1b]0;owned\x07 " + "y" * 400
    r = run_hook(project, "PermissionRequest", _payload(project, command), cwd=project.project,
                 env=hook_env(project, COCOPLUS_WORKER="w1"), below=_as_worker(project, ["Bash"]))  # fmt: skip
    assert r.json is not None and r.json["hookSpecificOutput"]["decision"]["behavior"] == "deny", r
    [entry] = _decisions(project)
    assert "\x1b" not in entry["input"] and "\\x1b]0;owned\\x07" in entry["input"]
    assert len(entry["input"]) <= permissions.MAX_SHOWN and entry["input"].endswith("...")
    assert entry["rule"] == "Bash(rm *)" and entry["behavior"] == "denied"


def test_a_rules_allow_is_refused_when_the_audit_log_cannot_be_written(project: Layout) -> None:
    os.makedirs(project.permission_log)  # the log's place is taken: no line can be appended
    r = run_hook(project, "PermissionRequest", _payload(project, "echo hi"), cwd=project.project,
                 env=hook_env(project, COCOPLUS_WORKER="w1"), below=_as_worker(project, ["Bash(echo *)"]))  # fmt: skip
    decision = r.json["hookSpecificOutput"]["decision"] if r.json else None
    assert decision is not None and decision["behavior"] == "deny", r
    assert "audit log cannot be written" in decision["message"]


def test_an_approval_whose_log_line_cannot_be_written_says_the_call_did_not_go_ahead(project: Layout) -> None:
    req = permissions.open_request(
        project, None, runtime="claude", tool="Bash", tool_input={"command": "make deploy"}, wait_s=60, worker="w1"
    )
    os.makedirs(project.permission_log)
    with pytest.raises(Exception) as err:
        ops.approve(project, req["id"])
    assert "does not go ahead" in str(err.value)
    assert permissions.read_request(project, req["id"])["state"] == "pending"  # type: ignore[index]


def test_a_request_whose_hook_was_killed_is_gone_and_cannot_be_approved(project: Layout) -> None:
    with open(project.config, "a") as fh:
        fh.write("[permissions]\nwait_s = 120\n")
    argv = [*_as_worker(project, []), *hook_argv("PermissionRequest", "claude", "--timeout", "200")]
    child = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project.project,
        env=hook_env(project, COCOPLUS_WORKER="w1"), start_new_session=True,
    )  # fmt: skip
    assert child.stdin is not None
    child.stdin.write(json.dumps(_payload(project, "make deploy")).encode())
    child.stdin.close()
    req = wait_until(lambda: permissions.requests(project), timeout=30)[0]
    assert req["state"] == "pending"
    os.killpg(child.pid, signal.SIGKILL)  # the runtime killed its hook
    child.wait(timeout=10)
    wait_until(lambda: permissions.requests(project, state="gone"), timeout=10)
    out = ops.approve(project, req["id"])
    assert out["gone"] and out["state"] == "gone" and "nothing was allowed" in out["message"], out
    assert [d["behavior"] for d in _decisions(project)] == ["gone"]
    time.sleep(0.1)
    assert permissions.read_request(project, req["id"])["state"] == "gone"  # type: ignore[index]
