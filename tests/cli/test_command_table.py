"""The command table (cocoplus/cli/table.py): the CLI's one list of top-level commands, their modules, groups and
descriptions, read by `--help` without importing any command module."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer
from typer.main import get_command

from cocoplus.cli import table
from cocoplus.cli.app import SETTINGS, command_tree


def _registered(module: str) -> set[str]:
    import importlib

    sub = typer.Typer(**SETTINGS)
    importlib.import_module(f"cocoplus.cli.commands.{module}").register(sub)

    @sub.callback()
    def _group() -> None:
        pass

    return set(get_command(sub).commands)  # type: ignore[attr-defined]


def test_the_table_names_every_command_each_module_registers_and_nothing_else() -> None:
    for module in table.modules():
        listed = {e.name for e in table.ENTRIES if e.module == module}
        assert _registered(module) == listed, module
    assert len(table.BY_NAME) == len(table.ENTRIES)  # no name twice
    assert {e.group for e in table.ENTRIES} <= {k for k, _ in table.GROUPS}


def test_help_shows_the_groups_in_order_with_whole_descriptions() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cocoplus", "--help"], capture_output=True, text=True, check=True
    ).stdout
    headings = [h for _, h in table.GROUPS]
    at = [out.index(h + ":") for h in headings]
    assert at == sorted(at), "groups out of order"
    flat = " ".join(out.split())
    for e in table.ENTRIES:
        if not e.hidden:
            group_start = at[[k for k, _ in table.GROUPS].index(e.group)]
            assert out.index(f"  {e.name} ", group_start) > group_start
            assert " ".join(e.summary.split()) in flat, e.name  # whole, wrapped but never cut
    assert "..." not in out[out.index(headings[0]) :]
    # Plumbing is a group of its own, after the user's commands.
    plumbing = out.index(headings[-1] + ":")
    for name in ("hook", "mcp", "relay"):
        assert out.index(f"\n  {name} ") > plumbing, name


def test_group_listings_are_whole_too() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cocoplus", "session", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "..." not in out[out.index("Commands:") :] and "run state, kill switch, pending steer" in " ".join(
        out.split()
    )


_LOADED = """
import sys
from cocoplus.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print("\\nLOADED", __import__("json").dumps(sorted(m for m in sys.modules if m.startswith("cocoplus.cli.commands."))))
"""


def _modules_loaded(*args: str, cwd: str | None = None) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _LOADED, *args], capture_output=True, text=True, cwd=cwd).stdout
    loaded: list[str] = json.loads(out.rsplit("LOADED ", 1)[1])
    return [m for m in loaded if m.rpartition(".")[2] in table.modules()]  # the table's modules (not their helpers)


@pytest.mark.slow
def test_help_imports_no_command_module_and_a_command_imports_only_its_own(tmp_path) -> None:
    assert _modules_loaded("--help") == []
    subprocess.run([sys.executable, "-m", "cocoplus", "init"], cwd=tmp_path, check=True, capture_output=True)
    assert _modules_loaded("session", "status", cwd=str(tmp_path)) == ["cocoplus.cli.commands.session_cmd"]
    assert _modules_loaded("sessions", "list", cwd=str(tmp_path)) == ["cocoplus.cli.commands.session_cmd"]


def test_every_table_entry_loads_with_its_description() -> None:
    tree = command_tree()
    assert list(tree) == [e.name for e in table.ENTRIES]
    for e in table.ENTRIES:
        cmd = tree[e.name]
        assert cmd is not None and cmd.get_short_help_str(10_000) == e.summary, e.name


def test_an_unknown_command_is_one_line() -> None:
    r = subprocess.run([sys.executable, "-m", "cocoplus", "nosuch"], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.splitlines()[0] == "cocoplus: error: no such command 'nosuch'"


_HEAVY = """
import sys
from cocoplus.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print("\\nHEAVY", __import__("json").dumps(sorted(m for m in ("pydantic", "typer._adapters") if m in sys.modules)))
"""


@pytest.mark.slow
def test_the_commands_bench_cli_times_load_no_pydantic(tmp_path) -> None:
    """typer coerces any parameter value that is not a bool through pydantic: the root's `--dir` is taken off the
    command line before parsing and absent flags default to False, so `--help`, `session status` and `sessions
    list` never import it through the typer app either (the console script answers them without it:
    tests/cli/test_fast_path.py); `session check` still validates through the models."""
    subprocess.run([sys.executable, "-m", "cocoplus", "init"], cwd=tmp_path, check=True, capture_output=True)

    def heavy(*args: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", _HEAVY, *args], capture_output=True, text=True, cwd=tmp_path)
        loaded: list[str] = json.loads(out.stdout.rsplit("HEAVY ", 1)[1])
        return loaded

    for argv in (
        ["--help"],
        ["session", "status"],
        ["sessions", "list"],
        ["--dir", str(tmp_path), "session", "status"],
    ):
        assert heavy(*argv) == [], argv
    assert "pydantic" in heavy("session", "check")  # the probe sees pydantic where it is loaded


@pytest.mark.slow
def test_the_twins_are_one_command_each_and_the_names_spec_keeps_still_work(tmp_path) -> None:
    """`session list` and `supervision watcher ...` are the names `--help` shows; `sessions list` and `supervisor
    ...` (SPEC's names) answer the same and are hidden from the listing."""

    def run(*args: str) -> str:
        r = subprocess.run([sys.executable, "-m", "cocoplus", *args], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    run("init")
    assert json.loads(run("session", "list", "--json")) == json.loads(run("sessions", "list", "--json"))
    assert json.loads(run("supervision", "watcher", "status", "--json")) == json.loads(
        run("supervisor", "status", "--json")
    )
    listing = run("--help")
    commands = listing[listing.index(table.GROUPS[0][1]) :].splitlines()
    words = {ln.split()[0] for ln in commands if ln.startswith("  ") and ln[2:3].strip()}
    assert "session" in words and "supervision" in words and "supervise" in words
    assert not {"sessions", "supervisor"} & words
    assert "watcher" in run("supervision", "--help")
