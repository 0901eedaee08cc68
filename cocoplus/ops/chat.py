"""The master-agent conversation: `cocoplus chat ...` and `/api/v1/projects/{conversation}...`."""

from __future__ import annotations

from typing import Any

from cocoplus import config as config_mod
from cocoplus.chat import api, store
from cocoplus.core import vocab
from cocoplus.core.errors import CocoplusError, UsageError
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.supervision import rounds

DEFAULT_CONVERSATION = store.DEFAULT_CONVERSATION


def send(
    layout: Layout,
    text: str,
    conversation: str = DEFAULT_CONVERSATION,
    wait: bool = False,
    timeout: float = 600.0,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Write the message and queue a reply; returns at once with `masterReplyState` queued, running or failed
    (with `wait`: once the reply is there, or `timeout` seconds passed, with `reply`)."""
    authority.acting(principal, "chat", "chat send", layout)
    result = api.send(layout, text, conversation)
    if wait and result["masterReplyState"] in vocab.UNFINISHED_TASK_STATES:
        done = api.wait(layout, conversation, result["task"]["id"], timeout)
        result["task"] = done["task"]
        result["masterReplyState"] = done["task"]["state"]
        if done.get("reply"):
            result["reply"] = done["reply"]
    return result


ACTIONS_SHOWN = 200


def log(layout: Layout, conversation: str = DEFAULT_CONVERSATION) -> dict[str, Any]:
    """Messages in order, the pending and the last failed reply task, `masterReplyState`; for the main brain's
    conversation also what it (or an operator) did: the action records of supervision/rounds.jsonl (`actions`)."""
    view = api.conversation_view(layout, conversation)
    actions: list[dict[str, Any]] = []
    if conversation == rounds.CONVERSATION:
        try:
            actions = [rounds.action_view(a) for a in rounds.actions(layout)[-ACTIONS_SHOWN:]]
        except CocoplusError:
            actions = []
    problems = view.pop("problems")
    return {**view, "actions": actions, "problems": problems}


def retry(
    layout: Layout,
    conversation: str = DEFAULT_CONVERSATION,
    task_id: str | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Queue a failed reply task again (default: the last failed one)."""
    authority.acting(principal, "chat", "chat retry", layout)
    return api.retry(layout, conversation, task_id)


def info(layout: Layout, conversation: str = DEFAULT_CONVERSATION) -> dict[str, Any]:
    """The controller, the effective model and effort and where each came from, the conversation's files."""
    return api.info(layout, conversation)


def set_overrides(
    layout: Layout,
    conversation: str = DEFAULT_CONVERSATION,
    model: str | None = None,
    effort: str | None = None,
    clear: bool = False,
    clear_model: bool = False,
    clear_effort: bool = False,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Save (or clear) a model and/or reasoning effort for this conversation only.

    Returns the conversation's settings (`modelOverride`,
    `reasoningEffortOverride`, ...) together with `info`, so the answer
    shows what a reply will now use.
    """
    authority.acting(principal, "chat", "chat set", layout)
    if model is None and effort is None and not (clear or clear_model or clear_effort):
        raise UsageError("chat set: give a model, an effort, or clear one")
    doc = api.set_overrides(
        layout,
        conversation,
        model=model,
        effort=effort,
        clear=clear,
        clear_model=clear_model,
        clear_effort=clear_effort,
    )
    return {**doc, **info(layout, conversation)}


def setup(
    layout: Layout,
    kind: str,
    name: str | None = None,
    binary: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """Write a controller account (`[accounts.NAME]`, default name: the kind) into cocoplus.toml and make it
    `[chat] controller`, keeping the rest of the file; says what it wrote and what it replaced."""
    from cocoplus.chat import setup as setup_mod  # deferred: only this command edits cocoplus.toml
    from cocoplus.ops import trust  # deferred: only this command carries the user's trust over

    before = trust.show(layout.project)["state"]
    out = setup_mod.setup(
        layout,
        kind,
        name,
        binary=binary,
        model=model,
        effort=effort,
        base_url=base_url,
        api_key_env=api_key_env,
        command=command,
    )
    out["path"] = layout.rel(out["path"])
    # The user wrote this account by running the command. Their trust covers the file only if nothing in it
    # needed trust before, or they had trusted it as it was: otherwise the repo's own values would be trusted too.
    now = trust.show(layout.project)["state"]
    if now in (trust.NOT_TRUSTED, trust.CHANGED) and before in (trust.NO_FILE, trust.NOTHING, trust.TRUSTED):
        trust.trust(layout.project, layout=layout)
        out["trust"] = "trusted (you wrote it; nothing else in the file needed trust, or you had trusted it)"
    elif now in (trust.NOT_TRUSTED, trust.CHANGED):
        out["trust"] = f"{out['file']} holds values from before that need trust: review it and run `cocoplus trust`"
    else:
        out["trust"] = "nothing to trust" if now == trust.NOTHING else now
    return out


def model_options(layout: Layout, conversation: str = DEFAULT_CONVERSATION) -> list[str]:
    """Models worth offering in a picker: the accounts' defaults, `[chat] default_model`, models used, the override."""
    cfg = config_mod.load_for(layout)
    opts: list[str] = []
    for acct in cfg.accounts.values():
        if acct.get("default_model"):
            opts.append(acct["default_model"])
    if cfg.get("chat.default_model"):
        opts.append(cfg.get("chat.default_model"))
    for t in store.tasks(layout, conversation)[0]:
        if t.get("model"):
            opts.append(t["model"])
    cur = store.conversation(layout, conversation).get("modelOverride")
    if cur:
        opts.append(cur)
    return list(dict.fromkeys(opts))


def effort_options() -> list[str]:
    """The reasoning efforts a conversation may use."""
    return list(vocab.EFFORTS)


def details(layout: Layout, conversation: str = DEFAULT_CONVERSATION, limit: int | None = None) -> dict[str, Any]:
    """`info` and `log` in one answer (the page's and the menu's view), with the picker options;
    `limit` keeps only the last N messages (`messagesTotal` counts them all)."""
    view = log(layout, conversation)
    about = info(layout, conversation)
    problems = list(dict.fromkeys(view.pop("problems") + about.pop("problems")))
    total = len(view["messages"])
    if limit is not None:
        view["messages"] = view["messages"][-limit:]
    return {
        **about,
        **view,
        "messagesTotal": total,
        "thinking": bool(view["pending"]),
        "modelOptions": model_options(layout, conversation),
        "reasoningEffortOptions": effort_options(),
        "problems": problems,
    }
