"""`cocoplus mcp`'s error answers follow the negotiated protocol version's schema.

* An error that answers no request (a line that is not JSON) has no `id` from 2025-11-25 on, and
  before a version is negotiated (the server speaks its newest then); the versions before keep
  JSON-RPC 2.0's `"id": null` (their schemas require an id and have no form for "none").
* A call of a tool or prompt the server does not have is -32602 with the request's id (it was a
  tool result for a tool, and code 0 with a traceback on stderr for a prompt).
* Nothing of it reaches stderr as a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.mcp import protocol


class Raw:
    """`cocoplus mcp` with its stdin written line by line, its stdout read as JSON and its stderr kept."""

    def __init__(self, layout: Layout, stderr: Path) -> None:
        self.err = open(stderr, "wb")
        self.stderr = stderr
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cocoplus", "--dir", layout.project, "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            cwd=layout.project,
        )
        self.lines: Queue[bytes] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = json.dumps(line).encode() if isinstance(line, dict) else line
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        try:
            doc: dict[str, Any] = json.loads(self.lines.get(timeout=60))
        except Empty:
            raise AssertionError("no answer from the MCP server") from None
        return doc

    def initialize(self, version: str) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
            }
        )
        got = self.answer()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return got

    def close(self) -> str:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()
        return self.stderr.read_text()


@pytest.fixture
def raw(project: Layout, tmp_path: Path) -> Any:
    r = Raw(project, tmp_path / "stderr")
    yield r
    r.close()


@pytest.mark.slow
def test_before_a_version_is_negotiated_an_error_for_no_request_has_no_id(raw: Raw) -> None:
    raw.send(b"not json")
    assert raw.answer() == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error: the line is not valid JSON"},
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "version, has_id", [("2025-11-25", False), ("2025-06-18", True), ("2025-03-26", True), ("2024-11-05", True)]
)
def test_an_error_for_no_request_follows_the_negotiated_version(raw: Raw, version: str, has_id: bool) -> None:
    assert raw.initialize(version)["result"]["protocolVersion"] == version
    for line in (b"not json", b"[]", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}'):
        raw.send(line)
        got = raw.answer()
        assert ("id" in got) is has_id and got.get("id") is None, (version, line, got)
        assert got["error"]["code"] in (-32700, -32600)
    # An error that answers a request carries its id under every version.
    raw.send(b'{"jsonrpc":"2.0","id":"m","method":"no/such/method"}')
    assert raw.answer()["id"] == "m"


@pytest.mark.slow
def test_an_unknown_tool_or_prompt_is_invalid_params_and_stderr_stays_quiet(raw: Raw) -> None:
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}})
    assert raw.answer() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32602, "message": "Unknown tool: no_such_tool"},
    }
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "no_such_prompt"}})
    assert raw.answer() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "Unknown prompt: no_such_prompt"},
    }
    # A brain tool is unknown to the worker role served here: the same answer, not a tool result.
    raw.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "dispatch", "arguments": {}}})
    assert raw.answer()["error"]["code"] == -32602
    # A known tool's failure is still a tool result.
    raw.send(
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "report_progress", "arguments": {}}}
    )
    got = raw.answer()
    assert got["id"] == 5 and got["result"]["isError"] is True, got
    err = raw.close()
    assert "Traceback" not in err and "│" not in err and err.strip() == "", err


def test_a_failure_the_sdk_logs_is_one_line_and_its_traceback_goes_to_the_projects_log(
    project: Layout, capsys: pytest.CaptureFixture[str]
) -> None:
    protocol.quiet_sdk_log()
    cwd = os.getcwd()
    os.chdir(project.project)
    try:
        try:
            raise ValueError("boom\nsecond line")
        except ValueError:
            logging.getLogger("mcp.shared.jsonrpc_dispatcher").exception("handler for %r raised", "prompts/get")
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("cocoplus mcp: error: handler for 'prompts/get' raised: ValueError: boom"), err
    assert "Traceback" in Path(project.cli_log).read_text()


@pytest.mark.parametrize(
    "version, left_out",
    [(None, True), ("2025-11-25", True), ("2026-07-28", True), ("2025-06-18", False), ("1999-01-01", True)],
)
def test_which_versions_leave_the_id_out(version: str | None, left_out: bool) -> None:
    assert protocol.leaves_out_null_id(version) is left_out
