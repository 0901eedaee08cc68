"""The hook's fast path: `cocoplus hook <Event> [--runtime R] [--dir D]`, run before every tool call.

`cocoplus/hook/__main__.py` (the file the installed command names) only
makes the package importable and calls `main()` here, so this code runs
from its cached byte code.  It does as little as possible before it knows
it has work:

* it imports the one adapter named by `--runtime`, for the kind of the event;
* it finds `.cocoplus/` from the environment (`COCOPLUS_DIR`, the runtime's
  project directory, the working directory) with a few `stat` calls;
* for a pre-tool event with no AGENT_STOP and no stopped session (no
  `.cocoplus/session-stops/`: two `lstat` calls) it exits 0 without
  reading stdin or importing anything else (not even `json`): that is the
  path taken before every single tool call;
* everything else is handled by `cocoplus.hook.runner`.

Exit codes follow the runtimes' hook contract, not the CLI's: 0 with JSON
(or nothing) on stdout; 2 only as a deliberate block.  No traceback ever
reaches the runtime.

`python -S` starts without `os`, and importing it costs more than this
whole path, so the fast path uses the built-in `posix` module (cocoplus is
POSIX-only: its locks are `fcntl` locks) and no `from __future__`.
"""

import posix
import sys

from cocoplus.runtimes import registry

_S_IFMT = 0o170000
_S_IFDIR = 0o040000
# The two names this module spells itself under the state directory: it runs before `os`, and so before
# `cocoplus.core.paths`, is imported.  tests/core/test_paths.py checks they are `Layout`'s.
STOP_FILE = "/AGENT_STOP"
LOGS_DIR = "/logs"
HOOK_LOG = "/logs/hook.log"
_APPEND = posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_NOFOLLOW | posix.O_CLOEXEC


def isdir(path):
    try:
        return posix.stat(path).st_mode & _S_IFMT == _S_IFDIR
    except (OSError, ValueError):
        return False


class Environ:
    """`os.environ.get` over the process environment, without `os`."""

    __slots__ = ()

    def get(self, name, default=None):
        value = posix.environ.get(name.encode())
        return default if value is None else value.decode("utf-8", "surrogateescape")

    def heads(self):
        """What the variables' names begin with, up to the first `_` (`CLAUDE` for `CLAUDE_PROJECT_DIR`)."""
        return {k.partition(b"_")[0].decode("utf-8", "surrogateescape") for k in posix.environ}


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


def walk_up(start):
    """The nearest `.cocoplus` directory at or above the absolute path `start`."""
    cur = "/" + "/".join(p for p in start.split("/") if p and p != ".")
    for _ in range(64):
        candidate = cur.rstrip("/") + "/.cocoplus"
        if isdir(candidate):
            return candidate
        if cur == "/":
            return None
        cur = cur.rpartition("/")[0] or "/"
    return None


def state_from_env(environ, adapter):
    """The `.cocoplus/` directory of the project the agent works in, without reading stdin.

    `COCOPLUS_DIR`, then the runtime's own project variables, then any
    runtime's (a runtime may run another's hooks), then the hook's working
    directory (runtimes start hooks in the session's directory).  A `--dir`
    written into an installed command is not used here: a copied project or
    a second checkout sharing committed hook files must guard itself, not
    the directory the command was written in (the runner falls back to
    `--dir` only when nothing else names a project).
    """
    override = environ.get("COCOPLUS_DIR")
    if override:
        inner = override.rstrip("/") + "/.cocoplus"
        if isdir(inner):
            return inner
        return override if isdir(override) else None
    own = adapter.PROJECT_ENV if adapter is not None else ()
    found = _walk_up_from(environ, own)
    if found is None:
        # Another runtime's variable (a runtime may run another's hooks): only the adapters that
        # some variable is named after are imported to be asked (importing them all costs more
        # than this whole path).
        found = _walk_up_from(environ, [n for n in registry.project_env(_heads(environ)) if n not in own])
    if found is not None:
        return found
    try:
        return walk_up(posix.getcwd())
    except (OSError, ValueError):
        return None


def _heads(environ):
    if isinstance(environ, Environ):
        return environ.heads()
    return {k.partition("_")[0] for k in environ}


def _walk_up_from(environ, names):
    for name in names:
        start = environ.get(name)
        if start and start.startswith("/"):
            found = walk_up(start)
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
            chunk = posix.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    return b"".join(chunks)


def main(argv=None, stdin_bytes=None, environ=None):
    argv = sys.argv[1:] if argv is None else argv
    env = Environ() if environ is None else environ
    event, runtime, directory, rest = parse_argv(argv)
    if not event:
        sys.stderr.write(f"cocoplus hook: usage: cocoplus hook <Event> [--runtime {'|'.join(registry.names())}]\n")
        return 0
    kind = None
    state = None
    try:
        adapter = registry.get(runtime) if registry.known(runtime) else None
        kind = registry.kind(adapter, event) if adapter is not None else registry.kind_any(event)
        state = state_from_env(env, adapter)
        if kind == "pre_tool" and state is not None:
            try:
                posix.lstat(state + STOP_FILE)
            except FileNotFoundError:
                try:
                    posix.lstat(state + "/session-stops")
                except FileNotFoundError:
                    return 0  # the hot path: no kill switch and no session stopped, nothing to say
                except (OSError, ValueError):
                    pass  # cannot tell: the runner checks this session, saying why (fail closed)
            except (OSError, ValueError):
                pass  # cannot tell: the runner denies, saying why (fail closed)
        data = read_stdin() if stdin_bytes is None else stdin_bytes
        import os  # deferred: see the module docstring

        from cocoplus.hook import runner  # deferred: the fast path (nothing to do) never loads the runner

        return runner.run(event, kind, runtime, data, state, directory, os.environ if environ is None else environ, rest)
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        return last_resort(exc, event, kind, state)


def script():
    """The body of `__main__.py`: run the hook, then leave at once.

    Everything a hook writes goes through `os.write` or files it has closed,
    so the interpreter's tear-down (freeing every module: longer than this
    module's whole fast path) has nothing left to do.  Flush stdout and
    stderr, and `_exit`.
    """
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    posix._exit(code)


def last_resort(exc, event, kind, state):
    """Something failed before or inside the runner: log it; block a tool only if AGENT_STOP exists.

    When the failure came before the event's kind was known (a broken
    adapter), any event that may precede a tool counts as one.
    """
    if state is None:
        try:
            state = walk_up(posix.getcwd())
        except OSError:
            state = None
    try:
        if state:
            if not isdir(state + LOGS_DIR):
                posix.mkdir(state + LOGS_DIR, 0o700)
            fd = posix.open(state + HOOK_LOG, _APPEND, 0o600)  # never through a symbolic link
            try:
                posix.write(fd, f"hook crashed ({kind}): {type(exc).__name__}: {exc}\n".encode("utf-8", "replace"))
            finally:
                posix.close(fd)
    except (OSError, ValueError):
        pass
    if kind is None:
        name = event.replace("-", "").replace("_", "").lower()
        kind = "pre_tool" if name.startswith(("pre", "before")) or "permission" in name else "other"
    if kind in ("pre_tool", "permission") and state:
        try:
            posix.lstat(state + STOP_FILE)
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as err:
            sys.stderr.write(f"cocoplus: cannot tell whether the agent is stopped ({state}: {err}); tools are blocked.\n")
            return 2
        sys.stderr.write("cocoplus: the agent is stopped (.cocoplus/AGENT_STOP exists); run `cocoplus session resume`.\n")
        return 2
    return 0
