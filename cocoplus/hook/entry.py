"""The hook's fast path: `cocoplus hook <Event> [--runtime R] [--timeout N] [--dir D]`, run before every tool call.

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
* everything else is handled by `cocoplus.hook.runner`, told the timeout
  the command was installed with (`--timeout N`: its runtime kills the hook
  after N seconds), within which it ends every wait; in the hook's own
  process, the runner and what it imports are read straight from their
  cached byte code (`cocoplus.hook.loader`).

Exit codes follow the runtimes' hook contract, not the CLI's: 0 with JSON
(or nothing) on stdout; 2 only as a deliberate block.  No traceback ever
reaches the runtime.

`python -S` starts without `os`, and importing it costs more than this
whole path, so the fast path uses the built-in `posix` module (cocoplus is
POSIX-only: its locks are `fcntl` locks) and no `from __future__`.
"""

import posix
import sys

from cocoplus.hook import COUNT_BEFORE_CALL, parse_timeout
from cocoplus.runtimes import registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path: annotations are strings
    from collections.abc import Collection, Mapping, Sequence
    from typing import Any

    from cocoplus.hook.runner import Hook
    from cocoplus.runtimes.protocol import Adapter

_S_IFMT = 0o170000
_S_IFDIR = 0o040000
# The two names this module spells itself under the state directory: it runs before `os`, and so before
# `cocoplus.core.paths`, is imported.  tests/core/test_paths.py checks they are `Layout`'s.
STOP_FILE = "/AGENT_STOP"
SESSION_STOPS = "/session-stops"
MARKER = "/LAYOUT"
WORKTREE_MARKER = "/WORKTREE"
LOGS_DIR = "/logs"
HOOK_LOG = "/logs/hook.log"
SANDBOX_MARKER = "/tmp/.cocoplus-sandbox"  # hook/channel.py
_APPEND = posix.O_WRONLY | posix.O_APPEND | posix.O_CREAT | posix.O_NOFOLLOW | posix.O_CLOEXEC
# Whether this is the hook's own process (`script`), not a caller of `main`: only it imports the rest of cocoplus
# through the hook's own finder (hook/loader.py).
OWN_PROCESS = False


def isdir(path: str) -> bool:
    try:
        return posix.stat(path).st_mode & _S_IFMT == _S_IFDIR
    except (OSError, ValueError):
        return False


class Environ:
    """`os.environ.get` over the process environment, without `os`."""

    __slots__ = ()

    def get(self, name: str, default: "str | None" = None) -> "str | None":
        value = posix.environ.get(name.encode())
        return default if value is None else value.decode("utf-8", "surrogateescape")

    def heads(self) -> "set[str]":
        """What the variables' names begin with, up to the first `_` (`CLAUDE` for `CLAUDE_PROJECT_DIR`)."""
        return {k.partition(b"_")[0].decode("utf-8", "surrogateescape") for k in posix.environ}


def parse_argv(
    argv: "Sequence[str]",
) -> "tuple[str | None, str | None, str | None, str | None, list[str]]":
    """(event, `--runtime`, `--dir`, `--timeout` as given, the other words)."""
    event = None
    runtime = None
    directory = None
    timeout = None
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
        elif a == "--timeout" and i + 1 < len(argv):
            timeout = argv[i + 1]
            i += 2
            continue
        elif a.startswith("--timeout="):
            timeout = a.split("=", 1)[1]
        elif event is None and not a.startswith("--"):
            event = a
        else:
            rest.append(a)
        i += 1
    return event, runtime, directory, timeout, rest


def walk_up(start: str) -> "str | None":
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


def places(
    environ: "Environ | Mapping[str, str]", adapter: "Adapter | None"
) -> "tuple[str | None, list[str], str | None]":
    """(the project's `.cocoplus/`, other state directories whose stops also apply, a problem) without stdin.

    The project comes from the runtime: its own project variables, then
    any runtime's (a runtime may run another's hooks), then the hook's
    working directory (runtimes start hooks in the session's directory);
    each walked up.  The first found is where this hook counts and
    records; every other one found is a guard: a stop there denies the
    tool too.  `COCOPLUS_DIR` (or any variable a repository's committed
    settings can set) only adds a place to look, never removes one: it is
    a guard, or the project when the runtime names none; one that names no
    cocoplus state directory (a `.cocoplus` holding the layout marker) is
    the problem, and the tool is blocked (fail closed).  A `.cocoplus`
    holding a worktree marker (a worker's git worktree, core/worktreemark.py)
    stands for the project's state directory it names; a damaged one, or a
    `COCOPLUS_WORKTREE` whose marker does not hold, is the problem too.  A `--dir` written
    into an installed command is not used here: a copied project or a
    second checkout sharing committed hook files must guard itself (the
    runner falls back to `--dir` only when nothing else names a project).
    """
    found: list[str] = []
    own = adapter.PROJECT_ENV if adapter is not None else ()
    _walk_up_from(environ, own, found)
    # Another runtime's variable: only the adapters that some variable is named after are imported to be
    # asked (importing them all costs more than this whole path).
    _walk_up_from(environ, [n for n in registry.project_env(_heads(environ)) if n not in own], found)
    try:
        here = walk_up(posix.getcwd())
    except (OSError, ValueError):
        here = None
    if here is not None and here not in found:
        found.append(here)
    problem = None
    for i, place in enumerate(found):  # a worker's worktree: its `.cocoplus` names the project that governs it
        try:
            posix.lstat(place + WORKTREE_MARKER)
        except FileNotFoundError:
            continue  # the usual case: one `lstat`, nothing imported
        except (OSError, ValueError):
            pass
        from cocoplus.core import worktreemark  # deferred: only a worker's worktree holds a marker

        governing, why = worktreemark.follow(place)
        if why is not None or governing is None:
            problem = problem or why
        else:
            found[i] = governing
    if environ.get("COCOPLUS_WORKTREE"):  # a worker cocoplus launched in a worktree: its marker must hold
        from cocoplus.core import worktreemark  # deferred: only a worker in a worktree carries the variable

        governing, why = worktreemark.named_by_env(environ.get("COCOPLUS_WORKTREE"))
        if why is not None:
            problem = problem or why
        elif governing is not None:
            found.append(governing)
    found = [p for i, p in enumerate(found) if p not in found[:i]]
    override = environ.get("COCOPLUS_DIR")
    if override:
        named = state_dir_named(override)
        if named is None:
            problem = (
                f"COCOPLUS_DIR={override} names no cocoplus state directory (a .cocoplus directory holding "
                f"{MARKER[1:]}), so whether the agent is stopped cannot be known there; tools are blocked until it "
                "is unset or names a project's .cocoplus"
            )
        elif named not in found:
            found.append(named)
    if not found:
        return None, [], problem
    return found[0], found[1:], problem


def state_dir_named(path: str) -> "str | None":
    """The state directory `path` names (it, or its `.cocoplus`), if it holds cocoplus' layout marker; else None."""
    cur = path.rstrip("/") or "/"
    for candidate in (cur + "/.cocoplus", cur):
        if candidate.rpartition("/")[2] == ".cocoplus" and isdir(candidate):
            try:
                posix.stat(candidate + MARKER)
            except (OSError, ValueError):
                continue
            return candidate
    return None


def _heads(environ: "Environ | Mapping[str, str]") -> "set[str]":
    if isinstance(environ, Environ):
        return environ.heads()
    return {k.partition("_")[0] for k in environ}


def _walk_up_from(environ: "Environ | Mapping[str, str]", names: "Collection[str]", found: "list[str]") -> None:
    for name in names:
        start = environ.get(name)
        if start and start.startswith("/"):
            hit = walk_up(start)
            if hit and hit not in found:
                found.append(hit)


def read_stdin() -> bytes:
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


def main(
    argv: "Sequence[str] | None" = None,
    stdin_bytes: "bytes | None" = None,
    environ: "Mapping[str, str] | None" = None,
) -> int:
    argv = sys.argv[1:] if argv is None else argv
    env = Environ() if environ is None else environ
    event, runtime, directory, timeout, rest = parse_argv(argv)
    if not event:
        sys.stderr.write(
            f"cocoplus hook: usage: cocoplus hook <Event> [--runtime {'|'.join(registry.names())}] [--timeout "
            "SECONDS]\n"
        )
        return 0
    kind = None
    state = None
    guards: list[str] = []
    try:
        adapter = registry.get(runtime) if runtime is not None and registry.known(runtime) else None
        kind = registry.kind(adapter, event) if adapter is not None else registry.kind_any(event)
        state, guards, problem = places(env, adapter)
        data = None
        if adapter is not None and adapter.FAILS_CLOSED:
            closed = _fails_closed_start(adapter, event, kind, state, guards, problem, rest, stdin_bytes)
            if isinstance(closed, int):
                return closed
            data, state, guards = closed
        elif kind == "pre_tool" and state is not None and problem is None and _nothing_stopped(state, guards):
            if adapter is not None and _worker(env):
                data = read_stdin() if stdin_bytes is None else stdin_bytes
                if _guard(adapter, event, data, state, env):
                    return 0  # refused: it writes a protected path (the answer is written)
            if COUNT_BEFORE_CALL not in rest:
                return 0  # the hot path: no kill switch and no session stopped anywhere, nothing to say
            # Counted before the call (a runtime that runs no post-tool hook for cocoplus): the runner counts it
            # and keeps the session's record.
        if data is None:
            data = read_stdin() if stdin_bytes is None else stdin_bytes
        import os  # deferred: see the module docstring

        if OWN_PROCESS:
            import gc  # deferred: built into the interpreter; see below

            # A hook lives for milliseconds and makes next to no cyclic garbage, but the collector's passes over
            # the objects its imports create cost it more than some of its work: off until a long wait
            # (hook/timeouts.py `before_wait` turns it back on).
            gc.disable()
            from cocoplus.hook import loader  # deferred: only what follows imports enough modules for it to pay

            loader.install()
            loader.preload(loader.RUNNER)
        from cocoplus.hook import runner  # deferred: the fast path (nothing to do) never loads the runner

        env_now = os.environ if environ is None else environ
        hook = runner.Hook(
            event, kind, runtime, data, state, directory, env_now, rest, guards, problem, parse_timeout(timeout)
        )
        if adapter is None or not adapter.FAILS_CLOSED:
            return runner.run(hook)
        return _run_failing_closed(adapter, runner, hook, kind, parse_timeout(timeout))
    except BaseException as exc:
        if isinstance(exc, SystemExit):
            raise
        return last_resort(exc, event, kind, state, runtime, environ, guards)


def _fails_closed_start(
    adapter: "Adapter",
    event: str,
    kind: str,
    state: "str | None",
    guards: "list[str]",
    problem: "str | None",
    rest: "list[str]",
    stdin_bytes: "bytes | None",
) -> "int | tuple[bytes, str | None, list[str]]":
    """The start of a hook for a runtime that refuses a tool whose pre-tool hook printed no well-formed answer
    (`FAILS_CLOSED`: the Antigravity CLI): its hooks come from a global plugin, so the project is found from the
    payload too.  A pre-tool payload that is not a JSON object is refused; a pre-tool event in no cocoplus project,
    with nothing stopped anywhere, is answered with the runtime's neutral answer.  Else (the stdin read, the project,
    the other places) for the runner."""
    data = read_stdin() if stdin_bytes is None else stdin_bytes
    from cocoplus.core import jsonfast  # deferred: only a runtime that always answers reads every payload here

    try:
        payload = jsonfast.loads(data.decode("utf-8", "surrogateescape")) if data.strip() else None
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        if kind != "pre_tool":
            return data, state, guards  # the runner logs it and answers with the neutral answer
        said = "empty" if not data.strip() else f"{len(data)} bytes, not a JSON object"
        why = (
            f"cocoplus: this tool call's hook payload cannot be read ({said}), so whether the agent is stopped "
            f"cannot be known; the tool is refused ({adapter.TITLE} fails closed)."
        )
        _answer(adapter.deny_tool(event, why))
        return 0
    found = [state] if state is not None else []
    for start in adapter.project_dirs(payload):
        hit = walk_up(start)
        if hit is not None and hit not in found and hit not in guards:
            found.insert(0, hit)  # the workspace the payload names is the project: it counts and records there
    if not found:  # in no cocoplus project (`places` found none either, so no guard): nothing to do
        if problem is None:
            _answer(adapter.pass_answer(kind))
            return 0
        return data, None, list(guards)
    state, others = found[0], [p for p in (*found[1:], *guards) if p != found[0]]
    if kind == "pre_tool" and problem is None and COUNT_BEFORE_CALL not in rest and _nothing_stopped(state, others):
        _answer(adapter.pass_answer(kind))
        return 0
    return data, state, others


def _answer(answer: "dict[str, object] | None") -> None:
    if answer is None:
        return
    from cocoplus.core import jsonfast  # deferred: loaded already by whoever has an answer to print

    sys.stdout.write(jsonfast.dumps(answer))
    sys.stdout.flush()


def _run_failing_closed(adapter: "Adapter", runner: "Any", hook: "Hook", kind: str, installed: "float | None") -> int:
    """The runner, for a runtime that fails closed: a backstop alarm answers (a deny before a tool) if the hook is
    still running just before its runtime's timeout, and an event the runner said nothing to gets the neutral
    answer."""
    import _signal  # deferred: only agy sets the alarm (`signal` loads enum)

    seconds = installed or runner.DEFAULT_HOOK_TIMEOUT_S

    def late(_signum: int, _frame: object) -> None:
        if runner.ANSWERED:
            return  # its answer is being written: let it finish
        runner.ANSWERED = True
        why = (
            f"cocoplus: this hook did not finish within its {seconds:g} s timeout, so the call could not be "
            f"checked; the tool is refused ({adapter.TITLE} fails closed)."
        )
        _answer(adapter.deny_tool(hook.event, why) if kind == "pre_tool" else adapter.pass_answer(kind))
        posix._exit(0)

    _signal.signal(_signal.SIGALRM, late)
    # Just before the runtime's kill: the hook's own waits end a margin earlier (core/lock.py `wait_allowed`).
    _signal.setitimer(_signal.ITIMER_REAL, max(0.2, seconds - min(1.0, seconds / 10)))
    try:
        code = runner.run(hook)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    if not runner.ANSWERED and code == 0:
        _answer(adapter.pass_answer(kind))
    return int(code)


def _worker(environ: "Environ | Mapping[str, str]") -> bool:
    """Whether the environment marks a worker cocoplus launched (hook/guard.py: it only makes the check stricter)."""
    return bool(environ.get("COCOPLUS_WORKER") or environ.get("COCOPLUS_HEADLESS"))


def _guard(adapter: "Adapter", event: str, data: bytes, state: str, environ: "Environ | Mapping[str, str]") -> bool:
    """A launched worker's pre-tool call with nothing stopped: refused (True, its answer written) when it writes a
    protected path that its runtime would let through without asking (hook/guard.py)."""
    from cocoplus.core import jsonfast  # deferred: only a worker's tool call is read here
    from cocoplus.hook import guard  # deferred: as jsonfast

    try:
        payload = jsonfast.loads(data.decode("utf-8", "surrogateescape")) if data.strip() else {}
    except ValueError:
        return False  # what the runtime sent is not JSON: the runtime's own checks stand (nothing is stopped)
    if not isinstance(payload, dict):
        return False
    reason = guard.refusal(adapter, payload, state, environ)
    if reason is None:
        return False
    answer = adapter.refuse_tool(event, reason)
    sys.stdout.write(jsonfast.dumps(answer))
    sys.stdout.flush()
    return True


def _nothing_stopped(state: str, guards: "list[str]") -> bool:
    """True only if no place has an AGENT_STOP or a stopped session, each known for certain (two `lstat` a place)."""
    for place in (state, *guards):
        for name in (STOP_FILE, SESSION_STOPS):
            try:
                posix.lstat(place + name)
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                return False  # cannot tell: the runner checks, saying why (fail closed)
            return False
    return True


def inside_sandbox() -> bool:
    """Whether this runs inside a cocoplus sandbox: its read-only marker is there, and is this user's (a file another
    user made in a shared /tmp is not one)."""
    try:
        st = posix.lstat(SANDBOX_MARKER)
    except OSError:
        return False
    return st.st_uid == posix.geteuid()


def answered_inside(argv: "list[str]", stdin: bytes) -> bool:
    """Inside a sandbox: a pre-tool call with nothing to say, answered there without the channel's round trip.
    The runtime's pre-tool event that counts nothing (`--count-before-call` goes out: the count is written
    outside), no kill switch and no session stopped in the project's `.cocoplus/` that the sandbox's marker names (a
    read-only mount of the real one: a stop made outside is seen at once; not a place the worker's environment or
    directory names), a launched worker's protected-path check (hook/guard.py: it can only refuse, and writes its
    refusal), and the channel there (a worker that cannot reach it is blocked: the call goes out and fails closed).
    Anything else, or anything not known for certain, goes out (hook/channel.py)."""
    from cocoplus.hook import channel  # deferred: only inside a sandbox

    event, runtime, _where, _timeout_s, rest = parse_argv(argv)
    if not event or runtime is None or not registry.known(runtime) or COUNT_BEFORE_CALL in rest:
        return False
    adapter = registry.get(runtime)
    if adapter.FAILS_CLOSED or registry.kind(adapter, event) != "pre_tool":
        return False
    state = channel.marked_state()
    if state is None or not _nothing_stopped(state, []) or not channel.alive():
        return False
    env = Environ()
    if _worker(env):
        _guard(adapter, event, stdin, state, env)  # a refusal is written as the answer
    return True


def command(argv: "Sequence[str]") -> int:
    """`cocoplus hook ...`: the hook, through the control channel inside a cocoplus sandbox."""
    if inside_sandbox():
        from cocoplus.hook import channel  # deferred: only inside a sandbox

        return channel.forward(list(argv))
    return main(argv)


def script() -> None:
    """The body of `__main__.py`: run the hook, then leave at once.

    Everything a hook writes goes through `os.write` or files it has closed,
    so the interpreter's tear-down (freeing every module: longer than this
    module's whole fast path) has nothing left to do.  Flush stdout and
    stderr, and `_exit`.
    """
    global OWN_PROCESS
    OWN_PROCESS = True
    if inside_sandbox():  # the hook runs outside, through the control channel
        from cocoplus.hook import channel  # deferred: only inside a sandbox

        channel.script(answered_inside)
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


def last_resort(
    exc: BaseException,
    event: str,
    kind: "str | None",
    state: "str | None",
    runtime: "str | None" = None,
    environ: "Mapping[str, str] | None" = None,
    guards: "Sequence[str]" = (),
) -> int:
    """Something failed before or inside the runner: log it; block a tool only if AGENT_STOP exists.

    When the failure came before the event's kind was known (a broken
    adapter), any event that may precede a tool counts as one.  The block is
    the runtime's own answer to that event where its adapter can give one
    (`block`); exit 2 with the reason on stderr otherwise.
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
    closed = _closed_answer(exc, event, kind, runtime)
    if closed is not None:
        return closed
    if kind in ("pre_tool", "permission") and state:
        for place in (state, *guards):  # a stop in any place found denies
            try:
                posix.lstat(place + STOP_FILE)
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as err:
                why = f"cocoplus: cannot tell whether the agent is stopped ({place}: {err}); tools are blocked."
                return block(why, event, kind, runtime, environ)
            why = f"cocoplus: the agent is stopped ({place}{STOP_FILE} exists); run `cocoplus session resume`."
            return block(why, event, kind, runtime, environ)
    return 0


def _closed_answer(exc: BaseException, event: str, kind: str, runtime: "str | None") -> "int | None":
    """After a failure, for a runtime that fails closed (`FAILS_CLOSED`): a deny before a tool, else its neutral
    answer, unless the runner had written one; None for every other runtime (or if this fails too: exit 2)."""
    try:
        adapter = registry.get(runtime) if runtime is not None and registry.known(runtime) else None
        if adapter is None or not adapter.FAILS_CLOSED:
            return None
        runner = sys.modules.get("cocoplus.hook.runner")  # not imported here: it may be what failed
        if runner is not None and getattr(runner, "ANSWERED", False):
            return 0
        if kind in ("pre_tool", "permission"):
            why = (
                f"cocoplus: its hook failed ({type(exc).__name__}: {str(exc)[:200]}), so this call could not be "
                f"checked; the tool is refused ({adapter.TITLE} fails closed; see .cocoplus/logs/hook.log)."
            )
            _answer(adapter.deny_tool(event, why))
        else:
            _answer(adapter.pass_answer(kind))
        return 0
    except Exception:  # noqa: BLE001 - whatever broke the hook may break this too: exit 2 still blocks
        return None


def block(reason: str, event: str, kind: str, runtime: "str | None", environ: "Mapping[str, str] | None") -> int:
    """Block this pre-tool or permission event after a failure; the exit code.

    In the event's own dialect where the runtime's adapter gives one (Claude
    Code does not honour exit 2 on a PermissionRequest), on stdout with exit
    0; if the runner had already written its answer (for these events, only
    ever the kill switch's block), that answer stands.  Exit 2 with the
    reason on stderr, which blocks a pre-tool event in every runtime (and
    denies a Codex PermissionRequest), when the runtime is not known or its
    adapter fails too.
    """
    try:
        import json  # deferred: only a failure gets here
        import os  # deferred: as json

        from cocoplus.hook import runner  # deferred: as json (it may be what failed: then exit 2)

        if runner.ANSWERED:
            return 0
        if runtime is not None and registry.known(runtime):
            speaker, _host = registry.resolve(runtime, os.environ if environ is None else environ)
            answer = runner.block(speaker, kind, event, reason)
            if answer is not None:
                sys.stdout.write(json.dumps(answer))
                sys.stdout.flush()
                return 0
    except Exception:  # noqa: BLE001 - whatever broke the runner may break this too: exit 2 still blocks
        pass
    sys.stderr.write(reason + "\n")
    return 2
