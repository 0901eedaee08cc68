"""A nats-server configuration for a fleet: one account, one user per machine, each held to its own subjects.

Standard library only; used by the fleet guide's example (docs/guides/fleet.md) and by the tests,
which run nats-server with exactly this configuration (auth on, one
credential per machine).  What a machine M of fleet F may do:

* publish its own project state, events and acknowledgements
  (`$KV.cocoplus-F.M.>`, `cocoplus.F.ev.M.>`, `cocoplus.F.ack.M.>`), and
  commands to any machine of the fleet as itself (`cocoplus.F.cmd.*.*.M`:
  the last token is the sender, so a command's subject says which machine's
  user published it; a machine left out of `senders` sends none);
* read and acknowledge only its own command stream (`cocoplus-F-cmd-M`);
* read the fleet's state, events and pending commands (the account holds
  this fleet only), never write another machine's;
* receive replies only below its own inbox prefix, and acknowledgements of
  the commands it sent.

It may create its own command stream and the fleet's shared streams if
they are missing (the first relay to join makes them).  NATS checks the
subject of such a request, not the stream's configuration in its body, so
a relay checks the configuration of every stream it uses and refuses one
that captures the wrong subjects or republishes, a relay refuses a command
that a stream republished (it carries `Nats-Stream`: a stream one machine
made could otherwise republish into another machine's commands under any
sender), and a command's sender checks that the stream which stored it is
the target machine's own.  For a fleet whose
machines should not create streams at all, create them once with an
administrator and drop the STREAM.CREATE lines.
"""

from __future__ import annotations

import json

from cocoplus.fleet import naming

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def _q(text: str) -> str:
    return json.dumps(text)


def machine_permissions(fleet: str, machine: str, sends: bool = True) -> dict[str, list[str]]:
    """The subjects machine `machine` may publish to and subscribe to (`sends`: it may send commands)."""
    naming.check_name(fleet, "fleet")
    naming.check_name(machine, "machine")
    p = naming.PREFIX
    cmd = naming.cmd_stream(fleet, machine)
    bucket_stream = "KV_" + naming.bucket(fleet)
    shared = (naming.ack_stream(fleet), naming.events_stream(fleet), bucket_stream)
    watcher = naming.watcher_consumer(machine)
    events = naming.events_stream(fleet)
    publish = [
        *([naming.cmd_sender_subjects(fleet, machine)] if sends else []),
        f"{p}.{fleet}.ack.{machine}.>",
        f"{p}.{fleet}.ev.{machine}.>",
        f"$KV.{naming.bucket(fleet)}.{machine}.>",
        "$JS.API.INFO",
        "$JS.API.STREAM.INFO.*",
        f"$JS.API.STREAM.CREATE.{cmd}",
        *(f"$JS.API.STREAM.CREATE.{s}" for s in shared),
        "$JS.API.STREAM.MSG.GET.*",
        "$JS.API.DIRECT.GET.*",
        "$JS.API.DIRECT.GET.*.>",
        "$JS.API.CONSUMER.INFO.*.*",
        f"$JS.API.CONSUMER.CREATE.{cmd}.*.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{cmd}.*",
        f"$JS.ACK.{cmd}.>",
        f"$JS.API.CONSUMER.CREATE.{bucket_stream}.*.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{bucket_stream}.*",
        f"$JS.API.CONSUMER.CREATE.{events}.{watcher}.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{events}.{watcher}",
        f"$JS.ACK.{events}.{watcher}.>",
    ]
    subscribe = [f"{naming.inbox_prefix(fleet, machine)}.>", f"{p}.{fleet}.ack.>"]
    return {"publish": publish, "subscribe": subscribe}


def account_name(fleet: str) -> str:
    return "FLEET_" + fleet


def account_block(
    fleet: str, users: Mapping[str, str], indent: str = "  ", senders: Sequence[str] | None = None
) -> str:
    """`ACCOUNT { jetstream: enabled, users: [...] }` with one user per machine.

    `users` maps machine name to the password line's value as written in
    the file: a literal, a bcrypt hash (`nats server passwd`), or `$VAR`.
    `senders`: the machines that may send commands (None: every machine);
    the others only receive them.
    """
    i2, i3, i4 = indent * 2, indent * 3, indent * 4
    lines = [f"{indent}{account_name(fleet)} {{", f"{i2}jetstream: enabled", f"{i2}users: ["]
    for machine, password in users.items():
        perms = machine_permissions(fleet, machine, sends=senders is None or machine in senders)
        pw = password if password.startswith("$") else _q(password)
        lines.append(f"{i3}{{user: {_q(machine)}, password: {pw}, permissions: {{")
        for what in ("publish", "subscribe"):
            lines.append(f"{i4}{what}: {{allow: [")
            lines.extend(f"{i4}{indent}{_q(s)}," for s in perms[what])
            lines.append(f"{i4}]}}")
        lines.append(f"{i3}}}}}")
    lines += [f"{i2}]", f"{indent}}}"]
    return "\n".join(lines)


def server_config(
    fleet: str,
    users: Mapping[str, str],
    *,
    listen: str = "127.0.0.1:4222",
    store_dir: str = "/var/lib/nats",
    server_name: str | None = None,
    cluster_name: str | None = None,
    cluster_listen: str | None = None,
    routes: Sequence[str] = (),
    senders: Sequence[str] | None = None,
) -> str:
    """A whole nats-server configuration file: JetStream on, the fleet's account, optionally a cluster.

    `senders`: the machines that may send commands (None: every machine of `users`)."""
    lines = []
    if server_name:
        lines.append(f"server_name: {_q(server_name)}")
    lines += [f"listen: {_q(listen)}", f"jetstream {{ store_dir: {_q(store_dir)} }}"]
    if cluster_name:
        lines.append(f"cluster {{ name: {_q(cluster_name)}, listen: {_q(cluster_listen or '127.0.0.1:6222')},")
        lines.append("  routes: [" + ", ".join(_q(r) for r in routes) + "] }")
    lines += ["accounts {", account_block(fleet, users, senders=senders), "}"]
    return "\n".join(lines) + "\n"
