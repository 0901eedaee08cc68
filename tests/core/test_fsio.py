"""fsio in one process: atomic writes, quarantine, damaged files, locked updates, fixed-width appends, failure
cleanup (the JSONL journals: test_jsonl.py)."""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import pytest

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from tests.support.typed import present

CORRUPT_NAME = re.compile(r"\.corrupt-\d{8}T\d{6}Z(-\d+)?$")


# -- atomic writes ---------------------------------------------------------------


def test_atomic_write_replaces_content_with_private_mode(tmp_path):
    path = str(tmp_path / "status.json")
    fsio.atomic_write_json(path, {"state": "idle"})
    fsio.atomic_write_json(path, {"state": "running"})
    assert fsio.read_json(path) == {"state": "running"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(tmp_path) == ["status.json"]


def test_atomic_write_creates_missing_directory(tmp_path):
    path = str(tmp_path / "a" / "b" / "x.json")
    fsio.atomic_write_json(path, {"ok": True})
    assert fsio.read_json(path) == {"ok": True}


def test_atomic_write_failure_keeps_old_file_and_removes_temp(tmp_path):
    path = str(tmp_path / "budget.json")
    fsio.atomic_write_json(path, {"n": 1})

    def broken_fsync(fd):
        raise OSError(5, "Input/output error")

    with pytest.MonkeyPatch.context() as mp, pytest.raises(CocoplusError) as info:
        mp.setattr(fsio.os, "fsync", broken_fsync)
        fsio.atomic_write_json(path, {"n": 2})
    assert path in str(info.value)
    assert fsio.read_json(path) == {"n": 1}
    assert os.listdir(tmp_path) == ["budget.json"]


def test_atomic_write_refuses_to_replace_a_directory(tmp_path):
    path = tmp_path / "status.json"
    path.mkdir()
    with pytest.raises(CocoplusError, match="is a directory"):
        fsio.atomic_write_json(str(path), {"x": 1})
    assert path.is_dir()
    assert os.listdir(tmp_path) == ["status.json"]


def test_atomic_write_rejects_nan(tmp_path):
    path = str(tmp_path / "x.json")
    with pytest.raises(ValueError):
        fsio.atomic_write_json(path, {"x": float("nan")})
    assert not os.path.exists(path)


# -- reading damaged JSON --------------------------------------------------------------


@pytest.mark.parametrize(
    "data, cause",
    [
        (b"", "is empty"),
        (b"  \n", "is empty"),
        (b'{"cap": 200, "consu', "budget-state.json: truncated: the JSON stops at char 19 before it is complete"),
        (b'{"cap": 200, "consumed": 3', "truncated"),
        (b'{"cap": 200,', "truncated"),
        (b'{"cap" 200}', "not valid JSON (Expecting ':' delimiter: char 7)"),
        (b'{"x": NaN}', "not valid JSON"),
        (b'{"x": Infinity}', "not valid JSON"),
        (b'{"x": ' + b"9" * 10_000 + b"}", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2]", "expected a JSON object, found an array"),
        (b"null", "expected a JSON object, found null"),
        (b'"text"', "expected a JSON object, found a string"),
        (b'{"a": 1} {"b": 2}', "not valid JSON"),
    ],
)
def test_read_json_names_the_file_and_cause(tmp_path, data, cause):
    path = str(tmp_path / "budget-state.json")
    with open(path, "wb") as fh:
        fh.write(data)
    with pytest.raises(StateCorrupt) as info:
        fsio.read_json(path)
    assert info.value.path == path
    assert cause in str(info.value)
    assert "\n" not in str(info.value)
    # Reading never moves or rewrites the file.
    with open(path, "rb") as fh:
        assert fh.read() == data


def test_read_json_missing_is_none_and_directory_is_damage(tmp_path):
    assert fsio.read_json(str(tmp_path / "nope.json")) is None
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(StateCorrupt, match="is a directory"):
        fsio.read_json(str(tmp_path / "dir.json"))


def test_read_refuses_symlink(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text('{"a": 1}')
    link = tmp_path / "status.json"
    link.symlink_to(target)
    with pytest.raises(StateCorrupt, match="symbolic link"):
        fsio.read_json(str(link))


def test_read_bytes_enforces_limit(tmp_path):
    path = tmp_path / "big.md"
    path.write_bytes(b"x" * 2000)
    with pytest.raises(StateCorrupt, match="limit"):
        fsio.read_bytes(str(path), limit=1000)
    assert fsio.read_bytes(str(path), limit=2000) == b"x" * 2000


# -- quarantine ------------------------------------------------------------------


def test_quarantine_name_and_content(tmp_path):
    path = str(tmp_path / "iteration-budget.json")
    with open(path, "wb") as fh:
        fh.write(b"{broken")
    kept = fsio.quarantine(path)
    assert kept is not None
    assert os.path.dirname(kept) == str(tmp_path)
    assert os.path.basename(kept).startswith("iteration-budget.json.corrupt-")
    assert CORRUPT_NAME.search(kept), kept
    assert not os.path.exists(path)
    with open(kept, "rb") as fh:
        assert fh.read() == b"{broken"

    # A second damaged copy in the same second gets its own name.
    with open(path, "wb") as fh:
        fh.write(b"{also broken")
    kept2 = present(fsio.quarantine(path))
    assert kept2 != kept and CORRUPT_NAME.search(kept2)
    assert fsio.quarantined_copies(path) == sorted([kept, kept2])
    assert fsio.quarantine(path) is None  # nothing left to move


def test_locked_update_sets_damaged_file_aside_and_never_resets(tmp_path):
    path = str(tmp_path / "iteration-budget.json")
    lock = str(tmp_path / "locks" / "ib.lock")
    with open(path, "wb") as fh:
        fh.write(b'{"consumed": ')
    calls = []

    def update(cur):
        calls.append(cur)
        return {"consumed": 0}

    with pytest.raises(StateCorrupt) as info:
        fsio.locked_update(path, lock, update)
    assert calls == []  # the update never ran on damaged input
    assert not os.path.exists(path)  # not silently replaced by a fresh value
    kept = info.value.kept_at
    assert kept and CORRUPT_NAME.search(kept)
    assert path in str(info.value) and kept in str(info.value)
    with open(kept, "rb") as saved:
        assert saved.read() == b'{"consumed": '


def test_locked_update_validate_rejection_is_damage(tmp_path):
    path = str(tmp_path / "c.json")
    lock = str(tmp_path / "c.lock")
    fsio.atomic_write_json(path, {"consumed": "ten"})

    def validate(obj, p):
        if not isinstance(obj.get("consumed"), int):
            raise StateCorrupt(p, "consumed: expected an integer")
        return obj

    with pytest.raises(StateCorrupt, match="consumed: expected an integer"):
        fsio.locked_update(path, lock, lambda cur: {"consumed": 1}, validate=validate)
    assert fsio.quarantined_copies(path)
    assert not os.path.exists(path)


def test_locked_update_passes_none_for_missing_file(tmp_path):
    path = str(tmp_path / "n.json")
    seen = []

    def update(cur):
        seen.append(cur)
        return {"n": 1}

    new = fsio.locked_update(path, str(tmp_path / "n.lock"), update)
    assert seen == [None] and new == {"n": 1} and fsio.read_json(path) == {"n": 1}


def test_a_fixed_width_append_syncs_the_file_unless_told_not_to_and_the_directory_once(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real = os.fsync

    def counted(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counted)
    path = str(tmp_path / "calls")
    assert fsio.append_fixed(path, b"a" * 7 + b"\n")[0] == 1
    assert len(synced) == 2  # the record, and the directory (the file is new)
    assert fsio.append_fixed(path, b"b" * 7 + b"\n", tail=2) == (2, b"aaaaaaa\nbbbbbbb\n")
    assert len(synced) == 3  # the record only
    assert fsio.append_fixed(path, b"c" * 7 + b"\n", durable=False)[0] == 3
    assert len(synced) == 3  # the loop guard's call log: not synced (session/registry.py record_call)
