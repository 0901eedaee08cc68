"""The `[fleet]` configuration as a relay or a fleet command uses it: servers, names, credentials, TLS.

Read through `cocoplus.config` like every key (so the trust rule for keys
that send data applies there, and the environment overrides as usual:
`COCOPLUS_FLEET_URL`, `COCOPLUS_FLEET_NAME`, `COCOPLUS_FLEET_MACHINE`, ...).
A value that cannot be used is a one-line error naming the key and where
it came from.  Standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core.errors import CocoplusError, ConfigInvalid
from cocoplus.fleet import naming


class FleetUnreachable(CocoplusError):
    """No server of the fleet could be reached (or it refused the credentials)."""


NOT_CONFIGURED_HINT = (
    "set [fleet] url in your own configuration (or COCOPLUS_FLEET_URL), e.g. nats://host:4222; "
    "the fleet guide in the documentation says how"
)


@dataclass
class FleetOptions:
    urls: list[str]
    fleet: str
    machine: str
    project: str
    heartbeat_s: float = 5.0
    ack_wait_s: float = 10.0
    max_command_age_s: float = 7 * 86400.0
    replicas: int = 0
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    creds_file: str | None = None
    nkey_file: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def describe(self) -> dict[str, Any]:
        """What a status report may show: no secret."""
        return {"servers": list(self.urls), "fleet": self.fleet, "machine": self.machine, "project": self.project}


def _where(cfg: Any, dotted: str) -> str:
    origin = cfg.origins.get(dotted, "default")
    if origin == "file":
        return os.path.basename(cfg.files.get(dotted, "configuration"))
    if origin.startswith("env "):
        return "environment " + origin[4:]
    return "configuration"


def configured(project_dir: str, environ: dict[str, str] | None = None) -> bool:
    """Whether a fleet server is configured for this project (a broken configuration counts as not)."""
    try:
        cfg = config_mod.load(project_dir, environ)
    except ConfigInvalid:
        return False
    return bool(str(cfg.get("fleet.url")).strip())


def load(project_dir: str, environ: dict[str, str] | None = None) -> FleetOptions:
    """The fleet options for a project directory; CocoplusError when no fleet is configured."""
    env = os.environ if environ is None else environ
    cfg = config_mod.load(project_dir, environ)
    raw = str(cfg.get("fleet.url")).strip()
    if not raw:
        raise CocoplusError("no fleet is configured", hint=NOT_CONFIGURED_HINT)
    urls = [u.strip() for u in raw.split(",") if u.strip()]
    for u in urls:
        scheme = u.split("://", 1)[0] if "://" in u else ""
        if scheme not in ("nats", "tls", "ws", "wss"):
            raise ConfigInvalid(
                f"{_where(cfg, 'fleet.url')}: [fleet] url: expected nats://host:port (or tls://, ws://, wss://), "
                f"got {u!r}"
            )

    def name(key: str, default: str) -> str:
        value = str(cfg.get(f"fleet.{key}")) or default
        problem = naming.name_problem(value)
        if problem:
            raise ConfigInvalid(f"{_where(cfg, 'fleet.' + key)}: [fleet] {key} {value!r}: {problem}")
        return value

    def secret(key: str) -> str | None:
        var = str(cfg.get(f"fleet.{key}"))
        if not var:
            return None
        value = env.get(var)
        if not value:
            raise ConfigInvalid(
                f"{_where(cfg, 'fleet.' + key)}: [fleet] {key}: the environment variable {var} is not set"
            )
        return value

    def path(key: str) -> str | None:
        value = str(cfg.get(f"fleet.{key}"))
        if not value:
            return None
        full = os.path.expanduser(value)
        if not os.path.isabs(full):
            full = os.path.join(project_dir, full)
        if not os.path.isfile(full):
            raise ConfigInvalid(f"{_where(cfg, 'fleet.' + key)}: [fleet] {key}: no such file {value!r}")
        return full

    return FleetOptions(
        urls=urls,
        fleet=name("name", "default"),
        machine=name("machine", naming.default_machine()),
        project=name("project", naming.default_project(project_dir)),
        heartbeat_s=float(cfg.get("fleet.heartbeat_s")),
        ack_wait_s=float(cfg.get("fleet.ack_wait_s")),
        max_command_age_s=float(cfg.get("fleet.max_command_age_s")),
        replicas=int(cfg.get("fleet.replicas")),
        user=str(cfg.get("fleet.user")) or None,
        password=secret("password_env"),
        token=secret("token_env"),
        creds_file=path("creds_file"),
        nkey_file=path("nkey_file"),
        tls_ca=path("tls_ca"),
        tls_cert=path("tls_cert"),
        tls_key=path("tls_key"),
    )
