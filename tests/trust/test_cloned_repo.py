"""A cloned repository whose cocoplus.toml names its own programs runs nothing until the user trusts the file."""

from __future__ import annotations

import json

import pytest

from cocoplus.chat import store
from tests.conftest import assert_no_traceback
from tests.support.waiting import wait_until
from tests.trust.conftest import Clone


def trust_notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "cocoplus trust" in line]


def chat_task(clone: Clone, task_id: str) -> dict:
    return store.read_task(clone.layout, "master-agent", task_id)


def finished(clone: Clone, task_id: str) -> dict:
    return wait_until(lambda: (t := chat_task(clone, task_id))["state"] in ("succeeded", "failed") and t, timeout=30)


@pytest.mark.slow
def test_untrusted_clone_runs_nothing_until_trusted_and_again_after_an_edit(clone: Clone) -> None:
    # Untrusted: every door works as if the program-naming keys were absent.
    r = clone.cli("session", "status")
    assert_no_traceback(r.out, r.err)
    assert not clone.ctx_ran(), "session status ran the repo's tools/cortex"
    assert len(trust_notes(r.err)) == 1, r.err
    note = trust_notes(r.err)[0]
    assert "[ctx] command" in note and "[accounts.x] command" in note, note

    r = clone.cli("session", "progress")
    assert_no_traceback(r.out, r.err)
    assert not clone.ctx_ran(), "session progress ran the repo's tools/cortex"
    assert len(trust_notes(r.err)) == 1, r.err

    r = clone.cli("chat", "send", "what is blocking the release?", "--json")
    assert r.code == 1, r.err  # the reply failed at once: nothing can run it
    assert len(trust_notes(r.err)) == 1, r.err
    sent = json.loads(r.out)
    task = finished(clone, sent["task"]["id"])
    assert task["state"] == "failed" and "cocoplus trust" in task["error"], task
    assert not clone.brain_ran(), "chat send ran the repo's tools/brain"

    # Without a usable controller supervision refuses to start, naming the untrusted file as the reason.
    r = clone.cli("supervise", "land", "the", "parser", "--json")
    assert r.code == 1 and "not trusted" in r.err and "cocoplus trust" in r.err, r.err
    clone.stop_background()
    assert not clone.brain_ran(), "supervise ran the repo's tools/brain"
    assert not clone.ctx_ran()

    # The non-naming keys of the project file apply without trust.
    r = clone.cli("config", "show", "--json")
    values = json.loads(r.out)["values"]
    assert values["session.max_iterations"]["value"] == 42
    assert values["ctx.command"]["value"] == "cortex" and values["ctx.command"]["origin"] == "default"

    # Trusting shows what the file runs, then records it.
    r = clone.cli("trust", "--yes")
    assert r.code == 0, r.err
    assert "tools/cortex" in r.out and '["tools/brain"]' in r.out, r.out
    r = clone.cli("session", "status")
    assert r.code == 0, r.err
    assert trust_notes(r.err) == [], r.err
    assert clone.ctx_ran(), "a trusted [ctx] command did not run"
    assert "1 task(s) in progress" in r.out  # ctx's answer is in the report

    r = clone.cli("chat", "send", "and now?", "--json")
    task = finished(clone, json.loads(r.out)["task"]["id"])
    assert task["state"] == "succeeded", task
    assert clone.brain_ran()
    clone.stop_background()

    # An edit to the file withdraws the trust until the user trusts it again.
    clone.forget_canaries()
    with clone.config.open("a") as fh:
        fh.write("\n# one more line\n")
    for argv in (("session", "status"), ("session", "progress")):
        r = clone.cli(*argv)
        assert_no_traceback(r.out, r.err)
        assert len(trust_notes(r.err)) == 1, r.err
        assert "changed since" in trust_notes(r.err)[0], r.err
    r = clone.cli("chat", "send", "still there?", "--json")
    task = finished(clone, json.loads(r.out)["task"]["id"])
    assert task["state"] == "failed"
    assert not clone.ctx_ran() and not clone.brain_ran()

    r = clone.cli("trust", "--yes")
    assert r.code == 0, r.err
    r = clone.cli("session", "progress")
    assert clone.ctx_ran() and trust_notes(r.err) == []
