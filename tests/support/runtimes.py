"""The one way a test reaches the real agent runtime CLIs, and the guard that keeps them in `e2e` tests.

The pinned Claude Code, Codex and Gemini CLIs live in
tests/e2e/runtimes/node_modules (installed by tests/e2e/runtimes/install.sh), beside
the official MCP conformance suite and the Node 22 it runs on (`conformance_command`).
A test gets a CLI's path only from `runtime_bin`, which fails unless the
running test is marked `e2e`.  Three checks in tests/conftest.py make that
hold for the whole suite:

* `runtime_bin` refuses outside an `e2e` test (the marker of the running
  test is recorded here by an autouse fixture);
* no test source other than this module names the `node_modules` directory
  (checked once, when the suite starts), so the path cannot be had another way;
* `claude`, `codex` and `gemini` on PATH are stand-ins that record being run,
  and a test that ran one fails: a non-`e2e` test cannot reach a runtime CLI
  through PATH either (for example a chat account without a `binary`), nor
  can any test reach a developer's own installed CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent.parent
RUNTIMES_DIR = TESTS_DIR / "e2e" / "runtimes"
BIN = RUNTIMES_DIR / "node_modules" / ".bin"
# Anthropic's sandbox runtime for the `srt` profile (install-sandbox.sh), in a prefix of its own: not an agent
# runtime, so any test may put it on PATH (tests/support/sandbox.py).
SRT_BIN = RUNTIMES_DIR / "srt" / "node_modules" / ".bin"
NAMES = ("claude", "codex", "gemini")
# Codex's sandbox helper (`codex-linux-sandbox`, its own binary by that name), which Codex runs through PATH when
# the system's bwrap has no --argv0 (Debian 12's 0.8.0): install.sh links it here, e2e projects put it on PATH.
CODEX_HELPER = RUNTIMES_DIR / "node_modules" / ".codex-helper"

# The running test: its node id and whether it is marked e2e (set by tests/conftest.py).
current: dict[str, object] = {"nodeid": None, "e2e": False}

STANDIN = """#!/bin/sh
# Stand-in for the {name} CLI on the tests' PATH: records the call and fails.
printf '%s\\n' "{name} $*" >> "{record}"
echo "{name}: the test suite's stand-in; a test reached the {name} CLI through PATH" >&2
exit 127
"""


def runtime_bin(name: str) -> str:
    """The path of the pinned runtime CLI `name`; fails unless the running test is marked `e2e`."""
    if name not in NAMES:
        raise ValueError(f"unknown runtime CLI {name!r} (known: {', '.join(NAMES)})")
    if not current["e2e"]:
        pytest.fail(
            f"{current['nodeid']} runs the real {name} CLI but is not marked e2e (add pytest.mark.e2e)", pytrace=False
        )
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `sh tests/e2e/runtimes/install.sh` (the README's test command does)")
    return str(path)


def conformance_command() -> list[str]:
    """The official MCP conformance suite's command line: its pinned package run by the pinned Node 22 (the npm
    `node` package) beside it, since the suite needs Node 22 and the machines' own may be older. Not an agent
    runtime: any test may run it."""
    node = BIN / "node"
    suite = RUNTIMES_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    for path in (node, suite):
        if not path.exists():
            pytest.fail(f"{path} is missing: run `sh tests/e2e/runtimes/install.sh` (the README's test command does)")
    return [str(node), str(suite)]


def install_standins(bindir: Path) -> Path:
    """Write the PATH stand-ins into `bindir`; return the file each one appends its calls to."""
    bindir.mkdir(parents=True, exist_ok=True)
    record = bindir / "calls.log"
    for name in NAMES:
        script = bindir / name
        script.write_text(STANDIN.format(name=name, record=record))
        script.chmod(0o755)
    return record


def sources_naming_the_cli_dir(root: Path = TESTS_DIR) -> list[str]:
    """Python sources under `root`, other than this module, that spell out the runtimes' node_modules directory."""
    here = Path(__file__).resolve()
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("node_modules", "__pycache__")]
        for name in filenames:
            path = Path(dirpath) / name
            if name.endswith(".py") and path.resolve() != here and "node_modules" in path.read_text(encoding="utf-8"):
                found.append(str(path.relative_to(root)))
    return sorted(found)


def standin_calls(record: Path) -> str:
    """What the PATH stand-ins recorded (empty if none ran)."""
    return record.read_text().strip() if record.exists() else ""
