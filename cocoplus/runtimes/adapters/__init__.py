"""One module per agent runtime; the module's name is the runtime's name (`--runtime claude`).

`cocoplus.runtimes.registry` finds them by listing this directory, so a new
runtime is a new module here and nothing else.  Standard library only: the
hook imports the adapter named by `--runtime` before every tool call, so an
adapter imports at most `cocoplus.runtimes.answers` at module level.

Every adapter defines all of these (tests/runtimes/test_adapters.py checks):

Who it is
    NAME, TITLE, RANK (order in listings), ALIAS_PREFIX (`cc` in `cc1`)

Events
    EVENTS: (event name, kind, matcher) for every event it sends that cocoplus
    recognises.  Kinds: pre_tool, post_tool, post_tool_failure, prompt,
    session_start, stop, stop_failure, permission, notification, session_end,
    subagent_stop, other.  Matcher: a string written as the hook's matcher,
    "" to install the event without one, None to recognise it without
    installing it.

Where it runs and who is talking
    PROJECT_ENV: variables naming the project directory in a hook's environment,
    each beginning with NAME.upper() + "_" (the hook imports an adapter to ask
    for them only when such a variable is set)
    SESSION_ENV: variables naming the session in the agent's tools' environment
    ENV_FILE: variable naming a file the hook may append `export` lines to, or None
    HOSTS: runtimes whose installed hooks this one also runs; recognise(environ)
    tells it apart from them (checked before anything host-specific), from
    variables whose names begin with NAME.upper() + "_" only
    DETECT_PRIORITY, detect(event, payload, environ): for a hook installed
    without `--runtime` (highest priority that says yes wins)
    session_id(payload), transcript(payload), project_dirs(payload) (absolute
    directories the payload names, to search up from for `.cocoplus/`)
    edited_paths(payload): the files a post-tool event says the call changed, as the payload names them
    (absolute, or relative to the session's directory): edit and write tools, apply_patch envelopes; []
    for any other call (recorded for collisions: cocoplus/session/edits.py)

What a repository can set
    REPO_SETTINGS: project-relative files a cloned repository can commit that set what a hook runs or its
        environment (docs/runtimes.md lists them per runtime, with what each can set)
    PROTECTED, USER_PROTECTED: the files and directories (relative to the project, and to this user's home) that
        decide what the runtime runs: its settings and hook files, its MCP configuration, files it loads into its
        environment.  No permission rule grants a write to them (cocoplus/rules/protected.py, which holds their
        union; tests/rules/test_protected.py keeps the two equal)

How it is installed
    HOOKS_FILE (project-relative parts: the project's hook file, which teams
    commit), LOCAL_HOOKS_FILE (the runtime's per-user project file, kept out
    of git, or None): `install` writes the direct command into LOCAL_HOOKS_FILE
    where there is one, else the launcher into HOOKS_FILE (install/launcher.py),
    HOOK_FILES_READ (every project file it reads hooks from), GROUPED (matcher
    groups, or a flat list of handlers), hook_timeout(event, timeout_s) (the
    seconds the runtime gives that hook, its own caps applied: the hook command
    carries it as `--timeout`), hook_entry(command, event, timeout_s) (in the
    runtime's units), entry_timeout(handler) (the seconds an installed handler's
    timeout gives, or None: how a command without `--timeout` learns its own),
    SETTINGS_DEFAULTS, settings_notes(settings), todo(project), SLASH_COMMAND_DIR
    (where `/supervise` goes, or None)

MCP registration
    MCP_FILE (project-relative parts, or None), MCP_FORMAT ("json" or "toml"),
    MCP_OWN_FILE (the file exists only for MCP servers: removed when left empty),
    mcp_entry(command, args)

Its hook dialect (each returns the JSON object to print, or None)
    ADDS_CONTEXT: whether added context reaches the model at all
    deny_tool(event, reason)            the kill switch before a tool (and a halt where allowed)
    refuse_tool(event, reason)          one call refused, the agent goes on (a protected path: hook/guard.py)
    asks_for_write(payload, project, home)  whether the runtime routes this file write through cocoplus's
                                        permission event (it asks) rather than allow it by its own mode or settings
    deny_permission(reason)             a permission prompt answered with deny
    allow_permission(message)           a permission prompt answered with allow
    halt(event, reason, model_note)     stop the agent after a tool ran
    add_context(event, text)            context for the model
    prompt_reply(event, text)           the answer to a prompt hook carrying `text`
    continue_turn(event, instruction)   at turn end: keep going with `instruction`
    notice(event, text)                 a message for the user

Turn-end continuation and headless resume (`cocoplus dispatch`, the turn-end hold)
    continue_cap(environ): how many turn-end continuations in a row the runtime honours
        (None: no cap of its own, the hold bounds itself)
    COMMAND: the CLI's command name (looked up on PATH when no command line was recorded)
    CHILD_ENV: variables the runtime sets for its hooks and tools, which a process cocoplus
        starts must not inherit from whoever asked for it
    resume_argv(program, session_id, instruction, argv): the command that resumes an exited
        session headless with `instruction` as its next prompt, keeping the settings found in
        the recorded command line `argv` (None: the runtime cannot be resumed headless)
    launch_argv(program, task, model, effort): the command that starts a new headless worker on
        `task` (`cocoplus launch`; None: the runtime cannot be launched headless)

Its headless output (`cocoplus workers logs`, and dispatch's check that a resume got going)
    stream_entries(event): one JSON line of what its headless run prints (`launch_argv`, `resume_argv`) as
        transcript entries (`cocoplus.runtimes.streams` says their kinds); [] for an event with nothing to
        show, None where the runtime is never run headless (every line is then shown as it came)

How a session's end is known
    ENDS_WITH_PROCESS: whether the process recorded at SessionStart (`session.procinfo`) is the
        session's own, so that once it is gone the session has ended even if no hook said so (a
        killed runtime runs no SessionEnd); checked against the real CLI where True
    HOOKS_NEED_REVIEW: whether its headless run may skip the project's hooks until a person reviewed them
        in the runtime itself (then a launched run with no session recorded is taken to run unhooked:
        the kill switch ends it at once, supervision/workerrun.py)

Permissions of a headless worker (session/permissions.py)
    ASKS_PERMISSION: whether its headless run asks through a hook (then cocoplus waits for an answer)
    RULE_TOOLS: its tool names -> the rules' (Claude Code's) names, where they differ
    permission_argv(allow, deny): the operator's rules as the runtime's own launch settings

Rate and usage limits (`session.limits`)
    limit_of(kind, payload): the limit a hook event of that kind reports (`{"reason", "resets_at" (epoch
        seconds, or None where the runtime does not say), "detail"}`, or `"resets_in"` seconds after the
        ISO time `"since"` where the runtime says a wait), or None
    output_limit(event): the same for one JSON line of its headless output, for a run whose hook did not say it
    output_session(event, environ): the session one JSON line of its headless output names (`{"id",
        "transcript_path"}`), where its hooks may not have recorded it (HOOKS_NEED_REVIEW), else None

Resuming
    NO_SESSION_WORDS: what its CLI says when asked to resume a session it did not keep (a resume that says
        so is not tried again: the worker starts again in a new session, supervision/resumes.py)

Spend
    USAGE: the name of its usage reader in `cocoplus.cost.usage.READERS`, or None
    PROVIDER: the price-table provider its models are looked up under, or None
"""
