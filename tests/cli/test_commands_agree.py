"""Commands that agree (issue 33): what a command says matches what is so, once, with the exit code the docs give."""

from __future__ import annotations

import json

from cocoplus.core.paths import Layout
from cocoplus.session import registry
from cocoplus.supervision import autonomy


def _running(layout: Layout, rid: str) -> None:
    registry.ensure(layout, "claude", rid, event="SessionStart", change=lambda r: r.update(state="running"))


# -- `supervised yes` only while supervision is on ------------------------------------------------------------


def test_a_session_list_says_supervised_only_while_supervision_is_on(cli, project: Layout) -> None:
    _running(project, "rid-1")
    code, out, err = cli("session", "list", cwd=project.project)
    assert code == 0, err
    assert "supervised" not in out and " yes" not in out, out  # never on: no such column, no `yes`
    listed = json.loads(cli("session", "list", "--json", cwd=project.project).out)
    assert listed["supervision_on"] is False
    code, out, err = cli("supervision", "status", cwd=project.project)
    assert code == 0 and "supervision: never enabled" in out, out

    autonomy.enable(project, task_hint="tidy")
    out = cli("session", "list", cwd=project.project).out
    assert "supervised" in out.splitlines()[0] and out.splitlines()[1].rstrip().endswith("yes"), out
    assert "supervised now: cc1" in cli("supervision", "status", cwd=project.project).out

    autonomy.finish(project, "done", reason="turned off by the operator")
    out = cli("session", "list", cwd=project.project).out
    assert "supervised" not in out and " yes" not in out, out
    status = cli("supervision", "status", cwd=project.project).out
    assert "supervised now: none (supervision is off)" in status, status
