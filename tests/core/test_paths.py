"""The id allow-list, discovery of `.cocoplus/`, and the names spelled outside `Layout` agreeing with it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import paths
from cocoplus.core.errors import InvalidId, NotInitialized
from cocoplus.core.paths import Layout, is_valid_id

HOSTILE_IDS = [
    "../../x",
    "..",
    ".",
    "a/../../b",
    "/tmp/x",
    "a/b",
    "a\\b",
    "a\x00b",
    "\x00",
    "x" * 300,
    "x" * 129,
    "",
    " ",
    "a b",
    "a\nb",
    "-rf",
    ".hidden",
    "_x",
    "cs_\u0430bc",  # Cyrillic a
    "cs_abc\u2215x",  # division slash
    "cs_abc\uff0fx",  # fullwidth solidus
    "\u2024\u2024",  # one-dot leaders
    "cs_\uff41",  # fullwidth a
    "caf\u00e9",
    "x..y",
    "~root",
    "$HOME",
    None,
    5,
    b"abc",
]


@pytest.mark.parametrize("value", HOSTILE_IDS, ids=repr)
def test_allow_list_rejects(value):
    assert not is_valid_id(value)


@pytest.mark.parametrize("value", ["cs_abc", "cc1", "a", "A-b_c.d", "0" * 128, "x.json", "cs_9f2c-1e.2"])
def test_allow_list_accepts(value):
    assert is_valid_id(value)
    assert paths.check_id(value) == value


@pytest.mark.parametrize("value", HOSTILE_IDS, ids=repr)
def test_layout_refuses_hostile_ids_before_building_a_path(tmp_path, value):
    layout = Layout(str(tmp_path / ".cocoplus"))
    for build in (layout.session_record, layout.conversation_dir, layout.lock, lambda v: layout.task_record("c1", v)):
        with pytest.raises(InvalidId) as info:
            build(value)
        assert "\n" not in str(info.value)
        assert len(str(info.value)) < 300
    assert list(tmp_path.iterdir()) == []


@given(st.text(min_size=0, max_size=140))
def test_any_accepted_id_stays_inside_the_state_dir(value):
    root = Path("/nonexistent-root/.cocoplus")
    layout = Layout(str(root))
    if not is_valid_id(value):
        with pytest.raises(InvalidId):
            layout.session_record(value)
        return
    p = Path(os.path.normpath(layout.session_record(value)))
    assert p.parent == root / "sessions"
    assert p.name == value + ".json"
    assert value.isascii() and value.isprintable() and "/" not in value and ".." not in value


def test_discovery_walks_up_and_env_overrides(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    deep = proj / "a" / "b"
    deep.mkdir(parents=True)
    (proj / ".cocoplus").mkdir()
    assert paths.find_state_dir(str(deep), environ={}) == str(proj / ".cocoplus")
    assert paths.discover(str(deep), environ={}).project == str(proj)

    other = tmp_path / "other"
    (other / ".cocoplus").mkdir(parents=True)
    env = {"COCOPLUS_DIR": str(other)}
    assert paths.find_state_dir(str(deep), environ=env) == str(other / ".cocoplus")
    env = {"COCOPLUS_DIR": str(other / ".cocoplus")}
    assert paths.find_state_dir(str(deep), environ=env) == str(other / ".cocoplus")


def test_discovery_failure_says_to_run_init(tmp_path):
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    with pytest.raises(NotInitialized) as info:
        paths.discover(str(lonely), environ={})
    assert "cocoplus init" in (info.value.hint or "")
    with pytest.raises(NotInitialized) as info:
        paths.discover(str(lonely), environ={"COCOPLUS_DIR": str(tmp_path / "missing")})
    assert "COCOPLUS_DIR" in str(info.value)


def test_rel_paths_are_project_relative(tmp_path):
    layout = Layout(str(tmp_path / ".cocoplus"))
    assert layout.rel(layout.iteration_budget) == os.path.join(".cocoplus", "session", "iteration-budget.json")
    assert layout.rel("/somewhere/else") == "/somewhere/else"


def test_the_names_spelled_outside_layout_are_layouts(tmp_path):
    """core/paths.py's docstring names the places that spell state paths themselves; they must agree with Layout."""
    from cocoplus.hook import entry
    from cocoplus.server import events

    lay = Layout(str(tmp_path / ".cocoplus"))
    assert lay.root + entry.STOP_FILE == lay.agent_stop
    assert lay.root + entry.HOOK_LOG == lay.hook_log
    assert lay.root + entry.MARKER == lay.marker
    assert lay.root + entry.SESSION_STOPS == lay.session_stops_dir
    assert lay.root + entry.LOGS_DIR == lay.logs_dir
    owned = (lay.legacy_server_token, lay.supervisor_cursor, lay.chat_worker_pid, lay.supervisor_pid)
    assert events.IGNORED_FILES == {os.path.relpath(p, lay.root) for p in owned}
    assert set(events.IGNORED_DIRS) == {
        os.path.relpath(p, lay.root) for p in (lay.locks_dir, lay.logs_dir, lay.worktrees_dir, lay.secrets_dir)
    }
    # The worktree marker, spelled by the hook's fast path and core/worktreemark.py (both before `os`).
    from cocoplus import watching
    from cocoplus.core import worktreemark

    assert lay.root + entry.WORKTREE_MARKER == lay.root + worktreemark.MARKER == lay.worktree_marker
    assert lay.root + worktreemark.LAYOUT == lay.marker
    assert lay.root + "/workers/w1" + worktreemark.KEY == lay.worker_worktree_key("w1")
    assert watching.UNWATCHED == (os.path.relpath(lay.worktrees_dir, lay.root),)
