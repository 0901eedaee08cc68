"""Fleet supervision against a real nats-server: one watcher (m1's `supervise`) wakes its brain for the signals
of every machine's sessions, with the same trigger table and debounce: a burst from many machines is one round."""

from __future__ import annotations

import pytest

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import scope, signals
from tests.fleet.conftest import Fleet
from tests.fleet.natsserver import Machine
from tests.supervision.conftest import Brain, rounds_finished, rounds_started
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.nats]

PER_MACHINE = 10


def test_a_burst_from_every_machine_is_one_supervision_round(fleet: Fleet, three: list[Machine]) -> None:
    m1, m2, m3 = three
    l1 = Layout(str(m1.root))
    brain = Brain(l1, quiet=2.0, max_wait=30.0)
    m1.cocoplus("trust", "--yes")  # the brain's command, trusted in that machine's own configuration
    try:
        res = m1.json("supervise", "keep", "the", "fleet", "moving")
        assert res["supervisor"]["pid"]
        wait_until(lambda: len(rounds_finished(l1)) == 1, timeout=60)  # the initial round
        wait_until(lambda: "fleet signals: reading" in open(l1.supervisor_log).read(), timeout=30)
        # one session each on m2 and m3 its own project leaves out of supervision: never a trigger
        skipped = {}
        for m in (m2, m3):
            lay = Layout(str(m.root))
            rec, _ = registry.ensure(lay, "claude", f"{m.name}-excluded", event="SessionStart")
            scope.exclude(lay, rec["alias"])
            skipped[m.name] = rec["alias"]
        expected = set()
        for m in (m2, m3):
            lay = Layout(str(m.root))
            for i in range(PER_MACHINE):
                rec, _ = registry.ensure(lay, "claude", f"{m.name}-sess-{i}", event="SessionStart")
                expected.add(f"{m.name}/proj/{rec['alias']}")
            for m_sess in [r for r in registry.list_sessions(lay)[0] if r["alias"] != skipped[m.name]]:
                signals.notify_blocked(lay, "need a decision", session=m_sess["alias"])
            signals.notify_blocked(lay, "excluded, never seen", session=skipped[m.name])
        wait_until(lambda: len(rounds_started(l1)) == 2, timeout=60)
        rnd = rounds_started(l1)[1]
        got = {t["alias"] for t in rnd["triggers"]}
        assert got == expected, sorted(got ^ expected)
        assert all(t["kind"] == "notify_blocked" and t["session"] == t["alias"] for t in rnd["triggers"])
        assert f"m2/proj/{skipped['m2']}" not in got and f"m3/proj/{skipped['m3']}" not in got
        wait_until(lambda: len(brain.prompts()) == 2, timeout=60)
        prompt = brain.prompts()[1]
        assert "m2/proj/cc2 is blocked: need a decision" in prompt and "m3/proj/cc11 is blocked" in prompt
        wait_until(lambda: len(rounds_finished(l1)) == 2, timeout=60)
        assert len(rounds_started(l1)) == 2  # the whole burst was one round
    finally:
        m1.cocoplus("supervisor", "stop", check=False)
