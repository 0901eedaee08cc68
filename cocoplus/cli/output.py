"""What the CLI prints goes through here: the one renderer (`show`), JSON, text, tables, errors.

The exceptions are texts printed verbatim for another reader to parse:
the `--version` line, `config show`/`config example` TOML, `shell-init`'s
script and the chat menu's prompt, written to stdout as they are.

Text is printed without wrapping or cutting anything (the terminal wraps a
long line; a pipe gets it whole), tabs expanded to every 8th column; styles
(`Styled`) only on a terminal, colour never with NO_COLOR, as Rich decides
them (`FORCE_COLOR`, `TTY_COMPATIBLE`, `TERM=dumb`).  Standard library
only: the commands that print text load no rendering library (bench/cli.py);
Rich is loaded where it draws (`rule`).  Stored text (steers, reasons, paths)
is always shown literally, never read as markup, and inert: every string
printed through here passes `core.inert` first (ANSI sequences removed,
other control characters and bidi controls shown visibly; table cells on
one line), and `--json` writes C1 and bidi controls as `\\uXXXX` escapes.
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cocoplus.cli import terminal
from cocoplus.core import inert

if TYPE_CHECKING:
    from rich.console import Console

# Styles for words an operator must not miss.
ALERT = "bold red"  # STOPPED, DAMAGED, INVALID
WARN = "yellow"  # STALE

# The SGR parameters of the style words, in the order Rich writes them: attributes, then the colour.
_ATTRIBUTES = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "reverse": "7", "strike": "9"}
_COLOURS = {
    name: str(base + i)
    for base, prefix in ((30, ""), (90, "bright_"))
    for i, name in enumerate(
        prefix + c for c in ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
    )
}


class Styled:
    """Text whose pieces may carry a style (`"bold"`, `"bold red"`, `""` for none): a line or a block for a
    person.  The text is kept as given; `shown` makes it inert, and printing styles it only where styles are
    shown (`styles_for`)."""

    __slots__ = ("parts",)

    def __init__(self, text: str = "", style: str = "") -> None:
        self.parts: list[tuple[str, str]] = [(text, style)] if text else []

    @classmethod
    def assemble(cls, *parts: str | tuple[str, str]) -> Styled:
        t = cls()
        for p in parts:
            if isinstance(p, tuple):
                t.append(p[0], style=p[1])
            else:
                t.append(p)
        return t

    def append(self, text: str, style: str = "") -> Styled:
        if text:
            self.parts.append((text, style))
        return self

    def append_text(self, other: Styled) -> Styled:
        self.parts.extend(other.parts)
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _style in self.parts)

    def lines(self) -> list[Styled]:
        """One Styled per line (split at each newline, the styles kept on their pieces)."""
        lines = [Styled()]
        for text, style in self.parts:
            first, *rest = text.split("\n")
            lines[-1].append(first, style)
            for piece in rest:
                lines.append(Styled(piece, style))
        return lines

    def __len__(self) -> int:
        return sum(len(text) for text, _style in self.parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Styled) and self.parts == other.parts

    def __repr__(self) -> str:
        return f"Styled({self.parts!r})"


# -- styles on a stream ------------------------------------------------------------------------------------

# id(stream) -> (the stream, styles shown, colours shown): decided once per stream, as Rich decides once per console.
_styles: dict[int, tuple[Any, bool, bool]] = {}


def styles_for(stream: Any) -> tuple[bool, bool]:
    """(styles shown, colours shown) on `stream`, decided as Rich decides them: a terminal (TTY_COMPATIBLE=1 or a
    non-empty FORCE_COLOR says it is one, TTY_COMPATIBLE=0 or an empty FORCE_COLOR that it is not) that is not
    dumb (TERM=dumb or unknown) shows styles; NO_COLOR (non-empty) leaves the colours out."""
    key = id(stream)
    known = _styles.get(key)
    if known is None or known[0] is not stream:
        compatible, force = os.environ.get("TTY_COMPATIBLE", ""), os.environ.get("FORCE_COLOR")
        if compatible in ("0", "1"):
            terminal = compatible == "1"
        elif force is not None:
            terminal = force != ""
        else:
            try:
                terminal = bool(stream.isatty())
            except (AttributeError, ValueError):
                terminal = False
        shown = terminal and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")
        known = _styles[key] = (stream, shown, shown and os.environ.get("NO_COLOR", "") == "")
    return known[1], known[2]


def _sgr(style: str, colours: bool) -> str:
    words = style.split()
    unknown = [w for w in words if w not in _ATTRIBUTES and w not in _COLOURS]
    if unknown:
        raise ValueError(f"unknown style word(s) {unknown} in {style!r}")
    codes = [code for name, code in _ATTRIBUTES.items() if name in words]
    if colours:
        codes += [_COLOURS[w] for w in words if w in _COLOURS][-1:]
    return ";".join(codes)


def _cells(text: str) -> int:
    """Terminal cells `text` takes: wide characters two, combining and format characters none."""
    if text.isascii():
        return len(text)
    n = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def _expand_tabs(parts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One line's pieces with each tab turned into the spaces up to the next multiple of 8 cells; a piece is cut
    after each tab (as Rich cuts it, so each part is styled on its own)."""
    out: list[tuple[str, str]] = []
    column = 0
    for text, style in parts:
        *ended, last = text.split("\t")
        for piece in ended:
            column += _cells(piece)
            spaces = 8 - column % 8
            column += spaces
            out.append((piece + " " * spaces, style))
        column += _cells(last)
        if last:
            out.append((last, style))
    return out


def render(text: Styled, stream: Any) -> str:
    """`text` as written to `stream`: each line's styled pieces in SGR sequences where styles are shown."""
    shown, colours = styles_for(stream)
    lines = []
    for ln in text.lines():
        parts = _expand_tabs(ln.parts) if any("\t" in t for t, _s in ln.parts) else ln.parts
        if not shown:
            lines.append("".join(t for t, _s in parts))
            continue
        pieces = []
        for t, style in parts:
            codes = _sgr(style, colours) if style else ""
            pieces.append(f"\x1b[{codes}m{t}\x1b[0m" if codes and t else t)
        lines.append("".join(pieces))
    return "\n".join(lines)


def write(text: Styled, stream: Any = None) -> None:
    """Print `text` (already inert) and a newline to `stream` (stdout), at once."""
    stream = sys.stdout if stream is None else stream
    stream.write(render(text, stream) + "\n")
    stream.flush()


_out: Console | None = None


def out() -> Console:
    """A Rich console on stdout, for what Rich draws (`rule`)."""
    global _out
    if _out is None:
        from rich.console import Console  # deferred: only a drawing loads Rich

        _out = Console(highlight=False, soft_wrap=True)
    return _out


def rule(title: str) -> None:
    """A horizontal rule across the terminal with `title` (inert, one line) at its left."""
    from rich.text import Text  # deferred: only a drawing loads Rich

    out().rule(Text(inert.line(title)), align="left")


def reset() -> None:
    """Forget the console and what was decided about the streams (tests swap stdout/stderr between runs)."""
    global _out
    _out = None
    _styles.clear()


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


def shown(value: Styled | str, one_line: bool = False) -> Styled:
    """`value` made inert (core.inert), a Styled's styles kept on the pieces they covered."""
    clean = inert.line if one_line else inert.text
    if not isinstance(value, Styled):
        return Styled(clean(value))
    t = Styled()
    for text, style in value.parts:
        t.append(clean(text), style)
    return t


def line(*parts: str | tuple[str, str]) -> None:
    """Print one line made of plain strings and (text, style) pairs; the text is never markup, and inert."""
    t = Styled()
    for p in parts:
        if isinstance(p, tuple):
            t.append(inert.text(p[0]), style=p[1])
        else:
            t.append(inert.text(p))
    write(t)


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
    return terminal.columns()


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


def rows(pairs: Sequence[tuple[str, Styled | str]], indent: str = "  ") -> None:
    """`label  value` lines with the values aligned; a value's further lines are indented under it."""
    if not pairs:
        return
    w = max(len(label) for label, _ in pairs)
    pad = indent + " " * (w + 2)
    for label, value in pairs:
        t = Styled(indent)
        t.append(inert.line(label).ljust(w), style="bold")
        t.append("  ")
        first = True
        for piece in shown(value).lines():
            if not first:
                t.append("\n" + pad)
            t.append_text(piece)
            first = False
        write(t)


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
        t = Styled()
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
        write(t)
