"""The fleet's JetStream streams, key-value bucket and the relay's consumer: made if missing, checked if present.

| stream | subjects | kept |
|---|---|---|
| `cocoplus-F-cmd-M` (one per machine) | `cocoplus.F.cmd.M.>` (`cocoplus.F.cmd.M.P.S`: from S to P) | 30 days |
| `cocoplus-F-ack` | `cocoplus.F.ack.>` | 7 days |
| `cocoplus-F-events` | `cocoplus.F.ev.>` | 7 days, at most 1 GiB |
| `KV_cocoplus-F` (bucket `cocoplus-F`) | `$KV.cocoplus-F.>` | the last value of each key |

A stream that exists with other subjects is refused (someone else's, or
made to capture this machine's commands), and so is one that republishes,
transforms subjects, mirrors or sources another (a stream one machine made
could republish into another machine's commands); such a stream is never
used or changed.  Each project's relay reads its commands through the
durable consumer `relay--M--P` (filter `cocoplus.F.cmd.M.P.*`: from every
sender): explicit acknowledgement, one command in flight at a time (so
commands apply in the order they were sent, redeliveries included), and
created with "deliver new": commands sent before a project ever joined do
not exist for it.  A consumer an earlier release made with another filter
is updated to this one.
"""

from __future__ import annotations

from typing import Any

from nats.js import api
from nats.js.errors import NotFoundError

from cocoplus.core.errors import CocoplusError
from cocoplus.fleet import naming
from cocoplus.fleet.connect import Connection

DAY = 86400.0
CMD_MAX_AGE = 30 * DAY
ACK_MAX_AGE = 7 * DAY
EVENTS_MAX_AGE = 7 * DAY
EVENTS_MAX_BYTES = 1 << 30
DUPLICATE_WINDOW = 3600.0
ACK_WAIT_S = 10.0


class StreamRefused(CocoplusError):
    """A stream of the fleet exists with a configuration the relay will not use."""


def replicas(conn: Connection) -> int:
    wanted = conn.opts.replicas
    return wanted if wanted > 0 else min(3, conn.cluster_size())


def _configs(conn: Connection) -> list[api.StreamConfig]:
    o = conn.opts
    n = replicas(conn)
    return [
        api.StreamConfig(
            name=naming.cmd_stream(o.fleet, o.machine),
            subjects=naming.cmd_stream_subjects(o.fleet, o.machine),
            max_age=CMD_MAX_AGE,
            duplicate_window=DUPLICATE_WINDOW,
            allow_direct=True,
            num_replicas=n,
        ),
        api.StreamConfig(
            name=naming.ack_stream(o.fleet),
            subjects=[f"{naming.PREFIX}.{o.fleet}.ack.>"],
            max_age=ACK_MAX_AGE,
            duplicate_window=DUPLICATE_WINDOW,
            allow_direct=True,
            num_replicas=n,
        ),
        api.StreamConfig(
            name=naming.events_stream(o.fleet),
            subjects=[f"{naming.PREFIX}.{o.fleet}.ev.>"],
            max_age=EVENTS_MAX_AGE,
            max_bytes=EVENTS_MAX_BYTES,
            duplicate_window=DUPLICATE_WINDOW,
            allow_direct=True,
            num_replicas=n,
        ),
    ]


def _check(name: str, found: api.StreamConfig, subjects: list[str]) -> None:
    """Refuse a stream of the fleet that captures other subjects, or sends what it stores anywhere else."""
    if sorted(found.subjects or []) != sorted(subjects):
        raise StreamRefused(
            f"stream {name} exists with subjects {found.subjects}, expected {subjects}; "
            "it is not this fleet's, so the relay will not use it"
        )
    extra = [
        what
        for what, value in (
            ("republishes", found.republish),
            ("transforms subjects", found.subject_transform),
            ("mirrors another stream", found.mirror),
            ("sources other streams", found.sources),
        )
        if value
    ]
    if extra:
        raise StreamRefused(
            f"stream {name} {' and '.join(extra)}: the fleet's streams do none of this (a stream that republishes "
            "could publish into another machine's commands), so the relay will not use it"
        )


async def ensure(conn: Connection) -> list[str]:
    """Make the streams and the bucket this relay needs, or check the ones that exist; what was made."""
    made = []
    for cfg in _configs(conn):
        try:
            info = await conn.js.stream_info(cfg.name)  # type: ignore[arg-type]
        except NotFoundError:
            await conn.js.add_stream(cfg)
            made.append(cfg.name or "")
            continue
        _check(cfg.name or "", info.config, list(cfg.subjects or []))
    bucket = naming.bucket(conn.opts.fleet)
    try:
        await conn.js.key_value(bucket)
    except NotFoundError:
        await conn.js.create_key_value(api.KeyValueConfig(bucket=bucket, history=1, replicas=replicas(conn)))
        made.append("KV_" + bucket)
    else:
        info = await conn.js.stream_info("KV_" + bucket)
        _check("KV_" + bucket, info.config, [f"$KV.{bucket}.>"])
    return made


def relay_consumer_config(opts: Any) -> api.ConsumerConfig:
    name = naming.relay_consumer(opts.machine, opts.project)
    return api.ConsumerConfig(
        name=name,
        durable_name=name,
        filter_subject=naming.cmd_filter(opts.fleet, opts.machine, opts.project),
        deliver_policy=api.DeliverPolicy.NEW,
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=ACK_WAIT_S,
        max_ack_pending=1,
    )


async def command_subscription(conn: Connection) -> Any:
    """The relay's pull subscription on its commands (the durable consumer is made the first time)."""
    o = conn.opts
    cfg = relay_consumer_config(o)
    stream = naming.cmd_stream(o.fleet, o.machine)
    try:
        found = await conn.js.consumer_info(stream, cfg.durable_name or "")
    except NotFoundError:
        found = None
    if found is not None and found.config.filter_subject != cfg.filter_subject:
        await conn.js.add_consumer(stream, config=cfg)  # an earlier release's filter (no sender token): updated
    return await conn.js.pull_subscribe(
        cfg.filter_subject or "",
        durable=cfg.durable_name,
        stream=stream,
        config=cfg,
    )
