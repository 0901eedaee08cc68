"""The real Claude Code, interactive on a pseudo-terminal: after `cocoplus install claude` it starts cocoplus's MCP
server without asking "New MCP server found in this project" (whose default answer, "Continue without using this
MCP server", leaves the worker tools off).  With a `.mcp.json` entry install did not write, install approves nothing,
Claude Code asks, and the answer install names turns the server on.  The folder's trust dialog, which install says
to answer "Yes, I trust this folder", is recorded as answered in the test's home (as Claude Code records it), so the
test presses keys only at the MCP question.  The model is never reached: the test reads Claude Code's own screens
(`/mcp`)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

import pytest

from tests.e2e.conftest import Project, e2e_project  # noqa: F401 - e2e_project is a fixture
from tests.support.runtimes import runtime_bin

pytestmark = pytest.mark.e2e

ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[a-zA-Z~]|\x1b\][^\x07]*\x07|\x1b[()][AB0]|\x1b[=>]")
UP, ENTER = b"\x1b[A", b"\r"
TRUST = "Yes,Itrustthisfolder"
MCP_DIALOG = "NewMCPserverfoundinthisproject:cocoplus"
READY = "shift+tabtocycle"
CONNECTED = "4tools"  # `/mcp`: the project server, connected, with its four worker tools


class Terminal:
    """Claude Code on a pseudo-terminal 120 columns wide; `seen()` is what it has shown, control sequences and
    white space removed."""

    def __init__(self, p: Project) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
        env = p.env(
            TERM="xterm-256color",
            ANTHROPIC_API_KEY="sk-test-local",
            ANTHROPIC_BASE_URL="http://127.0.0.1:9",  # never reached: nothing is asked of the model
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        self.proc = subprocess.Popen(
            [runtime_bin("claude")], cwd=p.project, env=env, stdin=slave, stdout=slave, stderr=slave,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.master = master
        self.shown = ""

    def seen(self) -> str:
        return re.sub(r"\s+", "", ANSI.sub("", self.shown))

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.shown += os.read(self.master, 65536).decode("utf-8", "replace")
                except OSError:
                    return

    def wait_for(self, *words: str, since: int = 0, timeout: float = 60) -> str:
        """The first of `words` shown after position `since` of `seen()`, waiting up to `timeout`."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.read(0.3)
            later = self.seen()[since:]
            for w in words:
                if w in later:
                    return w
        raise AssertionError(f"none of {words} within {timeout:g}s; the screen: {ANSI.sub('', self.shown)[-3000:]}")

    def keys(self, *keys: bytes) -> None:
        for k in keys:
            os.write(self.master, k)
            self.read(0.4)

    def settle(self, quiet: float = 1.5, timeout: float = 30) -> None:
        """Read until the screen has been still for `quiet` seconds: a menu listens for keys once it is drawn
        (on a busy machine, a key pressed earlier is lost)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            before = len(self.shown)
            self.read(quiet)
            if len(self.shown) == before:
                return

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
        self.proc.wait(timeout=30)
        os.close(self.master)


def onboarded(p: Project) -> None:
    """A home where Claude Code's first-run screens (theme, login, the API key) were answered already, and the
    project's folder trusted ("Yes, I trust this folder", the answer install gives: Claude Code records it there)."""
    (p.home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": "2.1.328",
                "theme": "dark",
                "customApiKeyResponses": {"approved": ["sk-test-local"], "rejected": []},
                "projects": {str(p.project): {"hasTrustDialogAccepted": True}},
            }
        )
    )


def start(p: Project) -> Terminal:
    """Claude Code started in the project (its folder trusted already, `onboarded`)."""
    term = Terminal(p)
    term.wait_for("ClaudeCodev", MCP_DIALOG, TRUST)
    assert TRUST not in term.seen(), "the folder's trust was asked again"
    return term


def servers(term: Terminal) -> str:
    """What `/mcp` says of the project's server once it has connected or failed (the screen is redrawn in place,
    so the words are looked for after the listing's heading)."""
    mark = len(term.seen())
    term.keys(b"/mcp")
    term.keys(ENTER)
    term.wait_for("ProjectMCPs", since=mark)
    listing = term.seen().rindex("ProjectMCPs")
    return term.wait_for(CONNECTED, "failed", since=listing, timeout=60)


def test_after_install_claude_code_uses_cocoplus_without_the_dialog(e2e_project: Project) -> None:
    p = e2e_project
    out = p.cocoplus("install", "claude").stdout
    assert "approved for you in .claude/settings.local.json (enabledMcpjsonServers)" in out, out
    assert 'answer "Yes, I trust this folder"' in out, out  # the question Claude Code still asks, and its answer
    onboarded(p)
    term = start(p)
    try:
        assert term.wait_for(MCP_DIALOG, READY) == READY  # no dialog: straight to the prompt
        assert servers(term) == CONNECTED
        assert MCP_DIALOG not in term.seen()
    finally:
        term.close()
    assert not (p.project / ".claude" / "settings.json").exists()  # the committed file is not touched
    assert not (p.home / ".claude" / "settings.json").exists()  # nor the user's global settings


def test_an_entry_install_did_not_write_is_asked_about_and_the_answer_install_names_turns_it_on(
    e2e_project: Project,
) -> None:
    p = e2e_project
    p.cocoplus("install", "claude")
    mcp = p.project / ".mcp.json"
    doc = json.loads(mcp.read_text())
    doc["mcpServers"]["cocoplus"]["env"] = {"COCOPLUS_NOTE": "added by the repository"}
    mcp.write_text(json.dumps(doc))
    out = p.cocoplus("install", "claude").stdout
    assert "withdrawn" in out and 'answer "Use this MCP server"' in out, out
    onboarded(p)
    term = start(p)
    try:
        assert term.wait_for(MCP_DIALOG, READY) == MCP_DIALOG
        term.settle()
        mark = len(term.seen())
        term.keys(UP, UP, ENTER)  # "Use this MCP server", the first of its three answers
        term.wait_for(READY, since=mark)
        assert servers(term) == CONNECTED
    finally:
        term.close()
