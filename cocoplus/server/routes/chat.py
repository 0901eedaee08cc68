"""The master-agent conversation (docs/guides/supervision.md): its messages and settings, a send, a retry."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query

from cocoplus.core.errors import UsageError
from cocoplus.ops import chat as chat_ops
from cocoplus.server.bodies import Conv, MessageBody, OverridesBody, RetryBody
from cocoplus.server.routes.base import ERRORS, WRITE, Srv

router = APIRouter(tags=["master agent"])


@router.get("/api/v1/projects/{conversation}", responses=ERRORS)
def get_project(
    srv: Srv,
    conversation: Conv,
    limit: Annotated[int | None, Query(ge=1, le=100000, description="Only the last N messages.")] = None,
) -> dict[str, Any]:
    """`chat info` + `chat log --json`: `modelOverride`, `reasoningEffortOverride`, the effective model and
    effort, messages, `thinking`, `failed`, and the options of the page's pickers."""
    return chat_ops.details(srv.layout, conversation, limit)


@router.patch("/api/v1/projects/{conversation}", responses=ERRORS, **WRITE)
def patch_project(srv: Srv, conversation: Conv, body: OverridesBody) -> dict[str, Any]:
    """`chat set --model/--effort` and the "..." menu's pickers: saved for this conversation only (null clears
    one); answers like `chat set --json`: the overrides and what a reply now uses."""
    given = body.model_fields_set
    if not given:
        raise UsageError("give modelOverride and/or reasoningEffortOverride (null clears one)")
    return chat_ops.set_overrides(
        srv.layout,
        conversation,
        model=body.modelOverride if "modelOverride" in given else None,
        effort=body.reasoningEffortOverride if "reasoningEffortOverride" in given else None,
        clear_model="modelOverride" in given and body.modelOverride is None,
        clear_effort="reasoningEffortOverride" in given and body.reasoningEffortOverride is None,
        principal=srv.operator,
    )


@router.post("/api/v1/projects/{conversation}/messages", responses=ERRORS, **WRITE)
def post_message(srv: Srv, conversation: Conv, body: MessageBody) -> dict[str, Any]:
    """`chat send`: returns at once with `message`, `task`, `masterReplyState`; the reply lands in the ledger."""
    return chat_ops.send(srv.layout, body.text, conversation, principal=srv.operator)


@router.post("/api/v1/projects/{conversation}/retry", responses=ERRORS, **WRITE)
def post_retry(srv: Srv, conversation: Conv, body: Annotated[RetryBody | None, Body()] = None) -> dict[str, Any]:
    """`chat retry [TASK]`: queue a failed reply again."""
    task_id = (body or RetryBody.model_validate({})).task_id
    return chat_ops.retry(srv.layout, conversation, task_id, principal=srv.operator)
