"""Every endpoint through FastAPI's TestClient (the real app, lifespan included), against the same
files and functions the CLI uses; validation failures; the token, Host and Origin checks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.server.conftest import AUTH, PORT, TOKEN, wait_until, write_backend

# watchdog warns when a directory is created while its parent's watch is being added; harmless here.
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

AUTO = "/api/v1/session-os/main-brain/autonomous"
SCOPE = "/api/v1/coding-sessions/supervision-scope"
CONV = "/api/v1/projects/master-agent"


def no_trace(resp: Any) -> None:
    text = resp.text
    assert "Traceback" not in text and 'File "' not in text, text


def error_of(resp: Any, status: int) -> str:
    assert resp.status_code == status, (resp.status_code, resp.text)
    no_trace(resp)
    body = resp.json()
    assert isinstance(body.get("error"), str) and body["error"], body
    return body["error"]


def cli_json(cli: Any, *argv: str, cwd: str) -> Any:
    r = cli(*argv, "--json", cwd=cwd)
    assert r.code == 0, r.err
    return json.loads(r.out)


def state_bytes(layout: Layout) -> bytes | None:
    try:
        return Path(layout.supervision_state).read_bytes()
    except FileNotFoundError:
        return None


# -- safety ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": "Bearer "},
    ],
    ids=["none", "wrong", "longer", "shorter", "basic", "no-scheme", "empty"],
)
def test_writes_need_the_token(client: Any, sproject: Layout, headers: dict[str, str]) -> None:
    for method, path, body in (
        ("POST", AUTO, {"enabled": True}),
        ("PATCH", "/api/v1/coding-sessions/cc1/supervision", {"excluded": True}),
        ("POST", SCOPE, {"mode": "all"}),
        ("POST", "/api/v1/session/stop", {}),
        ("POST", "/api/v1/session/resume", {}),
        ("POST", "/api/v1/session/steer", {"text": "x"}),
        ("POST", f"{CONV}/messages", {"text": "x"}),
        ("PATCH", CONV, {"modelOverride": "m"}),
        ("POST", f"{CONV}/retry", {}),
    ):
        r = client.request(method, path, json=body, headers=headers)
        msg = error_of(r, 401)
        assert TOKEN not in msg and TOKEN not in r.text
        assert r.headers["www-authenticate"].startswith("Bearer")
    # nothing changed
    assert client.get(AUTO).json()["autonomous"] is None
    assert not os.path.lexists(sproject.agent_stop)
    assert not os.path.lexists(sproject.steer)
    assert not os.path.lexists(sproject.ledger("master-agent"))


def test_reads_need_no_token(client: Any) -> None:
    for path in (
        AUTO,
        "/api/v1/coding-sessions",
        "/api/v1/session",
        CONV,
        "/api/v1/session-os/main-brain/rounds",
        "/api/v1/openapi.json",
        "/",
    ):
        assert client.get(path).status_code == 200, path


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        f"evil.example:{PORT}",
        "127.0.0.1",
        f"127.0.0.1:{PORT + 1}",
        f"localhost:{PORT}.evil.example",
        f"0.0.0.0:{PORT}",
        f"127.0.0.2:{PORT}",
        "",
    ],
)
def test_foreign_host_is_refused_before_routing(client: Any, sproject: Layout, host: str) -> None:
    r = client.get(AUTO, headers={"Host": host})
    assert "Host" in error_of(r, 403)
    r = client.post(AUTO, json={"enabled": True}, headers={"Host": host, **AUTH})
    error_of(r, 403)
    r = client.get("/no/such/route", headers={"Host": host})
    error_of(r, 403)  # refused before routing (not 404)
    assert client.get(AUTO).json()["autonomous"] is None


@pytest.mark.parametrize("host", [f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"])
def test_loopback_hosts_are_accepted(client: Any, host: str) -> None:
    assert client.get(AUTO, headers={"Host": host}).status_code == 200


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        f"http://evil.example:{PORT}",
        "null",
        f"https://127.0.0.1:{PORT}",
        f"http://127.0.0.1:{PORT + 1}",
        "http://localhost",
    ],
)
def test_foreign_origin_is_refused_even_with_the_token(client: Any, origin: str) -> None:
    r = client.post(AUTO, json={"enabled": True}, headers={"Origin": origin, **AUTH})
    assert "origin" in error_of(r, 403)
    error_of(client.get(AUTO, headers={"Origin": origin}), 403)
    assert client.get(AUTO).json()["autonomous"] is None


@pytest.mark.parametrize("origin", [f"http://127.0.0.1:{PORT}", f"http://localhost:{PORT}", f"http://[::1]:{PORT}"])
def test_own_origin_is_accepted(client: Any, origin: str) -> None:
    r = client.post(AUTO, json={"enabled": True}, headers={"Origin": origin, **AUTH})
    assert r.status_code == 200, r.text


def test_csrf_simple_requests_are_refused(client: Any, sproject: Layout) -> None:
    # a cross-site form or text/plain post carries no Authorization header: 401 before anything else
    r = client.post(
        "/api/v1/session/stop", content=b"reason=x", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    error_of(r, 401)
    # even with the token, the body must be JSON
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        r = client.post("/api/v1/session/stop", content=b'{"reason": "x"}', headers={"Content-Type": ctype, **AUTH})
        assert "JSON" in error_of(r, 415)
    r = client.post("/api/v1/session/stop", content=b'{"reason": "x"}', headers=AUTH)  # no content type
    error_of(r, 415)
    assert not os.path.lexists(sproject.agent_stop)


def test_no_cors_and_safe_headers(client: Any) -> None:
    r = client.options(
        AUTO,
        headers={
            "Origin": f"http://127.0.0.1:{PORT}",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization",
        },
    )
    assert not any(k.lower().startswith("access-control-") for k in r.headers)
    for path in (AUTO, "/"):
        r = client.get(path, headers={"Origin": f"http://127.0.0.1:{PORT}"})
        assert not any(k.lower().startswith("access-control-") for k in r.headers)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert "script-src 'self'" in client.get("/").headers["content-security-policy"]


def test_token_file_is_private(sproject: Layout) -> None:
    from cocoplus.server import security

    old = os.umask(0)
    try:
        tok = security.new_token(sproject)
    finally:
        os.umask(old)
    st = os.stat(sproject.server_token)
    assert st.st_mode & 0o777 == 0o600
    assert security.read_token(sproject) == tok and len(tok) >= 40
    assert security.new_token(sproject) != tok  # new for every run
    security.remove_token(sproject, tok)  # not ours any more: kept
    assert os.path.exists(sproject.server_token)


# -- supervision ---------------------------------------------------------------------------------------


def test_autonomous_get_and_post_match_the_cli(client: Any, sproject: Layout, cli: Any) -> None:
    r = client.get(AUTO)
    assert r.status_code == 200
    assert r.json()["autonomous"] is None
    assert r.json()["supervisor"] == {"running": False, "pid": None, "watching": None}

    r = client.post(AUTO, json={"enabled": True, "task_hint": "watch the PR to merge", "max_turns": 7}, headers=AUTH)
    assert r.status_code == 200, r.text
    auto = r.json()["autonomous"]
    assert (auto["enabled"], auto["turns_used"], auto["max_turns"], auto["task_hint"]) == (
        True,
        0,
        7,
        "watch the PR to merge",
    )
    assert client.get(AUTO).json()["autonomous"]["task_hint"] == "watch the PR to merge"
    cli_auto = cli_json(cli, "supervision", "status", cwd=sproject.project)["autonomous"]
    assert (cli_auto["enabled"], cli_auto["max_turns"], cli_auto["task_hint"]) == (True, 7, "watch the PR to merge")

    r = client.post(AUTO, json={"enabled": False, "summary": "merged"}, headers=AUTH)
    assert r.status_code == 200
    auto = r.json()["autonomous"]
    assert auto["enabled"] is False and auto["finish_summary"] == "merged"
    assert cli_json(cli, "supervision", "status", cwd=sproject.project)["autonomous"]["enabled"] is False

    # the seed's minimal bodies
    assert client.post(AUTO, json={"enabled": True}, headers=AUTH).json()["autonomous"]["max_turns"] == 60
    assert client.post(AUTO, json={"enabled": False}, headers=AUTH).json()["autonomous"]["enabled"] is False


def test_autonomous_enable_with_scope_and_the_watcher(client: Any, sproject: Layout) -> None:
    r = client.post(
        AUTO,
        json={"enabled": True, "scope_mode": "only", "scope_session_ids": ["cx1"], "start_supervisor": True},
        headers=AUTH,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["autonomous"]["scope"]["mode"] == "only"
    assert [e["alias"] for e in body["autonomous"]["scope"]["only"]] == ["cx1"]
    assert body["supervisor"]["running"] is True and body["supervisor"]["started"] is True
    # a second enable does not start a second watcher
    again = client.post(AUTO, json={"enabled": True, "start_supervisor": True}, headers=AUTH).json()["supervisor"]
    assert again["started"] is False and again["pid"] == body["supervisor"]["pid"]


@pytest.mark.parametrize(
    "body, where",
    [
        ({}, "enabled"),
        ({"enabled": "true"}, "enabled"),
        ({"enabled": 1}, "enabled"),
        ({"enabled": True, "max_turns": 0}, "max_turns"),
        ({"enabled": True, "max_turns": 10001}, "max_turns"),
        ({"enabled": True, "max_turns": "5"}, "max_turns"),
        ({"enabled": True, "max_turns": 2.5}, "max_turns"),
        ({"enabled": True, "task_hint": "x" * 4001}, "task_hint"),
        ({"enabled": True, "task_hint": 5}, "task_hint"),
        ({"enabled": True, "scope_mode": "invert"}, "scope_mode"),
        ({"enabled": True, "surprise": 1}, "surprise"),
        ([True], "body"),
        ("on", "body"),
    ],
)
def test_autonomous_validation(client: Any, sproject: Layout, body: Any, where: str) -> None:
    r = client.post(AUTO, json=body, headers=AUTH)
    msg = error_of(r, 422)
    assert where in msg
    assert r.json()["errors"][0]["loc"]
    assert state_bytes(sproject) is None


def test_malformed_json_is_a_clear_4xx(client: Any, sproject: Layout) -> None:
    r = client.post(AUTO, content=b'{"enabled": tru', headers={"Content-Type": "application/json", **AUTH})
    assert "JSON" in error_of(r, 422) or "json" in r.text
    r = client.post(AUTO, content=b"\xff\xfe", headers={"Content-Type": "application/json", **AUTH})
    assert 400 <= r.status_code < 500
    no_trace(r)
    assert state_bytes(sproject) is None


def test_enable_with_an_unknown_scope_id_writes_nothing(client: Any, sproject: Layout) -> None:
    r = client.post(AUTO, json={"enabled": True, "scope_mode": "only", "scope_session_ids": ["nope"]}, headers=AUTH)
    assert "at least one valid session id" in error_of(r, 400)
    assert client.get(AUTO).json()["autonomous"] is None


def test_rounds_endpoint(client: Any, sproject: Layout) -> None:
    from cocoplus.supervision import rounds

    assert client.get("/api/v1/session-os/main-brain/rounds").json() == {"current": None, "rounds": []}
    client.post(AUTO, json={"enabled": True}, headers=AUTH)
    started = rounds.start_round(
        sproject,
        [{"session": None, "alias": None, "kind": "initial", "value": None, "message": "test"}],
        source="initial",
    )
    assert started["started"]
    body = client.get("/api/v1/session-os/main-brain/rounds?limit=5").json()
    assert body["current"]["number"] == 1
    assert body["rounds"][-1]["event"] == "round_started"
    assert client.get(AUTO).json()["autonomous"]["turns_used"] == 1
    error_of(client.get("/api/v1/session-os/main-brain/rounds?limit=0"), 422)


# -- sessions -------------------------------------------------------------------------------------------


def test_session_list(client: Any, sproject: Layout, cli: Any) -> None:
    body = client.get("/api/v1/coding-sessions").json()
    rows = body["sessions"]
    assert [r["alias"] for r in rows] == ["cc1", "cx1", "cc2"]
    assert {r["runtime"] for r in rows} == {"claude", "codex"}
    assert all(r["state"] == "running" and r["excluded"] is False and r["id"].startswith("cs_") for r in rows)
    assert body["scope"]["mode"] == "all"
    cli_rows = cli_json(cli, "sessions", "list", cwd=sproject.project)["sessions"]
    assert [(r["id"], r["alias"], r["state"]) for r in cli_rows] == [(r["id"], r["alias"], r["state"]) for r in rows]


def test_exclude_by_alias_and_by_full_id(client: Any, sproject: Layout, cli: Any) -> None:
    r = client.patch("/api/v1/coding-sessions/cc1/supervision", json={"excluded": True}, headers=AUTH)
    assert r.status_code == 200, r.text
    cc1 = r.json()
    assert (
        cc1["alias"] == "cc1" and cc1["excluded"] is True and cc1["state"] == "running" and cc1["runtime"] == "claude"
    )
    listed = {s["alias"]: s["excluded"] for s in cli_json(cli, "sessions", "list", cwd=sproject.project)["sessions"]}
    assert listed == {"cc1": True, "cx1": False, "cc2": False}
    r = client.patch(f"/api/v1/coding-sessions/{cc1['id']}/supervision", json={"excluded": False}, headers=AUTH)
    assert r.json()["excluded"] is False
    # the runtime's own id works too
    r = client.patch(
        f"/api/v1/coding-sessions/{cc1['runtime_session_id']}/supervision", json={"excluded": True}, headers=AUTH
    )
    assert r.json()["id"] == cc1["id"] and r.json()["excluded"] is True


@pytest.mark.parametrize("ref", ["nope", "cc9", "cs_0000", "..", "...", "%2E%2E%2Fetc", "a" * 200])
def test_exclude_unknown_session_is_404(client: Any, sproject: Layout, ref: str) -> None:
    before = state_bytes(sproject)
    r = client.patch(f"/api/v1/coding-sessions/{ref}/supervision", json={"excluded": True}, headers=AUTH)
    assert r.status_code in (404, 405) if ref in ("..", "...") else r.status_code == 404, r.text
    no_trace(r)
    assert state_bytes(sproject) == before


@pytest.mark.parametrize("body", [{}, {"excluded": "yes"}, {"excluded": None}, {"excluded": True, "x": 1}])
def test_exclude_validation(client: Any, body: Any) -> None:
    error_of(client.patch("/api/v1/coding-sessions/cc1/supervision", json=body, headers=AUTH), 422)


def test_scope_modes(client: Any, sproject: Layout) -> None:
    r = client.post(SCOPE, json={"mode": "only", "session_ids": ["cc1", "nope"]}, headers=AUTH)
    assert r.status_code == 200, r.text
    view = r.json()
    assert view["mode"] == "only" and view["supervised"] == ["cc1"] and view["unknown_ids"] == ["nope"]
    r = client.post(SCOPE, json={"mode": "except", "session_ids": ["cx1"]}, headers=AUTH)
    assert r.json()["mode"] == "except" and r.json()["supervised"] == ["cc1", "cc2"]
    r = client.post(SCOPE, json={"mode": "invert", "session_ids": ["cc1", "cx1"]}, headers=AUTH)
    assert sorted(r.json()["supervised"]) == ["cc2", "cx1"]
    excluded = {s["alias"]: s["excluded"] for s in client.get("/api/v1/coding-sessions").json()["sessions"]}
    assert excluded == {"cc1": True, "cx1": False, "cc2": False}
    r = client.post(SCOPE, json={"mode": "all"}, headers=AUTH)
    assert r.json()["mode"] == "all" and r.json()["excluded"] == []


@pytest.mark.parametrize("mode", ["only", "except"])
@pytest.mark.parametrize("ids", [[], ["nope"], ["nope", "cc99"]])
def test_scope_only_except_need_a_valid_id_and_write_nothing(
    client: Any, sproject: Layout, mode: str, ids: list[str]
) -> None:
    client.patch("/api/v1/coding-sessions/cx1/supervision", json={"excluded": True}, headers=AUTH)
    before = state_bytes(sproject)
    r = client.post(SCOPE, json={"mode": mode, "session_ids": ids}, headers=AUTH)
    msg = error_of(r, 400)
    assert "at least one valid session id" in msg and "nothing was changed" in msg
    assert state_bytes(sproject) == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"mode": "bogus"},
        {"mode": "only", "session_ids": "cc1"},
        {"mode": "only", "session_ids": [1]},
        {"mode": "all", "extra": True},
        {"mode": "only", "session_ids": [""]},
    ],
)
def test_scope_validation(client: Any, sproject: Layout, body: Any) -> None:
    error_of(client.post(SCOPE, json=body, headers=AUTH), 422)
    assert state_bytes(sproject) is None


# -- session controls -----------------------------------------------------------------------------------


def test_session_status_is_the_cli_report(client: Any, sproject: Layout, cli: Any) -> None:
    api = client.get("/api/v1/session").json()
    cli_rep = cli_json(cli, "session", "status", cwd=sproject.project)
    assert set(api) == set(cli_rep)
    for key in ("project", "kill_switch", "steer", "iteration_budget", "queue"):
        assert api[key] == cli_rep[key], key
    assert api["sessions"]["count"] == 3


def test_stop_resume_steer(client: Any, sproject: Layout, cli: Any) -> None:
    r = client.post("/api/v1/session/stop", json={"reason": "release freeze", "operator": "alice"}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert os.path.exists(sproject.agent_stop)
    ks = client.get("/api/v1/session").json()["kill_switch"]
    assert (ks["present"], ks["operator"], ks["reason"]) == (True, "alice", "release freeze")
    assert cli_json(cli, "session", "status", cwd=sproject.project)["kill_switch"]["reason"] == "release freeze"

    r = client.post("/api/v1/session/resume", json={}, headers=AUTH)
    assert r.status_code == 200 and r.json()["resumed"] is True
    assert r.json()["iteration_budget_exhausted"] is False
    assert not os.path.exists(sproject.agent_stop)
    assert client.get("/api/v1/session").json()["status"]["state"] == "running"

    # no body at all: the CLI's defaults (operator = login name, here COCOPLUS_OPERATOR)
    r = client.post("/api/v1/session/stop", headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["stop"]["operator"] == "tester" and r.json()["stop"]["reason"] == "stopped by operator"
    assert client.post("/api/v1/session/resume", headers=AUTH).status_code == 200

    r = client.post("/api/v1/session/steer", json={"text": "use the staging database"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["appended"] is False
    r = client.post("/api/v1/session/steer", json={"text": "and skip the slow tests"}, headers=AUTH)
    assert r.json()["appended"] is True
    assert Path(sproject.steer).read_text() == "use the staging database\n\nand skip the slow tests\n"
    st = client.get("/api/v1/session").json()["steer"]
    assert st["pending"] and "staging" in st["text"]


@pytest.mark.parametrize(
    "path, body",
    [
        ("/api/v1/session/steer", {}),
        ("/api/v1/session/steer", {"text": ""}),
        ("/api/v1/session/steer", {"text": "   \n "}),
        ("/api/v1/session/steer", {"text": "x" * (64 * 1024 + 1)}),
        ("/api/v1/session/steer", {"text": ["a"]}),
        ("/api/v1/session/stop", {"reason": ""}),
        ("/api/v1/session/stop", {"reason": "  "}),
        ("/api/v1/session/stop", {"operator": "x" * 101}),
        ("/api/v1/session/stop", {"force": True}),
        ("/api/v1/session/resume", {"reset_budget": "yes"}),
    ],
)
def test_session_control_validation(client: Any, sproject: Layout, path: str, body: Any) -> None:
    error_of(client.post(path, json=body, headers=AUTH), 422)
    assert not os.path.lexists(sproject.agent_stop) and not os.path.lexists(sproject.steer)


# -- master agent ---------------------------------------------------------------------------------------


def test_send_returns_at_once_then_the_reply_lands(client: Any, sproject: Layout, cli: Any) -> None:
    t0 = time.monotonic()
    r = client.post(f"{CONV}/messages", json={"text": "status of the migration?"}, headers=AUTH)
    elapsed = time.monotonic() - t0
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) >= {"message", "task", "masterReplyState"}
    assert body["masterReplyState"] in ("queued", "running")
    assert body["message"]["role"] == "user" and body["message"]["text"] == "status of the migration?"
    assert elapsed < 1.0, elapsed  # the backend takes 1 s
    view = client.get(CONV).json()
    assert view["thinking"] is True and view["masterReplyState"] in ("queued", "running")
    assert [m["text"] for m in view["messages"]] == ["status of the migration?"]

    def replied() -> Any:
        # The worker appends the reply, then marks the task succeeded: wait for both.
        v = client.get(CONV).json()
        return v if any(m["role"] == "assistant" for m in v["messages"]) and not v["thinking"] else None

    view = wait_until(replied, timeout=30)
    reply = view["messages"][-1]
    assert reply["role"] == "assistant" and reply["text"].startswith("echo model=model-a effort=medium")
    assert view["thinking"] is False and view["masterReplyState"] == "idle" and view["failed"] is None
    log = cli_json(cli, "chat", "log", cwd=sproject.project)
    assert [m["id"] for m in log["messages"]] == [m["id"] for m in view["messages"]]


@pytest.mark.slow
def test_failure_and_retry(client: Any, sproject: Layout) -> None:
    write_backend(sproject, 0.1, fail=True)
    r = client.post(f"{CONV}/messages", json={"text": "hello"}, headers=AUTH)
    assert r.status_code == 200
    task = r.json()["task"]["id"]
    view = wait_until(lambda: (v := client.get(CONV).json())["failed"] and v, timeout=30)
    assert (
        view["failed"]["id"] == task and "exited 3" in view["failed"]["error"] and view["masterReplyState"] == "failed"
    )
    assert view["thinking"] is False
    # retry of a task that is not failed / does not exist
    error_of(client.post(f"{CONV}/retry", json={"task_id": "t_nope"}, headers=AUTH), 404)
    error_of(client.post(f"{CONV}/retry", json={"task_id": "../x"}, headers=AUTH), 400)
    write_backend(sproject, 0.1)
    r = client.post(f"{CONV}/retry", json={"task_id": task}, headers=AUTH)
    assert r.status_code == 200 and r.json()["masterReplyState"] == "queued"
    view = wait_until(lambda: (v := client.get(CONV).json())["messages"][-1]["role"] == "assistant" and v, timeout=30)
    assert view["failed"] is None
    # nothing failed any more: retry without an id is 404
    error_of(client.post(f"{CONV}/retry", headers=AUTH), 404)


def test_send_without_a_controller_fails_visibly(client: Any, sproject: Layout) -> None:
    Path(sproject.config).write_text("")
    r = client.post(f"{CONV}/messages", json={"text": "anyone?"}, headers=AUTH)
    assert r.status_code == 200
    assert r.json()["masterReplyState"] == "failed" and "controller" in r.json()["task"]["error"]
    assert client.get(CONV).json()["failed"]["error"].startswith("no controller account")


@pytest.mark.slow
def test_conversation_details_and_overrides(client: Any, sproject: Layout, cli: Any) -> None:
    d = client.get(CONV).json()
    assert d["conversation"] == "master-agent"
    assert d["modelOverride"] is None and d["reasoningEffortOverride"] is None
    assert d["model"] == "model-a" and d["effort"] == "medium" and d["controller"] == "x"
    assert d["messages"] == [] and d["pending"] == [] and d["failed"] is None and d["thinking"] is False
    assert "model-a" in d["modelOptions"] and d["reasoningEffortOptions"] == ["low", "medium", "high"]

    r = client.patch(CONV, json={"modelOverride": "model-b", "reasoningEffortOverride": "high"}, headers=AUTH)
    assert r.status_code == 200, r.text
    d = r.json()
    assert (d["modelOverride"], d["reasoningEffortOverride"], d["model"], d["modelSource"], d["effort"]) == (
        "model-b",
        "high",
        "model-b",
        "conversation",
        "high",
    )
    saved = json.loads(Path(sproject.conversation_file("master-agent")).read_text())
    assert saved["modelOverride"] == "model-b" and saved["reasoningEffortOverride"] == "high"
    info = cli_json(cli, "chat", "info", cwd=sproject.project)
    assert info["modelOverride"] == "model-b" and info["reasoningEffortOverride"] == "high"
    # per conversation: another one is untouched
    other = client.get("/api/v1/projects/other-conv").json()
    assert other["modelOverride"] is None and other["model"] == "model-a"
    # null clears one, an absent key leaves the other
    d = client.patch(CONV, json={"modelOverride": None}, headers=AUTH).json()
    assert d["modelOverride"] is None and d["reasoningEffortOverride"] == "high" and d["model"] == "model-a"
    d = client.patch(CONV, json={"reasoningEffortOverride": "low"}, headers=AUTH).json()
    assert d["reasoningEffortOverride"] == "low"
    # a reply uses the override
    client.post(f"{CONV}/messages", json={"text": "which effort?"}, headers=AUTH)
    v = wait_until(lambda: (x := client.get(CONV).json())["messages"][-1]["role"] == "assistant" and x, timeout=30)
    assert "effort=low" in v["messages"][-1]["text"]


@pytest.mark.parametrize(
    "body, status",
    [
        ({}, 400),
        ({"reasoningEffortOverride": "extreme"}, 422),
        ({"modelOverride": ""}, 422),
        ({"modelOverride": "   "}, 422),
        ({"modelOverride": "m" * 201}, 422),
        ({"modelOverride": 5}, 422),
        ({"model": "x"}, 422),
    ],
)
def test_override_validation(client: Any, sproject: Layout, body: Any, status: int) -> None:
    error_of(client.patch(CONV, json=body, headers=AUTH), status)
    assert not os.path.exists(sproject.conversation_file("master-agent"))


@pytest.mark.parametrize(
    "body", [{}, {"text": ""}, {"text": "  "}, {"text": 5}, {"text": "x" * (64 * 1024 + 1)}, {"message": "hi"}]
)
def test_message_validation(client: Any, sproject: Layout, body: Any) -> None:
    error_of(client.post(f"{CONV}/messages", json=body, headers=AUTH), 422)
    assert not os.path.exists(sproject.ledger("master-agent"))


def test_multibyte_message_over_the_byte_limit_is_400(client: Any, sproject: Layout) -> None:
    r = client.post(
        f"{CONV}/messages", json={"text": "é" * 40000}, headers=AUTH
    )  # 80 KB in UTF-8, under the char limit
    assert "KiB" in error_of(r, 400)


@pytest.mark.parametrize("conv", ["..", "-x", "a%2Fb", "x" * 129, "a b"])
def test_conversation_id_allow_list(client: Any, sproject: Layout, conv: str) -> None:
    for r in (
        client.get(f"/api/v1/projects/{conv}"),
        client.post(f"/api/v1/projects/{conv}/messages", json={"text": "x"}, headers=AUTH),
    ):
        assert 400 <= r.status_code < 500, (conv, r.status_code)
        no_trace(r)
    assert not any(p.name not in ("master-agent",) for p in Path(sproject.chat_dir).glob("*") if p.is_dir())


# -- errors, OpenAPI, the page ----------------------------------------------------------------------------


def test_damaged_state_file_is_409_naming_it(client: Any, sproject: Layout) -> None:
    os.makedirs(sproject.supervision_dir, exist_ok=True)
    Path(sproject.supervision_state).write_text("{not json")
    msg = error_of(client.get(AUTO), 409)
    assert "state.json" in msg


def test_unexpected_error_is_one_line_and_logged(
    client: Any, sproject: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cocoplus.ops import sessions

    def boom(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(sessions, "list_sessions", boom)
    r = client.get("/api/v1/coding-sessions")
    msg = error_of(r, 500)
    assert "RuntimeError" in msg and "secret internals" not in r.text and "cocoplus.log" in msg
    assert "secret internals" in Path(sproject.cli_log).read_text()


def test_unknown_route_and_method(client: Any) -> None:
    error_of(client.get("/api/v1/nothing"), 404)
    error_of(client.delete(AUTO, headers=AUTH), 405)


def test_openapi_lists_every_endpoint(client: Any) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    paths = spec["paths"]
    expected = {
        AUTO: {"get", "post"},
        "/api/v1/session-os/main-brain/rounds": {"get"},
        "/api/v1/coding-sessions": {"get"},
        "/api/v1/coding-sessions/{session_id}/supervision": {"patch"},
        SCOPE: {"post"},
        "/api/v1/session": {"get"},
        "/api/v1/session/stop": {"post"},
        "/api/v1/session/resume": {"post"},
        "/api/v1/session/steer": {"post"},
        "/api/v1/projects/{conversation}": {"get", "patch"},
        "/api/v1/projects/{conversation}/messages": {"post"},
        "/api/v1/projects/{conversation}/retry": {"post"},
        "/api/v1/events": {"get"},
    }
    for path, methods in expected.items():
        assert set(paths[path]) == methods, path
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    assert paths[AUTO]["post"]["security"] == [{"HTTPBearer": []}]
    assert "security" not in paths[AUTO]["get"]


@pytest.mark.slow
def test_the_page_and_its_assets(client: Any) -> None:
    html = client.get("/")
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    for needle in (
        'id="sup-switch"',
        'id="sessions"',
        'id="stop-btn"',
        'id="steer-text"',
        'id="menu-btn"',
        "Reasoning effort",
        "Session info",
        "Refresh",
    ):
        assert needle in html.text
    assert (
        '<script src="/app.js"' in html.text and "<script>" not in html.text
    )  # no inline script: CSP script-src 'self'
    js = client.get("/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"] and "EventSource" in js.text
    assert "innerHTML" not in js.text  # text goes in with textContent only
    assert client.get("/app.css").status_code == 200


def test_conversation_limit(client: Any, sproject: Layout) -> None:
    from cocoplus.chat import store

    for i in range(5):
        store.append_message(sproject, "master-agent", "user", f"m{i}")
    d = client.get(CONV + "?limit=2").json()
    assert [m["text"] for m in d["messages"]] == ["m3", "m4"] and d["messagesTotal"] == 5
    assert len(client.get(CONV).json()["messages"]) == 5
    error_of(client.get(CONV + "?limit=0"), 422)


def test_oversized_bodies_are_refused_before_parsing(client: Any, sproject: Layout) -> None:
    big = b'{"text": "' + b"x" * (1024 * 1024) + b'"}'
    r = client.post("/api/v1/session/steer", content=big, headers={"Content-Type": "application/json", **AUTH})
    assert "KiB" in error_of(r, 413)

    def chunks() -> Any:  # no Content-Length: chunked
        yield b'{"text": "'
        for _ in range(20):
            yield b"y" * 65536
        yield b'"}'

    r = client.post("/api/v1/session/steer", content=chunks(), headers={"Content-Type": "application/json", **AUTH})
    error_of(r, 413)

    def small() -> Any:
        yield b'{"text": '
        yield b'"chunked but small"}'

    r = client.post("/api/v1/session/steer", content=small(), headers={"Content-Type": "application/json", **AUTH})
    assert r.status_code == 200, r.text
    assert Path(sproject.steer).read_text() == "chunked but small\n"


# -- what the OpenAPI document says is what the server takes --------------------------------------------------


@pytest.mark.parametrize(
    "method, path, allow",
    [
        ("DELETE", AUTO, "GET, POST"),
        ("PUT", "/api/v1/workers", "GET, POST"),
        ("DELETE", CONV, "GET, PATCH"),
        ("PUT", "/api/v1/session", "GET"),
        ("GET", "/api/v1/session/stop", "POST"),
    ],
)
def test_a_405_names_every_method_the_path_takes(client: Any, method: str, path: str, allow: str) -> None:
    r = client.request(method, path, headers=AUTH)
    assert r.status_code == 405 and r.headers["allow"] == allow, (r.status_code, r.headers.get("allow"))
    error_of(r, 405)


def test_an_integer_may_be_written_with_a_zero_fraction(client: Any, sproject: Layout) -> None:
    """JSON Schema's integer is a number whose fraction is zero: 30.0 is the integer 30."""
    for refused in (30.5, "30", True):
        error_of(client.post(AUTO, json={"enabled": True, "max_turns": refused}, headers=AUTH), 422)
    assert state_bytes(sproject) is None
    r = client.post(AUTO, json={"enabled": True, "max_turns": 30.0}, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["autonomous"]["max_turns"] == 30


@pytest.mark.parametrize("at", ["tomorrow", "+²m", "25:00", " 15:00", "+1234567h", "2026-13-01T00:00:00Z"])
def test_resume_at_takes_the_documented_forms_only(client: Any, sproject: Layout, at: str) -> None:
    r = client.post("/api/v1/coding-sessions/cc1/resume-at", json={"at": at}, headers=AUTH)
    assert "body.at" in error_of(r, 422)
