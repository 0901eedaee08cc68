"""The ntfy channel (cocoplus/inbox/channels/ntfy.py) against the ntfy stand-in, over real HTTP on 127.0.0.1:
pushes with buttons and tokens, a tap posted to the reply topic reaching the listener, reconnection after a
dropped stream resuming with `since=`, failures reported as one line, updates in place."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from cocoplus.inbox.channels.common import ANSWER, OPEN, Action, ChannelError, Push, Tap
from cocoplus.inbox.channels.ntfy import Ntfy
from tests.support.ntfy_stub import NtfyStub
from tests.support.waiting import wait_until

PUSH_TOKEN = "tk_pushpushpushpushpushpushpush1"
REPLY_TOKEN = "tk_replyreplyreplyreplyreplyrep2"


@pytest.fixture
def server() -> Iterator[NtfyStub]:
    """A server with access control: the push token may read and write the operator's topics, the reply token may
    only post to the reply topic, nobody else may do anything."""
    tokens = {PUSH_TOKEN: {"push-*": "rw", "reply-*": "ro"}, REPLY_TOKEN: {"reply-*": "wo"}}
    with NtfyStub(tokens=tokens, default_access="deny-all", keepalive=3600) as stub:
        yield stub


def channel(server: NtfyStub, **changes: object) -> Ntfy:
    options: dict[str, object] = {"token": PUSH_TOKEN, "reply_topic": "reply-7f3a", "reply_token": REPLY_TOKEN}
    options.update(changes)
    return Ntfy(server.url, "push-7f3a", **options)  # type: ignore[arg-type]


def decision(**changes: object) -> Push:
    fields: dict[str, object] = {
        "title": "Permission: Bash",
        "text": "rm -rf build/\ndenies at 14:05 CET unless you answer",
        "actions": (
            Action("Approve", ANSWER, "tok-approve"),
            Action("Deny", ANSWER, "tok-deny"),
            Action("Open", OPEN, "https://box.tailnet.ts.net/d/42"),
        ),
        "tags": ("robot",),
    }
    fields.update(changes)
    return Push(**fields)  # type: ignore[arg-type]


class Taps:
    """What a listener handed on, and what it reported."""

    def __init__(self) -> None:
        self.taps: list[Tap] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()

    def tap(self, tap: Tap) -> None:
        with self.lock:
            self.taps.append(tap)

    def problem(self, line: str) -> None:
        with self.lock:
            self.problems.append(line)


def test_a_push_carries_three_buttons_and_the_tokens_where_ntfy_wants_them(server):
    sent = channel(server).send(decision())
    assert sent.accepted and sent.error is None
    [m] = server.messages("push-7f3a")
    assert sent.message_id == m["id"]
    published = [r for r in server.requests if r.method == "POST" and r.path == "/"][-1]
    assert published.headers["authorization"] == f"Bearer {PUSH_TOKEN}"
    assert (m["title"], m["priority"], m["tags"]) == ("Permission: Bash", 4, ["robot"])
    assert m["message"] == "rm -rf build/\ndenies at 14:05 CET unless you answer"
    approve, deny, open_ = m["actions"]
    reply_url = f"{server.url}/reply-7f3a"
    assert (approve["action"], approve["label"], approve["url"], approve["method"]) == (
        "http",
        "Approve",
        reply_url,
        "POST",
    )
    assert approve["body"] == "tok-approve" and approve["clear"] is True
    assert approve["headers"] == {"Authorization": f"Bearer {REPLY_TOKEN}"}
    assert deny["body"] == "tok-deny"
    assert (open_["action"], open_["url"]) == ("view", "https://box.tailnet.ts.net/d/42")
    # The reply token may only post: the phone's tap is accepted by the server as it is.
    assert server.tap(m, "Deny")[0] == 200
    assert server.messages("reply-7f3a")[0]["message"] == "tok-deny"


def test_what_a_push_says_is_inert_and_within_ntfys_limit(server):
    sent = channel(server).send(
        decision(title="Bash\x1b[2J\x1b]0;pwned\x07 \u202erun", text="a\x1b[31mred\x1b[0m\rb" + "x" * 5000, actions=())
    )
    assert sent.accepted
    [m] = server.messages("push-7f3a")
    assert m["title"] == "Bash \\u202erun"
    assert m["message"].startswith("ared␍bxxx")
    assert len(m["message"].encode()) <= 4096 and m["message"].endswith("…")
    assert "actions" not in m


def test_a_refused_or_failed_publish_is_one_line_without_secrets(server):
    server.publish_status = 500
    sent = channel(server).send(decision())
    assert (sent.accepted, sent.message_id) == (False, None)
    assert (
        sent.error
        == f"ntfy at {server.url.removeprefix('http://')} refused the push: HTTP 500 internal server error (50001)"
    )
    server.publish_status = None
    sent = channel(server, token="tk_not_known").send(decision())
    assert not sent.accepted and "HTTP 401 unauthorized" in str(sent.error)
    sent = channel(server, token=None).send(decision())
    assert not sent.accepted and "HTTP 403 forbidden" in str(sent.error)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sent = Ntfy(f"http://127.0.0.1:{port}", "push-7f3a", token=PUSH_TOKEN).send(decision(actions=()))
    assert sent == type(sent)(False, error=f"ntfy: 127.0.0.1:{port} refused the connection")
    for error in (sent.error, *[channel(server, token=t).send(decision()).error for t in ("tk_not_known", None)]):
        assert error is not None and "\n" not in error and "7f3a" not in error and "tk_" not in error


def test_an_update_replaces_the_push_in_place(server):
    ntfy = channel(server)
    first = ntfy.send(decision())
    assert first.message_id is not None
    update = ntfy.update(first.message_id, Push("Permission: Bash", "approved by you at the terminal", priority=2))
    assert update.accepted and update.replaced and update.message_id != first.message_id
    original, follow_up = server.messages("push-7f3a")
    assert follow_up["sequence_id"] == first.message_id
    assert follow_up["message"] == "approved by you at the terminal" and "actions" not in follow_up


def test_a_tap_posted_to_the_reply_topic_reaches_the_listener(server):
    ntfy = channel(server)
    ntfy.send(decision())
    [m] = server.messages("push-7f3a")
    heard = Taps()
    with ntfy.listener(heard.tap, heard.problem, retry_first=0.05, retry_cap=0.5) as listening:
        wait_until(lambda: server.open_streams == 1)
        subscription = [r for r in server.requests if r.path == "/reply-7f3a/json"][-1]
        assert subscription.headers["authorization"] == f"Bearer {PUSH_TOKEN}"  # outbound, with the read token
        assert server.tap(m, "Approve")[0] == 200
        wait_until(lambda: heard.taps)
        [tap] = heard.taps
        assert (tap.channel, tap.data, tap.ref) == ("phone:ntfy", "tok-approve", server.messages("reply-7f3a")[0]["id"])
        assert listening.last_id == tap.ref
    assert heard.problems == []


def test_the_listener_reconnects_after_a_dropped_stream_and_resumes_with_since(server):
    ntfy = channel(server)
    ntfy.send(decision())
    [m] = server.messages("push-7f3a")
    heard = Taps()
    with ntfy.listener(heard.tap, heard.problem, retry_first=0.05, retry_cap=0.5) as listening:
        wait_until(lambda: server.open_streams == 1)
        server.tap(m, "Approve")
        wait_until(lambda: len(heard.taps) == 1)
        first_id = heard.taps[0].ref
        # The stream drops and the server refuses for a while; a tap made meanwhile waits in ntfy's cache.
        server.subscribe_status = 503
        server.drop_streams()
        wait_until(lambda: any("refused the subscription" in p for p in heard.problems))
        server.tap(m, "Deny")
        server.subscribe_status = None
        wait_until(lambda: len(heard.taps) == 2)
        assert [t.data for t in heard.taps] == ["tok-approve", "tok-deny"]
        assert server.subscriptions[-1].since == first_id  # resumed after the last message seen
        assert listening.connections >= 3
    assert any("ended" in p for p in heard.problems)
    assert all("\n" not in p and "reply-7f3a" not in p for p in heard.problems)


def test_before_any_tap_a_reconnection_asks_since_the_first_connection(server):
    heard = Taps()
    with channel(server).listener(heard.tap, heard.problem, retry_first=0.05, retry_cap=0.5):
        wait_until(lambda: server.open_streams == 1)
        assert server.subscriptions[0].since == ""
        server.drop_streams()
        wait_until(lambda: len(server.subscriptions) == 2 and server.open_streams == 1)
        assert server.subscriptions[1].since.isdigit()
    assert heard.taps == []


def test_a_silent_stream_is_given_up_and_opened_again(server):
    """No keepalive for longer than `idle`: the connection is taken for dead."""
    heard = Taps()
    with channel(server).listener(heard.tap, heard.problem, idle=0.3, retry_first=0.05, retry_cap=0.5) as listening:
        wait_until(lambda: listening.connections >= 3)
    assert any("did not answer in time" in p for p in heard.problems)


def test_stop_cuts_the_stream_at_once_and_hands_on_nothing_after(server):
    heard = Taps()
    listening = channel(server).listener(heard.tap, heard.problem).start()
    wait_until(lambda: server.open_streams == 1)
    # The stand-in would keep this stream open for an hour (keepalive=3600): stop() does not wait for it.
    assert listening.stop(timeout=10)
    assert not listening.alive
    wait_until(lambda: server.open_streams == 0)
    server.publish("reply-7f3a", "tok-late")
    assert heard.taps == [] and heard.problems == []


def test_the_listener_reports_a_refused_subscription_and_keeps_trying(server):
    heard = Taps()
    with channel(server, token="tk_not_known").listener(heard.tap, heard.problem, retry_first=0.05, retry_cap=0.2):
        wait_until(lambda: len(heard.problems) >= 2)
    assert heard.problems[0] == (
        f"ntfy at {server.url.removeprefix('http://')} refused the subscription: HTTP 401 unauthorized (40101)"
    )


def test_since_given_by_the_caller_fetches_what_came_before(server):
    server.publish("reply-7f3a", "tok-while-away")
    heard = Taps()
    with channel(server).listener(heard.tap, heard.problem, since="all"):
        wait_until(lambda: heard.taps)
    assert heard.taps[0].data == "tok-while-away"


def test_setting_up_a_channel_refuses_what_would_leak_or_cannot_work():
    with pytest.raises(ChannelError, match="plain HTTP to ntfy.example.com"):
        Ntfy("http://ntfy.example.com", "t1")
    Ntfy("http://ntfy.example.com", "t1", insecure_http=True)
    Ntfy("https://ntfy.sh", "t1")
    Ntfy("http://[::1]:8080", "t1")
    with pytest.raises(ChannelError, match="must not hold credentials"):
        Ntfy("https://user:secret@ntfy.sh", "t1")
    with pytest.raises(ChannelError, match="1 to 64"):
        Ntfy("https://ntfy.sh", "no/slashes")
    with pytest.raises(ChannelError, match="must differ"):
        Ntfy("https://ntfy.sh", "t1", reply_topic="t1")
    with pytest.raises(ChannelError, match="nothing to listen to"):
        Ntfy("https://ntfy.sh", "t1").listener(lambda tap: None)
    with pytest.raises(ChannelError, match="at most 3"):
        Push("t", "x", actions=tuple(Action(f"L{i}", OPEN, "https://x.test/") for i in range(4)))
    # An answer with nowhere to go is a failed send, not an exception.
    sent = Ntfy("http://127.0.0.1:9", "t1").send(decision())
    assert not sent.accepted and sent.error == "the button 'Approve' answers, but no ntfy reply topic is set"


def test_an_answer_may_post_to_its_own_url_instead_of_the_reply_topic(server):
    direct = Action("Approve", ANSWER, "tok-1", url="https://box.tailnet.ts.net/answer")
    channel(server).send(decision(actions=(direct,)))
    [m] = server.messages("push-7f3a")
    [action] = m["actions"]
    assert (action["url"], action["body"]) == ("https://box.tailnet.ts.net/answer", "tok-1")
    assert "headers" not in action  # the reply topic's token goes to the reply topic only


def test_a_button_that_would_send_a_token_over_plain_http_to_another_machine_is_refused(server):
    ntfy = channel(server)
    lan = Action("Approve", ANSWER, "tok-1", url="http://192.0.2.7:8080/answer")
    sent = ntfy.send(decision(actions=(lan,)))
    assert not sent.accepted and str(sent.error).startswith(
        "the URL of the button 'Approve' is plain HTTP to 192.0.2.7"
    )
    assert channel(server, insecure_http=True).send(decision(actions=(lan,))).accepted
    assert server.messages("push-7f3a")[0]["actions"][0]["url"] == "http://192.0.2.7:8080/answer"
