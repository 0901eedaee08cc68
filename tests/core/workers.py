"""Child-process workers for the concurrency tests (run as `python workers.py MODE ...`).

Each worker waits for a "go" file before starting, so all of them begin
together, and reports what it saw as one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable


def wait_for(path: str, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {path}")
        time.sleep(0.002)


def version(tag: str) -> bytes:
    """The two full-file versions the writer alternates between (about 60 KB each)."""
    return (json.dumps({"version": tag, "pad": tag * 60000}) + "\n").encode()


def write_loop(path: str, n: str, go: str, done: str) -> None:
    from cocoplus.core import fsio

    wait_for(go)
    for i in range(int(n)):
        fsio.atomic_write_bytes(path, version("AB"[i % 2]))
    with open(done, "w"):
        pass
    print(json.dumps({"writes": int(n)}))


def read_loop(path: str, go: str, done: str) -> None:
    allowed = {version("A"), version("B"), version("0")}
    reads = bad = 0
    examples: list[str] = []
    wait_for(go)
    while True:
        finished = os.path.exists(done)
        with open(path, "rb") as fh:
            data = fh.read()
        reads += 1
        if data not in allowed:
            bad += 1
            if len(examples) < 3:
                examples.append(f"{len(data)} bytes: {data[:40]!r}...{data[-20:]!r}")
        else:
            json.loads(data)
        if finished:
            break
    print(json.dumps({"reads": reads, "bad": bad, "examples": examples}))


def increment(path: str, lock: str, k: str, go: str) -> None:
    from cocoplus.core import fsio

    def bump(cur: dict | None) -> dict:
        n = 0 if cur is None else cur["n"]
        return {"n": n + 1}

    wait_for(go)
    for _ in range(int(k)):
        fsio.locked_update(path, lock, bump, timeout=60)
    print(json.dumps({"done": int(k)}))


def append(path: str, lock: str, writer: str, n: str, go: str) -> None:
    from cocoplus.core import jsonl

    wait_for(go)
    for seq in range(int(n)):
        size = 100_000 if seq % 25 == 0 else 1000
        jsonl.append_jsonl(path, {"writer": int(writer), "seq": seq, "pad": "x" * size}, lock, timeout=60)
    print(json.dumps({"done": int(n)}))


def hold(kind: str, lock: str, ready: str, release: str) -> None:
    """Take the lock, say so by creating `ready`, hold it until `release` exists (or we are killed)."""
    if kind == "cocoplus":
        from cocoplus.core.lock import Lock

        own = Lock(lock, timeout=10)
        own.acquire()
        let_go = own.release
    else:
        import filelock

        theirs = filelock.FileLock(lock, timeout=10)
        theirs.acquire()
        let_go = theirs.release
    with open(ready, "w") as fh:
        fh.write(str(os.getpid()))
    wait_for(release, limit=120)
    let_go()
    print(json.dumps({"released": True}))


MODES: dict[str, Callable[..., None]] = {
    "write-loop": write_loop,
    "read-loop": read_loop,
    "increment": increment,
    "append": append,
    "hold": hold,
}

if __name__ == "__main__":
    MODES[sys.argv[1]](*sys.argv[2:])
