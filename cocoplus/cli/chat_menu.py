"""`cocoplus chat menu`: the four-item "..." menu for a terminal user.

1 Model and 2 Reasoning effort are single-choice pickers that save the
conversation's override; 3 Session info prints `chat info`; 4 Refresh
prints the latest messages.  Reads plain lines from stdin, so it can be
driven by a script as well as typed.
"""

from __future__ import annotations

import sys
from cocoplus.chat import api, store
from cocoplus.cli import output
from cocoplus.core.paths import Layout

ITEMS = ("Model", "Reasoning effort", "Session info", "Refresh")


def _ask(prompt: str) -> str | None:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        return None
    return line.strip()


def _pick(title: str, options: list[str], current: str | None) -> int | None:
    con = output.out()
    con.print(title, markup=False)
    for i, opt in enumerate(options, 1):
        mark = "(*)" if opt == current else "( )"
        con.print(f"  {i}. {mark} {opt}", markup=False)
    while True:
        ans = _ask(f"choose 1-{len(options)} (empty to cancel): ")
        if ans is None or ans == "":
            return None
        if ans.isdigit() and 1 <= int(ans) <= len(options):
            return int(ans) - 1
        con.print(f"not a choice: {ans!r}", markup=False)


def model_options(layout: Layout, conversation: str) -> list[str]:
    from cocoplus import config as config_mod

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


def run(layout: Layout, conversation: str) -> None:
    con = output.out()
    while True:
        con.print(f"... {conversation}", markup=False)
        for i, item in enumerate(ITEMS, 1):
            con.print(f"  {i}. {item}", markup=False)
        ans = _ask("choose 1-4 (q to quit): ")
        if ans is None or ans.lower() in ("q", "quit", ""):
            return
        if ans == "1":
            _model(layout, conversation)
        elif ans == "2":
            _effort(layout, conversation)
        elif ans == "3":
            from cocoplus.cli.commands.chat_cmd import _print_info

            _print_info(api.info(layout, conversation))
        elif ans == "4":
            view = api.conversation_view(layout, conversation)
            for m in view["messages"][-10:]:
                from cocoplus.cli.commands.chat_cmd import _line

                con.print(_line(m), markup=False)
            if view["pending"]:
                con.print("... master agent is thinking", markup=False)
            elif view["failed"]:
                con.print(f"!! reply failed: {view['failed']['error']}. Retry with `{view['failed']['retry']}`", markup=False)
        else:
            con.print(f"not a choice: {ans!r}", markup=False)


def _model(layout: Layout, conversation: str) -> None:
    current = store.conversation(layout, conversation).get("modelOverride")
    known = model_options(layout, conversation)
    options = known + ["Other (type a model name)", "Use the default (clear the override)"]
    i = _pick("Model for this conversation:", options, current)
    if i is None:
        return
    if i < len(known):
        doc = api.set_overrides(layout, conversation, model=known[i])
    elif i == len(known):
        name = _ask("model name: ")
        if not name:
            return
        doc = api.set_overrides(layout, conversation, model=name)
    else:
        doc = store.set_overrides(layout, conversation, clear_model=True)
    output.out().print(f"model for {conversation}: {doc.get('modelOverride') or '(default)'}", markup=False)


def _effort(layout: Layout, conversation: str) -> None:
    current = store.conversation(layout, conversation).get("reasoningEffortOverride")
    options = list(store.EFFORTS) + ["Use the default (clear the override)"]
    i = _pick("Reasoning effort for this conversation:", options, current)
    if i is None:
        return
    if i < 3:
        doc = api.set_overrides(layout, conversation, effort=options[i])
    else:
        doc = store.set_overrides(layout, conversation, clear_effort=True)
    output.out().print(f"reasoning effort for {conversation}: {doc.get('reasoningEffortOverride') or '(default)'}", markup=False)

