"""Atomic writes, locked read-modify-write and JSONL appends under real concurrency.

Writers and readers are separate processes (tests/core/workers.py), started
together behind a "go" file, as hooks fired in parallel by an agent runtime are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cocoplus.core import fsio, jsonl
from tests.core import workers

WORKERS = os.path.join(os.path.dirname(__file__), "workers.py")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, WORKERS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen[str]], timeout: float = 90) -> list[dict]:
    results = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"worker failed ({p.returncode}): {err}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def leftovers(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if fsio.TMP_MARK in n]


def test_readers_see_old_or_new_never_a_mix(tmp_path):
    path = str(tmp_path / "status.json")
    go, done = str(tmp_path / "go"), str(tmp_path / "done")
    fsio.atomic_write_bytes(path, workers.version("0"))

    readers = [spawn("read-loop", path, go, done) for _ in range(8)]
    writer = spawn("write-loop", path, "300", go, done)
    open(go, "w").close()
    [w] = finish([writer])
    results = finish(readers)

    assert w["writes"] == 300
    total = sum(r["reads"] for r in results)
    bad = [e for r in results for e in r["examples"]]
    assert sum(r["bad"] for r in results) == 0, bad
    assert total >= 8  # every reader read at least once, after the writer had started
    with open(path, "rb") as fh:
        assert fh.read() == workers.version("B")  # the 300th write (index 299) is B
    assert leftovers(str(tmp_path)) == []


@pytest.mark.slow
def test_locked_update_counts_every_increment(tmp_path):
    path = str(tmp_path / "iteration-budget.json")
    lock = str(tmp_path / "locks" / "iteration-budget.lock")
    go = str(tmp_path / "go")
    procs = [spawn("increment", path, lock, "50", go) for _ in range(8)]
    open(go, "w").close()
    assert [r["done"] for r in finish(procs)] == [50] * 8

    assert fsio.read_json(path) == {"n": 400}
    assert leftovers(str(tmp_path)) == []
    assert os.path.exists(lock), "lock files are never deleted"


@pytest.mark.slow
def test_concurrent_appends_are_whole_lines(tmp_path):
    path = str(tmp_path / "steps.jsonl")
    lock = str(tmp_path / "locks" / "steps.lock")
    go = str(tmp_path / "go")
    procs = [spawn("append", path, lock, str(w), "100", go) for w in range(8)]
    open(go, "w").close()
    finish(procs)

    with open(path, "rb") as fh:
        data = fh.read()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert len(lines) == 800
    seen = set()
    for line in lines:
        rec = json.loads(line)  # every line is one valid record
        key = (rec["writer"], rec["seq"])
        assert key not in seen
        seen.add(key)
        assert rec["pad"] == "x" * (100_000 if rec["seq"] % 25 == 0 else 1000)
    assert seen == {(w, s) for w in range(8) for s in range(100)}

    log = jsonl.read_jsonl(path)
    assert len(log.records) == 800 and log.bad_lines == [] and log.torn_tail is None
