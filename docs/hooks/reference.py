"""MkDocs hook: the reference pages, generated from the code itself when the site is built.

mkdocs.yml names this file under `hooks:`.  At build time it adds four pages that exist in no file
(`on_files`), each made from the code a user's `cocoplus` runs:

* reference/commands.md: every command and subcommand of the CLI (`cocoplus.cli.app.command_tree()`, grouped
  as `cocoplus --help` groups them in `cocoplus/cli/table.py`), with its help, usage, arguments and options;
* reference/settings.md: every key of the key table (`cocoplus.core.keys.KEYS` and `TABLES`): what it
  accepts, its default, its environment variable, whether it needs trust;
* reference/rest-api.md: every route of the REST API (`cocoplus.server.app.create_app(...)`'s OpenAPI
  description), with its parameters and body;
* reference/mcp-tools.md: every MCP tool (`cocoplus.mcp.server.build(role)`), with its role, description and
  input schema.

It also renders the tiers of pyproject.toml (`[tool.cocoplus.tiers]`) where a page says
`<!-- cocoplus:tiers -->`, publishes CHANGELOG.md and CONTRIBUTING.md from the repository's top level as
pages of the site, and puts docs/walkthrough.md into the guides' navigation when that file exists.

Anything without a description (a command, an option, a setting, a route, a tool, a tool's parameter) is a
warning, and `mkdocs build --strict` fails on it (tests/test_docs.py runs that build).  Nothing here touches
the network or a project: the REST description comes from an application that is built, not started.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.cocoplus")  # under `mkdocs`: its warnings count for --strict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIERS_MARKER = "<!-- cocoplus:tiers -->"
WALKTHROUGH = "walkthrough.md"


def missing(what: str) -> None:
    log.warning(f"cocoplus reference: {what} has no description")


def one_line(text: str) -> str:
    """Text for a table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def sentence(text: str) -> str:
    """A description from the key table (lower case, no full stop) as a sentence."""
    text = " ".join(text.split())
    return (text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")) if text else text


def paragraphs(text: str) -> str:
    """A click help text as Markdown: paragraphs rejoined (docstrings are wrapped), `\\b` blocks kept as they are."""
    text = text.split("\f", 1)[0]
    out = []
    for para in re.split(r"\n\s*\n", text.strip()):
        if para.startswith("\b"):
            out.append("```text\n" + para[1:].strip("\n") + "\n```")
        else:
            out.append(" ".join(para.split()))
    return "\n\n".join(out)


def slug(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", " ".join(parts).lower()).strip("-")


# -- the CLI --------------------------------------------------------------------------------------------------


def cli_commands() -> Iterator[tuple[str, Any, Any, int]]:
    """(command path, command, its click context, depth) for the root and every command below it, in `--help` order."""
    from cocoplus.cli import app as cli_app

    tree = cli_app.command_tree()  # imports every command module
    root = cli_app.get_command(cli_app.app)
    root_ctx = root.make_context("cocoplus", [], resilient_parsing=True)
    yield "cocoplus", root, root_ctx, 0

    def walk(name: str, cmd: Any, parent: Any, depth: int) -> Iterator[tuple[str, Any, Any, int]]:
        ctx = cmd.make_context(name, [], parent=parent, resilient_parsing=True)
        yield ctx.command_path, cmd, ctx, depth
        for sub in cmd.list_commands(ctx) if hasattr(cmd, "commands") else ():
            yield from walk(sub, cmd.get_command(ctx, sub), ctx, depth + 1)

    for name, cmd in tree.items():
        yield from walk(name, cmd, root_ctx, 1)


def commands_page() -> str:
    from cocoplus.cli import table

    groups = dict(table.GROUPS)
    group_of = {e.name: e.group for e in table.ENTRIES}
    out = [
        "# Commands",
        "",
        "Every command and subcommand of `cocoplus`, generated from the CLI itself when this site is built "
        "(what `cocoplus COMMAND --help` prints; every command also takes `-h`/`--help`). Every reporting "
        "command takes `--json` "
        "([JSON output](json.md)); an error is one line on stderr with exit code 1, a usage error the same "
        "with exit code 2.",
        "",
    ]
    current_group = None
    for path, cmd, ctx, depth in cli_commands():
        words = path.split()
        if depth == 1 and group_of.get(words[1]) != current_group:
            current_group = group_of.get(words[1])
            out += [f"## {groups.get(current_group or '', 'Other commands')}", ""]
        level = "##" if depth == 0 else "#" * min(2 + depth, 6)
        out += [f"{level} `{path}` {{#{slug(path)}}}", ""]
        if cmd.hidden:
            out += ["*Not listed by `cocoplus --help`: an older name kept working.*", ""]
        if not (cmd.help or "").strip():
            missing(f"the command `{path}`")
        else:
            out += [paragraphs(cmd.help), ""]
        if path == "cocoplus hook":
            usage = "cocoplus hook <Event> [--runtime RUNTIME] [--timeout SECONDS]"  # parsed by the hook itself
        else:
            usage = " ".join([path, *cmd.collect_usage_pieces(ctx)])
        out += ["```text", usage, "```", ""]
        rows = []
        if path == "cocoplus":  # the root's `--dir`, taken off the command line before parsing (cli/app.py)
            from cocoplus.cli.app import ROOT_DIR_OPTION

            rows.append(f"| `{ROOT_DIR_OPTION[0]}` | {one_line(ROOT_DIR_OPTION[1])} |")
        for param in cmd.get_params(ctx):
            if getattr(param, "hidden", False) or param.name == "help":
                continue
            record = param.get_help_record(ctx)
            if record is None:
                continue
            names, text = record
            if not text.strip():
                missing(f"`{names}` of `{path}`")
            rows.append(f"| `{one_line(names)}` | {one_line(text)} |")
        if rows:
            out += ["| argument or option | |", "|---|---|", *rows, ""]
    return "\n".join(out)


# -- settings -------------------------------------------------------------------------------------------------

GUIDES = {
    "session": ("budgets", "../guides/budgets.md"),
    "hooks": ("what the hooks do", "../guides/hooks.md"),
    "ctx": ("the ctx supplement", "../guides/sessions.md#the-ctx-supplement"),
    "chat": ("the master-agent conversation", "../guides/supervision.md#the-master-agent-conversation"),
    "supervision": ("supervision", "../guides/supervision.md"),
    "permissions": ("permissions and authority", "../guides/permissions.md"),
    "notify": ("notifications", "../guides/notifications.md"),
    "fleet": ("the fleet", "../guides/fleet.md"),
    "workers": ("managed workers", "../guides/workers.md"),
    "inbox": ("answer from your phone", "../guides/phone.md"),
    "pricing": ("budgets", "../guides/budgets.md#cost-budget"),
    "accounts": ("the master-agent backends", "../backends.md"),
}


def _toml(value: Any) -> str:
    from cocoplus.core import keytypes

    return keytypes.toml_value(value)


def _key_block(key: Any, label: str, anchor: str, *, table_field: bool = False) -> list[str]:
    if not (key.help or "").strip():
        missing(f"the setting {label} {key.name}")
    facts = [f"- **accepts** {key.expected()}"]
    if not table_field:
        facts.append(f"- **default** `{_toml(key.default)}`")
        if getattr(key, "user_only", False):
            facts.append(
                "- **your file only**: read from your own `~/.config/cocoplus/config.toml`, never from a project's "
                "`cocoplus.toml` (trusted or not) nor from the environment"
            )
        else:
            facts.append(f"- **environment** {'`' + key.env + '`' if key.env else 'none: set it in a file'}")
        if getattr(key, "secret", False):
            facts.append("- **secret**: `config show` says only whether it is set")
    elif key.required:
        facts.append("- **required**")
    elif key.required_when:
        facts.append(f'- **required** when `{key.required_when[0]} = "{key.required_when[1]}"`')
    if key.needs_trust:
        facts.append(f"- **needs trust**: it {key.trust_reason()} ([Trust](../guides/configuration.md#trust))")
    return [f"### `{key.name}` {{#{anchor}}}", "", sentence(key.help), "", *facts, ""]


def settings_page() -> str:
    from cocoplus.core import keys

    out = [
        "# Settings",
        "",
        "Every key cocoplus reads from `cocoplus.toml` (the project's) and `~/.config/cocoplus/config.toml` "
        "(yours), generated from the key table in `cocoplus/core/keys.py` when this site is built. Every key "
        "is optional. Precedence, key by key: default < your file < the project's file < environment; a key "
        "that needs trust takes effect from the project's file only once you trust it "
        "([Configuration and trust](../guides/configuration.md)). `cocoplus config show` prints the effective "
        "values and where each came from; `cocoplus config example` prints a file with every key "
        "(`cocoplus.toml.example` in the repository).",
        "",
    ]
    for section in keys.SECTIONS:
        out += [f"## `[{section}]` {{#{section}}}", ""]
        if section in GUIDES:
            title, link = GUIDES[section]
            out += [f"See [{title}]({link}).", ""]
        for key in keys.KEYS:
            if key.section == section:
                out += _key_block(key, f"[{section}]", f"{section}.{key.name}")
    for tbl in keys.TABLES:
        out += [f"## `[{tbl.section}.{tbl.entry}]` {{#{tbl.section}}}", ""]
        if not tbl.help.strip():
            missing(f"the table [{tbl.section}]")
        out += [sentence(tbl.help), ""]
        if tbl.section in GUIDES:
            title, link = GUIDES[tbl.section]
            out += [f"See [{title}]({link}).", ""]
        for key in tbl.fields:
            out += _key_block(key, f"[{tbl.section}.{tbl.entry}]", f"{tbl.section}.{key.name}", table_field=True)
    return "\n".join(out)


# -- the REST API ---------------------------------------------------------------------------------------------


def openapi() -> dict[str, Any]:
    """The server's OpenAPI description, from an application that is built and never started."""
    from cocoplus.core.paths import Layout
    from cocoplus.server.app import create_app

    spec: dict[str, Any] = create_app(Layout("/nonexistent/.cocoplus"), token="unused", port=1).app.openapi()
    return spec


def _schema_type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def rest_routes(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            yield method.upper(), path, op


def rest_page() -> str:
    spec = openapi()
    info = spec["info"]
    out = [
        "# REST API",
        "",
        f"{info['description']} Generated from the server's OpenAPI description when this site is built; a "
        "running server serves the same description at `/api/v1/openapi.json`. How the page and scripts get "
        "the token, and what the server refuses, is in [the page and the REST "
        "API](../guides/top-and-page.md#the-web-page-and-the-rest-api).",
        "",
        'Errors are `{"error", "hint"?}` with 400 (usage, an invalid id), 403 (refused: a bad `Host` or '
        "`Origin`, or an action beyond its principal's authority), 404 (an unknown session or task), 409 (a "
        "damaged file, a conflict) or 503 (a lock busy); a body that does not match its schema is 422 with "
        '`{"error", "errors": [{"loc", "msg"}]}`; a change without the token is 401, without a JSON body '
        "415, over 1 MiB 413.",
        "",
        "| method | path | |",
        "|---|---|---|",
    ]
    for method, path, op in rest_routes(spec):
        out.append(f"| {method} | [`{path}`](#{slug(method, path)}) | {one_line(op.get('description') or '')} |")
    out.append("")
    for method, path, op in rest_routes(spec):
        description = (op.get("description") or "").strip()
        if not description:
            missing(f"the route {method} {path}")
        token = "Needs the token." if "security" in op else "Needs no token."
        out += [f"### `{method} {path}` {{#{slug(method, path)}}}", "", description, "", token, ""]
        params = op.get("parameters", [])
        if params:
            out += ["| parameter | in | type | |", "|---|---|---|---|"]
            for p in params:
                schema = p.get("schema", {})
                text = p.get("description") or schema.get("description") or schema.get("title", "")
                default = f" (default `{json.dumps(schema['default'])}`)" if "default" in schema else ""
                out.append(
                    f"| `{p['name']}` | {p['in']} | {one_line(_schema_type(schema))} | {one_line(text)}{default} |"
                )
            out.append("")
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            schema = _resolve(spec, body)
            props = schema.get("properties", {})
            required = set(schema.get("required", ()))
            out += [f"Body (`application/json`, {schema.get('title', 'object')}):", ""]
            if props:
                out += ["| field | type | |", "|---|---|---|"]
                for name, prop in props.items():
                    text = prop.get("description", "")
                    need = "required" if name in required else "optional"
                    default = f"; default `{json.dumps(prop['default'])}`" if "default" in prop else ""
                    out.append(f"| `{name}` | {one_line(_schema_type(prop))} | {need}{default}. {one_line(text)} |")
                out.append("")
            else:
                out += ["An empty object `{}` (any fields are ignored).", ""]
    return "\n".join(out)


# -- MCP tools ------------------------------------------------------------------------------------------------


def mcp_tools() -> list[tuple[str, Any]]:
    """(role, tool) for every tool: the brain's first, then the worker's, as `cocoplus mcp --role all` serves them."""
    from cocoplus.mcp.server import build

    found: list[tuple[str, Any]] = []
    for role in ("brain", "worker"):
        for tool in asyncio.run(build(role).list_tools()):
            found.append((role, tool))
    return found


def _tool_param_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return _schema_type({"enum": schema["enum"]})
    kinds = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    return " or ".join(_schema_type(s) for s in kinds) or "any"


def mcp_page() -> str:
    out = [
        "# MCP tools",
        "",
        "Every tool `cocoplus mcp` serves, generated from the MCP server itself when this site is built. "
        "`cocoplus mcp` (no role) serves the worker tools; `--role brain` and `--role all` serve the main brain's "
        "too, and only to a process holding this user's capability (`COCOPLUS_MCP_TOKEN`). Each tool calls the "
        "operation the matching CLI command calls and answers with the JSON that command prints with `--json`; "
        "a failure is a tool error carrying cocoplus' one-line message. How the server is registered, and how it "
        "answers every line, is in [MCP](../guides/mcp.md).",
        "",
    ]
    headings = {
        "brain": "The main brain's tools (`--role brain`)",
        "worker": "The worker tools (no role, `--role worker`)",
    }
    current = None
    for role, tool in mcp_tools():
        if role != current:
            current = role
            out += [f"## {headings[role]}", ""]
        description = (tool.description or "").strip()
        if not description:
            missing(f"the MCP tool {tool.name}")
        out += [f"### `{tool.name}` {{#{slug('tool', tool.name)}}}", "", " ".join(description.split()), ""]
        notes = tool.annotations
        if notes is not None and getattr(notes, "read_only_hint", None):
            out += ["Read-only.", ""]
        schema = tool.input_schema if hasattr(tool, "input_schema") else tool.inputSchema
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        if not props:
            out += ["No parameters.", ""]
            continue
        out += ["| parameter | type | |", "|---|---|---|"]
        for name, prop in props.items():
            text = prop.get("description", "")
            if not text.strip():
                missing(f"the parameter {name} of the MCP tool {tool.name}")
            need = "required" if name in required else "optional"
            out.append(f"| `{name}` | {one_line(_tool_param_type(prop))} | {need}. {one_line(text)} |")
        out.append("")
    return "\n".join(out)


# -- the tiers ------------------------------------------------------------------------------------------------


def tiers() -> dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        found: dict[str, Any] = tomllib.load(fh)["tool"]["cocoplus"]["tiers"]
    return found


def tiers_table() -> str:
    decl = tiers()
    hook_path = set(decl["hook_path"])
    out = [
        "| tier | parts of `cocoplus` | on the hook path |",
        "|---|---|---|",
    ]
    for i, names in enumerate(decl["order"], start=1):
        parts = ", ".join(f"`{n}`" for n in names)
        on_path = "yes" if set(names) <= hook_path else ", ".join(f"`{n}`" for n in names if n in hook_path)
        out.append(f"| {i} | {parts} | {on_path} |")
    out += [
        "",
        "Imports the hook-path tiers may not make (each tier's generated `.ruff.toml`):",
        "",
        "| module | why |",
        "|---|---|",
    ]
    for module, why in decl["banned"].items():
        out.append(f"| `{module}` | {one_line(why)} |")
    return "\n".join(out)


# -- the hooks MkDocs calls -----------------------------------------------------------------------------------

PAGES: dict[str, Callable[[], str]] = {
    "reference/commands.md": commands_page,
    "reference/settings.md": settings_page,
    "reference/rest-api.md": rest_page,
    "reference/mcp-tools.md": mcp_page,
}
# Files of the repository's top level published as pages of the site: file -> page.
TOP_LEVEL = {"CHANGELOG.md": "changelog.md", "CONTRIBUTING.md": "contributing.md"}


def on_config(config: Any) -> Any:
    """docs/walkthrough.md, when it exists, is the first of the guides."""
    if os.path.exists(os.path.join(config["docs_dir"], WALKTHROUGH)):
        for entry in config["nav"] or ():
            if isinstance(entry, dict) and "Guides" in entry:
                pages = entry["Guides"]
                if not any(WALKTHROUGH in (p.values() if isinstance(p, dict) else [p]) for p in pages):
                    pages.insert(0, {"A supervision walkthrough": WALKTHROUGH})
    return config


def _from_top_level(text: str) -> str:
    """A top-level file's links made relative to the site's root: `docs/x.md` is `x.md` there."""
    return text.replace("](docs/", "](")


def on_files(files: Files, config: Any) -> Files:
    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    for name, page in TOP_LEVEL.items():
        with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
            files.append(File.generated(config, page, content=_from_top_level(fh.read())))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if TIERS_MARKER in markdown:
        markdown = markdown.replace(TIERS_MARKER, tiers_table())
    return markdown
