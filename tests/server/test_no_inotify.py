"""The server with this user's inotify instances really used up: it polls, says so once, and its events still come."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cocoplus.core.paths import Layout
from tests.server.test_live import EventReader
from tests.support import no_inotify
from tests.support.waiting import wait_until

WHY = "the inotify instance limit is reached (fs.inotify.max_user_instances)"


@pytest.mark.slow
def test_the_server_polls_when_the_users_inotify_instances_are_used_up(sproject: Layout, tmp_path: Path) -> None:
    no_inotify.skip_unless_possible()
    env = dict(no_inotify.env_for(sproject.root), PYTHONUNBUFFERED="1")
    srv = no_inotify.Exhausted(
        tmp_path,
        [sys.executable, "-m", "cocoplus", "serve", "--port", "0"],
        log=tmp_path / "serve.log",
        cwd=sproject.project,
        env=env,
    )
    ev = None
    try:
        assert srv.held()["held"] == no_inotify.LIMIT
        found = wait_until(
            lambda: (
                re.search(r"page:\s+(http://127\.0\.0\.1:\d+)/#token=\S+", srv.text()) or srv.proc.poll() is not None
            )
        )
        assert srv.proc.poll() is None, srv.text()
        ev = EventReader(found.group(1))
        hello = ev.expect("hello")
        assert (hello["watching"], hello["watching_why"]) == ("polling", WHY)
        ev.drain()
        # A change made by the CLI in another process still reaches the page.
        subprocess.run(
            [sys.executable, "-m", "cocoplus", "session", "steer", "no inotify"],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        ev.expect("session", timeout=30)
        assert srv.text().count(f"no file-system events: {WHY}; polling {sproject.root} every 1s instead") == 1, (
            srv.text()
        )
    finally:
        if ev is not None:
            ev.close()
        srv.stop()
    assert "Traceback" not in srv.text(), srv.text()
