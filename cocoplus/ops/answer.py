"""A one-tap answer: what every door that receives a token (ntfy's reply topic, a Telegram button, the direct link
`/inbox/t/<token>`) calls, so that each door answers the same way.

`tap(token, channel)` checks the token (`tokens.read`: 403 tampered, 410
expired), spends it (`store.spend`: single use, 409 on any later use, across
restarts), finds the decision its handle stands for and answers it through
`ops.inbox.decide` as the operator, recording the channel.  The first answer
wins on whatever channel: a decision already resolved answers 409 with who
resolved it, through which channel and when.  `open` is the one action that
changes nothing and is not spent (it leads to the decision page).  Each tap
is written to the delivery ledger, refused ones too.
"""

from __future__ import annotations

from typing import Any

from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.inbox import store, tokens


def _out(status: str, http: int, message: str, **fields: Any) -> dict[str, Any]:
    return {"status": status, "http": http, "message": message, **fields}


def tap(token: str, channel: str) -> dict[str, Any]:
    """Apply the answer `token` carries, received through `channel` (`phone:ntfy`, `phone:telegram`, `page`).

    Returns `status` (`ok`, `open`, `tampered`, `expired`, `used`, `already`, `unknown`, `failed`), the HTTP status
    a direct link answers with (200, 200, 403, 410, 409, 409, 410, 500), a one-line `message`, and for a known
    decision its `decision`, `state_dir` and `action`."""
    checked = tokens.read(token)
    where = store.decision_of(checked.handle) if checked.handle else None
    ident = str(where["decision"]) if where else None
    state_dir = str(where["state_dir"]) if where else None
    if checked.status == "tampered":
        _ledger(ident, state_dir, channel, "refused", why="tampered")
        return _out("tampered", 403, "this link is not one cocoplus signed for you (changed, or another user's)")
    if checked.status == "expired":
        _ledger(ident, state_dir, channel, "refused", why="expired", action=checked.action)
        return _out("expired", 410, "this link has expired", decision=ident, action=checked.action)
    if where is None or ident is None or state_dir is None:
        return _out("unknown", 410, "the decision this link answers is no longer known")
    fields = {"decision": ident, "state_dir": state_dir, "action": checked.action}
    if checked.action == "open":
        return _out("open", 200, f"{ident}: open it on the decision page", **fields)
    first = store.spend(tokens.digest(token), checked.expires,
                        {"decision": ident, "action": checked.action, "channel": channel})  # fmt: skip
    if first is not None:
        _ledger(ident, state_dir, channel, "refused", why="used", action=checked.action)
        when = f" at {first['at']}" if first.get("at") else ""
        via = f" via {first['channel']}" if first.get("channel") else ""
        return _out("used", 409, f"{ident}: this link was already used{via}{when}", **fields)
    from cocoplus.ops import authority, inbox  # deferred: the answer's operations load only when a tap is applied

    try:
        result = inbox.decide(ident, str(checked.action), channel=channel, layout=Layout(state_dir),
                              principal=authority.operator())  # fmt: skip
    except CocoplusError as exc:
        _ledger(ident, state_dir, channel, "failed", why=exc.message, action=checked.action)
        return _out("failed", 500, f"{ident}: {exc.message}", **fields)
    if result.get("already_decided"):
        _ledger(ident, state_dir, channel, "refused", why="already resolved", action=checked.action)
        return _out("already", 409, str(result.get("message")), **fields)
    _ledger(ident, state_dir, channel, "answered", action=checked.action)
    return _out("ok", 200, str(result.get("message") or f"{ident}: {checked.action}"), result=result, **fields)


def _ledger(ident: str | None, state_dir: str | None, channel: str, event: str, **fields: Any) -> None:
    try:
        store.note(ident or "-", state_dir or "-", channel, event, **fields)
    except CocoplusError:
        pass  # the answer stands; the service's own status shows a ledger it cannot write
