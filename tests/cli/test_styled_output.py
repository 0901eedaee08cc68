"""The CLI's text (cli/output.py, standard library only) is written as Rich wrote it: the same characters, the
same SGR sequences on a terminal, none in a pipe, no colour with NO_COLOR, tabs expanded alike."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.cli import output
from tests.conftest import _restore_environ

STYLES = ["", "bold", "bold red", "yellow", "green", "dim", "cyan", output.ALERT, output.WARN]
ENVIRONMENTS = [
    {},
    {"NO_COLOR": "1"},
    {"NO_COLOR": ""},
    {"TERM": "dumb"},
    {"TERM": "unknown"},
    {"FORCE_COLOR": "1"},
    {"FORCE_COLOR": ""},
    {"TTY_COMPATIBLE": "0"},
    {"TTY_COMPATIBLE": "1", "NO_COLOR": "1"},
]
PIECES = st.lists(st.tuples(st.text(alphabet="ab -\t\n数é\u0301", max_size=12), st.sampled_from(STYLES)), max_size=6)


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.slow
@given(pieces=PIECES)
def test_styled_text_is_written_as_rich_wrote_it(pieces: list[tuple[str, str]]) -> None:
    from rich.console import Console
    from rich.text import Text

    for env in ENVIRONMENTS:
        for tty in (True, False):
            environ = {"TERM": "xterm-256color", **env}
            saved = dict(os.environ)
            try:
                for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM", "COLORTERM"):
                    os.environ.pop(name, None)
                os.environ.update(environ)
                ours = Stream(tty)
                output.reset()
                output.write(output.Styled.assemble(*pieces), ours)
                theirs = Stream(tty)
                Console(file=theirs, highlight=False, soft_wrap=True, _environ=environ).print(Text.assemble(*pieces))
            finally:
                _restore_environ(saved)
                output.reset()
            assert ours.getvalue() == theirs.getvalue(), (env, tty)
