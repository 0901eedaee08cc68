"""The read routes answered from memory (cocoplus/server/cache.py): kept while nothing changes, rebuilt as soon as a
file event, the stamp or the age says something did, whoever changed it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from cocoplus.core.paths import Layout
from cocoplus.server.cache import Cache
from tests.server.conftest import Served, wait_until

ROUTES = ("/api/v1/session", "/api/v1/coding-sessions", "/api/v1/session-os/main-brain/autonomous", "/api/v1/workers")


def get(served: Served, route: str) -> httpx.Response:
    r = httpx.get(served.url + route, timeout=10)
    assert r.status_code == 200, r.text
    return r


@pytest.mark.slow
def test_a_read_is_answered_from_memory_until_the_cli_changes_something(served: Served) -> None:
    for route in ROUTES:
        first = get(served, route)
        again = get(served, route)
        assert again.headers["X-Cocoplus-Cache"] == "hit", route
        assert again.content == first.content, route
    # A stop made by the CLI in another process is in the very next answer (the stamp sees AGENT_STOP's directory).
    env = dict(os.environ, COCOPLUS_DIR=served.layout.root)
    subprocess.run(
        [sys.executable, "-m", "cocoplus", "session", "stop", "--reason", "cache-7f3"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    r = get(served, "/api/v1/session")
    assert r.headers["X-Cocoplus-Cache"] == "built"
    assert r.json()["kill_switch"]["reason"] == "cache-7f3"
    assert get(served, "/api/v1/session").headers["X-Cocoplus-Cache"] == "hit"


@pytest.mark.slow
def test_a_tool_call_appended_by_the_hook_reaches_the_session_list(served: Served) -> None:
    """A tool call after the first is only appended to the session's call log (no directory changes): the file
    event invalidates the list."""
    from tests.hook.helpers import run_hook

    sid, cwd = "cache-session-1", served.layout.project
    assert (
        run_hook(
            served.layout,
            "SessionStart",
            {"session_id": sid, "hook_event_name": "SessionStart", "cwd": cwd, "source": "startup"},
        ).code
        == 0
    )
    payload = {
        "session_id": sid,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "true"},
        "tool_response": {},
        "cwd": cwd,
    }

    def last() -> tuple[str | None, str | None]:
        listing = get(served, "/api/v1/coding-sessions").json()["sessions"]
        s: dict[str, Any] = next((s for s in listing if s.get("runtime_session_id") == sid), {})
        return s.get("last_event"), s.get("last_event_at")

    assert run_hook(served.layout, "PostToolUse", payload).code == 0
    wait_until(lambda: last()[0] == "PostToolUse", timeout=10)
    first_at = last()[1]
    assert get(served, "/api/v1/coding-sessions").headers["X-Cocoplus-Cache"] == "hit"
    calls_log = os.path.join(served.layout.sessions_dir, f"cs_{sid}.calls")
    size = os.path.getsize(calls_log)
    time.sleep(0.01)  # the next call's time differs from the first's in the record's milliseconds
    assert run_hook(served.layout, "PostToolUse", payload).code == 0
    assert os.path.getsize(calls_log) > size  # appended
    wait_until(lambda: last()[1] != first_at, timeout=10)


def _cache(layout: Layout, max_age: float = 60.0) -> tuple[Cache, list[int]]:
    """A cache that never hears of a file event (a watcher that missed every one)."""
    built: list[int] = []
    return Cache(layout, lambda topics: (0,) * len(topics), max_age=max_age), built


def test_without_file_events_the_stamp_catches_writes_and_appends(project: Layout) -> None:
    from cocoplus.ops import session as session_ops
    from cocoplus.session import events

    cache, _ = _cache(project)

    def status() -> tuple[dict[str, Any], bool]:
        import json

        body, built = cache.answer("session", ("session",), lambda: session_ops.status(project))
        return json.loads(body), built

    first, built = status()
    assert built and status()[1] is False
    session_ops.stop(project, "stamp-41a")  # an atomic write in .cocoplus/
    st, built = status()
    assert built and st["kill_switch"]["reason"] == "stamp-41a"
    events.log_step(project, "probe_event")  # an append to steps.jsonl: no directory changes
    st, built = status()
    assert built and st["steps"]["last_event"] == "probe_event"
    with open(project.config, "a") as fh:  # cocoplus.toml, outside .cocoplus/
        fh.write("[session]\nmax_iterations = 7\n")
    st, built = status()
    assert built and st["iteration_budget"]["cap"] == 7, st["iteration_budget"]


def test_an_answer_is_rebuilt_once_it_is_older_than_max_age(project: Layout) -> None:
    cache = Cache(project, lambda topics: (0,) * len(topics), max_age=0.2)
    calls: list[float] = []

    def build() -> dict[str, Any]:
        calls.append(time.monotonic())
        return {"n": len(calls)}

    assert cache.answer("k", (), build) == (b'{"n":1}', True)
    assert cache.answer("k", (), build) == (b'{"n":1}', False)
    wait_until(lambda: cache.answer("k", (), build)[1], timeout=5)
    assert len(calls) == 2


def test_a_file_event_invalidates_only_the_routes_of_its_topic(project: Layout) -> None:
    gens = {"session": 0, "round": 0}
    cache = Cache(project, lambda topics: tuple(gens.get(t, 0) for t in topics))
    assert cache.answer("a", ("session",), lambda: 1)[1] and cache.answer("b", ("round",), lambda: 2)[1]
    gens["round"] += 1
    assert cache.answer("a", ("session",), lambda: 1) == (b"1", False)
    assert cache.answer("b", ("round",), lambda: 3) == (b"3", True)


def test_a_failed_build_is_not_kept(project: Layout) -> None:
    from cocoplus.core.errors import StateCorrupt

    cache = Cache(project, lambda topics: ())

    def broken() -> Any:
        raise StateCorrupt("x.json", "damaged")

    for _ in range(2):
        try:
            cache.answer("k", (), broken)
        except StateCorrupt:
            pass
        else:
            raise AssertionError("a failed build was answered")
    assert cache.builds == 0


def test_a_kept_answer_is_sent_before_routing_with_the_handlers_bytes_and_headers(sproject: Layout) -> None:
    """A plain GET of a kept route with a good answer is answered in front of FastAPI (routes/base.py KeptReads):
    the same status, body and headers as the handler's answer, which a query string still reaches."""
    from fastapi.testclient import TestClient

    from cocoplus.server.app import create_app
    from tests.server.conftest import BASE, PORT, TOKEN

    guard = create_app(sproject, token=TOKEN, port=PORT)
    srv = guard.app.state.srv
    with TestClient(guard, base_url=BASE) as c:
        for route in ROUTES:
            built = c.get(route)
            assert built.status_code == 200 and built.headers["x-cocoplus-cache"] == "built", route
            before = srv.kept_reads
            kept = c.get(route)
            assert srv.kept_reads == before + 1, route
            handled = c.get(route + "?via=handler")
            assert srv.kept_reads == before + 1, route
            assert kept.status_code == handled.status_code == 200
            assert kept.content == handled.content == built.content, route
            assert dict(kept.headers) == dict(handled.headers), (route, kept.headers, handled.headers)
            assert kept.headers["x-cocoplus-cache"] == "hit"
        # A route with a query, another method, or an answer gone old goes to FastAPI as before.
        assert c.get("/api/v1/session-os/main-brain/rounds?limit=5").status_code == 200
        assert c.post("/api/v1/session").status_code in (401, 405)
        before = srv.kept_reads
        r = c.post("/api/v1/session/stop", json={"reason": "kept-9d1"}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200, r.text
        again = c.get("/api/v1/session")
        assert again.headers["x-cocoplus-cache"] == "built" and again.json()["kill_switch"]["reason"] == "kept-9d1"
        assert srv.kept_reads == before
