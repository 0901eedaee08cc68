"""Entry point of `cocoplus hook <Event> [--runtime R] [--dir D]`: runs on every tool call.

`cocoplus install` writes the hook command as
`<python> -S <this file> <Event> --runtime <R>`: no site-packages scan and
no console-script wrapper, so the interpreter starts as fast as it can.
This file then does as little as possible before it knows it has work:

* it finds `.cocoplus/` from the environment (`COCOPLUS_DIR`, `--dir`, the
  runtime's project directory) with a few `stat` calls;
* for PreToolUse-like events with no AGENT_STOP it exits 0 without
  importing anything else (not even `json`): that is the path taken before
  every single tool call;
* everything else is handled by `cocoplus.hook.runner`.

Exit codes follow the runtimes' hook contract, not the CLI's: 0 with JSON
(or nothing) on stdout; 2 only as a deliberate block.  No traceback ever
reaches the runtime.
"""

import os
import sys

if __name__ == "__main__" and not __package__:
    # Run as a file (`python -S .../cocoplus/hook/__main__.py`): make the
    # directory holding the `cocoplus` package importable, and nothing else.
    # Appended, not prepended: standard-library imports should not search
    # a crowded site-packages first.
    _here = os.path.dirname(os.path.abspath(__file__))
    del sys.path[0]
    sys.path.append(os.path.dirname(os.path.dirname(_here)))

# Normalised event name -> what cocoplus does with it.  Names are compared
# lower-cased with '-' and '_' removed, so `PreToolUse`, `pre-tool-use` and
# `pre_tool_use` are the same event.
KINDS = {
    "pretooluse": "pre_tool",
    "beforetool": "pre_tool",
    "beforeshellexecution": "pre_tool",
    "beforemcpexecution": "pre_tool",
    "beforereadfile": "pre_tool",
    "posttooluse": "post_tool",
    "aftertool": "post_tool",
    "aftershellexecution": "post_tool",
    "aftermcpexecution": "post_tool",
    "afterfileedit": "post_tool",
    "posttoolusefailure": "post_tool_failure",
    "userpromptsubmit": "prompt",
    "beforeagent": "prompt",
    "beforesubmitprompt": "prompt",
    "sessionstart": "session_start",
    "stop": "stop",
    "afteragent": "stop",
    "agentturncomplete": "stop",
    "stopfailure": "stop_failure",
    "permissionrequest": "permission",
    "notification": "notification",
    "sessionend": "session_end",
    "subagentstop": "subagent_stop",
}

PROJECT_ENV = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR")


def kind_of(event):
    return KINDS.get(event.replace("-", "").replace("_", "").lower(), "other")


def parse_argv(argv):
    event = None
    runtime = None
    directory = None
    rest = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--runtime" and i + 1 < len(argv):
            runtime = argv[i + 1]
            i += 2
            continue
        if a.startswith("--runtime="):
            runtime = a.split("=", 1)[1]
        elif a == "--dir" and i + 1 < len(argv):
            directory = argv[i + 1]
            i += 2
            continue
        elif a.startswith("--dir="):
            directory = a.split("=", 1)[1]
        elif event is None and not a.startswith("--"):
            event = a
        else:
            rest.append(a)
        i += 1
    return event, runtime, directory, rest


def _walk_up(start):
    cur = start
    for _ in range(64):
        candidate = cur + "/.cocoplus" if cur != "/" else "/.cocoplus"
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent
    return None


def state_from_env(environ, directory):
    """The `.cocoplus/` directory named by the environment or `--dir`, without reading stdin."""
    override = environ.get("COCOPLUS_DIR")
    if override:
        inner = override.rstrip("/") + "/.cocoplus"
        if os.path.isdir(inner):
            return inner
        return override if os.path.isdir(override) else None
    for start in (directory, *(environ.get(name) for name in PROJECT_ENV)):
        if start and os.path.isabs(start):
            found = _walk_up(os.path.normpath(start))
            if found:
                return found
    return None


def read_stdin():
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return b""
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    return b"".join(chunks)


def main(argv=None, stdin_bytes=None, environ=None):
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    event, runtime, directory, rest = parse_argv(argv)
    data = read_stdin() if stdin_bytes is None else stdin_bytes
    if not event:
        sys.stderr.write("cocoplus hook: usage: cocoplus hook <Event> [--runtime claude|codex|gemini|cursor]\n")
        return 0
    kind = kind_of(event)
    state = state_from_env(environ, directory)
    if kind == "pre_tool" and state is not None and not os.path.lexists(state + "/AGENT_STOP"):
        return 0  # the hot path: no kill switch, nothing to say
    try:
        from cocoplus.hook import runner

        return runner.run(event, kind, runtime, data, state, directory, environ, rest)
    except BaseException as exc:  # noqa: BLE001 - the hook's own faults must never block a tool
        if isinstance(exc, SystemExit):
            raise
        return _last_resort(exc, kind, state)


def _last_resort(exc, kind, state):
    """Something failed before or inside the runner: log it; block only if AGENT_STOP exists."""
    if state is None:
        try:
            state = _walk_up(os.getcwd())
        except OSError:
            state = None
    try:
        if state:
            os.makedirs(state + "/logs", exist_ok=True)
            with open(state + "/logs/hook.log", "a", encoding="utf-8") as fh:
                fh.write(f"hook crashed ({kind}): {type(exc).__name__}: {exc}\n")
    except OSError:
        pass
    if kind in ("pre_tool", "permission") and state and os.path.lexists(state + "/AGENT_STOP"):
        sys.stderr.write("cocoplus: the agent is stopped (.cocoplus/AGENT_STOP exists); run `cocoplus session resume`.\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
