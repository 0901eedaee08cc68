"""Fleet commands as they travel: their shape, who sent them, and what makes one refused.

A command is one JSON message on `cocoplus.F.cmd.M.P.S`, S the machine
that sends it:

    {"v": 2, "id": "fc_....1", "batch": "fc_...", "type": "stop", "machine": "m1", "project": "web",
     "session": null, "args": {"reason": "..."}, "operator": "alice", "from": "m2", "sent_at": "...",
     "acting": "operator"}

Who sent it is S, the token of the subject the server let that machine's
user publish on (cocoplus/fleet/accounts.py), never the body: a body whose
`from` is not S, or whose `operator` names a machine of the fleet (`bob on
m3 (fleet)`, `fleet:m3`), is refused.  The command acts as principal
`fleet:S` (cocoplus/ops/authority.py), recorded on the stop, steer or
action it makes, with the operator shown as `alice on S (fleet)`: the name
is what S said, the machine is what the server checked.

Refused too, before anything is done: a command older than `[fleet]
max_command_age_s` (by the time the server stored it, or the time it says
it was sent), a replay (an id received before in another stream message),
and a `resume` that does not name the stop it lifts (`args.stop_id`; the
sender takes it from the target's last reported state).  A resume lifts
only the stop it names, as a confirmed `session resume` removes only the
stop it showed, so it never lifts a stop made after it was sent, here or
from the fleet.

`acting` says who made it on the machine that sends it: its operator
(the default) or its main brain, whose command has no more authority on
the machine it reaches than the brain has (cocoplus/ops/authority.py).

What each type does on the machine it reaches, and the record that makes it
apply once, are the relay's (cocoplus/relay/apply.py).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from cocoplus.core import clock
from cocoplus.core.paths import is_valid_id
from cocoplus.fleet import naming

VERSION = 2
FIELDS = ("v", "id", "batch", "type", "machine", "project", "session", "args", "operator", "from", "sent_at", "acting")
# Who made the command on the machine that sends it: its operator, or its main brain (which acts there within what
# its operator allows, and so here too: cocoplus/ops/authority.py).  A command that does not say is its operator's.
ACTING = ("operator", "brain")
MAX_TEXT = 64 * 1024
MAX_NAME = 200


class Rejected(Exception):
    """A command this relay will not apply; the message says why (it is acknowledged with it)."""


def new_batch_id() -> str:
    """An id for one operator action; each target's message is `<batch>.<n>`."""
    return f"fc_{int(time.time() * 1000):x}{secrets.token_hex(4)}"


def stop_id_of(command_id: str) -> str:
    """The id of the stop a fleet `stop` command makes where it lands: its sender knows it from the moment it sends
    it, so a `resume` it sends before hearing that the stop arrived (a partition) can name it."""
    return f"stop_{command_id}"


def operator_label(cmd: dict[str, Any]) -> str:
    """Who a command came from, as written into AGENT_STOP and steps.jsonl: `alice on m2 (fleet)`, the machine
    being the sender the server checked (`sender`, set on receipt), never what the body says."""
    return f"{cmd.get('operator') or 'unknown'} on {cmd.get('sender') or 'an unknown machine'} (fleet)"


ACTIONS = {"stop": "stop", "resume": "resume", "steer": "steer", "dispatch": "dispatch", "answer": "dispatch"}


def action(doc: Any) -> str:
    """The authority action of a command (for the record of a refusal): its type's, else `command`."""
    type_ = doc.get("type") if isinstance(doc, dict) else None
    return ACTIONS.get(type_, "command") if isinstance(type_, str) else "command"


class Spec:
    __slots__ = ("reapply_safe", "args")

    def __init__(self, reapply_safe: bool, args: dict[str, bool]) -> None:
        """`reapply_safe`: applying it twice does no harm (a relay that died while applying it applies it
        again); `args`: argument name -> required."""
        self.reapply_safe = reapply_safe
        self.args = args


TYPES: dict[str, Spec] = {
    "stop": Spec(reapply_safe=True, args={"reason": False}),
    "resume": Spec(reapply_safe=False, args={"stop_id": True}),
    "steer": Spec(reapply_safe=False, args={"text": True}),
    "dispatch": Spec(reapply_safe=False, args={"instruction": True}),
    "answer": Spec(reapply_safe=False, args={"text": True}),
}


# -- checking a message ------------------------------------------------------------------------


def make(
    batch: str,
    n: int,
    type_: str,
    target: naming.Target,
    args: dict[str, Any],
    operator: str,
    sender: str,
    acting: str = "operator",
) -> dict[str, Any]:
    """The message for one target of one action of the sender's operator (or, `acting="brain"`, its main brain)."""
    return {
        "v": VERSION,
        "id": f"{batch}.{n}",
        "batch": batch,
        "type": type_,
        "machine": target.machine,
        "project": target.project,
        "session": target.session,
        "args": args,
        "operator": operator,
        "from": sender,
        "sent_at": clock.iso(),
        "acting": acting,
    }


def check(doc: Any, machine: str, project: str, sender: str) -> dict[str, Any]:
    """A received command, checked against the machine `sender` whose user published it (the subject's last
    token); Rejected naming what is wrong.  The command returned carries `sender`."""
    if not isinstance(doc, dict):
        raise Rejected("not a JSON object")
    cid = doc.get("id")
    if not isinstance(cid, str) or not is_valid_id(cid):
        raise Rejected("no valid id")
    if doc.get("v") != VERSION:
        raise Rejected(f"command version {doc.get('v')!r}; this relay understands {VERSION}")
    spec = TYPES.get(doc.get("type"))  # type: ignore[arg-type]
    if spec is None:
        raise Rejected(f"unknown command type {doc.get('type')!r} (this relay applies {', '.join(TYPES)})")
    unknown = sorted(str(k) for k in doc if k not in FIELDS)
    if unknown:
        raise Rejected(f"unknown field(s) {', '.join(repr(k) for k in unknown)}")
    if doc.get("machine") != machine or doc.get("project") != project:
        raise Rejected(f"addressed to {doc.get('machine')}/{doc.get('project')}, not {machine}/{project}")
    if doc.get("from") != sender:
        raise Rejected(
            f"it says it comes from {_shown(doc.get('from'))}, "
            f"but machine {sender} sent it (its NATS user published it)"
        )
    session = doc.get("session")
    if session is not None and not (isinstance(session, str) and is_valid_id(session)):
        raise Rejected("the session is not a valid alias or id")
    args = doc.get("args")
    if not isinstance(args, dict):
        raise Rejected("args is not an object")
    for name, value in args.items():
        if name not in spec.args:
            raise Rejected(f"unknown argument {name!r} for {doc['type']}")
        if not isinstance(value, str) or len(value.encode("utf-8")) > MAX_TEXT:
            raise Rejected(f"argument {name!r} must be text of at most {MAX_TEXT // 1024} KiB")
    for name, required in spec.args.items():
        if required and not str(args.get(name) or "").strip():
            raise Rejected(f"{doc['type']} needs {name!r}" + (" (the stop it lifts)" if name == "stop_id" else ""))
    stop_id = args.get("stop_id")
    if stop_id is not None and not (stop_id.startswith("stop_") and is_valid_id(stop_id)):
        raise Rejected(f"{_shown(stop_id)} is not a stop id")
    operator = doc.get("operator")
    if not isinstance(operator, str) or not operator.strip() or len(operator) > MAX_NAME:
        raise Rejected("'operator' missing or too long")
    if any(ord(c) < 32 or ord(c) == 127 for c in operator):
        raise Rejected("'operator' holds control characters")
    if "(fleet)" in operator or "fleet:" in operator.lower():
        raise Rejected(
            f"its operator {_shown(operator)} names a machine of the fleet; a command names its operator on the "
            f"machine that sends it ({sender})"
        )
    if clock.parse_iso(doc.get("sent_at")) is None:
        raise Rejected("'sent_at' missing or not a time")
    if doc.get("acting", "operator") not in ACTING:
        raise Rejected(f"'acting' is {_shown(doc.get('acting'))}, not one of {', '.join(ACTING)}")
    return {**doc, "sender": sender}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def too_old(cmd: dict[str, Any], stored_at: float | None, max_age_s: float, now: float | None = None) -> str | None:
    """Why a command is too old to apply (None if it is not): its age is the longer of since the server stored
    it (`stored_at`, the server's time) and since it says it was sent."""
    now = time.time() if now is None else now
    sent = clock.parse_iso(cmd.get("sent_at"))
    stored_age = None if stored_at is None else now - stored_at
    sent_age = None if sent is None else now - sent
    ages = [a for a in (stored_age, sent_age) if a is not None]
    if not ages or max(ages) <= max_age_s:
        return None
    since = []
    if stored_age is not None:
        since.append(f"stored by the server {clock.age_text(stored_age)} ago")
    if sent_age is not None:
        since.append(f"sent at {cmd.get('sent_at')}")
    return (
        f"it is older than [fleet] max_command_age_s ({clock.age_text(max_age_s)}): {', '.join(since)}; "
        "send it again if it still holds"
    )
