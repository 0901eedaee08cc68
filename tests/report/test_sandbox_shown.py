"""Each worker's sandbox profile where the operator looks (issue 35, "Seen everywhere"), by the real CLI (a child
process) over tests/server/timeline_project.py's workers (w1 under `workspace`, w2 under none): `workers list`
has a SANDBOX column, and `cocoplus timeline` says the profile a worker was launched and run under.  The page's
lanes and `top`'s pane are held by tests/server/test_browser_timeline.py and tests/tui/test_top_timeline.py."""

from __future__ import annotations

import json
import re

from cocoplus.core.paths import Layout
from tests.conftest import run_cli_subprocess
from tests.server import timeline_project


def test_workers_list_and_the_timeline_name_each_worker_s_sandbox(project: Layout) -> None:
    timeline_project.build(project)
    r = run_cli_subprocess("workers", "list", cwd=project.project)
    assert r.code == 0, r
    table = [re.split(r"\s{2,}", ln.strip()) for ln in r.out.splitlines() if ln.strip()]  # columns: 2+ spaces
    head, *rows = table[[row[0] for row in table].index("ID") :]
    at = head.index("SANDBOX")
    assert {row[0]: row[at] for row in rows} == {"w1": "workspace", "w2": "none"}, r.out
    r = run_cli_subprocess("timeline", "--limit", "0", cwd=project.project)
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert any("w1 [claude]: launched (sandbox workspace): make the tests pass" in ln for ln in lines), r.out
    assert any("w2 [gemini]: run started (sandbox none)" in ln for ln in lines), r.out
    js = json.loads(run_cli_subprocess("timeline", "w1", "--json", cwd=project.project).out)
    assert js["workers"]["w1"]["sandbox"] == "workspace" and list(js["workers"]) == ["w1"]
    ended = [e for e in js["events"] if e["kind"] == "worker" and e["text"].startswith("run ended")]
    assert [e["detail"]["sandbox"] for e in ended] == ["workspace"]
