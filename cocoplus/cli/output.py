"""Everything the CLI prints goes through here: JSON, Rich renderings, errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

_out: Console | None = None
_err: Console | None = None


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


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def error_line(message: str, hint: str | None = None) -> None:
    """One line on stderr (plus a hint line); never markup-interpreted."""
    text = f"cocoplus: error: {message}"
    sys.stderr.write(text.replace("\n", " ") + "\n")
    if hint:
        sys.stderr.write(f"cocoplus: hint: {hint}\n")
    sys.stderr.flush()


def note(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
