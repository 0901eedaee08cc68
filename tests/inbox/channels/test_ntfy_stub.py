"""The ntfy stand-in (tests/support/ntfy_stub.py) against ntfy's own documentation: each example below is fed to it
as the documentation shows it, and its answer is checked against the documented shapes, so the stand-in holds to
ntfy and not to what cocoplus happens to send.  Plain HTTP from the standard library, on 127.0.0.1 only.

Sources, cited at each test: https://docs.ntfy.sh/publish/ (Publishing) and https://docs.ntfy.sh/subscribe/api/
(Subscribe via API); for the shape of an answer with a sequence id (ntfy 2.16 and later), the answers recorded
from a real ntfy 2.26.0 in github.com/achimcc/insist, fixtures/ntfy-2.26.0/.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import apprise
import pytest

from tests.support.ntfy_stub import NtfyStub, parse_actions
from tests.support.waiting import wait_until

ID = r"^[A-Za-z0-9]{12}$"


@pytest.fixture
def ntfy() -> Iterator[NtfyStub]:
    with NtfyStub(keepalive=0.3) as stub:
        yield stub


def send(stub: NtfyStub, method: str, path: str, body: bytes | str = b"", headers: dict[str, str] | None = None):
    """One request as the documentation writes it; (status, decoded JSON answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", int(stub.url.rsplit(":", 1)[1]), timeout=10)
    data = body.encode("utf-8") if isinstance(body, str) else body
    # http.client sends header values as Latin-1; ntfy reads raw UTF-8 in headers, so send the bytes as they are.
    raw_headers = {k: v.encode("utf-8").decode("latin-1") for k, v in (headers or {}).items()}
    conn.request(method, path, body=data, headers=raw_headers)
    reply = conn.getresponse()
    text = reply.read().decode("utf-8")
    conn.close()
    return reply.status, json.loads(text) if text.strip() else None


def lines(stub: NtfyStub, path: str, count: int, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The first `count` lines of a JSON stream."""
    conn = http.client.HTTPConnection("127.0.0.1", int(stub.url.rsplit(":", 1)[1]), timeout=10)
    conn.request("GET", path, headers=headers or {})
    reply = conn.getresponse()
    assert reply.status == 200, reply.read()
    assert reply.getheader("Content-Type") == "application/x-ndjson; charset=utf-8"
    got: list[dict[str, Any]] = []
    while len(got) < count:
        line = reply.readline()
        assert line, f"the stream ended after {got}"
        got.append(json.loads(line))
    conn.close()
    return got


def assert_message(m: dict[str, Any], topic: str) -> None:
    """The fields every `message` event has (https://docs.ntfy.sh/subscribe/api/#json-message-format)."""
    assert re.match(ID, m["id"])
    assert isinstance(m["time"], int) and abs(m["time"] - time.time()) < 60
    assert m["expires"] > m["time"]
    assert m["event"] == "message"
    assert m["topic"] == topic
    assert isinstance(m["message"], str)


# -- publishing ------------------------------------------------------------------------------------------------------


def test_the_first_example_publishes_a_plain_body(ntfy):
    # https://docs.ntfy.sh/publish/ : POST /mytopic with the body "Backup successful 😀"
    status, m = send(ntfy, "POST", "/mytopic", "Backup successful 😀")
    assert status == 200
    assert_message(m, "mytopic")
    assert m["message"] == "Backup successful 😀"
    assert ntfy.messages("mytopic") == [m]
    # PUT works too, and an empty body is "triggered" (https://docs.ntfy.sh/publish/#publish-as-json, `message`)
    assert send(ntfy, "PUT", "/mytopic", "")[1]["message"] == "triggered"


def test_title_priority_and_tags_as_headers_and_their_aliases(ntfy):
    # https://docs.ntfy.sh/publish/ : the phil_alerts example
    status, m = send(
        ntfy,
        "POST",
        "/phil_alerts",
        "Remote access to phils-laptop detected. Act right away.",
        {"Title": "Unauthorized access detected", "Priority": "urgent", "Tags": "warning,skull"},
    )
    assert status == 200
    assert (m["title"], m["priority"], m["tags"]) == ("Unauthorized access detected", 5, ["warning", "skull"])
    # https://docs.ntfy.sh/publish/#message-title : X-Title, Title, t
    for name in ("X-Title", "Title", "t"):
        assert send(ntfy, "POST", "/controversial", "Oh my ...", {name: "Dogs are better than cats"})[1]["title"] == (
            "Dogs are better than cats"
        )
    # https://docs.ntfy.sh/publish/#message-priority : X-Priority: 5, Priority: low, p:4
    got = [
        send(ntfy, "POST", "/phil_alerts", "x", {k: v})[1]["priority"]
        for k, v in (("X-Priority", "5"), ("Priority", "low"), ("p", "4"))
    ]
    assert got == [5, 2, 4]
    status, error = send(ntfy, "POST", "/phil_alerts", "x", {"Priority": "6"})
    assert (status, error["code"], error["error"]) == (400, 40007, "invalid priority parameter")
    # https://docs.ntfy.sh/publish/#tags-emojis : X-Tags, Tags, ta
    assert send(ntfy, "POST", "/backups", "Backup of mailsrv13 failed", {"X-Tags": "warning,mailsrv13,daily-backup"})[
        1
    ]["tags"] == ["warning", "mailsrv13", "daily-backup"]
    assert send(ntfy, "POST", "/backups", "Unicorns", {"Tags": "horse,unicorn"})[1]["tags"] == ["horse", "unicorn"]
    assert send(ntfy, "POST", "/backups", "Dogs are awesome", {"ta": "dog"})[1]["tags"] == ["dog"]


def test_headers_may_be_raw_utf8_or_rfc2047_and_parameters_may_be_query_parameters(ntfy):
    # https://docs.ntfy.sh/publish/#action-buttons (the info box): UTF-8 in headers, or RFC 2047 encoded words
    assert send(ntfy, "POST", "/t1", "x", {"Title": "Äpfel"})[1]["title"] == "Äpfel"
    assert send(ntfy, "POST", "/t1", "x", {"Title": "=?UTF-8?B?8J+HqfCfh6o=?="})[1]["title"] == "🇩🇪"
    assert send(ntfy, "POST", "/t1", "x", {"Title": "=?UTF-8?Q?=C3=84pfel?="})[1]["title"] == "Äpfel"
    # https://docs.ntfy.sh/publish/#list-of-all-parameters : every parameter may be a query parameter
    status, m = send(ntfy, "POST", "/t1?title=From+the+query&priority=high&tags=a,b", "x")
    assert (m["title"], m["priority"], m["tags"]) == ("From the query", 4, ["a", "b"])


def test_the_publish_as_json_example(ntfy):
    # https://docs.ntfy.sh/publish/#publish-as-json
    body = """{
        "topic": "mytopic",
        "message": "Disk space is low at 5.1 GB",
        "title": "Low disk space alert",
        "tags": ["warning","cd"],
        "priority": 4,
        "attach": "https://filesrv.lan/space.jpg",
        "filename": "diskspace.jpg",
        "click": "https://homecamera.lan/xasds1h2xsSsa/",
        "actions": [{ "action": "view", "label": "Admin panel", "url": "https://filesrv.lan/admin" }]
    }"""
    status, m = send(ntfy, "POST", "/", body)
    assert status == 200
    assert_message(m, "mytopic")
    assert m["message"] == "Disk space is low at 5.1 GB"
    assert (m["title"], m["tags"], m["priority"]) == ("Low disk space alert", ["warning", "cd"], 4)
    assert m["click"] == "https://homecamera.lan/xasds1h2xsSsa/"
    assert m["attachment"] == {"name": "diskspace.jpg", "url": "https://filesrv.lan/space.jpg"}
    [action] = m["actions"]
    assert (action["action"], action["label"], action["url"], action["clear"]) == (
        "view",
        "Admin panel",
        "https://filesrv.lan/admin",
        False,
    )
    assert len(action["id"]) == 10
    # The topic is the one required field; fields ntfy does not know are ignored.
    status, error = send(ntfy, "POST", "/", '{"message": "no topic"}')
    assert (status, error["code"]) == (400, 40009)
    assert send(ntfy, "POST", "/", '{"topic": "mytopic", "unknown_field": 1}')[0] == 200
    status, error = send(ntfy, "POST", "/", "{not json")
    assert (status, error["code"]) == (400, 40024)


def test_the_action_header_examples(ntfy):
    # https://docs.ntfy.sh/publish/#using-a-header : a view and an http action, a quoted body
    status, m = send(
        ntfy,
        "POST",
        "/myhome",
        "You left the house. Turn down the A/C?",
        {
            "Actions": "view, Open portal, https://home.nest.com/, clear=true; "
            "http, Turn down, https://api.nest.com/, body='{\"temperature\": 65}'"
        },
    )
    assert status == 200
    view, turn_down = m["actions"]
    assert (view["action"], view["label"], view["url"], view["clear"]) == (
        "view",
        "Open portal",
        "https://home.nest.com/",
        True,
    )
    assert (turn_down["action"], turn_down["url"], turn_down["body"]) == (
        "http",
        "https://api.nest.com/",
        '{"temperature": 65}',
    )
    # https://docs.ntfy.sh/publish/#send-http-request : method, a header, and an unquoted body
    status, m = send(
        ntfy,
        "POST",
        "/myhome",
        "Garage door has been open for 15 minutes. Close it?",
        {
            "Actions": "http, Close door, https://api.mygarage.lan/, method=PUT, "
            'headers.Authorization=Bearer zAzsx1sk.., body={"action": "close"}'
        },
    )
    [close] = m["actions"]
    assert close["method"] == "PUT"
    assert close["headers"] == {"Authorization": "Bearer zAzsx1sk.."}
    assert close["body"] == '{"action": "close"}'
    # https://docs.ntfy.sh/publish/#send-android-broadcast : extras
    status, m = send(
        ntfy,
        "POST",
        "/wifey",
        "Your wife requested you send a picture of yourself.",
        {"Actions": "broadcast, Take picture, extras.cmd=pic, extras.camera=front"},
    )
    [picture] = m["actions"]
    assert (picture["action"], picture["extras"]) == ("broadcast", {"cmd": "pic", "camera": "front"})
    # The long form of the same header (https://docs.ntfy.sh/publish/#using-a-header, "Header format (long)")
    assert parse_actions("action=view, label=Open, url=https://example.com/")[0]["url"] == "https://example.com/"


def test_the_action_json_examples_and_the_limit_of_three(ntfy):
    # https://docs.ntfy.sh/publish/#using-a-json-array
    status, m = send(
        ntfy,
        "POST",
        "/",
        json.dumps(
            {
                "topic": "myhome",
                "message": "You left the house. Turn down the A/C?",
                "actions": [
                    {"action": "view", "label": "Open portal", "url": "https://home.nest.com/", "clear": True},
                    {
                        "action": "http",
                        "label": "Turn down",
                        "url": "https://api.nest.com/",
                        "body": '{"temperature": 65}',
                    },
                ],
            }
        ),
    )
    assert status == 200
    assert [a["action"] for a in m["actions"]] == ["view", "http"]
    # https://docs.ntfy.sh/publish/#send-http-request (the JSON form): method, headers, body
    status, m = send(
        ntfy,
        "POST",
        "/",
        json.dumps(
            {
                "topic": "myhome",
                "message": "Garage door has been open for 15 minutes. Close it?",
                "actions": [
                    {
                        "action": "http",
                        "label": "Close door",
                        "url": "https://api.mygarage.lan/",
                        "method": "PUT",
                        "headers": {"Authorization": "Bearer zAzsx1sk.."},
                        "body": '{"action": "close"}',
                    }
                ],
            }
        ),
    )
    [close] = m["actions"]
    assert (close["method"], close["headers"], close["body"]) == (
        "PUT",
        {"Authorization": "Bearer zAzsx1sk.."},
        '{"action": "close"}',
    )
    # https://docs.ntfy.sh/publish/#defining-actions : "up to three user actions"
    four = [{"action": "view", "label": f"L{i}", "url": "https://example.com/"} for i in range(4)]
    status, error = send(ntfy, "POST", "/", json.dumps({"topic": "myhome", "actions": four}))
    assert (status, error["code"], error["http"]) == (400, 40018, 400)
    assert "only 3 actions allowed" in error["error"]
    # an http action needs its url; an action type ntfy does not have is refused
    status, error = send(ntfy, "POST", "/myhome", "x", {"Actions": "http, No url"})
    assert (status, error["code"]) == (400, 40018)
    status, error = send(ntfy, "POST", "/myhome", "x", {"Actions": "dance, Now, https://example.com/"})
    assert (status, error["code"]) == (400, 40018)
    assert ntfy.messages("myhome") == ntfy.messages("myhome")[:2]


def test_access_tokens_as_the_documentation_shows_them():
    # https://docs.ntfy.sh/publish/#access-tokens : Authorization: Bearer tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2
    token = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"
    with NtfyStub(tokens={token: {"mysecrets": "rw", "reply-*": "wo"}}, default_access="deny-all") as stub:
        status, m = send(stub, "POST", "/mysecrets", "Look ma, with auth", {"Authorization": f"Bearer {token}"})
        assert (status, m["message"]) == (200, "Look ma, with auth")
        # No credentials on a protected topic: 403, in the words a real ntfy 2.26.0 answered
        # (github.com/achimcc/insist, fixtures/ntfy-2.26.0/forbidden.txt).
        status, error = send(stub, "POST", "/mysecrets", "x")
        assert (status, error) == (
            403,
            {"code": 40301, "http": 403, "error": "forbidden", "link": "https://ntfy.sh/docs/publish/#authentication"},
        )
        # A token the server does not know: 401.
        status, error = send(stub, "POST", "/mysecrets", "x", {"Authorization": "Bearer tk_unknown"})
        assert (status, error["code"], error["error"]) == (401, 40101, "unauthorized")
        # A known token without the permission: 403 (write-only on reply-*: it may post, not read).
        assert send(stub, "POST", "/reply-1", "tap", {"Authorization": f"Bearer {token}"})[0] == 200
        conn = http.client.HTTPConnection("127.0.0.1", int(stub.url.rsplit(":", 1)[1]), timeout=5)
        conn.request("GET", "/reply-1/json?poll=1", headers={"Authorization": f"Bearer {token}"})
        assert conn.getresponse().status == 403
        conn.close()
        # https://docs.ntfy.sh/publish/#query-param : the `auth` parameter, base64 of the header
        auth = base64.b64encode(f"Bearer {token}".encode()).decode().rstrip("=")
        assert send(stub, "POST", f"/mysecrets?auth={auth}", "via the query")[0] == 200


# -- subscribing -----------------------------------------------------------------------------------------------------


def test_the_json_stream_opens_then_carries_messages_and_keepalives(ntfy):
    # https://docs.ntfy.sh/subscribe/api/#subscribe-as-json-stream : open, message, keepalive
    got: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: got.extend(lines(ntfy, "/disk-alerts/json", 3)))
    reader.start()
    wait_until(lambda: ntfy.open_streams == 1, timeout=10)
    send(ntfy, "POST", "/disk-alerts", "Disk full")
    reader.join(10)
    opened, message, keepalive = got
    assert set(opened) == {"id", "time", "event", "topic"} and opened["event"] == "open"
    assert opened["topic"] == "disk-alerts"
    assert_message(message, "disk-alerts")
    assert message["message"] == "Disk full"
    assert keepalive["event"] == "keepalive" and set(keepalive) == {"id", "time", "event", "topic"}


def test_since_takes_an_id_a_time_a_duration_all_or_latest_and_poll_closes(ntfy):
    # https://docs.ntfy.sh/subscribe/api/#fetch-cached-messages and #poll-for-messages
    first = send(ntfy, "POST", "/mytopic", "one")[1]
    second = send(ntfy, "POST", "/mytopic", "two")[1]
    send(ntfy, "POST", "/other", "elsewhere")

    def poll(query: str) -> list[str]:
        conn = http.client.HTTPConnection("127.0.0.1", int(ntfy.url.rsplit(":", 1)[1]), timeout=5)
        conn.request("GET", f"/mytopic/json?poll=1{query}")
        reply = conn.getresponse()
        body = reply.read().decode()
        conn.close()
        return [json.loads(line)["message"] for line in body.splitlines()]

    assert poll("") == ["one", "two"]  # poll defaults to since=all, and sends no open event
    assert poll(f"&since={first['id']}") == ["two"]  # after that message, as recorded from ntfy 2.26.0 (ack-since)
    assert poll(f"&since={first['time']}") == ["one", "two"]
    assert poll("&since=10m") == ["one", "two"]
    assert poll("&since=latest") == ["two"]
    assert poll("&since=none") == []
    assert poll("&since=ZZZZZZZZZZZZ") == ["one", "two"]  # an id the server no longer has: everything cached
    status, error = send(ntfy, "GET", "/mytopic/json?poll=1&since=yesterday")
    assert (status, error["code"]) == (400, 40008)
    # A stream with since= gets the cached messages after `open`, then new ones.
    got = lines(ntfy, f"/mytopic/json?since={first['id']}", 2)
    assert [g["event"] for g in got] == ["open", "message"] and got[1]["id"] == second["id"]
    # https://docs.ntfy.sh/subscribe/api/#subscribe-to-multiple-topics
    got = lines(ntfy, "/mytopic,other/json?since=all", 4)
    assert got[0]["topic"] == "mytopic,other"
    assert [g["message"] for g in got[1:]] == ["one", "two", "elsewhere"]


def test_updating_a_notification_by_sequence_id_keeps_both_messages(ntfy):
    # https://docs.ntfy.sh/publish/#updating-notifications (ntfy 2.16 and later): publish again with the same
    # sequence id (JSON `sequence_id`, the X-Sequence-ID header, or the path /<topic>/<sequence_id>).  The real
    # ntfy 2.26.0 answered with `sequence_id` after `id` and kept both messages (github.com/achimcc/insist,
    # fixtures/ntfy-2.26.0/publish-response.json and poll-after-replace.ndjson); the replacement is the phone's.
    recorded: dict[str, Any] = {
        "id": "qKUjE8YO8z6M",
        "sequence_id": "0123456789abcdef",
        "time": 1789302374,
        "expires": 1789345574,
        "event": "message",
        "topic": "alarmtopic",
        "title": "Prüfung — ä",
        "message": "Unit lan6-set.service auf server ist rot",
        "priority": 4,
        "tags": ["rotating_light"],
        "actions": [
            {
                "id": "3aCWZt8QKt",
                "action": "http",
                "label": "Quittieren",
                "clear": True,
                "url": "http://127.0.0.1:12586/alarmtopic-quittung",
                "method": "POST",
                "headers": {"Authorization": "Bearer REDACTED"},
                "body": "a1.0123456789abcdef.00000000000000000000000000000000",
            }
        ],
    }
    request = {k: recorded[k] for k in ("topic", "title", "message", "priority", "tags", "sequence_id")}
    request["actions"] = [{k: v for k, v in recorded["actions"][0].items() if k != "id"}]
    status, first = send(ntfy, "POST", "/", json.dumps(request))
    assert status == 200
    assert list(first) == list(recorded)  # the same fields, in the same order
    assert list(first["actions"][0]) == list(recorded["actions"][0])
    assert {k: first[k] for k in request if k != "actions"} == {k: recorded[k] for k in request if k != "actions"}
    second = send(
        ntfy,
        "POST",
        "/",
        json.dumps({"topic": "alarmtopic", "message": "zweite Stufe", "sequence_id": "0123456789abcdef"}),
    )[1]
    third = send(ntfy, "POST", "/alarmtopic", "dritte", {"X-Sequence-ID": "0123456789abcdef"})[1]
    fourth = send(ntfy, "PUT", "/alarmtopic/0123456789abcdef", "vierte")[1]
    kept = ntfy.messages("alarmtopic")
    assert [m["id"] for m in kept] == [first["id"], second["id"], third["id"], fourth["id"]]
    assert {m["sequence_id"] for m in kept} == {"0123456789abcdef"}
    # Without a sequence id, the answer has none (fixtures/ntfy-2.26.0/ack-poll.ndjson).
    assert "sequence_id" not in send(ntfy, "POST", "/plain", "x")[1]


# -- faults and the phone --------------------------------------------------------------------------------------------


def test_faults_on_demand_and_a_tapped_http_action(ntfy):
    ntfy.publish_status = 500
    status, error = send(ntfy, "POST", "/mytopic", "x")
    assert (status, error["code"], error["error"]) == (500, 50001, "internal server error")
    ntfy.publish_status = None
    # A dropped stream ends without the chunked terminator (read on the socket itself, below HTTP).
    with socket.create_connection(("127.0.0.1", int(ntfy.url.rsplit(":", 1)[1])), timeout=5) as raw:
        raw.sendall(b"GET /mytopic/json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = b""
        while b'"event":"open"' not in received:
            received += raw.recv(4096)
        ntfy.drop_streams()
        while chunk := raw.recv(4096):
            received += chunk
    assert b"Transfer-Encoding: chunked" in received
    assert not received.endswith(b"0\r\n\r\n")
    # The phone's tap: the http action's request, as ntfy's app sends it (method, url, headers, body).
    reply_url = f"{ntfy.url}/reply-topic"
    _, pushed = send(
        ntfy,
        "POST",
        "/",
        json.dumps(
            {
                "topic": "mytopic",
                "message": "Run rm -rf build?",
                "actions": [
                    {
                        "action": "http",
                        "label": "Approve",
                        "url": reply_url,
                        "body": "tok-1",
                        "headers": {"X-Kind": "tap"},
                    }
                ],
            }
        ),
    )
    assert ntfy.tap(pushed, "Approve")[0] == 200
    [tap] = ntfy.messages("reply-topic")
    assert tap["message"] == "tok-1"
    received = [r for r in ntfy.requests if r.path == "/reply-topic"][-1]
    assert (received.method, received.headers["x-kind"], received.body) == ("POST", "tap", b"tok-1")


def test_apprise_ntfy_plugin_with_actions_reaches_the_stand_in(ntfy):
    """apprise (pinned at a version with ntfy actions, caronc/apprise#1436) as a second, independent client."""
    port = ntfy.url.rsplit(":", 1)[1]
    actions = "view, Open, https://example.com/page; http, Approve, http://127.0.0.1/reply, body=tok-2"
    url = f"ntfy://127.0.0.1:{port}/mytopic?actions={urllib.parse.quote(actions, safe='')}&priority=high"
    target = apprise.Apprise()
    assert target.add(url)
    assert target.notify(body="A decision waits", title="cocoplus")
    [m] = ntfy.messages("mytopic")
    assert (m["title"], m["message"], m["priority"]) == ("cocoplus", "A decision waits", 4)
    assert [(a["action"], a["label"]) for a in m["actions"]] == [("view", "Open"), ("http", "Approve")]
    assert m["actions"][1]["body"] == "tok-2"
