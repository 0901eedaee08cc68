"""Names in the fleet: machines, projects, subjects, streams, consumers and keys, and command targets.

Standard library only.  Everything a relay publishes or reads is named by
fleet, machine and project, so a NATS account can restrict each machine to
its own subjects (cocoplus/fleet/accounts.py writes that configuration):

    cocoplus.F.cmd.M.P.S        commands from machine S for project P on machine M (stream cocoplus-F-cmd-M)
    cocoplus.F.ack.M.P.ID       M's acknowledgement of command ID     (stream cocoplus-F-ack)
    cocoplus.F.ev.M.P.KIND      P's signals, rounds, messages         (stream cocoplus-F-events)
    $KV.cocoplus-F.M.P.state    P's state: sessions, run state, kill switch, supervision (bucket cocoplus-F)
    $KV.cocoplus-F.M.P.relay    P's relay heartbeat

The sender S of a command is a token of its subject, and the account lets
machine S publish commands only on `cocoplus.F.cmd.*.*.S`: who sent a
command is what the server let through, never what its body says.

A name (fleet, machine, project) is 1-64 characters from `A-Za-z0-9_-`,
starting and ending with a letter or digit and never holding `--`, so it is
one subject token, and `relay--M--P` names exactly one consumer.
"""

from __future__ import annotations

import os
import re
import socket

from cocoplus.core.errors import UsageError
from cocoplus.core.paths import is_valid_id

PREFIX = "cocoplus"
NAME_MAX = 64
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$")
EVENT_KINDS = ("signal", "round", "message")


def name_problem(value: object) -> str | None:
    """Why `value` cannot be a fleet, machine or project name; None if it can."""
    if not isinstance(value, str) or not value:
        return "it is empty"
    if len(value) > NAME_MAX:
        return f"it is longer than {NAME_MAX} characters"
    if not _NAME.match(value) or "--" in value:
        return "use A-Z a-z 0-9 _ - (starting and ending with a letter or digit, no `--`)"
    return None


def check_name(value: str, what: str) -> str:
    problem = name_problem(value)
    if problem:
        raise UsageError(f"{what} {value!r}: {problem}")
    return value


def sanitize(text: str) -> str:
    """A valid name made from free text (a host name, a directory name): other characters become `-`."""
    out = re.sub(r"[^A-Za-z0-9_-]+", "-", text)
    out = re.sub(r"-{2,}", "-", out).strip("-_")[:NAME_MAX].strip("-_")
    return out or "unnamed"


def default_machine() -> str:
    """The host name, as a valid name (`build.example.com` becomes `build-example-com`)."""
    return sanitize(socket.gethostname())


def default_project(project_dir: str) -> str:
    """The project directory's name, as a valid name."""
    return sanitize(os.path.basename(os.path.abspath(project_dir)))


# -- subjects, streams, consumers, keys -----------------------------------------------


def cmd_subject(fleet: str, machine: str, project: str, sender: str) -> str:
    """The subject of a command from machine `sender` to project `project` of machine `machine`."""
    return f"{PREFIX}.{fleet}.cmd.{machine}.{project}.{sender}"


def cmd_filter(fleet: str, machine: str, project: str) -> str:
    """Every command for one project, whoever sent it (its relay's consumer reads exactly these)."""
    return f"{PREFIX}.{fleet}.cmd.{machine}.{project}.*"


def cmd_sender_subjects(fleet: str, sender: str) -> str:
    """The command subjects machine `sender` may publish on: to any project of any machine, as itself."""
    return f"{PREFIX}.{fleet}.cmd.*.*.{sender}"


def cmd_sender(subject: str, fleet: str, machine: str, project: str) -> str | None:
    """The sending machine a command's subject names, if the subject is one of this project's; else None."""
    head = f"{PREFIX}.{fleet}.cmd.{machine}.{project}."
    if not subject.startswith(head):
        return None
    sender = subject[len(head) :]
    return sender if name_problem(sender) is None else None


def cmd_stream(fleet: str, machine: str) -> str:
    return f"{PREFIX}-{fleet}-cmd-{machine}"


def cmd_stream_subjects(fleet: str, machine: str) -> list[str]:
    return [f"{PREFIX}.{fleet}.cmd.{machine}.>"]


def relay_consumer(machine: str, project: str) -> str:
    """The durable consumer through which one project's relay reads its commands."""
    return f"relay--{machine}--{project}"


def ack_subject(fleet: str, machine: str, project: str, command_id: str) -> str:
    return f"{PREFIX}.{fleet}.ack.{machine}.{project}.{command_id}"


def ack_stream(fleet: str) -> str:
    return f"{PREFIX}-{fleet}-ack"


def event_subject(fleet: str, machine: str, project: str, kind: str) -> str:
    return f"{PREFIX}.{fleet}.ev.{machine}.{project}.{kind}"


def events_stream(fleet: str) -> str:
    return f"{PREFIX}-{fleet}-events"


def events_filter(fleet: str, kind: str = "*") -> str:
    """Events of one kind from every machine and project (`signal` is what a fleet watcher consumes)."""
    return f"{PREFIX}.{fleet}.ev.*.*.{kind}"


def watcher_consumer(machine: str) -> str:
    """The durable consumer a fleet watcher running on `machine` reads every machine's signals with."""
    return f"watcher--{machine}"


def bucket(fleet: str) -> str:
    return f"{PREFIX}-{fleet}"


def state_key(machine: str, project: str) -> str:
    return f"{machine}.{project}.state"


def relay_key(machine: str, project: str) -> str:
    return f"{machine}.{project}.relay"


def inbox_prefix(fleet: str, machine: str) -> str:
    """Replies to this machine's requests arrive below this subject (only it may subscribe there)."""
    return f"_INBOX.{PREFIX}.{fleet}.{machine}"


def split_key(key: str) -> tuple[str, str, str] | None:
    """`M.P.part` -> (M, P, part); None for a key cocoplus does not write."""
    parts = key.split(".")
    if len(parts) != 3 or name_problem(parts[0]) or name_problem(parts[1]):
        return None
    return parts[0], parts[1], parts[2]


# -- targets ---------------------------------------------------------------------------


class Target:
    """`machine`, `machine/project` or `machine/project/alias`."""

    __slots__ = ("machine", "project", "session")

    def __init__(self, machine: str, project: str | None = None, session: str | None = None) -> None:
        self.machine = machine
        self.project = project
        self.session = session

    def __str__(self) -> str:
        return "/".join(p for p in (self.machine, self.project, self.session) if p)

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"


def parse_target(text: str) -> Target:
    """A command-line target; UsageError naming what is wrong."""
    parts = text.split("/")
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        raise UsageError(f"target {text!r}: expected machine, machine/project or machine/project/alias")
    check_name(parts[0], "target machine")
    if len(parts) >= 2:
        check_name(parts[1], "target project")
    if len(parts) == 3:
        if not is_valid_id(parts[2]):
            raise UsageError(f"target {text!r}: {parts[2]!r} is not a session alias or id")
    return Target(*parts)
