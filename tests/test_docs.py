"""The documentation site: it builds with `mkdocs build --strict`, and its reference leaves nothing out.

The site is built as a contributor builds it (`python -m mkdocs build --strict -f mkdocs.yml -d DIR`, from
the repository's top level, with the MkDocs and Material of the test extra), and any warning fails.  The
reference pages are generated from the code by `docs/hooks/reference.py`; these tests enumerate the code on
their own (the CLI's command tree, the key table, the server's OpenAPI description, the MCP server's tools)
and look for every command, setting, route and tool in the built HTML, under its own heading, with the
start of its description.  A description missing in the code is a warning of the hook, so the strict build
fails on it (shown by building with a key that has none).
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 250


def build(dest: Path, *, cwd: Path = ROOT, prelude: str = "") -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of `cwd`'s mkdocs.yml into `dest`; `prelude` runs first, in the same process."""
    argv = ["build", "--strict", "-f", "mkdocs.yml", "-d", str(dest)]
    if prelude:
        code = (
            f"{prelude}\nimport sys, runpy\nsys.argv = ['mkdocs', *{argv!r}]\n"
            "runpy.run_module('mkdocs', run_name='__main__')\n"
        )
        cmd = [sys.executable, "-c", code]
    else:
        cmd = [sys.executable, "-m", "mkdocs", *argv]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2 is not a build warning
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def warnings(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in (r.stdout + r.stderr).splitlines() if "WARNING" in ln or "Aborted" in ln]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("site")
    r = build(dest)
    assert r.returncode == 0 and warnings(r) == [], r.stdout + r.stderr
    return dest


# -- reading the built pages ------------------------------------------------------------------------------


def plain(text: str) -> str:
    """Text as a reader sees it: tags gone, entities decoded, Markdown's backticks gone, spaces collapsed."""
    text = re.sub(r"</?(?:code|em|strong|a|span|abbr|kbd)\b[^>]*>", "", text)  # inline: no space of their own
    text = re.sub(r"<[^>]+>", " ", text)
    text = html.unescape(text).replace("`", "").replace("¶", " ")
    return " ".join(text.split())


def sections(page: str) -> dict[str, str]:
    """Each heading of a built page (its text, plain) -> the plain text under it, up to the next heading."""
    body = page.split('<article class="md-content__inner', 1)[-1].split("</article>", 1)[0]
    parts = re.split(r"(<h[1-6][^>]*>.*?</h[1-6]>)", body, flags=re.S)
    found: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        found.setdefault(plain(parts[i]), plain(parts[i + 1]))
    return found


def by_id(page: str, anchor: str) -> str | None:
    """The plain text under the heading whose id is `anchor`, up to the next heading; None if there is none."""
    m = re.search(
        rf'<h[1-6][^>]*id="{re.escape(anchor)}"[^>]*>.*?</h[1-6]>(.*?)(?=<h[1-6]|</article>)', page, flags=re.S
    )
    return plain(m.group(1)) if m else None


def opening(description: str, words: int = 6) -> str:
    """The first words of a description, as the built page shows them."""
    return " ".join(plain(description).split()[:words])


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def missing_from(found: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """The wanted headings (heading -> the start of its description) that are absent or lack their description."""
    out = []
    for heading, start in wanted.items():
        if heading not in found:
            out.append(f"{heading}: no heading")
        elif start and start not in found[heading]:
            out.append(f"{heading}: description not found ({start!r})")
    return out


# -- what the code has ------------------------------------------------------------------------------------


def commands() -> Iterator[tuple[str, Any, list[Any]]]:
    """(command path, command, its parameters but --help) for `cocoplus` and every command below it."""
    from cocoplus.cli import app as cli_app

    root = cli_app.get_command(cli_app.app)
    root_ctx = root.make_context("cocoplus", [], resilient_parsing=True)

    def walk(cmd: Any, ctx: Any) -> Iterator[tuple[str, Any, list[Any]]]:
        yield ctx.command_path, cmd, [p for p in cmd.get_params(ctx) if p.name != "help"]
        if hasattr(cmd, "commands"):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                yield from walk(sub, sub.make_context(name, [], parent=ctx, resilient_parsing=True))

    cli_app.command_tree()  # every command module imported
    yield from walk(root, root_ctx)


def routes() -> list[tuple[str, str, str]]:
    """(method, path, description) of every route in the server's OpenAPI description."""
    from cocoplus.core.paths import Layout
    from cocoplus.server.app import create_app

    spec = create_app(Layout("/nonexistent/.cocoplus"), token="unused", port=1).app.openapi()
    return [(m.upper(), p, op.get("description") or "") for p, ops in spec["paths"].items() for m, op in ops.items()]


def tools() -> list[Any]:
    from cocoplus.mcp.server import build as build_server

    return list(asyncio.run(build_server("all").list_tools()))


# -- the tests --------------------------------------------------------------------------------------------


def test_the_site_builds_strict_with_no_warning(site: Path) -> None:
    for name in ("index.html", "getting-started/index.html", "reference/commands/index.html", "changelog/index.html"):
        assert (site / name).is_file(), name
    assert "fonts.googleapis.com" not in (site / "index.html").read_text(), "the site must not fetch fonts"


def test_every_command_and_option_is_in_the_reference_with_its_description(site: Path) -> None:
    wanted = {}
    undescribed = []
    for path, cmd, params in commands():
        if not (cmd.help or "").strip():
            undescribed.append(path)
        wanted[path] = opening(cmd.help or "")
        for p in params:
            if not (getattr(p, "help", None) or "").strip():
                undescribed.append(f"{path} {p.name}")
    assert undescribed == [], "give these a help text in the code"
    assert len(wanted) > 80  # the tree, not a stub of it
    found = sections(page(site, "reference/commands"))
    assert missing_from(found, wanted) == []
    # Every option shows up in its command's section.
    for path, _cmd, params in commands():
        for p in params:
            for opt in getattr(p, "opts", ()):
                if opt.startswith("-"):
                    assert opt in found[path], f"{path}: {opt} is not in the reference"
    # The root's `--dir`, which the CLI takes off the command line itself (cli/app.py), is there too.
    assert "--dir PATH" in found["cocoplus"] and "instead of searching" in found["cocoplus"]


def test_every_setting_is_in_the_reference_with_its_description(site: Path) -> None:
    from cocoplus.core import keys as key_table

    built = page(site, "reference/settings")
    keys = list(key_table.KEYS) + [k for t in key_table.TABLES for k in t.fields]
    assert len(keys) > 60
    problems = []
    for key in keys:
        if not key.help.strip():
            problems.append(f"{key.dotted}: no description in the key table")
            continue
        text = by_id(built, key.dotted)
        if text is None:
            problems.append(f"{key.dotted}: not in the reference")
        elif opening(key.help).lower() not in text.lower() or (key.env and key.env not in text):
            problems.append(f"{key.dotted}: its description or environment variable is not there")
    assert problems == []


def test_every_rest_route_is_in_the_reference_with_its_description(site: Path) -> None:
    wanted = {f"{method} {path}": opening(description) for method, path, description in routes()}
    assert len(wanted) > 25 and all(wanted.values()), "every route needs a docstring"
    assert missing_from(sections(page(site, "reference/rest-api")), wanted) == []


def test_every_mcp_tool_is_in_the_reference_with_its_description(site: Path) -> None:
    found = sections(page(site, "reference/mcp-tools"))
    listed = tools()
    wanted = {t.name: opening(t.description or "") for t in listed}
    assert len(wanted) >= 17 and all(wanted.values()), "every tool needs a description"
    assert missing_from(found, wanted) == []
    for t in listed:
        schema = t.input_schema if hasattr(t, "input_schema") else t.inputSchema
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("description"), f"{t.name}: parameter {name} has no description"
            assert name in found[t.name], f"{t.name}: parameter {name} is not in the reference"


def test_the_check_finds_what_is_missing(site: Path) -> None:
    """The completeness checks can fail: a heading the page lacks, or a description not under its heading."""
    found = sections(page(site, "reference/commands"))
    assert missing_from(found, {"cocoplus no-such-command": ""}) == ["cocoplus no-such-command: no heading"]
    wrong = {"cocoplus session stop": "Serve the web page"}
    assert missing_from(found, wrong) == ["cocoplus session stop: description not found ('Serve the web page')"]
    assert by_id(page(site, "reference/settings"), "session.no_such_key") is None


def test_a_setting_without_a_description_fails_the_strict_build(tmp_path: Path) -> None:
    prelude = (
        "from cocoplus.core import keys, keytypes\n"
        "keys.KEYS = keys.KEYS + (keytypes.Key('session', 'undescribed_probe', 'int', 1, ''),)\n"
    )
    r = build(tmp_path / "site", prelude=prelude)
    assert r.returncode != 0
    assert any("undescribed_probe has no description" in ln for ln in warnings(r)), r.stdout + r.stderr


def test_the_architecture_page_renders_the_tiers_of_pyproject(site: Path) -> None:
    from tests.test_tiers import declaration

    text = sections(page(site, "architecture"))["The tiers"]
    for i, names in enumerate(declaration()["order"], start=1):
        row = f"{i} {', '.join(names)}"
        assert row in text, row
    for module in declaration()["banned"]:
        assert module in text


def test_a_walkthrough_joins_the_guides_when_it_exists(tmp_path: Path) -> None:
    """docs/walkthrough.md is put first under Guides when the file exists (and the build stays strict)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "pyproject.toml", "CHANGELOG.md", "CONTRIBUTING.md"):
        shutil.copy(ROOT / name, copy / name)
    (copy / "docs" / "walkthrough.md").write_text("# A walkthrough of supervision\n\nWALKTHROUGH-7c1e\n")
    r = build(copy / "site", cwd=copy)
    assert r.returncode == 0 and warnings(r) == [], r.stdout + r.stderr
    walk = (copy / "site" / "walkthrough" / "index.html").read_text()
    assert "WALKTHROUGH-7c1e" in walk
    nav = (copy / "site" / "index.html").read_text()
    assert nav.index('href="walkthrough/"') < nav.index('href="guides/sessions/"')


def test_the_readme_is_short_keeps_its_quick_start_and_links_the_site() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < README_LIMIT
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert (
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/cocoplus --dir examples/webshop session status"
        in quick
    )
    assert (
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && sh tests/e2e/runtimes/install.sh && "
        ".venv/bin/python -m pytest" in quick
    )
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] in quick  # `.ci/run` runs the second command, exactly
    links = re.findall(r"\]\(((?:docs/|CONTRIBUTING|CHANGELOG|LICENSE)[^)#]*)", text)
    assert len(links) > 15
    assert [link for link in links if not (ROOT / link).is_file()] == []


def test_the_changelog_has_one_unreleased_section_with_one_heading_of_each_kind() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    headings = re.findall(r"^### (.+)$", unreleased, flags=re.M)
    assert headings == sorted(set(headings), key=headings.index), "one heading of each kind"
    assert set(headings) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
