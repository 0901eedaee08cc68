"""The prompt (UserPromptSubmit and its kin): the operator's pending steers delivered once, a stop said, the cost
budget's notices due; and the steer claim a turn end shares.

Loaded by the runner only for prompts (`runner.HANDLERS`), and by a turn end
only when its session's own steer waits.  A prompt with no steer waiting
loads no claim protocol (`nothing_to_claim` looks first) and, with no notice
due, no cost code.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.session import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.paths import Layout
    from cocoplus.core.shapes import SessionRecord
    from cocoplus.hook.runner import Answer, Hook  # only a type: the runner imports this module
    from cocoplus.session.steering import Claim


def on_prompt(h: Hook) -> Answer:
    def change(rec: SessionRecord) -> None:
        registry.set_attention(rec, None)
        rec["state"] = "running"

    h.touch_session(change)
    texts: list[str] = []
    sentence = h.stop_sentence()
    if sentence is not None:
        texts.append(sentence)
    if h.adapter.ADDS_CONTEXT:  # a runtime that cannot add context to a prompt leaves the steer pending
        own = h.record["id"] if h.record is not None else None
        for target in (None, own) if own else (None,):
            claimed = claim(h, target)
            if claimed is None:
                continue
            if target is None:
                texts.append(f"Operator note (cocoplus, one-shot, id {claimed.id}): {claimed.text.strip()}")
            else:
                texts.append(
                    f"Operator note for this session (cocoplus, one-shot, id {claimed.id}): {claimed.text.strip()}"
                )
            h.after.append(finisher(h, claimed))
    texts.extend(_budget_notes(h))
    return h.adapter.prompt_reply(h.event_name, "\n\n".join(texts)), 0


def _budget_notes(h: Hook) -> list[str]:
    """Cost-budget notices due at this prompt (the reserve notice)."""
    try:
        due = fsio.read_json(h.layout.budget_state)
    except CocoplusError:
        return []  # no notice from a damaged budget state (prompt_notes gives none either): status and check report it
    if not (isinstance(due, dict) and due.get("reserve_notice_pending")):
        return []  # the common prompt: nothing due, and the cost code stays unloaded
    from cocoplus.cost import enforce  # deferred: only a prompt with a notice due, and turn ends, load the cost code

    try:
        return enforce.prompt_notes(h.layout, h.values)
    except CocoplusError as exc:
        h.log(f"cost notice skipped: {exc}")
        return []


def claim(h: Hook, session: str | None) -> Claim | None:
    """The project's pending steer (`session` None) or that session's own, claimed for delivery."""
    try:
        timeout = h.timeout  # the configuration is read (and a stale copy compiled) as at every prompt
        if nothing_to_claim(h.layout, session):
            return None  # the common prompt: no steer waits, and the claim protocol stays unloaded
        from cocoplus.session import steering  # deferred: only a steer pending or left half-delivered loads it

        return steering.claim_steer(h.layout, timeout=timeout, session=session)
    except CocoplusError as exc:
        h.log(f"steer not claimed: {exc}")
        return None


def finisher(h: Hook, claimed: Claim) -> Any:
    """What marks `claimed` delivered, run once the runtime has the answer (`Hook.after`)."""
    from cocoplus.session import steering  # deferred: loaded already by the claim (`claim`)

    sid, runtime = h.session_id, h.runtime
    return lambda: steering.finish_steer(h.layout, claimed, session=sid, runtime=runtime)


def nothing_to_claim(layout: Layout, session: str | None) -> bool:
    """Whether no steer waits (the project's, or with `session` that session's own): none pending and no claim left
    half-delivered, in the places `session/steering.py` claims from.  Two calls and no lock, before the claim
    protocol is loaded (`steering.claim_steer` looks again, under its lock); claims that cannot be listed may be
    there, and the claim says why."""
    if session is None:
        pending, claimed = layout.steer, layout.steer_claimed_dir
    else:
        pending, claimed = layout.session_steer(session), layout.session_steer_claimed_dir(session)
    if os.path.lexists(pending):
        return False
    try:
        return not os.listdir(claimed)
    except FileNotFoundError:
        return True
    except OSError:
        return False
