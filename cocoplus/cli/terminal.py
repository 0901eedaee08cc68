"""The terminal's width as `shutil.get_terminal_size` finds it (COLUMNS when it is a positive number, else
stdout's terminal, else 80), without importing shutil and the compression modules it loads."""

from __future__ import annotations

import os
import sys


def columns() -> int:
    try:
        given = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        given = 0
    if given > 0:
        return given
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
