"""cocoplus.toml: read, check, explain, and compile for the hook.

Precedence: built-in default < cocoplus.toml < `COCOPLUS_<SECTION>_<KEY>`
environment variable.  Every value remembers where it came from so
`cocoplus config show` can say.  Standard library only (tomllib), so the
hook can fall back to it on the rare run where the compiled copy is stale.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio, settings
from cocoplus.core.errors import ConfigInvalid, CocoplusError
from cocoplus.core.paths import CONFIG_FILE_NAME, Layout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


ACCOUNT_KINDS = ("claude", "codex", "openai", "command")
EFFORTS = ("low", "medium", "high")
PRICING_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
ACCOUNT_FIELDS: dict[str, str] = {
    "kind": "one of " + ", ".join(f'"{k}"' for k in ACCOUNT_KINDS),
    "default_model": "a string",
    "default_reasoning_effort": 'one of "low", "medium", "high"',
    "command": "a list of strings (argv; {model} and {effort} are filled in)",
    "binary": "a string (path of the CLI to run)",
    "base_url": "a string (OpenAI-compatible endpoint)",
    "api_key_env": "a string (name of the environment variable holding the key)",
    "timeout_s": "a number > 0",
}
HOOK_CONFIG_VERSION = 1


class Config:
    """Effective configuration and where each value came from."""

    def __init__(self) -> None:
        self.values = settings.defaults()
        self.origins: dict[str, str] = {k.dotted: "default" for k in settings.KEYS}
        self.pricing: dict[str, dict[str, float]] = {}
        self.accounts: dict[str, dict[str, Any]] = {}
        self.path: str | None = None

    def get(self, dotted: str) -> Any:
        section, name = dotted.split(".", 1)
        return self.values[section][name]

    @property
    def session(self) -> dict[str, Any]:
        return self.values["session"]

    def hook_values(self) -> dict[str, Any]:
        """Sections plus `pricing`, the shape the hook-side functions take."""
        out: dict[str, Any] = {sec: dict(v) for sec, v in self.values.items()}
        out["pricing"] = {m: dict(p) for m, p in self.pricing.items()}
        return out

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {s: dict(v) for s, v in self.values.items()}
        out["pricing"] = {m: dict(p) for m, p in self.pricing.items()}
        out["accounts"] = {n: dict(a) for n, a in self.accounts.items()}
        return out


def config_path(project_dir: str) -> str:
    return os.path.join(project_dir, CONFIG_FILE_NAME)


def load(project_dir: str, environ: dict[str, str] | None = None) -> Config:
    """The effective config for a project directory (the parent of `.cocoplus/`)."""
    cfg = Config()
    path = config_path(project_dir)
    shown = CONFIG_FILE_NAME
    data = _read_toml(path, shown)
    if data is not None:
        cfg.path = path
        _apply_file(cfg, data, shown)
    for dotted, (key, value) in settings.env_overrides(environ).items():
        cfg.values[key.section][key.name] = value
        cfg.origins[dotted] = f"env {key.env}"
    derived = settings.derive(cfg.values, {d for d, o in cfg.origins.items() if o != "default"})
    if derived:
        cfg.origins["session.iteration_warn_at"] = derived
    settings.check_relations(cfg.values, shown if data is not None else "configuration")
    return cfg


def _read_toml(path: str, shown: str) -> dict[str, Any] | None:
    import tomllib

    try:
        raw = fsio.read_bytes(path, limit=1024 * 1024)
    except CocoplusError as exc:
        raise ConfigInvalid(f"{shown}: {getattr(exc, 'cause', exc)}") from None
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalid(f"{shown}: not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(f"{shown}: not valid TOML ({exc})") from None


def _apply_file(cfg: Config, data: dict[str, Any], shown: str) -> None:
    for section, body in data.items():
        if section in settings.OPEN_SECTIONS:
            if not isinstance(body, dict):
                raise ConfigInvalid(f"{shown}: [{section}] must be a table")
            if section == "pricing":
                cfg.pricing = _check_pricing(body, shown)
            else:
                cfg.accounts = _check_accounts(body, shown)
            continue
        if section not in settings.SECTIONS:
            known = ", ".join(f"[{s}]" for s in (*settings.SECTIONS, *settings.OPEN_SECTIONS))
            raise ConfigInvalid(f'{shown}: unknown section [{section}] (known: {known})')
        if not isinstance(body, dict):
            raise ConfigInvalid(f"{shown}: {section} must be a table [{section}]")
        for name, value in body.items():
            key = settings.BY_DOTTED.get(f"{section}.{name}")
            if key is None:
                known = ", ".join(k.name for k in settings.KEYS if k.section == section)
                raise ConfigInvalid(f'{shown}: [{section}] unknown key "{name}" (known: {known})')
            cfg.values[section][name] = key.coerce(value, shown)
            cfg.origins[key.dotted] = "file"


def _check_pricing(body: dict[str, Any], shown: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for model, table in body.items():
        if not isinstance(table, dict):
            raise ConfigInvalid(
                f'{shown}: [pricing] "{model}": expected a table of USD per million tokens '
                f"({', '.join(PRICING_FIELDS)})"
            )
        prices: dict[str, float] = {}
        for field, value in table.items():
            if field not in PRICING_FIELDS:
                raise ConfigInvalid(
                    f'{shown}: [pricing."{model}"] unknown key "{field}" (known: {", ".join(PRICING_FIELDS)})'
                )
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigInvalid(
                    f'{shown}: [pricing."{model}"] {field}: expected a number >= 0 (USD per million tokens), got {value!r}'
                )
            prices[field] = float(value)
        for required in ("input", "output"):
            if required not in prices:
                raise ConfigInvalid(f'{shown}: [pricing."{model}"] {required}: missing (USD per million tokens)')
        out[model] = prices
    return out


def _check_accounts(body: dict[str, Any], shown: str) -> dict[str, dict[str, Any]]:
    from cocoplus.core.paths import is_valid_id

    out: dict[str, dict[str, Any]] = {}
    for name, table in body.items():
        where = f"{shown}: [accounts.{name}]"
        if not is_valid_id(name):
            raise ConfigInvalid(f"{where}: account names use A-Z a-z 0-9 _ - .")
        if not isinstance(table, dict):
            raise ConfigInvalid(f"{where}: expected a table")
        for field, value in table.items():
            if field not in ACCOUNT_FIELDS:
                raise ConfigInvalid(f'{where} unknown key "{field}" (known: {", ".join(ACCOUNT_FIELDS)})')
            ok = True
            if field == "kind":
                ok = value in ACCOUNT_KINDS
            elif field == "default_reasoning_effort":
                ok = value in EFFORTS
            elif field == "command":
                ok = isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)
            elif field == "timeout_s":
                ok = not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0
            else:
                ok = isinstance(value, str)
            if not ok:
                raise ConfigInvalid(f"{where} {field}: expected {ACCOUNT_FIELDS[field]}, got {value!r}")
        if "kind" not in table:
            raise ConfigInvalid(f"{where} kind: missing (expected {ACCOUNT_FIELDS['kind']})")
        if table["kind"] == "command" and "command" not in table:
            raise ConfigInvalid(f"{where} command: missing (a command account needs an argv list)")
        out[name] = dict(table)
    return out


def load_for(layout: Layout, environ: dict[str, str] | None = None) -> Config:
    return load(layout.project, environ)


# -- the hook's flat copy -------------------------------------------------------


def compile_for_hook(layout: Layout, cfg: Config | None = None) -> dict[str, Any]:
    """Write `.cocoplus/hook-config.json`: file and default values, no environment.

    The hook applies environment overrides itself, and recompiles when
    cocoplus.toml's size or mtime no longer match the stamp recorded here.
    """
    if cfg is None:
        cfg = load(layout.project, environ={})
    stamp = _stamp(layout.config)
    values = settings.defaults()
    for k in settings.KEYS:
        if cfg.origins[k.dotted] == "file":
            values[k.section][k.name] = cfg.values[k.section][k.name]
    doc = {
        "schema_version": HOOK_CONFIG_VERSION,
        "written_by": "cocoplus config",
        "source": stamp,
        "values": values,
        "explicit": sorted(k for k, o in cfg.origins.items() if o == "file"),
        "pricing": cfg.pricing,
    }
    fsio.atomic_write_json(layout.hook_config, doc)
    from cocoplus.cost import prices  # deferred: only a compile looks at the price table (never compiled in a hook)

    prices.refresh(layout)
    return doc


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def for_hook(layout: Layout, environ: dict[str, str]) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Values the hook uses, and a problem to log (the hook never fails on config).

    Reads the compiled copy; recompiles (importing tomllib) only when
    cocoplus.toml changed since.  A bad cocoplus.toml keeps the last good
    compiled values (or the defaults) and reports why.
    """
    problem = None
    values: dict[str, dict[str, Any]] | None = None
    pricing: Any = None
    try:
        doc = fsio.read_json(layout.hook_config)
    except CocoplusError:
        doc = None
    if doc is not None and doc.get("schema_version") == HOOK_CONFIG_VERSION and isinstance(doc.get("values"), dict):
        if doc.get("source") == _stamp(layout.config):
            values = _merge_defaults(doc["values"])
            pricing = doc.get("pricing")
    used: dict[str, Any] = doc or {}
    if values is None:
        try:
            fresh = compile_for_hook(layout)
            used = fresh
            values = _merge_defaults(fresh["values"])
            pricing = fresh.get("pricing")
        except CocoplusError as exc:
            problem = str(exc)
            if doc and isinstance(doc.get("values"), dict):
                values = _merge_defaults(doc["values"])
                pricing = doc.get("pricing")
            else:
                values = settings.defaults()
    errors: list[str] = []
    overrides = settings.env_overrides(environ, errors)
    for _dotted, (key, value) in overrides.items():
        values[key.section][key.name] = value
    if errors:
        problem = "; ".join(errors)
    explicit = set(overrides)
    if isinstance(used.get("explicit"), list):
        explicit |= {k for k in used["explicit"] if isinstance(k, str)}
    settings.derive(values, explicit)
    values["pricing"] = pricing if isinstance(pricing, dict) else {}
    return values, problem


def _merge_defaults(stored: dict[str, Any]) -> dict[str, dict[str, Any]]:
    values = settings.defaults()
    for k in settings.KEYS:
        section = stored.get(k.section)
        if isinstance(section, dict) and k.name in section:
            try:
                values[k.section][k.name] = k.coerce(section[k.name], "hook-config.json")
            except CocoplusError:
                pass
    return values


def example_toml() -> str:
    """The text of cocoplus.toml.example: every key, its default and its meaning."""
    lines = [
        "# cocoplus.toml: project configuration for cocoplus. Every key is optional;",
        "# the values below are the defaults. Environment variables",
        "# COCOPLUS_<SECTION>_<KEY> (for example COCOPLUS_SESSION_MAX_ITERATIONS=50)",
        "# override this file. `cocoplus config show` prints the effective values.",
    ]
    for section in settings.SECTIONS:
        lines.append("")
        lines.append(f"[{section}]")
        for k in settings.KEYS:
            if k.section != section:
                continue
            lines.append(f"# {k.help}")
            lines.append(f"{k.name} = {_toml_value(k.default)}")
    lines += [
        "",
        "# Prices for models the bundled price table does not know, in USD per",
        "# million tokens. input and output are required; cache_read, cache_write",
        "# (5-minute cache writes) and cache_write_1h are optional.",
        '# [pricing."my-local-model"]',
        "# input = 0.50",
        "# output = 1.50",
        "# cache_read = 0.05",
        "# cache_write = 0.60",
        "",
        "# Accounts that can run the master agent; [chat] controller picks one.",
        "# kind: claude (Claude Code CLI, print mode), codex (`codex exec`),",
        "# openai (an OpenAI-compatible Responses endpoint), command (any program:",
        "# the prompt on stdin, the reply on stdout).",
        "# [accounts.local]",
        '# kind = "command"',
        '# command = ["my-agent", "--model", "{model}", "--effort", "{effort}"]',
        '# default_model = "my-model"',
        '# default_reasoning_effort = "medium"',
        "# timeout_s = 600",
        "#",
        "# [accounts.api]",
        '# kind = "openai"',
        '# base_url = "https://api.openai.com/v1"',
        '# api_key_env = "OPENAI_API_KEY"',
        '# default_model = "gpt-5.4"',
        "#",
        "# [accounts.cc]",
        '# kind = "claude"',
        '# binary = "claude"',
        '# default_model = "claude-sonnet-5"',
        "",
    ]
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    import tomli_w

    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()
