"""The fast path (cocoplus/cli/fast.py): the console script answers `--help`, `session status`, `session list` and
`sessions list` without typer, Rich or pydantic, and prints what the typer app prints, byte for byte; every other
command line goes to the typer app."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cocoplus.cli import app, fast, output
from cocoplus.core.paths import Layout
from cocoplus.ops import session as ops
from cocoplus.session import registry
from tests.conftest import Result, _restore_environ

NASTY = (
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m bel\x07 cr\rx \u202eevil\u202c tab\there"
)


@pytest.fixture
def door(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`door(run, *argv, cwd=...)`: a command line through `fast.run` or `app.main` in this process, the clock
    stopped (ages in seconds print alike) and the environment restored after (`--dir` sets COCOPLUS_DIR)."""
    now = time.time()

    def call(run: Callable[[list[str]], int | None], *argv: str, cwd: str | os.PathLike[str]) -> Result:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        output.reset()
        saved = dict(os.environ)
        try:
            with monkeypatch.context() as m:
                m.setattr(time, "time", lambda: now)
                code = run(list(argv))
        finally:
            _restore_environ(saved)
            output.reset()
        captured = capsys.readouterr()
        assert code is not None, argv
        return Result(code, captured.out, captured.err)

    return call


def same_answer(door: Callable[..., Result], argv: tuple[str, ...], cwd: str | os.PathLike[str]) -> Result:
    """`argv` answered by the fast path and by the typer app, from the same files (a command may set a damaged
    file aside: each runs on the project as it was): the two answers are identical; the fast path's is returned."""
    snapshot = Path(str(cwd) + ".snapshot")
    shutil.copytree(cwd, snapshot, symlinks=True)
    quick = door(fast.run, *argv, cwd=cwd)
    shutil.rmtree(cwd)
    shutil.copytree(snapshot, cwd, symlinks=True)
    typer_app = door(app.main, *argv, cwd=cwd)
    shutil.rmtree(snapshot)
    assert (quick.code, quick.out, quick.err) == (typer_app.code, typer_app.out, typer_app.err), argv
    return quick


COMMAND_LINES = [
    ("session", "status"),
    ("session", "status", "--json"),
    ("session", "list"),
    ("session", "list", "--json"),
    ("sessions", "list"),
    ("sessions", "list", "--json", "--json"),
]


def busy(project: Layout) -> Layout:
    """Sessions (one awaiting a person), a stop, a steer and a queued request, with control characters in them."""
    for runtime, rid in (("claude", "5b0e7c1d-2f44-4c7e-9a61-0d3e8b7f2a90"), ("codex", "0199a1b2-c3d4-7e5f")):
        registry.ensure(project, runtime, rid, event="SessionStart", change=lambda r: r.update({"state": "running"}))
    registry.update(project, "cs_0199a1b2-c3d4-7e5f", lambda r: registry.set_attention(r, "awaiting_authorization"))
    ops.steer(project, f"steer {NASTY}")
    ops.queue_add(project, f"queued {NASTY}")
    ops.stop(project, f"reason {NASTY}", "tester")
    return project


@pytest.mark.parametrize("state", ["fresh", "busy", "broken config", "damaged status", "damaged session"])
def test_the_fast_path_prints_what_the_typer_app_prints(project: Layout, door, state: str) -> None:
    if state == "busy":
        busy(project)
    elif state == "broken config":
        Path(project.config).write_text('[session]\nmax_iterations = "lots"\n')
    elif state == "damaged status":
        Path(project.status).write_text('{"schema_version": 1, "state": "runn')
    elif state == "damaged session":
        busy(project)
        Path(project.session_record("cs_5b0e7c1d-2f44-4c7e-9a61-0d3e8b7f2a90")).write_text("{")
    for argv in COMMAND_LINES:
        r = same_answer(door, argv, project.project)
        assert r.out.strip(), (argv, r)
        assert r.code == (1 if state == "broken config" and argv[1] == "status" else 0), (argv, r)
        if "--json" in argv:
            json.loads(r.out)
    r = same_answer(door, ("session", "status"), project.project)
    if state == "busy":
        assert "STOPPED by tester" in r.out and "steer link red bel␇ cr␍x" in r.out, r.out
        assert "\\u202eevil\\u202c tab" in r.out and "\t" not in r.out, r.out  # inert, the tab expanded


def test_dir_before_the_command_and_its_errors(project: Layout, door, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in (
        ("--dir", project.project, "session", "status"),
        (f"--dir={project.root}", "sessions", "list", "--json"),
        ("--dir", str(empty), "session", "status"),
        ("--dir", str(tmp_path / "nowhere"), "sessions", "list"),
        ("session", "status"),  # no project above the working directory
        ("--dir", project.project, "--help"),
    ):
        r = same_answer(door, argv, elsewhere)
        if str(empty) in argv or "nowhere" in " ".join(argv) or argv == ("session", "status"):
            assert r.code == 1 and r.out == "" and r.err.startswith("cocoplus: error: "), (argv, r)
            assert len(r.err.splitlines()) <= 2 and "Traceback" not in r.err, r.err
        else:
            assert r.code == 0 and r.err == "", (argv, r)


@pytest.mark.parametrize("columns", range(30, 101))
def test_root_help_is_the_typer_apps_at_every_width(door, monkeypatch: pytest.MonkeyPatch, tmp_path, columns) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    for argv in (("--help",), ("-h",)):
        r = same_answer(door, argv, tmp_path)
        assert r.code == 0 and r.out.startswith("Usage: cocoplus [OPTIONS] COMMAND [ARGS]...\n"), r


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["session"],
        ["session", "status", "--bogus"],
        ["session", "status", "-h"],
        ["session", "status", "--help"],
        ["session", "--json", "status"],
        ["sessions", "list", "extra"],
        ["session", "progress"],
        ["--version"],
        ["--help", "--version"],
        ["--dir"],
        ["--dir", "x"],
        ["--show-completion"],
        ["hook", "PreToolUse"],
    ],
)
def test_other_command_lines_go_to_the_typer_app(argv: list[str], capsys) -> None:
    assert fast.run(argv) is None
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("variable", fast.TYPER_ENVIRONMENT)
def test_shell_completion_goes_to_the_typer_app(variable: str, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv(variable, "bash_complete")
    assert fast.run(["--help"]) is None and fast.run(["session", "status"]) is None
    assert capsys.readouterr() == ("", "")


_LOADED = """
import json, sys
sys.argv = ["cocoplus", *sys.argv[1:]]
from cocoplus.__main__ import main
code = main()
sys.stdout.write("\\nLOADED " + json.dumps([code, sorted({m.split(".")[0] for m in sys.modules}
    & {"typer", "click", "rich", "pydantic", "textual", "shellingham"})]) + "\\n")
"""


def test_the_console_script_loads_no_typer_rich_or_pydantic_for_these(project: Layout) -> None:
    def loaded(*argv: str) -> list[object]:
        r = subprocess.run(
            [sys.executable, "-c", _LOADED, *argv], cwd=project.project, capture_output=True, text=True, timeout=60
        )
        answer: list[object] = json.loads(r.stdout.rsplit("LOADED ", 1)[1])
        return answer

    for argv in (
        ["--help"],
        ["session", "status"],
        ["session", "status", "--json"],
        ["sessions", "list"],
        ["--dir", project.project, "session", "list", "--json"],
    ):
        assert loaded(*argv) == [0, []], argv
    code, libraries = loaded("session", "status", "--bogus")  # the probe sees typer where the typer app answers
    assert code == 2 and "typer" in libraries  # type: ignore[operator]
