"""The fleet's parts without a server: names and targets, the configuration, the NATS account
configuration, command checks, applying a command once, and the outbox's byte offsets."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from cocoplus.core import clock
from cocoplus.core.errors import CocoplusError, ConfigInvalid, UsageError
from cocoplus.core.paths import Layout
from cocoplus.fleet import accounts, commands, naming, options
from cocoplus.relay import apply, outbox
from cocoplus.session import killswitch, steering
from tests.support.typed import present

# -- names and targets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("good", ["m1", "build-box", "web_app", "A", "x" * 64, "a-b_c9"])
def test_valid_names(good: str) -> None:
    assert naming.name_problem(good) is None


@pytest.mark.parametrize("bad", ["", "a.b", "a*", "a>", "a b", "-a", "a-", "_a", "a--b", "x" * 65, "ä", "a/b"])
def test_invalid_names(bad: str) -> None:
    assert naming.name_problem(bad) is not None


def test_defaults_come_from_the_host_and_the_directory(tmp_path: Path) -> None:
    assert naming.name_problem(naming.default_machine()) is None
    assert naming.default_machine() == naming.sanitize(socket.gethostname())
    assert naming.sanitize("build.example.com") == "build-example-com"
    assert naming.sanitize("my project (copy)") == "my-project-copy"
    assert naming.sanitize("...") == "unnamed"
    assert naming.default_project(str(tmp_path / "web.app--v2")) == "web-app-v2"


def test_one_consumer_per_project_and_no_two_projects_share_one() -> None:
    names = {naming.relay_consumer(m, p) for m in ("a", "a-b", "b") for p in ("c", "b-c", "a-b")}
    assert len(names) == 9


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("m1", ("m1", None, None)),
        ("m1/web", ("m1", "web", None)),
        ("m1/web/cc1", ("m1", "web", "cc1")),
        ("m1/web/cs_ab12", ("m1", "web", "cs_ab12")),
    ],
)
def test_targets(text: str, parts: tuple[str, str | None, str | None]) -> None:
    t = naming.parse_target(text)
    assert (t.machine, t.project, t.session) == parts and str(t) == text


@pytest.mark.parametrize("text", ["", "/", "m1/", "m1//cc1", "a/b/c/d", "m.1", "m1/we b", "m1/web/../x", "*"])
def test_bad_targets_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        naming.parse_target(text)


# -- configuration ----------------------------------------------------------------------------------------


def test_the_fleet_comes_from_the_environment(tmp_path: Path) -> None:
    env = {
        "COCOPLUS_FLEET_URL": "nats://a:4222, nats://b:4222",
        "COCOPLUS_FLEET_NAME": "ops",
        "COCOPLUS_FLEET_MACHINE": "gpu-1",
        "COCOPLUS_FLEET_USER": "gpu-1",
        "COCOPLUS_FLEET_PASSWORD_ENV": "PW",
        "PW": "s3cret",
    }
    assert options.configured(str(tmp_path), env)
    o = options.load(str(tmp_path), env)
    assert o.urls == ["nats://a:4222", "nats://b:4222"] and o.fleet == "ops" and o.machine == "gpu-1"
    assert o.project == naming.default_project(str(tmp_path)) and o.user == "gpu-1" and o.password == "s3cret"
    assert "s3cret" not in repr(o) and "s3cret" not in json.dumps(o.describe())


def test_no_fleet_by_default(tmp_path: Path) -> None:
    assert not options.configured(str(tmp_path), {})
    with pytest.raises(CocoplusError, match="no fleet is configured") as exc:
        options.load(str(tmp_path), {})
    assert not isinstance(exc.value, UsageError) and "COCOPLUS_FLEET_URL" in (exc.value.hint or "")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"COCOPLUS_FLEET_URL": "http://x:4222"}, "environment COCOPLUS_FLEET_URL: [fleet] url: expected nats://"),
        (
            {"COCOPLUS_FLEET_URL": "nats://x:4222", "COCOPLUS_FLEET_MACHINE": "a.b"},
            "environment COCOPLUS_FLEET_MACHINE: [fleet] machine 'a.b'",
        ),
        (
            {"COCOPLUS_FLEET_URL": "nats://x:4222", "COCOPLUS_FLEET_TOKEN_ENV": "NOPE"},
            "the environment variable NOPE is not set",
        ),
        (
            {"COCOPLUS_FLEET_URL": "nats://x:4222", "COCOPLUS_FLEET_CREDS_FILE": "missing.creds"},
            "no such file 'missing.creds'",
        ),
        (
            {"COCOPLUS_FLEET_URL": "nats://x:4222", "COCOPLUS_FLEET_HEARTBEAT_S": "0"},
            "heartbeat_s: expected a number >= 0.5",
        ),
    ],
)
def test_bad_fleet_settings_are_one_line_naming_where_they_came_from(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigInvalid) as exc:
        options.load(str(tmp_path), env)
    assert message in exc.value.message and "\n" not in exc.value.message


def test_a_bad_name_in_the_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "cocoplus.toml").write_text('[fleet]\nname = "a b"\n')
    with pytest.raises(ConfigInvalid, match=r"cocoplus.toml: \[fleet\] name 'a b'"):
        options.load(str(tmp_path), {"COCOPLUS_FLEET_URL": "nats://x:4222"})


def test_the_keys_that_send_data_are_marked_for_the_trust_rule() -> None:
    from cocoplus.core import keys

    marked = {k.name for k in keys.KEYS if k.section == "fleet" and k.sends_data}
    assert {
        "url",
        "user",
        "password_env",
        "token_env",
        "creds_file",
        "nkey_file",
        "tls_ca",
        "tls_cert",
        "tls_key",
    } <= marked
    assert "name" not in marked and "machine" not in marked


# -- the account configuration -------------------------------------------------------------------------------


def test_each_machine_may_write_only_its_own_subjects() -> None:
    perms = accounts.machine_permissions("ops", "m1")
    pub = perms["publish"]
    assert (
        "cocoplus.ops.cmd.*.*.m1" in pub
    )  # commands to any machine of the fleet, as itself (the subject's last token)
    assert not any(s.startswith("cocoplus.ops.cmd.") and s != "cocoplus.ops.cmd.*.*.m1" for s in pub)
    assert "cocoplus.ops.ack.m1.>" in pub and "cocoplus.ops.ev.m1.>" in pub and "$KV.cocoplus-ops.m1.>" in pub
    assert "$JS.ACK.cocoplus-ops-cmd-m1.>" in pub and "$JS.API.CONSUMER.MSG.NEXT.cocoplus-ops-cmd-m1.*" in pub
    shared = (
        "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.MSG.GET.*",
        "$JS.API.DIRECT.GET.*", "$JS.API.DIRECT.GET.*.>", "$JS.API.CONSUMER.INFO.*.*",
    )  # fmt: skip
    for s in pub:  # nothing of another machine, nothing of another fleet, no deletes or updates
        assert "m2" not in s and ".>" != s and "DELETE" not in s and "UPDATE" not in s and "PURGE" not in s
        assert "cocoplus-ops" in s or "cocoplus.ops" in s or s in shared
    assert perms["subscribe"] == ["_INBOX.cocoplus.ops.m1.>", "cocoplus.ops.ack.>"]


def test_a_machine_left_out_of_the_senders_only_receives_commands() -> None:
    assert not any(".cmd." in s for s in accounts.machine_permissions("ops", "ci", sends=False)["publish"])
    text = accounts.server_config("ops", {"m1": "a", "ci": "b"}, senders=["m1"])
    assert '"cocoplus.ops.cmd.*.*.m1"' in text and "cmd.*.*.ci" not in text
    assert '"$JS.API.CONSUMER.MSG.NEXT.cocoplus-ops-cmd-ci.*"' in text  # it still reads its own


def test_the_server_configuration_has_one_user_per_machine() -> None:
    text = accounts.server_config("ops", {"m1": "$M1_PASSWORD", "m2": "pw"}, store_dir="/data/nats")
    assert 'user: "m1", password: $M1_PASSWORD' in text and 'user: "m2", password: "pw"' in text
    assert "FLEET_ops {" in text and "jetstream: enabled" in text and 'store_dir: "/data/nats"' in text


def test_the_fleet_guide_shows_the_configuration_cocoplus_writes() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "fleet.md").read_text()
    block = accounts.account_block("ops", {"m1": "$M1_PASSWORD", "m2": "$M2_PASSWORD"})
    assert block in guide, (
        "docs/guides/fleet.md: paste accounts.account_block('ops', {'m1': '$M1_PASSWORD', 'm2': '$M2_PASSWORD'})"
    )


# -- commands ---------------------------------------------------------------------------------------------


def _cmd(type_: str = "stop", **args: str) -> dict[str, object]:
    return commands.make("fc_1", 1, type_, naming.Target("m1", "proj"), dict(args), "alice", "m2")


def _checked(doc: dict[str, object], sender: str = "m2") -> dict[str, object]:
    return commands.check(doc, "m1", "proj", sender)


def test_a_command_is_checked_before_anything_is_done() -> None:
    got = _checked(_cmd())
    assert got["type"] == "stop" and got["sender"] == "m2"
    bad = [
        ("not json", "not a JSON object"),
        ({**_cmd(), "id": "../x"}, "no valid id"),
        ({**_cmd(), "v": 1}, "version 1; this relay understands 2"),
        ({**_cmd(), "type": "rm"}, "unknown command type 'rm'"),
        ({**_cmd(), "project": "other"}, "addressed to m1/other"),
        ({**_cmd(), "args": {"reason": 3}}, "must be text"),
        ({**_cmd(), "args": {"force": "yes"}}, "unknown argument 'force'"),
        (_cmd("steer"), "steer needs 'text'"),
        (_cmd("resume"), r"resume needs 'stop_id' \(the stop it lifts\)"),
        (_cmd("resume", stop_id="cs_1"), "'cs_1' is not a stop id"),
        ({**_cmd(), "session": "a/b"}, "not a valid alias"),
        ({**_cmd(), "operator": None}, "'operator' missing"),
        ({**_cmd(), "operator": "alice\nroot"}, "control characters"),
        ({**_cmd(), "sent_at": "yesterday"}, "'sent_at' missing or not a time"),
        ({**_cmd(), "principal": "operator"}, "unknown field\\(s\\) 'principal'"),
        # who sent it is the subject's, never the body's
        ({**_cmd(), "from": "m3"}, "it says it comes from 'm3', but machine m2 sent it"),
        (
            {**_cmd(), "operator": "bob on m3 (fleet)"},
            "its operator 'bob on m3 \\(fleet\\)' names a machine of the fleet",
        ),
        ({**_cmd(), "operator": "fleet:m3"}, "names a machine of the fleet"),
    ]
    for doc, why in bad:
        with pytest.raises(commands.Rejected, match=why):
            _checked(doc)  # type: ignore[arg-type]
    with pytest.raises(commands.Rejected, match="it says it comes from 'm2', but machine m3 sent it"):
        commands.check(_cmd(), "m1", "proj", "m3")


def test_a_command_older_than_the_max_age_is_refused() -> None:
    cmd = _checked(_cmd())
    now = clock.parse_iso(cmd["sent_at"]) or 0.0
    assert commands.too_old(cmd, now, 60.0, now=now + 59) is None
    why = commands.too_old(cmd, now, 60.0, now=now + 61)
    assert (
        why is not None and "older than [fleet] max_command_age_s (1m)" in why and "stored by the server 1m ago" in why
    )
    # stored just now, but its body says it was sent long ago (a copy published again): too old all the same
    assert commands.too_old(cmd, now + 1000, 60.0, now=now + 1001) is not None
    # stored long ago, whatever time its body claims
    fresh = {**cmd, "sent_at": clock.iso(now + 1000)}
    assert commands.too_old(fresh, now, 60.0, now=now + 1001) is not None


def test_a_command_applies_once_and_a_repeat_is_answered_from_the_record(project: Layout) -> None:
    applied = apply.Applied(project)
    cmd = _checked(_cmd("steer", text="rebase first"))
    first = apply.apply(project, applied, cmd, seq=7)
    assert first["ok"] and not first["duplicate"]
    again = apply.apply(project, apply.Applied(project), cmd, seq=7)  # a restarted relay reads the record
    assert again["ok"] and again["duplicate"]
    assert steering.pending_steer(project) == "rebase first\n"
    lines = [json.loads(x) for x in Path(project.fleet_commands).read_text().splitlines()]
    assert [(x["id"], x["phase"]) for x in lines] == [("fc_1.1", "applying"), ("fc_1.1", "applied")]
    assert lines[0]["seq"] == 7 and lines[0]["from"] == "m2" and lines[0]["principal"] == "fleet:m2"


def test_the_same_id_in_another_stream_message_is_a_replay(project: Layout) -> None:
    applied = apply.Applied(project)
    cmd = _checked(_cmd("steer", text="once"))
    assert apply.apply(project, applied, cmd, seq=3)["ok"]
    with pytest.raises(
        commands.Rejected,
        match=r"fc_1.1 was received before \(stream message 3, from m2, applied\); "
        r"this copy \(stream message 9\) is a replay",
    ):
        apply.apply(project, apply.Applied(project), cmd, seq=9)
    assert steering.pending_steer(project) == "once\n"


def test_ids_are_remembered_for_the_window_and_then_forgotten(project: Layout) -> None:
    applied = apply.Applied(project, window_s=100.0)
    cmd = _checked(_cmd("steer", text="x"))
    apply.apply(project, applied, cmd, seq=1)
    now = clock.parse_iso(applied.get("fc_1.1")["ts"]) or 0.0  # type: ignore[index]
    assert applied.prune(now + 99) == 0 and applied.get("fc_1.1") is not None
    assert applied.prune(now + 101) == 1 and applied.get("fc_1.1") is None
    assert Path(project.fleet_commands).read_text() == ""  # forgotten in the file too
    assert apply.Applied(project, window_s=100.0).get("fc_1.1") is None


def test_a_stop_is_the_same_as_session_stop_and_names_the_sender(project: Layout) -> None:
    out = apply.apply(project, apply.Applied(project), _checked(_cmd(reason="freeze")))
    assert out["ok"] and out["result"]["kill_switch"]
    stop = killswitch.read_stop(project)
    assert stop is not None and stop["operator"] == "alice on m2 (fleet)" and stop["reason"] == "freeze"
    assert stop["principal"] == "fleet:m2"
    assert json.loads(Path(project.status).read_text())["state"] == "paused"


def test_a_resume_lifts_only_the_stop_it_names(project: Layout) -> None:
    old = killswitch.stop(project, "alice", "first")["stop"]
    newer = killswitch.stop(project, "bob", "made since")["stop"]
    out = apply.apply(project, apply.Applied(project), _checked({**_cmd("resume", stop_id=old["id"]), "id": "fc_4.1"}))
    assert out["ok"] and out["result"]["resumed"] is False and out["result"]["kept"]["id"] == newer["id"]
    assert (killswitch.read_stop(project) or {}).get("id") == newer["id"]
    out = apply.apply(
        project, apply.Applied(project), _checked({**_cmd("resume", stop_id=newer["id"]), "id": "fc_5.1"})
    )
    assert out["ok"] and out["result"]["resumed"] is True and killswitch.read_stop(project) is None


def test_a_resume_of_one_session_lifts_only_the_stop_it_names(project: Layout) -> None:
    from cocoplus.session import registry, stops

    rec, _ = registry.ensure(project, "claude", "sess-x", event="SessionStart")
    first = stops.stop(project, rec, "alice", "first")["stop"]
    newer = stops.stop(project, rec, "bob", "made since")["stop"]
    named = {**_cmd("resume", stop_id=first["id"]), "session": rec["alias"], "id": "fc_6.1"}
    out = apply.apply(project, apply.Applied(project), _checked(named))
    assert out["ok"] and out["result"]["resumed"] is False and out["result"]["kept"]["id"] == newer["id"]
    assert (stops.read(project, rec["id"]) or {}).get("id") == newer["id"]
    named = {**_cmd("resume", stop_id=newer["id"]), "session": rec["alias"], "id": "fc_7.1"}
    out = apply.apply(project, apply.Applied(project), _checked(named))
    assert out["ok"] and out["result"]["resumed"] is True and stops.read(project, rec["id"]) is None


def test_a_resume_from_the_fleet_that_names_no_stop_is_refused(project: Layout) -> None:
    from cocoplus.core.errors import Refused
    from cocoplus.ops import authority
    from cocoplus.ops import session as ops_session

    killswitch.stop(project, "alice", "stays")
    with pytest.raises(Refused, match="a resume from the fleet names the stop it lifts"):
        ops_session.resume(project, principal=authority.fleet("m2"))
    assert killswitch.read_stop(project) is not None
    (logged,) = [json.loads(x) for x in Path(project.authority_log).read_text().splitlines()]
    assert logged["principal"] == "fleet:m2" and logged["outcome"] == "refused"


def test_after_a_crash_during_a_command_only_a_stop_is_applied_again(project: Layout) -> None:
    applied = apply.Applied(project)
    steer = _checked({**_cmd("steer", text="x"), "id": "fc_2.1"})
    stop = _checked({**_cmd(), "id": "fc_3.1"})
    applied.begin(steer)  # the relay died here: did the steer land or not?
    applied.begin(stop)
    fresh = apply.Applied(project)
    out = apply.apply(project, fresh, steer)
    assert not out["ok"] and "may or may not have taken effect" in out["error"]
    assert steering.pending_steer(project) is None  # not applied a second time
    out = apply.apply(project, fresh, stop)
    assert out["ok"] and killswitch.read_stop(project) is not None  # a stop twice is harmless: never weaker


def test_a_failing_local_call_is_an_answer_not_a_crash(project: Layout) -> None:
    out = apply.apply(
        project, apply.Applied(project), _checked(_cmd("resume", stop_id="stop_20260101T000000Z_00000000"))
    )
    assert out["ok"] and out["result"]["resumed"] is False  # nothing to resume: said, not failed
    steering.steer(project, "x" * 60000)
    big = _checked({**_cmd("steer", text="y" * 10000), "id": "fc_9.1"})
    out = apply.apply(project, apply.Applied(project), big)
    assert out["ok"] is False and "would exceed" in out["error"]
    assert present(apply.Applied(project).get("fc_9.1"))["phase"] == "applied"  # answered, so never tried again


# -- outbox ---------------------------------------------------------------------------------------------------


def test_the_outbox_reads_complete_lines_with_their_offsets(tmp_path: Path) -> None:
    path = tmp_path / "signals.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"b": 2}\nnot json\n[1]\n{"torn"')
    ino, start, lines = outbox.read_new(str(path), None)
    assert ino == os.stat(path).st_ino and start == 0
    assert [(x.start, x.end, x.record, x.error is not None) for x in lines] == [
        (0, 9, {"a": 1}, False), (10, 19, {"b": 2}, False), (19, 28, None, True), (28, 32, None, True)
    ]  # fmt: skip
    _, start, more = outbox.read_new(str(path), {"ino": ino, "offset": 32})
    assert start == 32 and more == []  # the torn tail waits for its newline
    with open(path, "ab") as fh:
        fh.write(b": 1}\n")
    _, _, more = outbox.read_new(str(path), {"ino": ino, "offset": 32})
    assert [x.record for x in more] == [{"torn": 1}]


def test_a_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    path.write_text('{"n": 1}\n{"n": 2}\n')
    ino, _, _ = outbox.read_new(str(path), None)
    os.replace(_new(tmp_path, '{"n": 9}\n'), path)
    ino2, start, lines = outbox.read_new(str(path), {"ino": ino, "offset": 18})
    assert ino2 != ino and start == 0 and [x.record for x in lines] == [{"n": 9}]
    assert outbox.read_new(str(tmp_path / "missing"), None) == (None, 0, [])


def _new(d: Path, text: str) -> Path:
    p = d / "new.jsonl"
    p.write_text(text)
    return p
