"""`cocoplus summary`: each worker's story from the records cocoplus keeps, field by field, and the `summary`
notification once the last running worker ends with supervision off (once, however many runners end together).

Real runner processes over a stand-in runtime (tests/supervision/test_worktrees.py's): one worker finishes in a
worktree and is merged, one is killed by the operator while a permission request of its session waits.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from cocoplus.core import clock, jsonl
from cocoplus.core.paths import Layout
from cocoplus.notify import events as notify_events
from cocoplus.notify import messages
from cocoplus.ops import authority
from cocoplus.ops import summary as summary_ops
from cocoplus.ops import workers as ops
from cocoplus.session import registry
from cocoplus.supervision import summary as night_summary
from cocoplus.supervision import workers
from tests.conftest import run_cli_subprocess
from tests.supervision.conftest import Brain
from tests.supervision.test_worktrees import ended, proj, release  # noqa: F401 - proj is a fixture
from tests.support.waiting import wait_until


def _session_for(layout: Layout, wid: str, calls: int, usd: float) -> str:
    """A session of worker `wid`'s run as its hooks record it: `calls` tool calls, `usd` of priced usage."""
    rec, _ = registry.ensure(layout, "claude", f"rid-{wid}", event="SessionStart", info={"worker": wid})
    registry.update(layout, rec["id"], lambda r: r.update({"tool_calls": calls}))
    jsonl.append_jsonl(
        layout.spend_log,
        {"schema_version": 1, "ts": clock.iso(), "kind": "usage", "session": rec["id"], "model": "m", "usd": usd},
        layout.lock("spend"),
    )
    return rec["id"]


def test_the_summary_tells_each_workers_story_and_the_last_end_notifies_once(proj: Layout) -> None:
    one = workers.launch(proj, "claude", "edit-one", by="alice", alias="one", worktree=True)
    release(proj, "edit-one")
    wait_until(lambda: ended(proj, "w1"), timeout=60)
    ops.merge(proj, "w1", principal=authority.operator())
    assert one["id"] == "w1"
    workers.launch(proj, "claude", "long-two", by="alice", alias="two")
    wait_until(lambda: (workers.read(proj, "w2") or {}).get("pid"))
    cs = _session_for(proj, "w2", calls=12, usd=0.42)
    workers.update_sealed(proj, "w2", lambda r: r.update({"session": cs})) if hasattr(
        workers, "update_sealed"
    ) else None
    ops.kill(proj, "w2", "carol")
    wait_until(lambda: ended(proj, "w2"), timeout=60)

    rep = json.loads(run_cli_subprocess("summary", "--since", "2h", "--json", cwd=proj.project).out)
    by = {s["worker"]: s for s in rep["workers"]}
    assert set(by) == {"w1", "w2"}
    w1, w2 = by["w1"], by["w2"]
    assert (w1["asked"], w1["alias"], w1["runtime"]) == ("edit-one", "one", "claude")
    assert w1["ended"].startswith("exited") and "exit code 0" in w1["ended"], w1
    assert w1["changed"]["where"] == "branch cocoplus/one" and w1["changed"]["merged"] is True
    assert "1 file changed" in w1["changed"]["stat"], w1["changed"]
    assert (w1["cost_usd"], w1["tool_calls"]) == (0.0, 0)
    assert w2["asked"] == "long-two" and "stopped by carol" in w2["ended"], w2
    assert (w2["cost_usd"], w2["tool_calls"]) == (0.42, 12)
    assert w2["changed"]["where"] == "the project itself" and w2["changed"]["merged"] is None
    assert rep["spent_usd"] == 0.42
    text = run_cli_subprocess("summary", cwd=proj.project).out
    assert "w2 (two)" in text and "stopped by carol" in text and "$0.42, 12 tool call(s)" in text, text
    # A window that starts after both: nothing ran.
    later = summary_ops.summary(proj, 60, now=time.time() + 3600)
    assert later["workers"] == []

    # Each time the last running worker ended with supervision off (w1 before w2 was launched, then w2): logged
    # once for the notifier, whoever asks again.
    steps = [s for s in jsonl.read_jsonl(proj.steps).records if s.get("event") == "night_summary"]
    assert [s["why"] for s in steps] == [f"the last running worker ({w}) ended" for w in ("w1", "w2")], steps
    assert night_summary.after_worker_end(proj, "w2") is False
    event = notify_events.to_event("steps", steps[-1])
    assert event is not None and event["kind"] == "summary" and event["workers"] == 2
    title, body = messages.render(proj, event)
    assert "summary: 2 worker(s), $0.42 spent" in title, title
    assert "two: " in body and "Run: cd " in body and "cocoplus summary" in body, body


def test_since_is_a_duration(proj: Layout) -> None:
    assert summary_ops.parse_since("12h") == 43200 and summary_ops.parse_since("90m") == 5400
    r = run_cli_subprocess("summary", "--since", "yesterday", cwd=proj.project)
    assert r.code == 2 and "--since 'yesterday': give a duration such as 12h" in r.err, r
    assert Path(proj.root).exists()


def test_supervision_finishing_logs_the_summary_for_the_notifier(proj: Layout) -> None:
    Brain(proj)  # a controller that can run the rounds
    assert run_cli_subprocess("supervision", "enable", "--task-hint", "port the parser", cwd=proj.project).code == 0
    r = run_cli_subprocess("supervision", "finish", "--summary", "ported", cwd=proj.project)
    assert r.code == 0, r
    steps = [s for s in jsonl.read_jsonl(proj.steps).records if s.get("event") == "night_summary"]
    assert len(steps) == 1 and steps[0]["why"].startswith("supervision finished"), steps
    assert steps[0]["workers"] == 0 and steps[0]["lines"] == []
