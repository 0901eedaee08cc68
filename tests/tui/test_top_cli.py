"""`cocoplus top` outside a terminal: one line saying what to use instead."""

from __future__ import annotations

from cocoplus.core.paths import Layout
from tests.conftest import assert_no_traceback, run_cli_subprocess


def test_top_in_a_pipe_says_it_needs_a_terminal(project: Layout) -> None:
    r = run_cli_subprocess("top", cwd=project.project)
    assert r.code == 1
    assert r.err.splitlines()[0] == "cocoplus: error: cocoplus top needs a terminal"
    assert "session list" in r.err
    assert_no_traceback(r.out, r.err)
