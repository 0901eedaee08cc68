"""`cocoplus chat menu`: the four-item "..." menu for a terminal user.

1 Model and 2 Reasoning effort are single-choice pickers that save the
conversation's override; 3 Session info prints `chat info`; 4 Refresh
prints the latest messages.  Reads plain lines from stdin, so it can be
driven by a script as well as typed.  Every choice is an operation of
`cocoplus.ops.chat`, the same ones `chat set`/`chat info`/`chat log` and
the page call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from cocoplus.cli import output
from cocoplus.core.paths import Layout
from cocoplus.ops import chat as ops

ITEMS = ("Model", "Reasoning effort", "Session info", "Refresh")


def _ask(prompt: str) -> str | None:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        return None
    return line.strip()


def _pick(title: str, options: list[str], current: str | None) -> int | None:
    output.line(title)
    for i, opt in enumerate(options, 1):
        mark = "(*)" if opt == current else "( )"
        output.line(f"  {i}. {mark} ", opt)
    while True:
        ans = _ask(f"choose 1-{len(options)} (empty to cancel): ")
        if ans is None or ans == "":
            return None
        if ans.isdigit() and 1 <= int(ans) <= len(options):
            return int(ans) - 1
        output.line(f"not a choice: {ans!r}")


def run(layout: Layout, conversation: str, *, info: Callable[[], None], recent: Callable[[], None]) -> None:
    """The menu until q; `info` and `recent` print the session info and the latest messages (chat_cmd's renderers)."""
    while True:
        output.line(f"... {conversation}")
        for i, item in enumerate(ITEMS, 1):
            output.line(f"  {i}. {item}")
        ans = _ask("choose 1-4 (q to quit): ")
        if ans is None or ans.lower() in ("q", "quit", ""):
            return
        if ans == "1":
            _model(layout, conversation)
        elif ans == "2":
            _effort(layout, conversation)
        elif ans == "3":
            info()
        elif ans == "4":
            recent()
        else:
            output.line(f"not a choice: {ans!r}")


def _model(layout: Layout, conversation: str) -> None:
    current = ops.info(layout, conversation)["modelOverride"]
    known = ops.model_options(layout, conversation)
    options = known + ["Other (type a model name)", "Use the default (clear the override)"]
    i = _pick("Model for this conversation:", options, current)
    if i is None:
        return
    if i < len(known):
        doc = ops.set_overrides(layout, conversation, model=known[i])
    elif i == len(known):
        name = _ask("model name: ")
        if not name:
            return
        doc = ops.set_overrides(layout, conversation, model=name)
    else:
        doc = ops.set_overrides(layout, conversation, clear_model=True)
    output.line(f"model for {conversation}: {doc.get('modelOverride') or '(default)'}")


def _effort(layout: Layout, conversation: str) -> None:
    current = ops.info(layout, conversation)["reasoningEffortOverride"]
    efforts = ops.effort_options()
    options = efforts + ["Use the default (clear the override)"]
    i = _pick("Reasoning effort for this conversation:", options, current)
    if i is None:
        return
    if i < len(efforts):
        doc = ops.set_overrides(layout, conversation, effort=options[i])
    else:
        doc = ops.set_overrides(layout, conversation, clear_effort=True)
    output.line(f"reasoning effort for {conversation}: {doc.get('reasoningEffortOverride') or '(default)'}")
