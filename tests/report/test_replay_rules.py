"""`cocoplus replay RUN --policy FILE` with `[permissions]` rules (issue 34, "Replay a policy": "for rules, which
requests would have been allowed, asked or denied"): the permission requests a worker's real permission hook decided
by rules, below a process cocoplus vouches for as its runner (tests/support/vouched.py), decided again by the real
CLI with the same rule engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout
from tests.conftest import assert_no_traceback, run_cli_subprocess
from tests.hook.helpers import hook_env, run_hook
from tests.support import vouched
from tests.support.trusting import trust_project

GRANT = "Bash(pytest *)"  # the worker's `launch --allow`
DENY = "Bash(rm *)"  # the project's [permissions] deny
# (command, what the live hook decided by the rules)
CALLS = [
    ("pytest -q", "allow"),
    ("rm -rf build", "deny"),
    ("FOO=1 /bin/rm  -fr build", "deny"),  # a deny rule holds against every spelling
    ("pytest tests/unit -x", "allow"),
    ("true && rm -r -f build", "deny"),
    ("pytest -k 'not slow'", "allow"),
]
SECRET = "sk-ant-api03-" + "Q" * 40


def _record(layout: Layout, calls: list[tuple[str, str]]) -> None:
    with open(layout.config, "a") as fh:
        fh.write(f'[permissions]\ndeny = ["{DENY}"]\n')
    trust_project(layout)
    vouched.sealed_worker(layout, "w1", allow=[GRANT])
    below = vouched.prefix("worker", layout.root, "w1")
    for command, expected in calls:
        payload = {
            "session_id": "s-replay-rules", "hook_event_name": "PermissionRequest", "cwd": layout.project,
            "permission_mode": "default", "tool_name": "Bash", "tool_input": {"command": command},
        }  # fmt: skip
        r = run_hook(layout, "PermissionRequest", payload, cwd=layout.project,
                     env=hook_env(layout, COCOPLUS_WORKER="w1"), below=below)  # fmt: skip
        assert r.json is not None and r.json["hookSpecificOutput"]["decision"]["behavior"] == expected, (command, r)


def _policy(tmp_path: Path, allow: list[str], deny: list[str]) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(f"[permissions]\nallow = {json.dumps(allow)}\ndeny = {json.dumps(deny)}\n")
    return str(path)


def _replay(layout: Layout, policy: str) -> dict[str, Any]:
    r = run_cli_subprocess("replay", "w1", "--policy", policy, "--json", cwd=layout.project)
    assert r.code == 0, r
    out: dict[str, Any] = json.loads(r.out)["permissions"]
    return out


def test_under_the_rules_that_decided_live_every_request_is_decided_as_the_hook_did(
    project: Layout, tmp_path: Path
) -> None:
    """Parity: the same two lists, the same engine, the same decisions, request by request."""
    _record(project, CALLS)
    perms = _replay(project, _policy(tmp_path, [GRANT], [DENY]))
    got = [(i["subject"], i["recorded"], i["recorded_by"], i["replayed"]) for i in perms["requests"]]
    assert got == [(c, d, "rule", d) for c, d in CALLS]
    assert perms["first_difference"] is None
    assert perms["counts"] == {"allow": 3, "ask": 0, "deny": 3, "not_replayed": 0}


def test_narrower_rules_ask_what_was_allowed_and_name_the_first_difference(project: Layout, tmp_path: Path) -> None:
    _record(project, CALLS)
    perms = _replay(project, _policy(tmp_path, ["Bash(pytest -q)"], []))
    got = [(i["subject"], i["replayed"]) for i in perms["requests"]]
    assert got == [
        ("pytest -q", "allow"),
        ("rm -rf build", "ask"),  # nothing denies it now, and nothing allows it
        ("FOO=1 /bin/rm  -fr build", "ask"),
        ("pytest tests/unit -x", "ask"),
        ("true && rm -r -f build", "ask"),
        ("pytest -k 'not slow'", "ask"),
    ]
    first = perms["first_difference"]
    assert (first["subject"], first["recorded"], first["replayed"]) == ("rm -rf build", "deny", "ask")
    # A chain is allowed by rules only if every command in it is: `pytest *` alone does not cover `&& rm`.
    wide = _replay(project, _policy(tmp_path, ["Bash(pytest *)", "Bash(true)"], []))
    chained = next(i for i in wide["requests"] if i["subject"].startswith("true &&"))
    assert chained["replayed"] == "ask", chained


def test_a_logged_command_that_was_cut_is_not_decided_again_and_the_report_says_why(
    project: Layout, tmp_path: Path
) -> None:
    long = "pytest " + " ".join(f"tests/t{i}.py" for i in range(60))  # longer than the log keeps
    _record(project, [(long, "allow"), ("pytest -q", "allow")])
    perms = _replay(project, _policy(tmp_path, [GRANT], []))
    cut, whole = perms["requests"]
    assert cut["replayed"] is None and "first 297 characters" in cut["why"]
    assert whole["replayed"] == "allow" and perms["counts"]["not_replayed"] == 1


def test_the_text_report_names_each_request_and_keeps_secrets_out(project: Layout, tmp_path: Path) -> None:
    _record(project, [(f"pytest -q --token {SECRET}", "allow"), ("rm -rf build", "deny")])
    policy = _policy(tmp_path, [], [])
    text = run_cli_subprocess("replay", "w1", "--policy", policy, cwd=project.project)
    js = run_cli_subprocess("replay", "w1", "--policy", policy, "--json", cwd=project.project)
    assert text.code == js.code == 0, (text, js)
    assert "permission requests under the rules: 0 allowed, 2 asked, 0 denied" in text.out
    assert "recorded deny (rule); replayed ask" in text.out
    assert SECRET not in text.out and SECRET not in js.out
    assert_no_traceback(text.err)


def test_a_rule_the_engine_cannot_read_is_one_line_naming_the_file(project: Layout, tmp_path: Path) -> None:
    _record(project, CALLS[:1])
    for body, words in (
        ("[permissions]\nallow = 'Bash'\n", "[permissions] allow must be a list of rules"),
        ('[permissions]\ndeny = ["Bash(rm *"]\n', "[permissions] deny"),
    ):
        path = tmp_path / "bad.toml"
        path.write_text(body)
        r = run_cli_subprocess("replay", "w1", "--policy", str(path), cwd=project.project)
        assert r.code == 1 and r.err.startswith(f"cocoplus: error: {path}: ") and words in r.err, r
        assert_no_traceback(r.err)
