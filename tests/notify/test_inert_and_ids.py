"""What reaches a person is inert text with an id: a real `cocoplus notify run` delivering through
apprise to a local HTTP listener a worker's question full of terminal control sequences, and a
delivery interrupted by SIGKILL after the target took it and before the notifier recorded it."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import jsonl, vocab
from cocoplus.core.paths import Layout
from cocoplus.notify import events, outbox
from tests.notify.listener import Listener
from tests.notify.test_delivery import notifier_caught_up
from tests.notify.test_notifier import NotifyRun, ask, start_sessions
from tests.support.waiting import wait_until

READABLE = "Café naïve 数据库のテスト 🚀 👩‍💻 שלום"
# One of each: CSI colour and erase, OSC 8 hyperlink (ST), OSC title (BEL), DCS, 8-bit CSI, 8-bit OSC,
# BEL, backspace, CR, DEL, C1 (NEL), bidi override, isolate, marks, and a CSI cut off at the end.
QUESTION = (
    f"\x1b[31mShould\x1b[0m {READABLE} \x1b[2Jthe tests use "
    "\x1b]8;;https://evil.example/steal\x1b\\postgres\x1b]8;;\x1b\\ or \x1b]0;pwned title\x07sqlite?"
    " \x1bPq#0;2;0;0;0\x1b\\dcs \x9b2Kcsi8 \x9d8;;https://evil.example/c1\x9cosc8 "
    "ring\x07 back\x08\x08 over\rwrite del\x7f nel\x85 \u202eredro\u202c \u2066iso\u2069 \u200emark\u200f \u061calm "
    "<b>bold</b> <a href='https://evil.example/a'>html</a> cut \x1b["
)
FORBIDDEN = {chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))} | set(vocab.BIDI_CONTROLS) | {"\u2028", "\u2029"}
# Their UTF-8 bytes: C0 and DEL are single bytes, C1 is C2 80..C2 9F, the bidi controls three bytes each.
FORBIDDEN_BYTES = [c.encode() for c in sorted(FORBIDDEN - {"\n"})]


def control_bytes(text: str, allow_newline: bool) -> list[bytes]:
    data = text.encode("utf-8")
    found = [b for b in FORBIDDEN_BYTES if b in data]
    if not allow_newline and b"\n" in data:
        found.append(b"\n")
    return found


def ask_line(layout: Layout) -> tuple[int, dict[str, Any]]:
    """The signals log line the notification is about (the first that asks: the question or the
    attention change it causes), its byte offset and its record."""
    log = jsonl.read_jsonl(layout.signals)
    for at, rec in zip(log.offsets, log.records, strict=True):
        event = events.from_signal(rec)
        if event is not None and event["kind"] == "ask_human":
            return at, rec
    raise AssertionError(log.records)


@pytest.mark.slow
def test_a_question_full_of_control_sequences_arrives_as_inert_text(project: Layout) -> None:
    text_target, html_target = Listener(), Listener()
    start_sessions(project, 1)
    run = NotifyRun(project, {"COCOPLUS_NOTIFY_URLS": f"{text_target.url()} {html_target.url('html')}?format=html"})
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)
        ask(project, "cc1", QUESTION)
        wait_until(lambda: text_target.received and html_target.received, timeout=60)
    finally:
        assert run.stop() == 0
        text_target.close()
        html_target.close()

    # The log keeps what the worker wrote; only the notification is made inert.
    _at, rec = ask_line(project)
    assert rec.get("message") == QUESTION or rec.get("detail") == QUESTION

    [body] = text_target.bodies()
    title, message = body["title"], body["message"]
    assert control_bytes(title, allow_newline=False) == [], title
    assert control_bytes(message, allow_newline=True) == [], message
    assert all(32 <= b < 127 or b == 10 for b in text_target.raw[0]), (
        "apprise posts ASCII JSON; no raw control byte on the wire"
    )
    [question] = [ln for ln in message.splitlines() if ln.startswith("Question: ")]
    # Readable text survives, the link texts stay and their hidden targets are gone, cut-off and
    # one-character controls are shown for what they are.
    assert f"Should {READABLE} the tests use postgres or sqlite?" in question
    assert "dcs csi8 osc8" in question
    assert "evil.example/steal" not in message and "evil.example/c1" not in message and "pwned" not in message
    assert (
        "ring␇ back␈␈ over write del␡ nel\\x85 \\u202eredro\\u202c \\u2066iso\\u2069 \\u200emark\\u200f \\u061calm"
        in question
    )
    assert "<b>bold</b>" in question  # plain text stays plain text
    assert question.endswith(" cut ␛[")

    # A target that reads HTML gets the text escaped, never markup of the worker's.
    [html] = html_target.bodies()
    assert (
        "&lt;b&gt;bold&lt;/b&gt;" in html["message"] and "<b>" not in html["message"] and "<a " not in html["message"]
    )
    assert control_bytes(html["message"], allow_newline=False) == []


@pytest.mark.slow
def test_a_delivery_cut_off_by_a_crash_arrives_again_with_the_same_id(project: Layout) -> None:
    """SIGKILL while the target holds its answer: the target has the message, the notifier has not
    recorded it. The restarted notifier sends it again (at least once, never lost) with the same id, so
    the receiver can drop the repeat; the outbox cannot know the first one arrived."""
    answer = threading.Event()
    target = Listener(answer_after=answer)
    url = target.url("held") + "?rto=120&cto=120"  # apprise waits for the answer far longer than the test needs
    start_sessions(project, 1)
    env = {"COCOPLUS_NOTIFY_URLS": url}
    first = NotifyRun(project, env)
    try:
        wait_until(lambda: os.path.exists(project.notify_state), timeout=30)
        ask(project, "cc1", "Which \x1b[1mport\x1b[0m should the service use?")
        wait_until(lambda: len(target.received) == 1, timeout=60)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.communicate(timeout=30)
        assert first.proc.returncode == -signal.SIGKILL
        state = json.loads(Path(project.notify_state).read_text())
        [owed] = state["outbox"]
        assert owed["pending"] == [outbox.target_id(url)], "killed before it recorded the delivery"
    finally:
        answer.set()
    second = NotifyRun(project, env)
    try:
        wait_until(lambda: len(target.received) == 2, timeout=60)
        wait_until(lambda: notifier_caught_up(project, outbox.target_id(url)), timeout=30)
    finally:
        assert second.stop() == 0
        target.close()

    one, two = target.bodies()
    assert one == two  # the same title, body and id
    at, rec = ask_line(project)
    nid = outbox.notification_id(project.root, "signals", at, rec)
    assert one["cocoplus_id"] == nid == owed["nid"]
    assert one["message"].splitlines()[-1] == f"[cocoplus {nid}]"
    assert "Which port should the service use?" in one["message"]
    log = Path(project.notify_log).read_text()
    assert len(re.findall(rf"queued message 1 {nid}: ", log)) == 1  # queued once, by the first notifier
    assert len(re.findall(rf"sent message 1 {nid} \(ask_human\)", log)) == 1  # recorded once, by the second


def test_the_same_log_line_is_never_queued_twice() -> None:
    state = outbox.fresh({})
    event = {
        "kind": "ask_human",
        "session": "cs_a",
        "ts": None,
        "nid": outbox.notification_id("/p/.cocoplus", "signals", 120, {"kind": "ask_human"}),
    }
    assert outbox.admit(state, event, 1_800_000_000.0, 0)[0]
    outbox.enqueue(state, event, "t", "b", ["x"], 1_800_000_000.0)
    ok, why = outbox.admit(state, event, 1_800_000_500.0, 0)  # read again (a cursor set back), past any repeat window
    assert not ok and why == f"already queued as {event['nid']}"
    # Another line (another offset, another record or another project) is another notification.
    assert len({
        outbox.notification_id("/p/.cocoplus", "signals", 120, {"kind": "ask_human"}),
        outbox.notification_id("/p/.cocoplus", "signals", 121, {"kind": "ask_human"}),
        outbox.notification_id("/p/.cocoplus", "signals", 120, {"kind": "ask_human", "message": "x"}),
        outbox.notification_id("/q/.cocoplus", "signals", 120, {"kind": "ask_human"}),
        outbox.notification_id("/p/.cocoplus", "steps", 120, {"kind": "ask_human"}),
    }) == 5  # fmt: skip
