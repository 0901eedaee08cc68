"""task-queue.jsonl: the log is the history; the pending list is folded from it."""

from __future__ import annotations

import json
import os

import pytest

from cocoplus.core import jsonl
from cocoplus.session import queue


def write_lines(path: str, *records: object) -> None:
    with open(path, "w") as fh:
        for r in records:
            fh.write((r if isinstance(r, str) else json.dumps(r)) + "\n")


def test_add_then_finish_folds_to_latest_state(project):
    a = queue.add(project, "first", by="ann")
    b = queue.add(project, "second")
    queue.finish(project, a["id"])
    items, problems = queue.read(project)
    assert problems == []
    assert [(i["request"], i["state"]) for i in items] == [("first", "done"), ("second", "queued")]
    pend, _ = queue.pending(project)
    assert [i["id"] for i in pend] == [b["id"]]
    assert items[0]["updated_at"]


def test_duplicate_ids_are_one_item_and_order_is_first_appearance(project):
    write_lines(
        project.task_queue,
        {"id": "q2", "ts": "t", "state": "queued", "request": "two"},
        {"id": "q1", "ts": "t", "state": "queued", "request": "one"},
        {"id": "q2", "ts": "t", "state": "queued", "request": "two again"},
        {"id": "q1", "ts": "t", "state": "done"},
    )
    items, problems = queue.read(project)
    assert problems == []
    assert [(i["id"], i["request"], i["state"]) for i in items] == [("q2", "two", "queued"), ("q1", "one", "done")]


def test_records_of_the_wrong_shape_are_reported_by_line_not_dropped_silently(project, cli):
    write_lines(
        project.task_queue,
        {"id": "q1", "ts": "t", "state": "queued", "request": "fine"},
        {"id": 5, "ts": "t", "state": "queued", "request": "numeric id"},
        {"id": "q3", "ts": "t", "state": "started", "request": "unknown state"},
        "",
        {"id": "q4", "ts": "t", "state": "queued", "request": 7},
        {"id": "q9", "ts": "t", "state": "done"},
        "not json",
    )
    items, problems = queue.read(project)
    assert [i["id"] for i in items] == ["q1"]
    lines = sorted(int(p.split(": line ")[1].split(":")[0]) for p in problems)
    assert lines == [2, 3, 5, 6, 7]
    assert all(p.startswith(project.task_queue) for p in problems)

    code, out, err = cli("session", "queue", "list", cwd=project.project)
    assert code == 0 and "fine" in out
    assert err.count("task-queue.jsonl: line") == 5

    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1
    assert any(ln.startswith("FAIL") and "task-queue.jsonl" in ln and "line 7" in ln for ln in out.splitlines())

    # Valid JSON throughout, but not queue records: check still fails, by line.
    write_lines(
        project.task_queue, {"id": "q1", "ts": "t", "state": "queued", "request": "fine"}, {"id": 5, "state": "done"}
    )
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 1
    assert any(ln.startswith("FAIL") and "task-queue.jsonl" in ln and "line 2" in ln for ln in out.splitlines())


def test_torn_queue_tail_is_repaired_by_the_next_add(project, cli):
    write_lines(project.task_queue, {"id": "q1", "ts": "t", "state": "queued", "request": "kept"})
    with open(project.task_queue, "a") as fh:
        fh.write('{"id": "q2", "ts": "t", "sta')
    items, problems = queue.read(project)
    assert [i["id"] for i in items] == ["q1"]
    assert len(problems) == 1 and "unterminated" in problems[0]
    code, out, err = cli("session", "check", cwd=project.project)
    assert code == 0 and "torn tail" in out

    queue.add(project, "after the crash")
    items, problems = queue.read(project)
    assert [i["request"] for i in items] == ["kept", "after the crash"]
    assert problems == []
    assert [n for n in os.listdir(os.path.dirname(project.task_queue)) if n.startswith("task-queue.jsonl.torn-")]


def test_finish_unknown_and_empty_request(project):
    from cocoplus.core.errors import CocoplusError, NotFound

    with pytest.raises(NotFound):
        queue.finish(project, "q_missing")
    with pytest.raises(CocoplusError):
        queue.add(project, "  \n ")
    assert jsonl.read_jsonl(project.task_queue).records == []


def test_queue_add_logs_a_step(project):
    rec = queue.add(project, "x", by="tester")
    steps = jsonl.read_jsonl(project.steps).records
    assert steps[-1]["event"] == "queue_add" and steps[-1]["queue_id"] == rec["id"]


def test_queued_requests_show_under_next_and_promote_makes_one_the_current_item(project, cli):
    from cocoplus.session import handoff

    ids = []
    for request in ("write the migration", "update the docs"):
        code, out, err = cli("session", "queue", "add", request, "--json", cwd=project.project)
        assert code == 0, err
        ids.append(json.loads(out)["id"])
    first, second = ids

    def placed() -> dict:
        code, out, err = cli("session", "progress", "--json", cwd=project.project)
        assert code == 0, err
        return {title: [i["id"] for i in items] for title, items in json.loads(out)["queue"].items()}

    assert placed() == {"In Progress": [], "Next": [first, second]}
    code, out, err = cli("session", "progress", cwd=project.project)
    assert code == 0 and f"[queue {first}] write the migration" in out
    assert out.index("Next") < out.index(f"[queue {first}]")

    code, out, err = cli("session", "queue", "promote", second, cwd=project.project)
    assert code == 0 and f"{second} is now the current item (In Progress): update the docs" in out
    assert placed() == {"In Progress": [second], "Next": [first]}
    context = handoff.context(project, None)
    assert "== Current item" in context and f"- {second}: update the docs" in context.split("== Queued")[0]

    # At most one current item: promoting the other sends this one back to Next.
    code, out, err = cli("session", "queue", "promote", first, "--json", cwd=project.project)
    assert code == 0 and json.loads(out)["demoted"] == [second]
    assert placed() == {"In Progress": [first], "Next": [second]}

    # Only a queued request can become current; the error is one line, nothing changes.
    cli("session", "queue", "done", second, cwd=project.project)
    code, out, err = cli("session", "queue", "promote", second, cwd=project.project)
    assert code == 1 and f"request {second} is done, not queued" in err and "Traceback" not in err
    code, out, err = cli("session", "queue", "promote", "q_nope", cwd=project.project)
    assert code != 0 and "no queued request 'q_nope'" in err
    assert placed() == {"In Progress": [first], "Next": []}
