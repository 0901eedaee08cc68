"""cocoplus.toml: read, check, explain, and compile for the hook.

Precedence: built-in default < the user's own configuration file
(`~/.config/cocoplus/config.toml`, `core.userfiles`) < the project's
cocoplus.toml < environment variable (`COCOPLUS_<SECTION>_<KEY>`, or the
key's own name such as `JARVIS_SUPERVISION_RESTORE_TTL_S`).  One exception:
a value that names a program to run or a place data is sent to
(`keytypes.Key.needs_trust`) is taken from the project's file only when the
user has trusted that file as it is now, and the programs it names in the
project as they are now (`cocoplus.trust`); otherwise it is
left out as if absent, recorded in `Config.ignored`, and said once on
stderr.  Every value remembers where it came from (`origins`, and `files`
for the file it was read from) so `cocoplus config show` can say.  What a
key may hold is declared once, in `cocoplus.core.keys`; this module only
reads files and merges.  Standard library only (tomllib), so the hook can
fall back to it on the rare run where the compiled copy is stale.
"""

from __future__ import annotations

import os

from cocoplus.core import fsio, hookconfig, keys, keytypes, settings, userfiles
from cocoplus.core.errors import CocoplusError, ConfigInvalid
from cocoplus.core.paths import CONFIG_FILE_NAME, Layout

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any


class Config:
    """Effective configuration and where each value came from."""

    def __init__(self) -> None:
        self.values = settings.defaults()
        # "default", "file", "env NAME" or "derived (...)"; for "file", `files` names which one.
        self.origins: dict[str, str] = {k.dotted: "default" for k in keys.KEYS}
        self.files: dict[str, str] = {}
        self.pricing: dict[str, dict[str, float]] = {}
        self.accounts: dict[str, dict[str, Any]] = {}
        # "pricing.MODEL" / "accounts.NAME" -> the file that defined the entry.
        self.entry_files: dict[str, str] = {}
        self.path: str | None = None  # the project's cocoplus.toml, if it exists
        self.read: list[str] = []  # every configuration file read, in order of precedence
        # Values of the project file left out because the file is not trusted:
        # {"key", "label", "value", "what", "file", "reason"} (settings.needing_trust).
        self.ignored: list[dict[str, Any]] = []
        # "accounts.NAME" -> why the project file's entry is not used (it needs an ignored value).
        self.withheld: dict[str, str] = {}
        # The project file's trust: does it hold keys needing trust, are they in effect, and if not why.
        self.trust: dict[str, Any] = {"file": None, "needs_trust": False, "trusted": None, "reason": None, "keys": []}

    def get(self, dotted: str) -> Any:
        section, name = dotted.split(".", 1)
        return self.values[section][name]

    @property
    def session(self) -> dict[str, Any]:
        return self.values["session"]

    def table(self, section: str) -> dict[str, dict[str, Any]]:
        """The entries of `[pricing."model"]` or `[accounts.NAME]`."""
        return {"pricing": self.pricing, "accounts": self.accounts}[section]

    def ignored_value(self, key: str) -> dict[str, Any] | None:
        """What the untrusted project file says for `key` (`ctx.command`, `accounts.x.command`), if it was ignored."""
        for item in self.ignored:
            if item["key"] == key:
                return item
        return None

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


def sources(project_dir: str) -> list[tuple[str, str, bool]]:
    """The configuration files of a project, lowest precedence first: (path, name shown in messages, needs trust).

    A later file wins key by key (and entry by entry for `[accounts.NAME]`
    and `[pricing."model"]`).  The user's own file needs no trust; the
    project's file does, for the keys that need it.
    """
    user, project = hookconfig.config_files(project_dir)
    return [(user, userfiles.shown(user), False), (project, CONFIG_FILE_NAME, True)]


def load(project_dir: str, environ: dict[str, str] | None = None) -> Config:
    """The effective config for a project directory (the parent of `.cocoplus/`).

    `environ` supplies the overrides (default: this process's environment;
    `{}` for none); the user's file is found from this process's
    environment either way.  Raises ConfigInvalid, one line naming the file
    (or environment variable), the key, what was expected and what was found.
    """
    cfg = Config()
    shown_last = "configuration"
    for path, shown, needs_trust in sources(project_dir):
        raw = _read_bytes(path, shown)
        if raw is None:
            continue
        values, tables = settings.check_document(_parse_toml(raw, shown), shown)
        if needs_trust:
            _drop_user_only(cfg, path, shown, values)
            _hold_back_untrusted(cfg, project_dir, path, shown, raw, values, tables)
        _apply_file(cfg, path, values, tables)
        shown_last = shown
        if path == config_path(project_dir):
            cfg.path = path
    for dotted, (key, value) in settings.env_overrides(environ).items():
        cfg.values[key.section][key.name] = value
        cfg.origins[dotted] = f"env {key.env}"
        cfg.files.pop(dotted, None)
    derived = settings.derive(cfg.values, {d for d, o in cfg.origins.items() if o != "default"})
    if derived:
        cfg.origins["session.iteration_warn_at"] = derived
    settings.check_relations(cfg.values, shown_last)
    return cfg


def load_user() -> Config:
    """The user's own configuration file alone (`~/.config/cocoplus/config.toml`) over the defaults, no project
    and no environment: what a per-user process (`cocoplus inbox run`) reads, and the only place the keys that are
    the user's alone (`Key.user_only`: `[inbox]`) come from.  Raises ConfigInvalid as `load` does."""
    cfg = Config()
    path = userfiles.config_file()
    shown = userfiles.shown(path)
    raw = _read_bytes(path, shown)
    if raw is not None:
        values, tables = settings.check_document(_parse_toml(raw, shown), shown)
        _apply_file(cfg, path, values, tables)
    return cfg


def _drop_user_only(cfg: Config, path: str, shown: str, values: dict[str, dict[str, Any]]) -> None:
    """Take the keys that are the user's alone (`[inbox]`: where pushes carrying answers go) out of a project file's
    checked values (in place): a repository cannot add a destination, trusted or not.  Each is in `cfg.ignored`, and
    said once."""
    dropped = []
    for section in list(values):
        for name in list(values[section]):
            key = keys.BY_DOTTED[f"{section}.{name}"]
            if not key.user_only:
                continue
            value = values[section].pop(name)
            label = f"[{section}] {name}"
            cfg.ignored.append({"key": key.dotted, "label": label, "value": "(hidden)" if key.secret else value,
                                "what": "is yours alone", "file": path, "reason": USER_ONLY_REASON})  # fmt: skip
            dropped.append(label)
        if not values[section]:
            del values[section]
    if dropped:
        from cocoplus import trust  # deferred: only a project file naming such keys is said to

        trust.notice(
            f"cocoplus: note: {shown} names {', '.join(dropped)}, which are read from your own "
            f"{userfiles.shown(userfiles.config_file())} only (a repository cannot add a destination): ignored"
        )


USER_ONLY_REASON = "names keys read from your own configuration file only"


def load_for(layout: Layout, environ: dict[str, str] | None = None) -> Config:
    return load(layout.project, environ)


def source(layout: Layout, cfg: Config, dotted: str) -> str:
    """Where the effective value of `dotted` comes from, as budget lines name it: `cocoplus.toml` (or the
    user's file, as `~/...`), `env NAME`, or `defaults`."""
    origin = cfg.origins.get(dotted, "default")
    where = cfg.files.get(dotted) if origin == "file" else None
    if where is None:
        return origin if origin.startswith("env ") else "defaults"
    return layout.rel(where) if where == layout.config else userfiles.shown(where)


def problem(layout: Layout, environ: dict[str, str] | None = None) -> str | None:
    """Why the effective configuration cannot be used, in one line; None when it can.

    For `doctor` and `session status`, which report a broken cocoplus.toml
    (or a bad environment override) first; the hooks keep running on the
    last good compiled values meanwhile.
    """
    try:
        load(layout.project, environ)
    except ConfigInvalid as exc:
        return exc.message
    return None


def read_project_file(project_dir: str) -> tuple[str, bytes | None, list[dict[str, Any]]]:
    """The project's cocoplus.toml for `cocoplus trust`: (path, its bytes or None, the values in it needing trust).

    Raises ConfigInvalid when the file is not valid (an invalid file cannot be trusted: what it runs is unknown).
    """
    path = config_path(project_dir)
    raw = _read_bytes(path, CONFIG_FILE_NAME)
    if raw is None:
        return path, None, []
    values, tables = settings.check_document(_parse_toml(raw, CONFIG_FILE_NAME), CONFIG_FILE_NAME)
    for section, body in values.items():
        for name in [n for n in body if keys.BY_DOTTED[f"{section}.{n}"].user_only]:
            del body[name]  # never in effect from a project file: trusting it changes nothing for them
    return path, raw, settings.needing_trust(values, tables)


def _read_bytes(path: str, shown: str) -> bytes | None:
    try:
        return fsio.read_bytes(path, limit=1024 * 1024)
    except CocoplusError as exc:
        raise ConfigInvalid(f"{shown}: {getattr(exc, 'cause', exc)}") from None


def _parse_toml(raw: bytes, shown: str) -> dict[str, Any]:
    import tomllib  # deferred: the hook imports this module but parses TOML only when its compiled copy is stale

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalid(f"{shown}: not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigInvalid(f"{shown}: not valid TOML ({exc})") from None


def _hold_back_untrusted(
    cfg: Config,
    project_dir: str,
    path: str,
    shown: str,
    raw: bytes,
    values: dict[str, dict[str, Any]],
    tables: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """Take the values needing trust out of an untrusted project file's checked document (in place)."""
    flagged = settings.needing_trust(values, tables)
    cfg.trust = {
        "file": path,
        "needs_trust": bool(flagged),
        "trusted": None,
        "reason": None,
        "keys": [f["label"] for f in flagged],
    }
    if not flagged:
        return
    from cocoplus import trust  # deferred: only a project file holding keys that need trust consults the record

    reason = trust.verdict(project_dir, raw, trust.programs_named(project_dir, flagged))
    cfg.trust["trusted"] = reason is None
    if reason is None:
        return
    cfg.trust["reason"] = reason
    for item in flagged:
        cfg.ignored.append({**item, "file": path, "reason": reason})
        parts = item["key"].split(".")
        if len(parts) == 2:
            del values[parts[0]][parts[1]]
        else:
            section, field = parts[0], parts[-1]
            entry = ".".join(parts[1:-1])
            del tables[section][entry][field]
    for section, entries in tables.items():
        table = keys.TABLES_BY_SECTION[section]
        for name in list(entries):
            missing = settings.incomplete(table, entries[name])
            if missing is None:
                continue
            del entries[name]
            what = table.field(missing)
            does = what.trust_reason() if what is not None else "needs trust"
            cfg.withheld[f"{section}.{name}"] = (
                f"{shown}: {table.label(name)} is not used: its {missing} {does} and the file {reason}; "
                f"review the file and run {trust.HOW}"
            )
    trust.notice(trust.notice_text(shown, reason, [f["label"] for f in flagged]))


def _apply_file(
    cfg: Config, path: str, values: dict[str, dict[str, Any]], tables: dict[str, dict[str, dict[str, Any]]]
) -> None:
    for section, body in values.items():
        for name, value in body.items():
            cfg.values[section][name] = value
            cfg.origins[f"{section}.{name}"] = "file"
            cfg.files[f"{section}.{name}"] = path
    for section, entries in tables.items():
        for name, entry in entries.items():
            cfg.table(section)[name] = entry
            cfg.entry_files[f"{section}.{name}"] = path
    cfg.read.append(path)


# -- the hook's flat copy -------------------------------------------------------


def compile_for_hook(layout: Layout, cfg: Config | None = None) -> dict[str, Any]:
    """Write `.cocoplus/hook-config.json` (`core.hookconfig`): file and default values, no environment.

    The hook applies environment overrides itself, and compiles again when a
    configuration file's size or mtime no longer match the stamps recorded
    here.  Values that need trust are those of a trusted file only (`load`
    leaves the others out), so none from an untrusted file reaches the hook.
    """
    if cfg is None:
        cfg = load(layout.project, environ={})
    stamp = hookconfig.stamps(layout.project)
    values = settings.defaults()
    for k in keys.KEYS:
        if cfg.origins[k.dotted] == "file" and not k.user_only:  # the user's channel secrets stay out of projects
            values[k.section][k.name] = cfg.values[k.section][k.name]
    explicit = sorted(k for k, o in cfg.origins.items() if o == "file")
    effective = {section: dict(body) for section, body in values.items()}
    settings.derive(effective, set(explicit))
    env = sorted({k.env for k in keys.KEYS if k.env})
    doc = hookconfig.document(values, effective, source=stamp, explicit=explicit, env=env, pricing=cfg.pricing)
    fsio.atomic_write_json(layout.hook_config, doc)
    return doc


def example_toml() -> str:
    """The text of cocoplus.toml.example: every key, its default, its bounds, its variable and its meaning."""
    lines = [
        "# cocoplus.toml: project configuration for cocoplus. Every key is optional;",
        "# the values below are the defaults. Each key says what it accepts and the",
        "# environment variable that overrides this file (COCOPLUS_<SECTION>_<KEY>,",
        "# or the name the supervision seed fixed). `cocoplus config show` prints the",
        "# effective values and where each came from.",
        "#",
        "# The same keys may be set for all your projects in ~/.config/cocoplus/config.toml",
        "# (~ is your home as the password database names it); this file wins over it. Keys marked",
        '# "needs trust" run a program or send data somewhere: from this file they take',
        '# effect only after `cocoplus trust` (see "Trust" in docs/guides/configuration.md);',
        "# from your own file or the environment they always do.",
    ]
    for section in keys.SECTIONS:
        lines.append("")
        if any(k.user_only for k in keys.KEYS if k.section == section):
            lines += _user_only_example(section)
            continue
        lines.append(f"[{section}]")
        for k in keys.KEYS:
            if k.section != section:
                continue
            lines.append(f"# {k.help}")
            if k.needs_trust:
                lines.append(f"# needs trust ({k.trust_reason()})")
            lines.append(f"# {k.expected()}; environment {k.env}")
            lines.append(f"{k.name} = {keytypes.toml_value(k.default)}")
    for table in keys.TABLES:
        lines.append("")
        lines.append(f"# [{table.section}.{table.entry}]: {table.help}.")
        for f in table.fields:
            need = " (required)" if f.required else ""
            if f.required_when:
                need = f' (required when {f.required_when[0]} = "{f.required_when[1]}")'
            if f.needs_trust:
                need += f" (needs trust: {f.trust_reason()})"
            lines.append(f"#   {f.name}{need}: {f.help}")
            lines.append(f"#     {f.expected()}")
        lines += _EXAMPLES[table.section]
    lines.append("")
    return "\n".join(lines)


def _user_only_example(section: str) -> list[str]:
    """A section read from the user's own file only, commented out: it has no effect in a project's file."""
    lines = [
        f"# [{section}] is read from your own ~/.config/cocoplus/config.toml only, never from this file",
        "# (a repository cannot add a destination). Its keys, with their defaults:",
        f"# [{section}]",
    ]
    for k in keys.KEYS:
        if k.section == section:
            lines += [f"# {k.help}", f"# {k.expected()}; your own file only"]
            lines.append(f"# {k.name} = {keytypes.toml_value(k.default)}")
    return lines


_EXAMPLES: dict[str, list[str]] = {
    "pricing": [
        '# [pricing."my-local-model"]',
        "# input = 0.50",
        "# output = 1.50",
        "# cache_read = 0.05",
        "# cache_write = 0.60",
    ],
    "accounts": [
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
    ],
}
