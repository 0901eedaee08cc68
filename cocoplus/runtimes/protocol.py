"""What every runtime adapter is: `Adapter`, the protocol each module in `runtimes/adapters/` meets, and what each
of its members means.

Adapters are modules (the hook imports only the one `--runtime` names), so
this protocol is for type checking alone (its constants are read-only
properties, which a module's constants meet): `registry.get` is typed to return
it, every caller is checked against it, and mypy checks each adapter module
against it below (`_claude: Adapter = claude`, ...).  Nothing imports this
module at run time (tests/hook/test_imports.py pins that the hook does not).
An adapter takes what its runtime does not do from `runtimes/adapters/_defaults.py`
and declares only what differs; tests/runtimes/test_adapters.py checks that
every adapter has every member.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol


class Adapter(Protocol):
    # -- who it is ---------------------------------------------------------------------------------------
    @property
    def NAME(self) -> str:
        """The runtime's name, which is its module's (`--runtime claude`)."""

    @property
    def TITLE(self) -> str:
        """How messages name it (`Claude Code`)."""

    @property
    def RANK(self) -> int:
        """Its order in listings."""

    @property
    def ALIAS_PREFIX(self) -> str:
        """The prefix of its sessions' aliases (`cc` in `cc1`)."""

    # -- events ------------------------------------------------------------------------------------------
    @property
    def EVENTS(self) -> tuple[tuple[str, str, str | None], ...]:
        """(event name, kind, matcher) for every event it sends that cocoplus recognises.  Kinds: pre_tool,
        post_tool, post_tool_failure, prompt, session_start, stop, stop_failure, permission, notification,
        session_end, subagent_stop, other.  Matcher: written as the hook's matcher; "" installs the event without
        one; None recognises it without installing it."""

    # -- where it runs and who is talking ----------------------------------------------------------------
    @property
    def PROJECT_ENV(self) -> tuple[str, ...]:
        """Variables naming the project directory in a hook's environment, each beginning with NAME.upper() + "_"
        (the hook imports an adapter to ask for them only when such a variable is set)."""

    @property
    def SESSION_ENV(self) -> tuple[str, ...]:
        """Variables naming the session in the agent's tools' environment."""

    @property
    def ENV_FILE(self) -> str | None:
        """The variable naming a file the hook may append `export` lines to, or None."""

    @property
    def HOSTS(self) -> tuple[str, ...]:
        """Runtimes whose installed hooks this one also runs (`recognise` tells it apart from them)."""

    @property
    def DETECT_PRIORITY(self) -> int:
        """For a hook installed without `--runtime`: the highest priority whose `detect` says yes wins."""

    def recognise(self, environ: Mapping[str, str]) -> bool:
        """Whether the environment is this runtime's, from variables whose names begin with NAME.upper() + "_" only
        (checked before anything host-specific)."""

    def detect(self, event: str, payload: Mapping[str, Any], environ: Mapping[str, str]) -> bool:
        """Whether an event of a hook installed without `--runtime` is this runtime's."""

    def session_id(self, payload: Mapping[str, Any]) -> str | None:
        """The runtime's id of the session a payload is from."""

    def transcript(self, payload: Mapping[str, Any]) -> str | None:
        """The session's transcript file a payload names."""

    def project_dirs(self, payload: Mapping[str, Any]) -> list[str]:
        """Absolute directories the payload names, to search up from for `.cocoplus/`."""

    def edited_paths(self, payload: Mapping[str, Any]) -> list[str]:
        """The files a tool call writes, as its input names them (absolute, or relative to the session's
        directory): edit and write tools, apply_patch envelopes; [] for any other call.  Recorded after the tool
        for collisions (cocoplus/session/edits.py); checked before it for protected paths (hook/guard.py)."""

    # -- what a repository can set, and what no rule may change -------------------------------------------
    @property
    def REPO_SETTINGS(self) -> tuple[str, ...]:
        """Project-relative files a cloned repository can commit that set what a hook runs or its environment
        (docs/runtimes.md lists them per runtime, with what each can set)."""

    @property
    def PROTECTED(self) -> tuple[str, ...]:
        """Files and directories, relative to the project, that decide what the runtime runs (its settings and hook
        files, its MCP configuration, files it loads into its environment): no permission rule grants a write to
        them (cocoplus/rules/protected.py holds the union)."""

    @property
    def USER_PROTECTED(self) -> tuple[str, ...]:
        """The same, relative to this user's home."""

    # -- what cocoplus's sandbox keeps for it (cocoplus/sandbox/bwrap.py) ------------------------------------
    # Each entry: (the variable naming a directory, or None; that directory's default under the home; a name in it,
    # or "" for the directory itself).
    @property
    def SANDBOX_STATE(self) -> tuple[tuple[str | None, str, str], ...]:
        """Its state, writable inside the `workspace` sandbox and visible to cocoplus outside (transcripts,
        rollouts)."""

    @property
    def SANDBOX_READONLY(self) -> tuple[tuple[str | None, str, str], ...]:
        """Its settings and hook files inside its state, read-only inside the sandbox."""

    @property
    def SANDBOX_CREDENTIALS(self) -> tuple[tuple[str | None, str, str], ...]:
        """Its credential files, mounted read-only one by one; hidden from every other runtime's sandbox."""

    @property
    def SANDBOX_ENV(self) -> tuple[str, ...]:
        """The prefixes of its own variables (API keys, settings): another runtime's never reach its sandbox."""

    @property
    def MODEL_ENDPOINTS(self) -> tuple[tuple[str, str], ...]:
        """(the variable naming its model's base URL, the vendor's URL when it is unset), each; an entry without a
        variable is another vendor address (a sign-in backend), reached only where no base URL is set: the hosts a
        worker of it reaches whatever its sandbox's network (cocoplus/sandbox/network.py `model_urls`)."""

    # -- how it is installed -----------------------------------------------------------------------------
    @property
    def HOOKS_FILE(self) -> tuple[str, ...]:
        """Project-relative parts of the project's hook file, which teams commit."""

    @property
    def LOCAL_HOOKS_FILE(self) -> tuple[str, ...] | None:
        """The runtime's per-user project file, kept out of git, or None: `install` writes the direct command there
        where there is one, else the launcher into HOOKS_FILE (install/launcher.py)."""

    @property
    def HOOK_FILES_READ(self) -> tuple[tuple[str, ...], ...]:
        """Every project file it reads hooks from."""

    @property
    def GROUPED(self) -> bool:
        """Whether its hooks are matcher groups (else a flat list of handlers)."""

    @property
    def COUNTS_BEFORE_CALL(self) -> bool:
        """Whether its pre-tool hook counts each call before it runs and does the post-tool hook's work (no
        post-tool hook is installed; hook/__init__.py `COUNT_BEFORE_CALL`)."""

    @property
    def SETTINGS_DEFAULTS(self) -> dict[str, Any]:
        """Settings `install` writes beside the hooks."""

    @property
    def SLASH_COMMAND_DIR(self) -> tuple[str, ...] | None:
        """Where `/supervise` goes, or None."""

    @property
    def PLUGIN(self) -> str | None:
        """The name of the plugin its hooks load from, where it loads hooks only from an installed plugin (global to
        the user: `install` writes and installs it, install/agyplugin.py, and writes nothing into the project); None
        where `install` writes them into the project's hook file."""

    @property
    def PLUGIN_LOG(self) -> tuple[str, ...] | None:
        """Parts, under this user's home, of the runtime's log that says which hook files it loaded or refused
        (`doctor` reads it), or None."""

    def hook_timeout(self, event: str, timeout_s: int) -> int:
        """The seconds the runtime gives that hook, its own caps applied (the hook command carries it as
        `--timeout`)."""

    def hook_entry(self, command: str, event: str, timeout_s: int) -> dict[str, Any]:
        """One installed handler, in the runtime's units."""

    def entry_timeout(self, handler: Mapping[str, Any]) -> float | None:
        """The seconds an installed handler's timeout gives, or None: how a command without `--timeout` learns
        its own."""

    def settings_notes(self, settings: Mapping[str, Any]) -> list[str]:
        """What `doctor` says about the runtime's settings."""

    def todo(self, project: str) -> list[str]:
        """What `install` tells the user to do by hand."""

    def plugin_active(self, environ: Mapping[str, str]) -> str | None:
        """Where this user's runtime has cocoplus's plugin or extension, or None."""

    # -- MCP registration --------------------------------------------------------------------------------
    @property
    def MCP_FILE(self) -> tuple[str, ...] | None:
        """Project-relative parts of its MCP configuration, or None."""

    @property
    def MCP_FORMAT(self) -> str:
        """ "json" or "toml"."""

    @property
    def MCP_OWN_FILE(self) -> bool:
        """The file exists only for MCP servers: removed when left empty."""

    def mcp_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        """cocoplus's MCP server as an entry of that file."""

    @property
    def MCP_APPROVAL(self) -> str | None:
        """The key of LOCAL_HOOKS_FILE (a list of server names) that approves a server of the project's MCP file, so
        the runtime does not ask whether to use it; None where the runtime has none.  `install` adds cocoplus to it
        only while the MCP file's entry is the one `install` writes."""

    @property
    def MCP_ASKS(self) -> str | None:
        """What the runtime asks before it uses the project's MCP server when it is not approved, and the answer that
        turns cocoplus's tools on (`install` says it then); None if it does not ask."""

    # -- its hook dialect: each returns the JSON object to print, or None ----------------------------------
    @property
    def ADDS_CONTEXT(self) -> bool:
        """Whether added context reaches the model at all."""

    def deny_tool(self, event: str, reason: str) -> dict[str, Any]:
        """The kill switch before a tool (and a halt where the runtime allows one)."""

    def refuse_tool(self, event: str, reason: str) -> dict[str, Any]:
        """One call refused, the model told why, and the agent going on (a protected path: hook/guard.py)."""

    def asks_for_write(self, payload: Mapping[str, Any], project: str, home: str) -> bool:
        """Whether the runtime routes this file write through cocoplus's permission event (it asks) rather than
        allow it by its own mode or settings."""

    def deny_permission(self, reason: str) -> dict[str, Any] | None:
        """A permission prompt answered with deny."""

    def allow_permission(self, message: str | None = None) -> dict[str, Any] | None:
        """A permission prompt answered with allow."""

    def halt(self, event: str, reason: str, model_note: str | None = None) -> dict[str, Any] | None:
        """Stop the agent after a tool ran."""

    def add_context(self, event: str, text: str) -> dict[str, Any] | None:
        """Context for the model."""

    def prompt_reply(self, event: str, text: str) -> dict[str, Any] | None:
        """The answer to a prompt hook carrying `text`."""

    def continue_turn(self, event: str, instruction: str) -> dict[str, Any] | None:
        """At a turn's end: keep going with `instruction`."""

    def notice(self, event: str, text: str) -> dict[str, Any] | None:
        """A message for the user."""

    def ask_person(self, tool: str, reason: str) -> dict[str, Any] | None:
        """A call of `tool` (as the runtime names it) put to the person watching, whatever the runtime remembers they
        allowed, where its pre-tool hook is its permission prompt (no permission event); None for a tool the runtime
        would not ask about itself (the call passes)."""

    @property
    def FAILS_CLOSED(self) -> bool:
        """Whether it refuses a tool whose pre-tool hook printed no well-formed answer: then every event gets an
        answer (`pass_answer` when cocoplus has nothing to say), a pre-tool payload that cannot be read is refused,
        and a failure of the hook's own denies the tool (hook/entry.py)."""

    def pass_answer(self, kind: str) -> dict[str, Any] | None:
        """What the hook prints for an event of this kind when it has nothing to say (None: nothing)."""

    # -- turn-end continuation, headless resume and launch ------------------------------------------------
    def continue_cap(self, environ: Mapping[str, str]) -> int | None:
        """How many turn-end continuations in a row the runtime honours (None: no cap of its own, the hold bounds
        itself)."""

    @property
    def COMMAND(self) -> str:
        """The CLI's command name (looked up on PATH when no command line was recorded)."""

    @property
    def CHILD_ENV(self) -> tuple[str, ...]:
        """Variables the runtime sets for its hooks and tools, which a process cocoplus starts must not inherit
        from whoever asked for it."""

    def resume_argv(
        self, program: list[str], session_id: str, instruction: str, argv: list[str] | None
    ) -> list[str] | None:
        """The command that resumes an exited session headless with `instruction` as its next prompt, keeping the
        settings found in the recorded command line `argv` (None: it cannot be resumed headless)."""

    def launch_argv(self, program: list[str], task: str, model: str | None, effort: str | None) -> list[str] | None:
        """The command that starts a new headless worker on `task` (`cocoplus launch`; None: it cannot be launched
        headless; ValueError: what it cannot be asked for, or why it is not launched at all)."""

    def helper_programs(self, program: str) -> dict[str, str]:
        """Programs its launched run needs on PATH under a name of their own, found from its resolved `program`:
        {name: the file}. Codex's sandbox runs `codex-linux-sandbox` (its own binary by that name) through PATH
        where the system's bwrap has no --argv0 (docs/runtimes.md)."""

    def granted_argv(self, paths: list[str]) -> list[str]:
        """What its command gets added so that its own sandbox, running inside cocoplus's, lets it write `paths` as
        well (the writes the operator approved after an earlier sandbox refused them: sandbox/writes.py); [] where
        it runs no sandbox of its own there (docs/runtimes.md)."""

    def stream_entries(self, event: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """One JSON line of what its headless run prints, as transcript entries (`cocoplus.runtimes.streams` says
        their kinds); [] for a line with nothing to show, None where it is never run headless (every line is then
        shown as it came)."""

    def controller_argv(
        self, program: list[str], model: str | None, effort: str | None, brain: Mapping[str, Any] | None, reply: str
    ) -> list[str] | None:
        """A controller's turn (cocoplus/controllers: a chat reply, a supervision round); None where it cannot be
        one."""

    def controller_reply(self, code: int, stdout: str, reply: str) -> str | None:
        """The answer of a controller's turn; None when it failed without one."""

    # -- how a session's end is known, and resuming ---------------------------------------------------------
    @property
    def ENDS_WITH_PROCESS(self) -> bool:
        """Whether the process recorded at SessionStart (`session.procinfo`) is the session's own, so that once it
        is gone the session has ended even if no hook said so (checked against the real CLI where True)."""

    @property
    def HOOKS_NEED_REVIEW(self) -> bool:
        """Whether its headless run may skip the project's hooks until a person reviewed them in the runtime
        itself (then a launched run with no session recorded is taken to run unhooked: the kill switch ends it at
        once, supervision/workerrun.py)."""

    def hooks_unreviewed(self, project: str, environ: Mapping[str, str], ours: Callable[[Any], bool]) -> str | None:
        """For a runtime whose headless run skips a project's hooks until a person reviewed them
        (HOOKS_NEED_REVIEW): why a launched worker would run without cocoplus' hooks, with the fix, or None when
        they will run (`ours`: whether a hook command is cocoplus' own).  None for every other runtime."""

    @property
    def NO_SESSION_WORDS(self) -> tuple[str, ...]:
        """What its CLI says when asked to resume a session it did not keep (a resume that says so is not tried
        again: the worker starts again in a new session, supervision/resumes.py)."""

    # -- permissions of a headless worker (session/permissions.py, rules/engine.py) ------------------------
    @property
    def ASKS_PERMISSION(self) -> bool:
        """Whether its headless run asks through a hook (then cocoplus decides, or waits for an answer)."""

    @property
    def RULE_TOOLS(self) -> dict[str, str]:
        """Its tool names -> the rules' (Claude Code's) names, where they differ."""

    def tool_call(self, payload: Mapping[str, Any]) -> tuple[str, Any]:
        """The tool a pre-tool or permission payload names, as the runtime names it, and its input in the rules'
        (Claude Code's) keys."""

    def permission_argv(self, allow: list[str], deny: list[str]) -> list[str]:
        """The operator's rules as the runtime's own launch settings, as far as they can be passed on
        (docs/runtimes.md says, per runtime, which cannot)."""

    # -- rate and usage limits (session/limits.py) ----------------------------------------------------------
    def limit_of(self, kind: str, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """The limit a hook event of that kind reports (`{"reason", "resets_at" (epoch seconds, or None where the
        runtime does not say), "detail"}`, or `"resets_in"` seconds after the ISO time `"since"`), or None."""

    def output_limit(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """The same for one JSON line of its headless output, for a run whose hook did not say it."""

    def output_session(self, event: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any] | None:
        """The session one JSON line of its headless output names (`{"id", "transcript_path"}`), where its hooks
        may not have recorded it (HOOKS_NEED_REVIEW), else None."""

    # -- spend -----------------------------------------------------------------------------------------------
    @property
    def USAGE(self) -> str | None:
        """The name of its usage reader in `cocoplus.cost.usage.READERS`, or None."""

    @property
    def PROVIDER(self) -> str | None:
        """The price-table provider its models are looked up under, or None."""


TYPE_CHECKING = False
if TYPE_CHECKING:  # mypy checks every adapter module against the protocol
    from cocoplus.runtimes.adapters import antigravity, claude, codex, cortex, cursor, gemini

    _claude: Adapter = claude
    _codex: Adapter = codex
    _gemini: Adapter = gemini
    _cursor: Adapter = cursor
    _cortex: Adapter = cortex
    _antigravity: Adapter = antigravity
