"""One session on another machine, against a real nats-server: stop, resume and steer `m2/proj/cc1`, a
dispatch from the brain (its MCP server, a real child process) that releases a real held turn end there,
and an answer to a question asked there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.jsonl import read_jsonl
from cocoplus.core.lock import Lock
from cocoplus.core.paths import Layout
from cocoplus.ops import worker as worker_ops
from cocoplus.session import holds, registry, stops
from cocoplus.supervision import autonomy
from tests.fleet.conftest import Fleet, stop_file
from tests.fleet.natsserver import Machine
from tests.hook.test_hold import Held, stop_payload
from tests.mcp.conftest import Client, serve
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]


def jsonl(path: str | Path) -> list[dict[str, Any]]:
    return read_jsonl(str(path)).records


def test_stop_resume_and_steer_reach_one_session_of_another_machine(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    l2 = Layout(str(m2.root))
    cc1, _ = registry.ensure(l2, "claude", "sess-one", event="SessionStart")
    cc2, _ = registry.ensure(l2, "claude", "sess-two", event="SessionStart")
    assert (cc1["alias"], cc2["alias"]) == ("cc1", "cc2")
    # fleet stop of one session: that session's stop there, as `session stop --session`; AGENT_STOP untouched
    res = m1.json("fleet", "stop", "m2/proj/cc1", "--reason", "look at the diff")
    (row,) = res["targets"]
    assert row["acknowledged"] and row["ok"] and row["result"]["stopped"] and row["result"]["alias"] == "cc1", row
    assert stops.state(l2, cc1["id"])[0] is True and stops.state(l2, cc2["id"])[0] is False
    assert stops.read(l2, cc1["id"])["operator"] == "op-m1 on m1 (fleet)"  # type: ignore[index]
    assert stop_file(m2) is None
    # the per-session door on another machine takes the same target
    out = m3.json("session", "stop", "--session", "m2/proj/cc2", "--reason", "wait for cc1")
    assert (
        out["stopped"]
        and out["alias"] == "cc2"
        and out["fleet"]["acknowledged"]
        and out["fleet"]["target"] == "m2/proj/cc2"
    )
    assert stops.state(l2, cc2["id"])[0] is True and stop_file(m2) is None
    text = m3.cocoplus("session", "resume", "--session", "m2/proj/cc2", "--yes").stdout
    assert "m2/proj/cc2 (fleet, acknowledged in" in text and "cc2 may use tools again" in text
    assert stops.state(l2, cc2["id"])[0] is False and stops.state(l2, cc1["id"])[0] is True
    # recorded on both machines: the sender's round actions and sent log, the target's commands and steps
    (sent_action,) = [
        a for a in jsonl(Path(m3.root) / "supervision" / "rounds.jsonl") if a.get("action") == "stop_session"
    ]
    assert sent_action["alias"] == "m2/proj/cc2" and sent_action["result"]["fleet"]["acknowledged"]
    phases = [(r["type"], r["phase"]) for r in jsonl(m3.root / "fleet" / "sent.jsonl")]
    assert phases == [("stop", "sent"), ("stop", "answered"), ("resume", "sent"), ("resume", "answered")]
    there = [a for a in jsonl(l2.rounds) if a.get("event") == "action"]
    assert [(a["action"], a["alias"], a["by"]) for a in there] == [
        ("stop_session", "cc1", "op-m1 on m1 (fleet)"),
        ("stop_session", "cc2", "op-m3 on m3 (fleet)"),
        ("resume_session", "cc2", "op-m3 on m3 (fleet)"),
    ]
    # a steer for one session is that session's own steer, nobody else's
    res = m1.json("fleet", "steer", "m2/proj/cc2", "rebase", "first")
    assert res["targets"][0]["ok"] and res["targets"][0]["result"]["route"] == "pending"
    assert Path(l2.session_steer(cc2["id"])).read_text().strip() == "rebase first"
    assert not Path(l2.steer).exists() and not Path(l2.session_steer(cc1["id"])).exists()
    # resume the first one with `fleet resume`
    res = m1.json("fleet", "resume", "m2/proj/cc1", "--yes")
    assert res["targets"][0]["result"]["resumed"] and stops.state(l2, cc1["id"])[0] is False
    # an unknown session is refused there, with the reason; the door reports it in one line
    r = m3.cocoplus("session", "stop", "--session", "m2/proj/cc9", check=False)
    assert r.returncode == 1 and "m2/proj/cc9" in r.stderr and "cc9" in r.stderr and "Traceback" not in r.stderr
    r = m3.cocoplus("fleet", "dispatch", "m2/proj", "do", "it", check=False)
    assert r.returncode == 2 and "names no session" in r.stderr


def test_a_dispatch_from_the_brain_releases_a_held_turn_end_on_another_machine(
    fleet: Fleet, three: list[Machine]
) -> None:
    m1, m2, _m3 = three
    l2 = Layout(str(m2.root))
    autonomy.enable(l2, task_hint="keep going")
    sid = "2f1c0e9a-5b7d-4c3e-9a8f-6d2e1b0c4a57"
    cs = registry.cs_id_for(sid)
    with Lock(l2.lock("supervisor")):  # m2's watcher: a turn end there is held only while one runs
        h = Held(l2, stop_payload(l2, sid=sid))
        try:
            wait_until(lambda: holds.current(l2, cs) is not None or h.proc.poll() is not None, timeout=20)
            assert h.proc.poll() is None, "the turn end was not held"
            alias = (registry.read_record(l2, cs) or {})["alias"]

            async def scenario(c: Client) -> Any:
                return await c.call(
                    "dispatch", session=f"m2/proj/{alias}", instruction="run the integration tests next"
                )

            # The brain's capability on m1, as the operator there reads it (`cocoplus mcp token`).
            token = subprocess.run(
                [sys.executable, "-m", "cocoplus", "mcp", "token"],
                env=m1.env(),
                cwd=m1.project,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            env = {**m1.env(), "COCOPLUS_ROUND": "4", "COCOPLUS_MCP_TOKEN": token}
            got = serve(scenario, cwd=m1.project, args=["-m", "cocoplus", "mcp", "--role", "brain"], env=env)
            code, out = h.result()
        finally:
            h.kill()
    assert (
        got["route"] == "held"
        and got["hold"]
        and got["fleet"]["acknowledged"]
        and got["fleet"]["target"] == f"m2/proj/{alias}"
    )
    answer = json.loads(out)
    assert code == 0 and answer["decision"] == "block"
    assert answer["reason"].startswith(
        "Next instruction from the main brain (supervision round 4, run by op-m1) on m1 (fleet), through cocoplus:\n"
        "run the integration tests next"
    )
    assert "not a permission" in answer["reason"]
    # recorded on m2: the fleet command applied once, and the dispatch as every dispatch is recorded
    applied = [r for r in jsonl(l2.fleet_commands) if r.get("id") == got["fleet"]["id"]]
    assert [r["phase"] for r in applied] == ["applying", "applied"] and applied[1]["result"]["route"] == "held"
    (there,) = [a for a in jsonl(l2.rounds) if a.get("event") == "action"]
    assert (there["action"], there["alias"], there["result"]["route"]) == ("dispatch", alias, "held")
    assert there["by"] == "the main brain (supervision round 4, run by op-m1) on m1 (fleet)"
    # and on m1: the brain's action in its round, and the sent command with m2's answer
    l1 = Layout(str(m1.root))
    (here,) = [a for a in jsonl(l1.rounds) if a.get("event") == "action"]
    assert (here["action"], here["alias"], here["round"], here["result"]["route"]) == (
        "dispatch",
        f"m2/proj/{alias}",
        4,
        "held",
    )
    sent = jsonl(l1.fleet_sent)
    assert [(r["type"], r["phase"]) for r in sent] == [("dispatch", "sent"), ("dispatch", "answered")]
    assert sent[0]["targets"] == [f"m2/proj/{alias}"] and sent[0]["args"] == {
        "instruction": "run the integration tests next"
    }
    assert sent[1]["targets"][0]["ok"] and sent[1]["targets"][0]["result"]["route"] == "held"


def test_an_answer_from_one_machine_reaches_the_question_asked_on_another(fleet: Fleet, three: list[Machine]) -> None:
    """`cocoplus answer m2/proj/<alias>` on m1: answered on m2, against the question m2's worker asked there."""
    m1, m2, _m3 = three
    l2 = Layout(str(m2.root))
    rec, _ = registry.ensure(l2, "claude", "4d3c2b1a-0f9e-4d8c-b7a6-5e4d3c2b1a09", event="SessionStart")
    alias = rec["alias"]
    asked = worker_ops.ask_human(l2, "may I drop the staging table?", session=alias)
    assert registry.resolve(l2, alias)["attention"] == "awaiting_decision"
    got = m1.json("answer", f"m2/proj/{alias}", "no: archive it instead")
    assert got["fleet"]["acknowledged"] and got["fleet"]["target"] == f"m2/proj/{alias}"
    assert got["question_id"] == asked["message"]["id"] and got["route"] in ("held", "steer", "resume", "queued")
    # on m2: the conversation shows the answer against the question, and the session no longer awaits a decision
    ledger = jsonl(l2.ledger("master-agent"))
    assert [(m["role"], m.get("answer_to")) for m in ledger] == [("worker", None), ("user", asked["message"]["id"])]
    assert ledger[1]["text"] == "no: archive it instead" and ledger[1]["by"] == "op-m1 on m1 (fleet)"
    assert registry.resolve(l2, alias)["attention"] is None
    (there,) = [a for a in jsonl(l2.rounds) if a.get("event") == "action"]
    assert (there["action"], there["alias"], there["result"]["question_id"]) == (
        "answer_worker",
        alias,
        asked["message"]["id"],
    )
    # on m1: the action in its rounds, the session named by its target, and the sent command with m2's answer
    l1 = Layout(str(m1.root))
    (here,) = [a for a in jsonl(l1.rounds) if a.get("event") == "action"]
    assert (here["action"], here["alias"]) == ("answer_worker", f"m2/proj/{alias}") and here["result"]["fleet"][
        "acknowledged"
    ]
    assert [(r["type"], r["phase"]) for r in jsonl(l1.fleet_sent)] == [("answer", "sent"), ("answer", "answered")]
