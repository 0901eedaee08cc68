"""What the CLI prints goes through here: the one renderer (`show`), JSON, text, tables, errors.

The exceptions are texts printed verbatim for another reader to parse:
the `--version` line, `config show`/`config example` TOML, `shell-init`'s
script and the chat menu's prompt, written to stdout as they are.

Text is printed through Rich without wrapping or cutting anything (the
terminal wraps a long line; a pipe gets it whole); colour only on a
terminal and never with NO_COLOR.  Stored text (steers, reasons, paths) is
always shown literally, never read as markup, and inert: every string
printed through here passes `core.inert` first (ANSI sequences removed,
other control characters and bidi controls shown visibly; table cells on
one line), and `--json` writes C1 and bidi controls as `\\uXXXX` escapes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.text import Span, Text

from cocoplus.core import inert

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
    sys.stdout.write(inert.json_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def shown(value: Text | str, one_line: bool = False) -> Text:
    """`value` made inert (core.inert), a Text's styles kept on the pieces they covered.

    Rich drops BEL, backspace, CR, VT and FF when a Text is made, so a Text
    built from untrusted text shows those as nothing rather than as `␇`;
    everything else (ESC and the sequences it starts, C1, DEL, bidi
    controls) is still here to be made inert."""
    clean = inert.line if one_line else inert.text
    if not isinstance(value, Text):
        return Text(clean(value))
    if not value.spans:
        return Text(clean(value.plain), style=value.style, end=value.end)
    cuts = sorted({s.start for s in value.spans} | {s.end for s in value.spans})
    t = Text(style=value.style, end=value.end)
    for piece in value.divide(cuts):
        plain = clean(piece.plain)
        t.append_text(Text(plain, spans=[Span(0, len(plain), s.style) for s in piece.spans]))
    return t


def line(*parts: str | tuple[str, str]) -> None:
    """Print one line made of plain strings and (text, style) pairs; the text is never markup, and inert."""
    t = Text()
    for p in parts:
        if isinstance(p, tuple):
            t.append(inert.text(p[0]), style=p[1])
        else:
            t.append(inert.text(p))
    out().print(t)


def error_line(message: str, hint: str | None = None) -> None:
    """One line on stderr (plus a hint line); never markup-interpreted, inert."""
    sys.stderr.write(inert.line(f"cocoplus: error: {message}") + "\n")
    if hint:
        sys.stderr.write(inert.line(f"cocoplus: hint: {hint}") + "\n")
    sys.stderr.flush()


def note(message: str) -> None:
    sys.stderr.write(inert.text(message) + "\n")
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
    too wide is left for the terminal to wrap.  Each cell is made inert on
    one line before the widths are measured.
    """
    keep = list(range(len(columns)))
    rows = [[inert.line(c) for c in r] for r in rows]

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
        t.append(inert.line(label).ljust(w), style="bold")
        t.append("  ")
        val = shown(value)
        first = True
        for piece in val.split("\n", allow_blank=True):
            if not first:
                t.append("\n" + pad)
            t.append_text(piece)
            first = False
        out().print(t)


# -- a headless run's transcript (`cocoplus workers logs`) ---------------------------------------------

# The label before each kind of entry (`cocoplus.runtimes.streams`), and its style.
_LABELS = {
    "session": ("session", "dim"), "text": ("assistant", "bold"), "tool": ("tool", "cyan"), "result": ("result", ""),
    "warning": ("warning", WARN), "error": ("ERROR", ALERT), "end": ("end", "bold"), "output": ("output", "dim"),
    "cocoplus": ("cocoplus", "dim"),
}  # fmt: skip
_LABEL_WIDTH = max(len(label) for label, _style in _LABELS.values())
RESULT_CHARS = 300  # a tool's result on its one line, at most this many characters


def one_line(value: str, limit: int = RESULT_CHARS) -> str:
    """Several lines as one (`↵` where each line ended), inert,
    cut at `limit` characters saying how many lines there were."""
    lines = [ln.rstrip() for ln in value.strip().splitlines()]
    joined = inert.line(" ↵ ".join(lines))
    if len(joined) <= limit:
        return joined
    return joined[: limit - 1] + f"… ({len(lines)} lines)" if len(lines) > 1 else joined[: limit - 1] + "…"


def transcript(entries: Sequence[dict[str, Any]]) -> None:
    """Each entry on its line under a label: the model's text (whole, its further lines indented), each tool call
    and its result (one line each), errors marked ERROR / FAILED; everything inert."""
    pad = " " * (_LABEL_WIDTH + 2)
    for e in entries:
        kind, text = str(e.get("kind")), str(e.get("text") or "")
        label, style = _LABELS.get(kind, (kind, ""))
        failed = bool(e.get("error"))
        if kind == "end" and failed:
            label, style = "FAILED", ALERT
        t = Text()
        t.append(inert.line(label).ljust(_LABEL_WIDTH), style=style)
        t.append("  ")
        if e.get("tool"):
            t.append(inert.line(str(e["tool"])) + ": ", style="bold" if kind == "tool" else "")
        if kind == "result" and failed:
            t.append("ERROR ", style=ALERT)
        if kind == "text":
            t.append(inert.text(text.strip()).replace("\n", "\n" + pad))
        elif kind in ("tool", "result"):
            t.append(one_line(text))
        else:
            t.append(inert.line(text), style="dim" if kind in ("output", "cocoplus", "session") else "")
        out().print(t)
