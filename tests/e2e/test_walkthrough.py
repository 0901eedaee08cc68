"""docs/walkthrough.md, run as written: supervising two real Claude Code workers, step by step.

The page is this test's script.  Every `sh` block runs exactly as written,
in order, in a throwaway project on a pseudo-terminal 160 columns wide,
with `claude` on PATH the pinned Claude Code CLI and `cocoplus` this
checkout's; what it prints is compared with the `text` block under it
(placeholders and `...` as the page explains).  A block that only looks
(`sessions list`, `supervision status`, `cat FILE`, ...) is run again until
its output is the page's, within a generous limit: the page says "a few
seconds later"; a block that acts runs once.  Every `text notification`
block must arrive at the listener `[notify] urls` names, and at the end
exactly those, each once.  After every block `sessions list --json` is
held to what the story has made of the sessions by then.

The workers and the brain talk to one scripted model stand-in
(tests/support/model_stubs.py), each conversation routed to its own
script by a marker in its opening: the two earlier sessions, the two
workers (by their tasks) and the brain (by its round prompt).  The brain
decides from what woke it, as the page tells.
"""

from __future__ import annotations

import difflib
import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from tests.conftest import passwd_env
from tests.e2e.conftest import runtime_bin
from tests.notify.listener import Listener
from tests.supervision.conftest import stop_chat_worker
from tests.supervision.workers_support import stop_workers
from tests.support.model_stubs import AnthropicStub, text, tool
from tests.support.waiting import wait_until

PAGE = Path(__file__).resolve().parents[2] / "docs" / "walkthrough.md"
COLUMNS = 160
LOOK_LIMIT_S = 240.0  # how long a looking block may take to show the page's output (rounds run a real CLI each)

# -- the page -----------------------------------------------------------------------------------------------


@dataclass
class Block:
    kind: str  # "sh", "text" (the output of the sh block before it) or "notification"
    body: str
    line: int  # where it starts in the page (1-based), for messages
    section: str  # the `##` heading it is under


@dataclass
class Step:
    command: Block
    output: Block
    notifications: list[Block] = field(default_factory=list)  # announced after this step's output


FENCE = re.compile(r"^```(\S*)(?:[ \t]+(\S+))?[ \t]*$")


def blocks(page: str) -> list[Block]:
    """Every fenced block of the page with its kind; a fence of another language is refused (the page is a script)."""
    out: list[Block] = []
    lines = page.splitlines()
    section = ""
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, tag = m.group(1), m.group(2)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"walkthrough.md:{i + 1}: a fence that is never closed"
        kind = {("sh", None): "sh", ("text", None): "text", ("text", "notification"): "notification"}.get((lang, tag))
        assert kind is not None, (
            f"walkthrough.md:{i + 1}: a "
            f"```{lang} {tag or ''} block; the page holds sh, text and text notification blocks only"
        )
        out.append(Block(kind, "\n".join(lines[i + 1 : end]), i + 2, section))
        i = end + 1
    return out


def steps(page: str) -> list[Step]:
    """Each sh block with the text block that follows it (its output), and the notifications announced after."""
    got: list[Step] = []
    pending: Block | None = None
    for b in blocks(page):
        if b.kind == "sh":
            assert pending is None, f"walkthrough.md:{pending.line}: a sh block without the text block of its output"
            pending = b
        elif b.kind == "text":
            assert pending is not None, f"walkthrough.md:{b.line}: a text block that follows no sh block"
            got.append(Step(pending, b))
            pending = None
        else:
            assert got, f"walkthrough.md:{b.line}: a notification before any command"
            got[-1].notifications.append(b)
    assert pending is None, f"walkthrough.md:{pending.line}: a sh block without the text block of its output"
    return got


# Commands that only look: their block is run until it shows the page's output.
LOOKING = (
    re.compile(
        r"cocoplus (session list|sessions list|supervision status|permissions (list|log)|workers list|chat log"
        r"|supervisor status|supervision watcher status)"
    ),
    re.compile(r"cat [\w.-]+"),
)


def only_looks(command: str) -> bool:
    return all(any(p.fullmatch(line.strip()) for p in LOOKING) for line in command.splitlines() if line.strip())


# -- placeholders -------------------------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"<([a-z][a-z0-9-]*)>")
EACH_ITS_OWN = {
    "time": r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z|\d\d:\d\d:\d\d)",
    "pid": r"\d+",
}
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def normal(line: str) -> str:
    return " ".join(line.split())


def line_match(expected: str, got: str, bound: dict[str, str]) -> dict[str, str] | None:
    """`got` read as the page's `expected` line: the bindings it adds to `bound`, or None."""
    expected, got = normal(expected), normal(got)
    rest = expected.endswith("...")
    if rest:
        expected = expected[:-3]
    pattern: list[str] = []
    groups: dict[str, str] = {}
    pos = 0
    for m in PLACEHOLDER.finditer(expected):
        pattern.append(re.escape(expected[pos : m.start()]))
        name = m.group(1)
        if name in EACH_ITS_OWN:
            pattern.append(EACH_ITS_OWN[name])
        elif name in bound:
            pattern.append(re.escape(bound[name]))
        elif name in groups:
            pattern.append(f"(?P={groups[name]})")
        else:
            groups[name] = f"g{len(groups)}"
            pattern.append(rf"(?P<{groups[name]}>\S+?)")
        pos = m.end()
    pattern.append(re.escape(expected[pos:]))
    regex = "".join(pattern) + (".*" if rest else "")
    found = re.fullmatch(regex, got)
    if found is None:
        return None
    return {**bound, **{name: found.group(g) for name, g in groups.items()}}


def lines_match(expected: list[str], got: list[str], bound: dict[str, str]) -> dict[str, str] | None:
    if not expected:
        return bound if not got else None
    if expected[0].strip() == "...":
        for k in range(len(got) + 1):
            done = lines_match(expected[1:], got[k:], bound)
            if done is not None:
                return done
        return None
    if not got:
        return None
    one = line_match(expected[0], got[0], bound)
    return None if one is None else lines_match(expected[1:], got[1:], one)


def text_match(expected: str, got: str, bound: dict[str, str]) -> dict[str, str] | None:
    return lines_match(expected.strip("\n").splitlines(), got.strip("\n").splitlines(), bound)


def differs(where: Block, expected: str, got: str, bound: dict[str, str]) -> str:
    """A diff of the page's lines and what was printed; a page line that reads the printed one in its place is
    shown as printed, so the diff marks the lines that differ."""
    want, out = expected.strip("\n").splitlines(), got.strip("\n").splitlines()
    want = [out[i] if i < len(out) and line_match(w, out[i], bound) is not None else w for i, w in enumerate(want)]
    diff = "\n".join(difflib.unified_diff(want, out, "the page", "printed", lineterm=""))
    return f"walkthrough.md:{where.line} ({where.section}): the output is not the page's\n{diff}"


# -- the terminal ---------------------------------------------------------------------------------------------------

PROMPT = re.compile(r"^(.*\]: )(\S+)$")


def answers_in(expected: str) -> list[str]:
    """What the page types at a prompt: `Question? [y/N]: y` answers `y`."""
    return [m.group(2) for line in expected.splitlines() if (m := PROMPT.match(line.strip()))]


def in_terminal(script: str, cwd: Path, env: dict[str, str], answers: list[str], timeout: float = 180.0) -> str:
    """Run `sh -c SCRIPT` on a pseudo-terminal COLUMNS wide, typing `answers` at the prompts it shows; what the
    terminal showed (control sequences removed, one newline per line)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, COLUMNS, 0, 0))
    proc = subprocess.Popen(
        ["sh", "-c", script], cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True
    )
    os.close(slave)
    chunks: list[bytes] = []
    left = list(answers)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if not ready:
                shown = b"".join(chunks).decode("utf-8", "replace")
                if left and shown.endswith("]: ") and proc.poll() is None:
                    os.write(master, (left.pop(0) + "\n").encode())
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal closed it
                break
            if not data:
                break
            chunks.append(data)
        else:
            raise AssertionError(
                f"{script!r} did not finish within {timeout:g}s, or something it started kept the terminal: "
                f"{b''.join(chunks)!r}"
            )
        proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert not left, f"{script!r}: the page types {left} at a prompt that never came"
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n")


# -- the models ---------------------------------------------------------------------------------------------------

GOAL = "Tidy the repository: the licence year, an .editorconfig, a changelog line"
FOLLOW_UP = "Now add a line about the .editorconfig to CHANGELOG.md."
SUMMARY = "LICENSE says 2026; .editorconfig and its changelog line are in."


def said(body: dict[str, Any]) -> str:
    """The text of every user message of a request (the round prompt, tool results)."""
    parts = []
    for m in body.get("messages") or []:
        content = m.get("content")
        for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text")))
    return "\n".join(parts)


class Brain:
    """The main brain's model: decides from what woke the round (the prompt's "Why you were woken")."""

    def __init__(self) -> None:
        self.dispatched = False
        self.woken: list[str] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        done = [
            b
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        ]
        if done:  # the tool answered: the round's reply
            replies = {
                "mcp__cocoplus__dispatch": "cc4 added the .editorconfig; I asked it for the changelog line.",
                "mcp__cocoplus__finish_supervision": "Everything the goal asks for is done; supervision is finished.",
            }
            return text(replies.get(done[-1]["name"], "Done."))
        why = re.search(r"Why you were woken:\n((?:- .*\n)+)", said(body))
        woken = why.group(1) if why else ""
        self.woken.append(woken)
        if "- cc4 is pending" in woken and not self.dispatched:
            self.dispatched = True
            return tool("mcp__cocoplus__dispatch", session="cc4", instruction=FOLLOW_UP)
        if "- cc3 is pending" in woken:
            return tool("mcp__cocoplus__finish_supervision", summary=SUMMARY)
        if "- cc3 is awaiting_authorization" in woken:
            return text("cc3 asks to run sed on LICENSE: allowing that is yours to decide (cocoplus approve w1).")
        return text("Nothing for me to do now.")


def routes(project: Path, brain: Brain) -> dict[str, Any]:
    return {
        "You are the main brain supervising coding agents": brain,
        "Fix the typo in README.md": [text("Fixed the typo in README.md.")],
        "Add a usage section to README.md": [text("Added a usage section to README.md.")],
        "Update the copyright year in LICENSE": [
            tool("Bash", command="sed -i 's/2025/2026/' LICENSE", description="Update the year"),
            text("LICENSE now says 2026."),
        ],
        "Add an .editorconfig for the project": [
            tool(
                "Write", file_path=str(project / ".editorconfig"), content="root = true\n\n[*]\nindent_style = space\n"
            ),
            text("Added .editorconfig."),
            tool("Write", file_path=str(project / "CHANGELOG.md"), content="- Added .editorconfig\n"),
            text("CHANGELOG.md has the entry."),
        ],
    }


# -- what the sessions are after each section ------------------------------------------------------------------------

ENDED: tuple[str, str | None] = ("exited", None)
WAITING: tuple[str, str | None] = ("running", "awaiting_authorization")
SESSIONS_AFTER: dict[str, dict[str, tuple[str, str | None]]] = {
    "Where this starts": {"cc1": ENDED, "cc2": ENDED},
    "The main brain's controller": {"cc1": ENDED, "cc2": ENDED},
    "Notifications": {"cc1": ENDED, "cc2": ENDED},
    "Supervision on": {"cc1": ENDED, "cc2": ENDED},
    "The first worker asks for a permission": {"cc1": ENDED, "cc2": ENDED, "cc3": WAITING},
    "The second worker, and the brain's follow-up": {"cc1": ENDED, "cc2": ENDED, "cc3": WAITING, "cc4": ENDED},
    "You approve; the brain finishes": {"cc1": ENDED, "cc2": ENDED, "cc3": ENDED, "cc4": ENDED},
    "Stop the watcher": {"cc1": ENDED, "cc2": ENDED, "cc3": ENDED, "cc4": ENDED},
}


# -- the run -----------------------------------------------------------------------------------------------------------


class Walk:
    def __init__(self, project: Path, env: dict[str, str], listener: Listener) -> None:
        self.project = project
        self.env = env
        self.listener = listener
        self.bound: dict[str, str] = {"project": str(project), "notify-url": listener.url()}
        self.notified: list[tuple[Block, dict[str, Any]]] = []

    def sessions(self) -> list[dict[str, Any]]:
        r = subprocess.run(
            [sys.executable, "-m", "cocoplus", "sessions", "list", "--json"],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        got: list[dict[str, Any]] = json.loads(r.stdout)["sessions"]
        return got

    def run(self, step: Step) -> None:
        script, want = step.command.body, step.output.body
        if not only_looks(script):
            got = in_terminal(script, self.project, self.env, answers_in(want))
            bound = text_match(want, got, self.bound)
            assert bound is not None, differs(step.output, want, got, self.bound)
            self.bound = bound
        else:
            last = {"got": ""}

            def shown() -> dict[str, str] | None:
                last["got"] = in_terminal(script, self.project, self.env, [])
                return text_match(want, last["got"], self.bound)

            try:
                self.bound = wait_until(shown, timeout=LOOK_LIMIT_S, interval=0.5)
            except AssertionError:
                raise AssertionError(differs(step.output, want, last["got"], self.bound)) from None
        for note in step.notifications:
            self.notification(note)

    def notification(self, note: Block) -> None:
        title, _, message = note.body.partition("\n")

        def arrived() -> tuple[dict[str, Any], dict[str, str]] | None:
            for body in self.listener.bodies():
                if any(body is b for _n, b in self.notified):
                    continue
                got = text_match(title, body["title"], self.bound)
                if got is not None:
                    return body, got
            return None

        try:
            body, bound = wait_until(arrived, timeout=LOOK_LIMIT_S, interval=0.2)
        except AssertionError:
            titles = [b["title"] for b in self.listener.bodies()]
            raise AssertionError(
                f"walkthrough.md:{note.line}: no notification {title!r} arrived (got {titles})"
            ) from None
        full = text_match(message, body["message"], bound)
        assert full is not None, differs(note, note.body, body["title"] + "\n" + body["message"], bound)
        assert full[next(n for n in re.findall(r"\[cocoplus <([a-z0-9-]+)>\]", message))] == body["cocoplus_id"], body
        self.bound = full
        self.notified.append((note, body))

    def sessions_hold(self, section: str) -> None:
        """After any block, whatever is in flux: no session the section does not bring, an ended one waits for
        nothing, and the ids are the ones the page's tables showed."""
        want = SESSIONS_AFTER.get(section)
        assert want is not None, (
            f"the page has a section {section!r} this test does not know: say what the sessions are after it"
        )
        for s in self.sessions():
            assert s["alias"] in want, (section, s)
            assert s["state"] in ("running", "idle", "paused") or s["attention"] is None, (section, s)
            key = f"{s['alias']}-id"
            assert self.bound.get(key, s["id"]) == s["id"], (section, key, s["id"])

    def sessions_are(self, section: str) -> None:
        want = SESSIONS_AFTER.get(section)
        assert want is not None, (
            f"the page has a section {section!r} this test does not know: say what the sessions are after it"
        )
        got = self.sessions()
        assert {s["alias"]: (s["state"], s["attention"]) for s in got} == want, (section, got)
        for s in got:  # the same ids as the page's text showed
            key = f"{s['alias']}-id"
            if key in self.bound:
                assert self.bound[key] == s["id"], (section, key, s["id"])


@pytest.fixture
def listener() -> Iterator[Listener]:
    got = Listener()
    yield got
    got.close()


def test_the_page_is_a_script_this_test_reads_as_it_says() -> None:
    """Without the runtimes: every command has its output, every section says what the sessions are after it,
    and the placeholders read as the page explains (bound, each its own, elided lines, the rest of a line)."""
    script = steps(PAGE.read_text(encoding="utf-8"))
    assert {s.command.section for s in script} == set(SESSIONS_AFTER)
    assert sum(len(s.notifications) for s in script) == 5
    assert [s.command.body for s in script if not only_looks(s.command.body)][:2] == [
        "cocoplus chat setup claude",
        'cat >> cocoplus.toml <<EOF\n\n[notify]\nurls = ["$NOTIFY_URL"]\nEOF\ncocoplus trust',
    ]
    bound = {"project": "/p"}
    got = text_match(
        "<project> <request> at <time>\n...\n<request>  pid <pid>...",
        "/p  p_1 at 09:14:03\nx\ny\np_1 pid 42; more",
        bound,
    )
    assert got == {"project": "/p", "request": "p_1"}
    assert (
        text_match("<request> at <time>", "p_1 at 09:14:03", {"request": "p_2"}) is None
    )  # a name is one word throughout
    assert text_match("<time> <time>", "09:14:03 2026-12-02T09:14:03.271Z", {}) == {}  # each its own
    assert text_match("a\n...", "a", {}) == {} and text_match("a", "a\nb", {}) is None
    assert answers_in("Trust <project>/cocoplus.toml as it is now? [y/N]: y\ntrusted") == ["y"]
    assert only_looks("cocoplus session list") and only_looks("cat LICENSE") and not only_looks("cocoplus approve w1")


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_walkthrough_as_written(tmp_path: Path, listener: Listener) -> None:
    page = PAGE.read_text(encoding="utf-8")
    script = steps(page)
    project = tmp_path / "shop"
    project.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").symlink_to(runtime_bin("claude"))  # `claude` on PATH is the pinned Claude Code
    env = {
        "PATH": os.pathsep.join([str(bindir), os.path.dirname(sys.executable), os.environ["PATH"]]),
        "HOME": os.environ["HOME"],
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "NOTIFY_URL": listener.url(),
        **passwd_env(),
    }
    brain = Brain()
    with AnthropicStub(routes=routes(project, brain)) as stub:
        env.update(
            ANTHROPIC_BASE_URL=stub.url,
            ANTHROPIC_API_KEY="sk-test-local",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
        )
        walk = Walk(project, env, listener)
        # Where the page starts: cocoplus wired in, and two Claude Code sessions that came and went.
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (project / "LICENSE").write_text("MIT License\n\nCopyright (c) 2025 Shop authors\n")
        for argv in (["init"], ["install", "claude"]):
            subprocess.run(
                [sys.executable, "-m", "cocoplus", *argv],
                cwd=project,
                env=env,
                check=True,
                capture_output=True,
                timeout=60,
            )
        for prompt in ("Fix the typo in README.md", "Add a usage section to README.md"):
            r = subprocess.run(
                ["claude", "-p", prompt, "--output-format", "json"],
                cwd=project,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=180,
            )
            assert r.returncode == 0 and json.loads(r.stdout)["subtype"] == "success", r.stdout + r.stderr
        try:
            section = script[0].command.section
            for step in script:
                if step.command.section != section:
                    walk.sessions_are(section)
                    section = step.command.section
                walk.run(step)
                walk.sessions_hold(section)
            walk.sessions_are(section)
        finally:
            layout = Layout(str(project / ".cocoplus"))
            subprocess.run(
                [sys.executable, "-m", "cocoplus", "supervisor", "stop"],
                cwd=project,
                env=env,
                capture_output=True,
                timeout=60,
            )
            stop_workers(layout)
            stop_chat_worker(layout)
    # What the workers did is in the project, and the brain was woken by what the page says, in that order.
    assert (project / "LICENSE").read_text() == "MIT License\n\nCopyright (c) 2026 Shop authors\n"
    assert (project / ".editorconfig").exists() and (project / "CHANGELOG.md").read_text() == "- Added .editorconfig\n"
    assert [w.strip().splitlines()[0] for w in brain.woken] == [
        "- supervision started: 2 session(s) known",
        f"- cc3 is awaiting_authorization: permission request {walk.bound['request']}: Bash(sed -i 's/2025/2026/' "
        f"LICENSE) (cocoplus approve|deny {walk.bound['request']})",
        "- cc4 is pending: Added .editorconfig.",
        "- cc4 is pending: CHANGELOG.md has the entry.",
        "- cc4 exited: other",
        "- cc3 is pending: LICENSE now says 2026.",
    ]
    # Every notification the page promises arrived, each exactly once, and nothing else.
    titles = Counter(b["title"] for b in listener.bodies())
    ids = [b["cocoplus_id"] for b in listener.bodies()]
    assert len(ids) == len(set(ids)) == len(walk.notified), titles
    assert titles == Counter(body["title"] for _note, body in walk.notified)
