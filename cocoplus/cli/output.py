"""What the CLI prints goes through here: the one renderer (`show`), JSON, text, tables, errors.

The exceptions are texts printed verbatim for another reader to parse:
the `--version` line, `config show`/`config example` TOML, `shell-init`'s
script and the chat menu's prompt, written to stdout as they are.

Text is printed through Rich without wrapping or cutting anything (the
terminal wraps a long line; a pipe gets it whole); colour only on a
terminal and never with NO_COLOR.  Stored text (steers, reasons, paths) is
always shown literally, never read as markup.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

_out: Console | None = None
_err: Console | None = None

# Styles for words an operator must not miss.
ALERT = "bold red"  # STOPPED, DAMAGED, INVALID
WARN = "yellow"  # STALE


def out() -> Console:
    global _out
    if _out is None:
        _out = Console(highlight=False, soft_wrap=True)
    return _out


def err() -> Console:
    global _err
    if _err is None:
        _err = Console(stderr=True, highlight=False, soft_wrap=True)
    return _err


def reset() -> None:
    """Forget the consoles (tests swap stdout/stderr between runs)."""
    global _out, _err
    _out = None
    _err = None


def show(result: Any, json_out: bool, text: Callable[[Any], None]) -> None:
    """The one renderer every command hands its result to: `--json` prints the result as it is
    (the same data the REST endpoint and the MCP tool answer with), otherwise `text` prints it for a person."""
    if json_out:
        emit_json(result)
    else:
        text(result)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def line(*parts: str | tuple[str, str]) -> None:
    """Print one line made of plain strings and (text, style) pairs; the text is never markup."""
    t = Text()
    for p in parts:
        if isinstance(p, tuple):
            t.append(p[0], style=p[1])
        else:
            t.append(p)
    out().print(t)


def error_line(message: str, hint: str | None = None) -> None:
    """One line on stderr (plus a hint line); never markup-interpreted."""
    text = f"cocoplus: error: {message}"
    sys.stderr.write(text.replace("\n", " ") + "\n")
    if hint:
        sys.stderr.write(f"cocoplus: hint: {hint}".replace("\n", " ") + "\n")
    sys.stderr.flush()


def note(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def problems(items: Sequence[str], label: str = "problem") -> None:
    for p in items:
        note(f"cocoplus: {label}: {p}")


def terminal_width() -> int | None:
    """The width to fit tables to on a terminal; None when the output goes to a pipe or a file (nothing is fitted)."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((int(os.environ.get("COLUMNS") or 80), 24)).columns


def table(columns: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]], width: int | None = None) -> list[str]:
    """Rows as aligned text lines under a header; no cell is ever cut.

    `columns` are (title, required).  When `width` is given and the rows
    are wider, optional columns are dropped from the right until they fit;
    required ones (ids, states, times) always stay whole, and a line still
    too wide is left for the terminal to wrap.
    """
    keep = list(range(len(columns)))

    def widths(idx: list[int]) -> list[int]:
        return [max([len(columns[i][0])] + [len(r[i]) for r in rows]) for i in idx]

    if width is not None:
        optional = [i for i in reversed(range(len(columns))) if not columns[i][1]]
        while sum(widths(keep)) + 2 * (len(keep) - 1) > width and optional:
            keep.remove(optional.pop(0))
    ws = widths(keep)
    lines = []
    for cells in [[c[0] for c in columns], *rows]:
        lines.append("  ".join(cells[i].ljust(w) for i, w in zip(keep, ws, strict=True)).rstrip())
    return lines


def rows(pairs: Sequence[tuple[str, Text | str]], indent: str = "  ") -> None:
    """`label  value` lines with the values aligned; a value's further lines are indented under it."""
    if not pairs:
        return
    w = max(len(label) for label, _ in pairs)
    pad = indent + " " * (w + 2)
    for label, value in pairs:
        t = Text(indent)
        t.append(label.ljust(w), style="bold")
        t.append("  ")
        val = value if isinstance(value, Text) else Text(value)
        first = True
        for piece in val.split("\n", allow_blank=True):
            if not first:
                t.append("\n" + pad)
            t.append_text(piece)
            first = False
        out().print(t)
