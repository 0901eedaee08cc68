"""The hook inside a cocoplus sandbox: everything goes through the control channel, a Unix socket bind-mounted in.

Inside a worker's sandbox (`SANDBOX_MARKER` is there) `.cocoplus/` is read-only, and this user's keys are not
there at all: the hook does no work of its own.  It sends its arguments, its environment, its working directory
and what its runtime wrote on stdin through `CHANNEL` to the cocoplus process outside that serves this worker
(cocoplus/sandbox/channel.py), which runs the hook there, writing and sealing on its behalf, and sends back the
exit code, stdout and stderr, which this process passes on as its own.  A hook that cannot reach the channel
blocks (exit 2, the runtimes' deliberate block): a worker is never free because its supervisor is unreachable.

Standard library only, and not even `socket` (it loads `enum`): `_socket`, `posix`.  The frame is a few fields,
each its length in ten ASCII digits and its bytes, so that no `json` is loaded on either side's hot path.
"""

import posix
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable

# Both inside the sandbox's private /tmp (cocoplus/sandbox/bwrap.py mounts them).
SANDBOX_MARKER = "/tmp/.cocoplus-sandbox"
CHANNEL = "/tmp/.cocoplus-channel"
DEFAULT_TIMEOUT_S = 60.0
BLOCKED = 2


def field(data: bytes) -> bytes:
    return b"%010d" % len(data) + data


def fields(frame: bytes) -> "list[bytes]":
    """The fields of a frame, in order; ValueError when it is cut short."""
    out = []
    i = 0
    while i < len(frame):
        n = int(frame[i : i + 10])
        if i + 10 + n > len(frame):
            raise ValueError("a field is cut short")
        out.append(frame[i + 10 : i + 10 + n])
        i += 10 + n
    return out


def in_sandbox() -> bool:
    try:
        posix.lstat(SANDBOX_MARKER)
    except OSError:
        return False
    return True


def _timeout(argv: "list[str]") -> float:
    for i, a in enumerate(argv):
        value = a[10:] if a.startswith("--timeout=") else None
        if a == "--timeout" and i + 1 < len(argv):
            value = argv[i + 1]
        if value:
            try:
                return max(1.0, float(value))
            except ValueError:
                pass
    return DEFAULT_TIMEOUT_S


def _stdin() -> bytes:
    chunks: "list[bytes]" = []
    while True:
        chunk = posix.read(0, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def request(argv: "list[str]", stdin: bytes) -> bytes:
    env = b"\0".join(k + b"=" + v for k, v in posix.environ.items())
    return b"".join(
        (field(b"\0".join(a.encode() for a in argv)), field(env), field(posix.getcwd().encode()), field(stdin))
    )


def exchange(frame: bytes, timeout: float, path: str = CHANNEL) -> "tuple[int, bytes, bytes]":
    """Send `frame` through the channel; (exit code, stdout, stderr) of the hook run outside.  OSError, ValueError."""
    import _socket  # deferred: only a hook inside a sandbox talks to the channel

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(frame)
        s.shutdown(_socket.SHUT_WR)
        chunks = []
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        s.close()
    code, out, err = fields(b"".join(chunks))
    return int(code), out, err


def forward(argv: "list[str]", stdin: "bytes | None" = None) -> int:
    """Run this hook through the channel: its exit code, with its stdout and stderr written here."""
    try:
        stdin = _stdin() if stdin is None else stdin
        code, out, err = exchange(request(argv, stdin), _timeout(argv))
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        posix.write(
            2,
            (
                f"cocoplus: blocked: this worker's sandbox cannot reach its control channel {CHANNEL} ({why}); "
                "nothing runs until it can\n"
            ).encode(),
        )
        return BLOCKED
    for fd, data in ((1, out), (2, err)):
        view = memoryview(data)
        while view:
            view = view[posix.write(fd, view) :]
    return code


def marked_state() -> "str | None":
    """The project's `.cocoplus/` as the sandbox's marker names it (written by cocoplus, mounted read-only: nothing
    the worker sets, unlike its environment or its working directory), or None when it cannot be read."""
    try:
        fd = posix.open(SANDBOX_MARKER, posix.O_RDONLY)
        try:
            text = posix.read(fd, 1 << 16).decode("utf-8")
        finally:
            posix.close(fd)
    except (OSError, ValueError):
        return None
    project = marked_project(text)
    return project.rstrip("/") + "/.cocoplus" if isinstance(project, str) and project.startswith("/") else None


def marked_project(text: str) -> "object":
    """The marker's "project" (sandbox/bwrap.py `marker_text`: `json.dumps`, ASCII).  Its value is read where it
    stands when it holds no escape (a quote or a backslash in it is written escaped, so the key cannot be matched
    inside another value), and by the JSON reader otherwise: no JSON reader is loaded for a plain path."""
    key = '"project": "'
    at = text.find(key)
    if at >= 0:
        end = text.find('"', at + len(key))
        value = text[at + len(key) : end] if end >= 0 else "\\"
        if "\\" not in value:
            return value
    from cocoplus.core import jsonfast  # deferred: a path the marker wrote with an escape in it

    try:
        doc = jsonfast.loads(text)
    except ValueError:
        return None
    return doc.get("project") if isinstance(doc, dict) else None


def alive(path: str = CHANNEL) -> bool:
    """Whether the channel's process is there to answer (a connection, closed at once without a request)."""
    import _socket  # deferred: only a hook inside a sandbox talks to the channel

    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.settimeout(5.0)
        s.connect(path)
    except OSError:
        return False
    finally:
        s.close()
    return True


def script(answered_here: "Callable[[list[str], bytes], bool]") -> None:
    """The hook's process inside a sandbox: answered here when there is nothing to say (`answered_here`, the
    hook's entry decides it: hook/entry.py), else forwarded; then leave at once."""
    sys.stdout.flush()
    argv = sys.argv[1:]
    try:
        stdin = _stdin()
    except OSError:
        stdin = b""
    if answered_here(argv, stdin):
        sys.stdout.flush()
        posix._exit(0)
    posix._exit(forward(argv, stdin))
