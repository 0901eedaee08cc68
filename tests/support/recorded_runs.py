"""Recorded runs of the real agent CLIs, kept as fixtures for the flight recorder's tests (issue 34).

An e2e test that drives a real CLI keeps what cocoplus recorded (`.cocoplus/`'s logs and records) and what the
runtime wrote that cocoplus reads (Claude Code's transcript, Codex's rollout), with this machine's paths named by
what they are (`<project>`, `<home>`, ...), under tests/fixtures/NAME when `WRITE_RECORDED_FIXTURES=1`.
`materialize` lays a fixture out again as a project of its own, the names replaced by the new places, so that the
timeline, the replay and the exporter read it as they read a live project.  `shape` is what a regenerated record
must share with the committed one: which sources and kinds of event it has, and each kind's fields.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# What of `.cocoplus/` a fixture keeps: logs, records and outputs (never locks, sockets, keys or worktrees).
KEPT = ("session", "sessions", "supervision", "permissions", "cost", "workers", "logs/authority.jsonl")
WRITE = "WRITE_RECORDED_FIXTURES"
SLUG = "-project-slug"  # what names the project's directory of Claude Code's transcripts


def scrubbed(text: str, layout: Layout, home: Path | None = None) -> str:
    """`text` with this machine's paths named: the project, the user's home of the run, the test's directory,
    this checkout, the interpreter's environment."""
    here = Path(layout.project).parent
    # Claude Code keeps a project's transcripts under ~/.claude/projects/<its path, each other character a dash>.
    pairs = [(re.sub(r"[^A-Za-z0-9]", "-", layout.project), SLUG), (layout.project, "<project>")]
    if home is not None:
        pairs.append((str(home), "<home>"))
    pairs += [
        (str(here), "<tmp>"), (str(Path(__file__).resolve().parents[2]), "<repo>"), (sys.prefix, "<venv>"),
        (os.path.realpath(sys.prefix), "<venv>"), (os.path.expanduser("~"), "<home>"), (str(here.parent), "<tmp>"),
        (tempfile.gettempdir(), "<tmp>"),
    ]  # fmt: skip
    for path, name in pairs:
        text = text.replace(path, name)
    return text


def keep(name: str, layout: Layout, home: Path, runtime_files: list[Path]) -> bool:
    """Write tests/fixtures/`name` from this run when WRITE_RECORDED_FIXTURES=1 (False: not asked to).
    `runtime_files`: the files the runtimes wrote that cocoplus reads (kept under `home/`, relative to `home`)."""
    if os.environ.get(WRITE) != "1":
        return False
    dest = FIXTURES / name
    shutil.rmtree(dest, ignore_errors=True)
    for rel in KEPT:
        src = Path(layout.root, rel)
        files = [src] if src.is_file() else sorted(x for x in src.rglob("*") if x.is_file()) if src.exists() else []
        for f in files:
            if f.suffix in (".lock", ".sock") or "worktrees" in f.parts:
                continue
            _copy(f, dest / "cocoplus" / f.relative_to(layout.root), layout, home)
    for f in runtime_files:
        _copy(f, dest / "home" / scrubbed(str(f.relative_to(home)), layout, home), layout, home)
    return True


def _copy(src: Path, dst: Path, layout: Layout, home: Path) -> None:
    try:
        text = src.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(scrubbed(text, layout, home))


def materialize(name: str, where: Path) -> tuple[Layout, Path]:
    """Fixture `name` laid out under `where` as a project (its `.cocoplus/`) and a home (the runtimes' files), the
    placeholders replaced by those places; (its layout, the home)."""
    src = FIXTURES / name
    project, home = where / "project", where / "home"
    project.mkdir(parents=True)
    home.mkdir(parents=True)
    names = {"<project>": str(project), "<home>": str(home), "<tmp>": str(where), "<repo>": str(where / "repo"),
             "<venv>": str(where / "venv")}  # fmt: skip
    # A fixture keeps `.cocoplus/` under cocoplus/ and the runtimes' files under home/; the night's (written
    # before the runtimes' files were kept) is `.cocoplus/` alone.
    parts = (("cocoplus", project / ".cocoplus"), ("home", home)) if (src / "cocoplus").is_dir() else (
        (".", project / ".cocoplus"),)  # fmt: skip
    for sub, target in parts:
        base = src / sub
        for f in sorted(base.rglob("*")) if base.exists() else []:
            if f.is_file():
                text = f.read_text(encoding="utf-8")
                for k, v in names.items():
                    text = text.replace(k, v)
                out = target / f.relative_to(base)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(text)
    return Layout(str(project / ".cocoplus")), home


def shape(events: list[dict[str, Any]]) -> dict[str, list[str]]:
    """What a record's timeline must keep when it is made again: for each `source:kind`, its events' fields."""
    out: dict[str, set[str]] = {}
    for e in events:
        out.setdefault(f"{e['source']}:{e['kind']}", set()).update(k for k, v in e.items() if v is not None)
    return {k: sorted(v) for k, v in sorted(out.items())}
