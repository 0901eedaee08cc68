"""The phone channels as this user configured them: `[inbox]` in the user's own configuration file, and the channels
built from it.

`[inbox]` is read from `~/.config/cocoplus/config.toml` only (`config.load_user`; the keys are `user_only`), never
from a project's cocoplus.toml, trusted or not, and never from the environment: a repository cannot add a place
that answers go to or come from.  An ntfy topic left empty is made here, unguessable (`secrets.token_urlsafe`),
and kept in this user's inbox store (`topics.json`, 0600), so it stays the same across restarts: `cocoplus inbox`
and `cocoplus inbox run` say which one to subscribe to.

`channels(settings)` builds each configured channel (ntfy.Ntfy, telegram.Telegram) in the order of `[inbox]
channels`, and says in one line why one cannot be used (no token, a plain-HTTP server on another machine, ...).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from typing import Any

from cocoplus import config as config_mod
from cocoplus.core import fsio, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.inbox import store
from cocoplus.inbox.channels.common import Channel, ChannelError

TOPIC_PREFIX = "cocoplus-"


@dataclass(frozen=True)
class Settings:
    """`[inbox]` as this user configured it (topics filled in when ntfy is a channel and they were left empty)."""

    channels: tuple[str, ...] = ()
    ntfy_server: str = "https://ntfy.sh"
    ntfy_topic: str = ""
    ntfy_token: str = ""
    ntfy_reply_topic: str = ""
    ntfy_reply_token: str = ""
    telegram_token: str = ""
    telegram_chat: str = ""
    telegram_api: str = "https://api.telegram.org"
    presence_s: float = 120.0
    presence_file: str = ""
    escalate_after_s: float = 60.0
    page_url: str = ""
    made_topics: tuple[str, ...] = field(default=())  # which topics were made here rather than configured

    @property
    def configured(self) -> bool:
        return bool(self.channels)

    def shown(self) -> dict[str, Any]:
        """What may be shown (`cocoplus inbox`, `inbox run`): no token, but the topics to subscribe to."""
        return {
            "channels": list(self.channels),
            "file": userfiles.shown(userfiles.config_file()),
            "ntfy": {"server": self.ntfy_server, "topic": self.ntfy_topic, "reply_topic": self.ntfy_reply_topic,
                     "made": list(self.made_topics)} if "ntfy" in self.channels else None,
            "telegram": {"chat": self.telegram_chat} if "telegram" in self.channels else None,
            "presence_s": self.presence_s,
            "escalate_after_s": self.escalate_after_s,
            "page_url": self.page_url or None,
        }  # fmt: skip


def topics_file() -> str:
    return store.topics_file()


def _made_topics(want: tuple[str, ...]) -> dict[str, str]:
    """The topics made for this user (made now for any of `want` not made yet), kept 0600 in the inbox store."""
    path = topics_file()
    try:
        doc = fsio.read_json(path)
    except CocoplusError:
        doc = None
    kept = {k: v for k, v in (doc or {}).items() if isinstance(v, str)} if isinstance(doc, dict) else {}
    missing = [w for w in want if w not in kept]
    if missing:
        for name in missing:
            kept[name] = TOPIC_PREFIX + secrets.token_urlsafe(18)
        fsio.ensure_dir(os.path.dirname(path))
        fsio.atomic_write_json(path, kept)
    return kept


def read() -> Settings:
    """`[inbox]` from the user's own file (ConfigInvalid, one line, when it is not valid)."""
    cfg = config_mod.load_user()
    values = {k: cfg.get(f"inbox.{k}") for k in Settings.__dataclass_fields__ if k != "made_topics"}
    values["channels"] = tuple(dict.fromkeys(values["channels"]))
    made: list[str] = []
    if "ntfy" in values["channels"]:
        want = tuple(k for k in ("ntfy_topic", "ntfy_reply_topic") if not values[k])
        if want:
            kept = _made_topics(want)
            for k in want:
                values[k] = kept[k]
                made.append(k)
    return Settings(**values, made_topics=tuple(made))


def channels(settings: Settings, timeout: float = 10.0) -> tuple[list[Channel], list[str]]:
    """The channels of `settings`, in order, and why any of them cannot be used (one line each)."""
    from cocoplus.inbox.channels import ntfy, telegram  # deferred: only a process that sends builds the channels

    built: list[Channel] = []
    problems: list[str] = []
    for name in settings.channels:
        try:
            if name == "ntfy":
                built.append(
                    ntfy.Ntfy(
                        settings.ntfy_server, settings.ntfy_topic, token=settings.ntfy_token or None,
                        reply_topic=settings.ntfy_reply_topic, reply_token=settings.ntfy_reply_token or None,
                        timeout=timeout,
                    )
                )  # fmt: skip
            elif name == "telegram":
                if not settings.telegram_token or not settings.telegram_chat:
                    raise ChannelError("[inbox] telegram_token and telegram_chat are both needed")
                built.append(
                    telegram.Telegram(
                        settings.telegram_token, settings.telegram_chat, api=settings.telegram_api, timeout=timeout
                    )
                )
        except ChannelError as exc:
            problems.append(f"{name}: {exc.message}")
    return built, problems
