"""Every top-level command of `cocoplus`, in one table: its name, the module that defines it, its group and its
one-line description.

The CLI is built from this table (`cli/app.py`'s `LazyGroup`, as pip's `commands_dict`): `--help` prints it by
group without importing a single command module, and a command line imports only the module of the command it
runs.  A module may define several top-level commands (its `register(app)` attaches them all); the table says
which module holds each.  The description here is the one `--help` shows, whole (tests/cli/test_command_table.py
holds the table and the modules to each other: every command a module registers is in the table, under that
module, and nothing else is).

Nothing imported at all (not even `typing`): `--help` and shell completion read this before anything else.
"""

from __future__ import annotations

# The root's help text and its own options' descriptions (cli/app.py; cli/fast.py prints the same `--help`).
ROOT_HELP = "Continuity and operator control for long-running AI coding agents."
VERSION_HELP = "Print the version and exit."
# `--dir`, the root's one option with a value: the command line's `--dir` is taken off before parsing
# (cli/guard.py), since typer would coerce its absent value through pydantic on every command (bench/cli.py).
ROOT_DIR_OPTION = (
    "--dir PATH",
    "Use this .cocoplus directory (or project) instead of searching; same as COCOPLUS_DIR.",
)

# The groups, in the order `--help` shows them: (key, heading).
GROUPS: tuple[tuple[str, str], ...] = (
    ("session", "Watch and control the agents of this project"),
    ("supervision", "Supervision by the main brain"),
    ("workers", "Workers cocoplus starts"),
    ("fleet", "Many machines"),
    ("setup", "Setup"),
    ("plumbing", "Plumbing (run by agent runtimes, agents and scripts)"),
)


class Entry:
    """One top-level command: its name, its module (under cocoplus.cli.commands), its group, its description,
    and whether `--help` leaves it out (an older name kept working, listed by the command it stands for)."""

    __slots__ = ("name", "module", "group", "summary", "hidden")

    def __init__(self, name: str, module: str, group: str, summary: str, hidden: bool = False) -> None:
        self.name = name
        self.module = module
        self.group = group
        self.summary = summary
        self.hidden = hidden


ENTRIES: tuple[Entry, ...] = (
    # session
    Entry(
        "session",
        "session_cmd",
        "session",
        "This project's work session and its agent sessions: status, list, progress, steer, stop, resume, resume-at, "
        "check, the request queue.",
    ),
    Entry(
        "sessions",
        "session_cmd",
        "session",
        "Same as `session list`: the agent sessions the hooks have seen (its first name, kept).",
        hidden=True,
    ),
    Entry(
        "top",
        "top_cmd",
        "session",
        "Live terminal view of the sessions, supervision and the kill switch, acting on the selected session.",
    ),
    Entry(
        "summary",
        "summary_cmd",
        "session",
        "What the night did: each worker's task, how it ended and why, its cost, its changes, and what still waits.",
    ),
    Entry(
        "timeline",
        "timeline_cmd",
        "session",
        "The project's events in time order (calls, stops, steers, costs, failovers, rounds), newest last.",
    ),
    Entry(
        "telemetry",
        "telemetry_cmd",
        "session",
        "The timeline as OpenTelemetry traces to your backend: status, export ([telemetry] or OTEL_EXPORTER_OTLP_*).",
    ),
    Entry(
        "replay",
        "timeline_cmd",
        "session",
        "A recorded run decided again under another policy file: where it would have stopped, and at what cost.",
    ),
    Entry(
        "dispatch",
        "dispatch_cmd",
        "session",
        "Give a session its next piece of work by the best route its state allows (the answer says which).",
    ),
    Entry(
        "answer",
        "dispatch_cmd",
        "session",
        "Answer a worker's question (ask-human); it reaches the worker like a dispatch.",
    ),
    Entry(
        "inbox",
        "inbox_cmd",
        "session",
        "Everything waiting for you in all your projects: permission requests, questions, stops, paused workers.",
    ),
    Entry("decide", "inbox_cmd", "session", "Answer one decision of the inbox: approve, deny, answer, resume, leave."),
    Entry(
        "approve",
        "permissions_cmd",
        "session",
        "Allow a headless worker's permission request: its tool call goes ahead.",
    ),
    Entry("deny", "permissions_cmd", "session", "Deny a headless worker's permission request; the agent is told why."),
    Entry(
        "permissions",
        "permissions_cmd",
        "session",
        "Headless workers' pending permission requests and the log of decisions.",
    ),
    Entry("budget", "budget_cmd", "session", "Cost budget: measured spend, its state, and costs added by hand."),
    Entry(
        "serve",
        "server_cmd",
        "session",
        "Serve the web page and the decision page, the REST API and its event stream.",
    ),
    # supervision
    Entry(
        "supervise",
        "supervision_cmd",
        "supervision",
        "Start supervision with a goal (/supervise GOAL): the watcher starts and the main brain runs a first round.",
    ),
    Entry(
        "supervision",
        "supervision_cmd",
        "supervision",
        "Supervision's state and controls: status, enable, finish, scope, exclude, include.",
    ),
    Entry(
        "supervisor",
        "supervision_cmd",
        "supervision",
        "Same as `supervision watcher`: the watcher process that wakes the main brain (its first name, kept).",
        hidden=True,
    ),
    Entry(
        "chat",
        "chat_cmd",
        "supervision",
        "Talk to the main brain: a message returns at once, the reply lands in the conversation.",
    ),
    Entry(
        "workflow",
        "supervision_cmd",
        "supervision",
        "Workflow runs that turn supervision on at their start and off at convergence.",
    ),
    # workers
    Entry(
        "launch",
        "workers_cmd",
        "workers",
        "Start a headless worker (claude, codex or gemini) on a task, detached from this terminal.",
    ),
    Entry("workers", "workers_cmd", "workers", "Workers started by launch: list, logs, kill."),
    # fleet
    Entry(
        "fleet",
        "fleet_cmd",
        "fleet",
        "Projects on many machines joined over NATS JetStream: join, status, stop, resume, steer, dispatch.",
    ),
    # setup
    Entry("init", "init_cmd", "setup", "Create .cocoplus/ here with its templates."),
    Entry(
        "install",
        "hooks_cmd",
        "setup",
        "Wire cocoplus' hooks into a runtime's project settings and say which files to commit.",
    ),
    Entry(
        "uninstall", "hooks_cmd", "setup", "Remove cocoplus' hooks from a runtime's project settings; other hooks stay."
    ),
    Entry(
        "doctor",
        "hooks_cmd",
        "setup",
        "Say which runtimes' hooks reach cocoplus, what is wrong with them, and whether they fired.",
    ),
    Entry(
        "trust",
        "trust_cmd",
        "setup",
        "Trust this project's cocoplus.toml as it is now, so the programs and addresses it names take effect.",
    ),
    Entry(
        "sandbox",
        "sandbox_cmd",
        "setup",
        "Operating-system sandboxes for workers: doctor says whether one can be applied here, and the fix.",
    ),
    Entry("config", "config_cmd", "setup", "The effective configuration, and an example file with every key."),
    Entry(
        "notify", "notify_cmd", "setup", "Notifications to a person ([notify] urls through apprise): test, status, run."
    ),
    Entry(
        "plugin",
        "hooks_cmd",
        "setup",
        "cocoplus as a Claude Code plugin, a Gemini CLI extension, or a Codex or Cortex Code plugin.",
    ),
    Entry(
        "shell-init",
        "shell_cmd",
        "setup",
        "Print shell functions so that `session status` and `/supervise GOAL` work in a terminal.",
    ),
    # plumbing
    Entry("hook", "hooks_cmd", "plumbing", "Run one hook event (agent runtimes call this on every tool call)."),
    Entry(
        "mcp", "mcp_cmd", "plumbing", "Serve cocoplus' tools over MCP on stdin and stdout (agent runtimes start this)."
    ),
    Entry("report", "supervision_cmd", "plumbing", "A worker's signal to the supervisor: progress or blocked."),
    Entry(
        "ask-human", "supervision_cmd", "plumbing", "A worker's question for a person; the session awaits a decision."
    ),
    Entry(
        "request-context", "supervision_cmd", "plumbing", "Print the handoff for a worker; never wakes the main brain."
    ),
    Entry(
        "relay",
        "fleet_cmd",
        "plumbing",
        "This project's fleet relay (fleet join starts it): mirrors .cocoplus/ to the fleet and applies its commands.",
    ),
    Entry(
        "stage",
        "budget_cmd",
        "plumbing",
        "Stage boundaries for a workflow engine (the cost budget is checked there and at turn ends).",
    ),
)

BY_NAME: dict[str, Entry] = {e.name: e for e in ENTRIES}


def modules() -> list[str]:
    """Every command module, each once, in table order."""
    return list(dict.fromkeys(e.module for e in ENTRIES))
