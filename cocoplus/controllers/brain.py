"""What the main brain can do, and how each controller kind does it.

A `claude` or `codex` controller acts by calling cocoplus' brain MCP tools
(chat/backends.py mounts `cocoplus mcp --role brain` and allows exactly
the tools named here); a `command` controller acts through the CLI
(`cocoplus` on its PATH, `COCOPLUS_DIR` naming the project); an `openai`
controller has no tools and can only answer.  The round prompt lists the
actions from this table, so the prompt, the allowed tools and the CLI
forms cannot drift apart.

`enable_supervision` is offered in a conversation but never during a
supervision round: a round that re-enabled supervision would reset its
own turn cap.
"""

from __future__ import annotations

from cocoplus.controllers import CLI_KINDS, MCP_KINDS

# name -> (one-line semantics, the CLI form a `command` controller runs)
ACTIONS: dict[str, tuple[str, str]] = {
    "list_sessions": (
        "every worker session with its alias, runtime, state, attention and last signal, and every collision (two "
        "live workers that changed the same file)",
        "cocoplus session list --json",
    ),
    "supervision_status": (
        "supervision's state: goal, turns used and left, scope, the last round and its actions",
        "cocoplus supervision status --json",
    ),
    "dispatch": (
        "give a worker its next piece of work, by the best route its state allows (a held turn end is released "
        "with it, a busy worker is steered, an idle or exited one is resumed headless, else it is queued); "
        "the result names the route",
        'cocoplus dispatch ID "INSTRUCTION"',
    ),
    "answer_worker": (
        "answer a worker's open question (ask_human); the answer reaches it like a dispatch",
        'cocoplus answer ID "TEXT"',
    ),
    "steer_session": (
        "a one-shot instruction for that worker only, injected into its next prompt",
        'cocoplus session steer --session ID "TEXT"',
    ),
    "stop_session": (
        "block that worker's tools until it is resumed (the project-wide kill switch stays as it is)",
        'cocoplus session stop --session ID --reason "WHY"',
    ),
    "resume_session": (
        "lift a stop_session",
        "cocoplus session resume --session ID --yes",
    ),
    "approve_permission": (
        "allow a worker's permission request (the id its awaiting_authorization names), only within "
        "[permissions] brain_may_allow; anything else is the human's to allow: ask them",
        "cocoplus approve REQUEST_ID",
    ),
    "deny_permission": (
        "deny a worker's permission request, with the reason it is told",
        'cocoplus deny REQUEST_ID --reason "WHY"',
    ),
    "launch_worker": (
        "start a new headless worker on a task (claude, codex or gemini), in a git worktree of its own if asked; "
        "beyond [workers] max_parallel it waits in the queue",
        'cocoplus launch RUNTIME "TASK"',
    ),
    "merge_worker": (
        "bring an ended worker's worktree branch back into the project, only where [supervision] brain_may_merge "
        "allows; a branch that changes what runs is the human's to merge: ask them",
        "cocoplus workers merge ID",
    ),
    "set_supervision_scope": (
        "which workers may wake you: all, only IDS, or except IDS",
        "cocoplus supervision scope all|only|except [ID ...]",
    ),
    "finish_supervision": (
        "turn supervision off with a summary, when the goal is met or nothing is left to supervise",
        'cocoplus supervision finish --summary "WHAT WAS ACHIEVED"',
    ),
    "enable_supervision": (
        "turn supervision on with a goal (resets the turns used)",
        'cocoplus supervision enable --task-hint "GOAL"',
    ),
}

# Never during a round (see above).
ROUND_EXCLUDED = ("enable_supervision",)

# The MCP server's name in the configuration cocoplus hands the CLI; tools are `mcp__cocoplus__<tool>`.
SERVER = "cocoplus"


def tools(in_round: bool) -> list[str]:
    """The brain tools a controller may call: in a supervision round, or in a conversation."""
    return [name for name in ACTIONS if not (in_round and name in ROUND_EXCLUDED)]


def how_to_act(kind: str | None, in_round: bool = True) -> list[str]:
    """The prompt's lines on what the brain can do, for a controller of `kind`."""
    names = tools(in_round)
    if kind in MCP_KINDS:
        lines = ["What you can do: call cocoplus' tools (sessions are named by alias, such as cc1, or cs_ id):"]
        lines += [f"- {name}: {ACTIONS[name][0]}" for name in names]
        return lines
    if kind in CLI_KINDS:
        lines = [
            "What you can do: run these cocoplus commands (`cocoplus` is on your PATH and COCOPLUS_DIR names "
            "this project; ID is an alias such as cc1, or a cs_ id):"
        ]
        lines += [f"- `{ACTIONS[name][1]}`: {ACTIONS[name][0]}" for name in names]
        return lines
    return [
        "You have no tools in this setup: say what should happen (for example which worker to dispatch and with "
        "what instruction); the operator reads your reply and acts on it."
    ]
