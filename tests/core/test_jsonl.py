"""The JSONL journals in one process: one line per record, torn tails set aside, bad lines reported, failed appends
undone."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from cocoplus.core import fsio, jsonl
from cocoplus.core.errors import CocoplusError

TORN_NAME = re.compile(r"\.torn-\d{8}T\d{6}Z-\d+$")


@pytest.fixture
def log(tmp_path):
    return str(tmp_path / "steps.jsonl"), str(tmp_path / "locks" / "steps.lock")


def lines_of(path: str) -> list[bytes]:
    with open(path, "rb") as fh:
        data = fh.read()
    assert data.endswith(b"\n"), data
    return data.split(b"\n")[:-1]


def test_append_creates_file_and_writes_one_line_per_record(log):
    path, lock = log
    jsonl.append_jsonl(path, {"event": "a", "text": "line\nbreak"}, lock)
    jsonl.append_jsonl(path, {"event": "b", "n": 2}, lock)
    lines = lines_of(path)
    assert [json.loads(x) for x in lines] == [{"event": "a", "text": "line\nbreak"}, {"event": "b", "n": 2}]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_torn_tail_is_kept_aside_and_next_record_starts_fresh(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"event": "a", "n": 1}\n{"event": "b", "n"')

    before = jsonl.read_jsonl(path)
    assert [r["n"] for r in before.records] == [1]
    assert before.torn_tail == b'{"event": "b", "n"'
    assert before.bad_lines == []  # a torn tail is not corruption
    assert any("unterminated last line" in p for p in before.problems)

    jsonl.append_jsonl(path, {"event": "c", "n": 3}, lock)

    assert [json.loads(x) for x in lines_of(path)] == [{"event": "a", "n": 1}, {"event": "c", "n": 3}]
    torn = [n for n in os.listdir(tmp_path) if ".torn-" in n]
    assert len(torn) == 1 and TORN_NAME.search(torn[0]), torn
    assert torn[0].startswith("steps.jsonl.torn-")
    with open(tmp_path / torn[0], "rb") as fh:
        assert fh.read() == b'{"event": "b", "n"'
    after = jsonl.read_jsonl(path)
    assert after.torn_tail is None and after.bad_lines == [] and len(after.records) == 2


def test_torn_tail_without_any_newline(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"half')
    jsonl.append_jsonl(path, {"n": 1}, lock)
    assert lines_of(path) == [b'{"n":1}']
    assert len([n for n in os.listdir(tmp_path) if ".torn-" in n]) == 1


def test_complete_but_unterminated_object_is_just_terminated(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n{"n": 2}')
    assert jsonl.read_jsonl(path).torn_tail == b'{"n": 2}'
    jsonl.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 2, 3]
    assert not [n for n in os.listdir(tmp_path) if ".torn-" in n]


def test_unterminated_non_object_is_cut(log, tmp_path):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n[1, 2]')
    jsonl.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 3]
    assert len([n for n in os.listdir(tmp_path) if ".torn-" in n]) == 1


def test_bad_line_in_the_middle_is_reported_with_its_number(log):
    path, lock = log
    with open(path, "wb") as fh:
        fh.write(b'{"n": 1}\n\n{"n": 2}\nnot json at all\n[1, 2]\n{"n": NaN}\n{"n": 3}\n')
    r = jsonl.read_jsonl(path)
    assert [x["n"] for x in r.records] == [1, 2, 3]  # valid records are kept
    assert [n for n, _ in r.bad_lines] == [4, 5, 6]
    assert "not valid JSON" in r.bad_lines[0][1]
    assert "expected a JSON object" in r.bad_lines[1][1]
    assert r.torn_tail is None
    assert r.problems[0].startswith(f"{path}: line 4: ")

    # Appending does not touch the middle of the file.
    jsonl.append_jsonl(path, {"n": 4}, lock)
    r2 = jsonl.read_jsonl(path)
    assert [x["n"] for x in r2.records] == [1, 2, 3, 4]
    assert [n for n, _ in r2.bad_lines] == [4, 5, 6]


def test_binary_and_deeply_nested_lines_are_bad_lines(tmp_path):
    path = str(tmp_path / "q.jsonl")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xfe\x00\x01\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n" + b'{"ok": 1}\n')
    r = jsonl.read_jsonl(path)
    assert [n for n, _ in r.bad_lines] == [1, 2]
    assert r.records == [{"ok": 1}]


def test_read_jsonl_from_offset(tmp_path):
    path = str(tmp_path / "s.jsonl")
    lock = str(tmp_path / "s.lock")
    for i in range(3):
        jsonl.append_jsonl(path, {"i": i}, lock)
    first = jsonl.read_jsonl_from(path, 0)
    assert [r["i"] for r in first.records] == [0, 1, 2]
    jsonl.append_jsonl(path, {"i": 3}, lock)
    more = jsonl.read_jsonl_from(path, first.end_offset)
    assert [r["i"] for r in more.records] == [3]
    assert more.end_offset == os.path.getsize(path)
    # A file that shrank below the offset is read again from the start.
    fsio.atomic_write_bytes(path, b'{"i": 9}\n')
    again = jsonl.read_jsonl_from(path, more.end_offset)
    assert [r["i"] for r in again.records] == [9]


def test_append_to_a_directory_is_a_clear_error(tmp_path):
    path = tmp_path / "steps.jsonl"
    path.mkdir()
    with pytest.raises(CocoplusError, match="is a directory"):
        jsonl.append_jsonl(str(path), {"n": 1}, str(tmp_path / "l.lock"))


def test_append_refuses_symlink(tmp_path):
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"")
    link = tmp_path / "steps.jsonl"
    link.symlink_to(target)
    with pytest.raises(CocoplusError, match="symbolic link"):
        jsonl.append_jsonl(str(link), {"n": 1}, str(tmp_path / "l.lock"))
    assert target.read_bytes() == b""


def test_failed_append_leaves_log_on_its_last_whole_record(log):
    path, lock = log
    jsonl.append_jsonl(path, {"n": 1}, lock)
    real_write = os.write

    def short_write(fd, data):
        return real_write(fd, bytes(data)[: len(data) // 2])

    with pytest.MonkeyPatch.context() as mp, pytest.raises(CocoplusError, match="cannot append"):
        mp.setattr(fsio.os, "write", short_write)
        jsonl.append_jsonl(path, {"n": 2, "pad": "x" * 100}, lock)
    assert lines_of(path) == [b'{"n":1}']
    jsonl.append_jsonl(path, {"n": 3}, lock)
    assert [json.loads(x)["n"] for x in lines_of(path)] == [1, 3]


def test_records_carry_their_line_numbers(tmp_path):
    path = str(tmp_path / "q.jsonl")
    with open(path, "wb") as fh:
        fh.write(b'{"a": 1}\n\nbad\n{"b": 2}\n{"c": 3}\n{"torn": ')
    r = jsonl.read_jsonl(path)
    assert r.records == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert r.lines == [1, 4, 5]
    assert r.bad_lines[0][0] == 3
