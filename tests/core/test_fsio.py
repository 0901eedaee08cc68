"""fsio in one process: torn tails, bad lines, quarantine, damaged files, failure cleanup."""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

import pytest

from cocoplus.core import fsio
from cocoplus.core.errors import CocoplusError, StateCorrupt
from tests.support.typed import present

CORRUPT_NAME = re.compile(r"\.corrupt-\d{8}T\d{6}Z(-\d+)?$")
TORN_NAME = re.compile(r"\.torn-\d{8}T\d{6}Z-\d+$")


@pytest.fixture
def log(tmp_path):
    return str(tmp_path / "steps.jsonl"), str(tmp_path / "locks" / "steps.lock")


def lines_of(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        data = fh.read()
    assert data.endswith(b"\n"), data
    return data.split(b"\n")[:-1]


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


# -- JSONL --------------------------------------------------------------------------


def test_append_creates_file_and_writes_one_line_per_record(log):
    path, lock = log
    fsio.append_jsonl(path, {"event": "a", "text": "line\nbreak"}, lock)
    fsio.append_jsonl(path, {"event": "b", "n": 2}, lock)
    lines = lines_of(path)
    assert [json.loads(x) for x in lines] == [{"event": "a", "text": "line\nbreak"}, {"event": "b", "n": 2}]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_torn_tail_is_kept_aside_and_next_record_starts_fresh(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"event": "a", "n": 1}\n{"event": "b", "n"')

    before = fsio.read_jsonl(path)
    assert [r["n"] for r in before.records] == [1]
    assert before.torn_tail == b'{"event": "b", "n"'
    assert before.bad_lines == []  # a torn tail is not corruption
    assert any("unterminated last line" in p for p in before.problems)

    fsio.append_jsonl(path, {"event": "c", "n": 3}, lock)

    assert [json.loads(x) for x in lines_of(path)] == [{"event": "a", "n": 1}, {"event": "c", "n": 3}]
    torn = [n for n in os.listdir(tmp_path) if ".torn-" in n]
    assert len(torn) == 1 and TORN_NAME.search(torn[0]), torn
    assert torn[0].startswith("steps.jsonl.torn-")
    with open(tmp_path / torn[0], "rb") as fh:
        assert fh.read() == b'{"event": "b", "n"'
    after = fsio.read_jsonl(path)
    assert after.torn_tail is None and after.bad_lines == [] and len(after.records) == 2


def test_torn_tail_without_any_newline(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"half')
    fsio.append_jsonl(path, {"n": 1}, lock)
    assert lines_of(path) == [b'{"n":1}']
    assert len([n for n in os.listdir(tmp_path) if ".torn-" in n]) == 1


def test_complete_but_unterminated_object_is_just_terminated(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n{"n": 2}')
    assert fsio.read_jsonl(path).torn_tail == b'{"n": 2}'
    fsio.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 2, 3]
    assert not [n for n in os.listdir(tmp_path) if ".torn-" in n]


def test_unterminated_non_object_is_cut(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n[1, 2]')
    fsio.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 3]
    assert len([n for n in os.listdir(tmp_path) if ".torn-" in n]) == 1


def test_bad_line_in_the_middle_is_reported_with_its_number(log):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n\n{"n": 2}\nnot json at all\n[1, 2]\n{"n": NaN}\n{"n": 3}\n')
    r = fsio.read_jsonl(path)
    assert [x["n"] for x in r.records] == [1, 2, 3]  # valid records are kept
    assert [n for n, _ in r.bad_lines] == [4, 5, 6]
    assert "not valid JSON" in r.bad_lines[0][1]
    assert "expected a JSON object" in r.bad_lines[1][1]
    assert r.torn_tail is None
    assert r.problems[0].startswith(f"{path}: line 4: ")

    # Appending does not touch the middle of the file.
    fsio.append_jsonl(path, {"n": 4}, lock)
    r2 = fsio.read_jsonl(path)
    assert [x["n"] for x in r2.records] == [1, 2, 3, 4]
    assert [n for n, _ in r2.bad_lines] == [4, 5, 6]


def test_binary_and_deeply_nested_lines_are_bad_lines(tmp_path):
    path = str(tmp_path / "q.jsonl")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xfe\x00\x01\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"ok": 1}\n')
    r = fsio.read_jsonl(path)
    assert [n for n, _ in r.bad_lines] == [1, 2]
    assert r.records == [{"ok": 1}]


def test_read_jsonl_from_offset(tmp_path):
    path = str(tmp_path / "s.jsonl")
    lock = str(tmp_path / "s.lock")
    for i in range(3):
        fsio.append_jsonl(path, {"i": i}, lock)
    first = fsio.read_jsonl_from(path, 0)
    assert [r["i"] for r in first.records] == [0, 1, 2]
    fsio.append_jsonl(path, {"i": 3}, lock)
    more = fsio.read_jsonl_from(path, first.end_offset)
    assert [r["i"] for r in more.records] == [3]
    assert more.end_offset == os.path.getsize(path)
    # A file that shrank below the offset is read again from the start.
    fsio.atomic_write_bytes(path, b'{"i": 9}\n')
    again = fsio.read_jsonl_from(path, more.end_offset)
    assert [r["i"] for r in again.records] == [9]


def test_append_to_a_directory_is_a_clear_error(tmp_path):
    path = tmp_path / "steps.jsonl"
    path.mkdir()
    with pytest.raises(CocoplusError, match="is a directory"):
        fsio.append_jsonl(str(path), {"n": 1}, str(tmp_path / "l.lock"))


def test_append_refuses_symlink(tmp_path):
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"")
    link = tmp_path / "steps.jsonl"
    link.symlink_to(target)
    with pytest.raises(CocoplusError, match="symbolic link"):
        fsio.append_jsonl(str(link), {"n": 1}, str(tmp_path / "l.lock"))
    assert target.read_bytes() == b""


def test_failed_append_leaves_log_on_its_last_whole_record(log):
    path, lock = log
    fsio.append_jsonl(path, {"n": 1}, lock)
    real_write = os.write

    def short_write(fd, data):
        return real_write(fd, bytes(data)[: len(data) // 2])

    with pytest.MonkeyPatch.context() as mp, pytest.raises(CocoplusError, match="cannot append"):
        mp.setattr(fsio.os, "write", short_write)
        fsio.append_jsonl(path, {"n": 2, "pad": "x" * 100}, lock)
    assert lines_of(path) == [b'{"n":1}']
    fsio.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 3]


def test_records_carry_their_line_numbers(tmp_path):
    path = str(tmp_path / "q.jsonl")
    with open(path, "wb") as fh:
        fh.write(b'{"a": 1}\n\nbad\n{"b": 2}\n{"c": 3}\n{"torn": ')
    r = fsio.read_jsonl(path)
    assert r.records == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert r.lines == [1, 4, 5]
    assert r.bad_lines[0][0] == 3


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
