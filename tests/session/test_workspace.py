"""`.cocoplus/` as init leaves it: every file private, every template valid."""

from __future__ import annotations

import os
import stat

from cocoplus.core import fsio, jsonl, predicates, progress
from cocoplus.core.paths import Layout
from cocoplus.report import models
from cocoplus.session import workspace
from tests.support.typed import present


def modes(state_dir: str) -> dict[str, int]:
    out = {}
    for root, dirs, files in os.walk(state_dir):
        for name in dirs + files:
            p = os.path.join(root, name)
            out[os.path.relpath(p, state_dir)] = stat.S_IMODE(os.lstat(p).st_mode)
    out["."] = stat.S_IMODE(os.lstat(state_dir).st_mode)
    return out


def test_init_under_a_permissive_umask_keeps_everything_private(project_dir):
    old = os.umask(0)
    try:
        workspace.init(os.path.join(project_dir, ".cocoplus"))
    finally:
        os.umask(old)
    state = os.path.join(project_dir, ".cocoplus")
    for rel, mode in modes(state).items():
        if os.path.isdir(os.path.join(state, rel)):
            assert mode == 0o700, (rel, oct(mode))
        else:
            assert mode == 0o600, (rel, oct(mode))


def test_templates_are_valid(project: Layout):
    text = fsio.read_text(project.progress)
    doc = progress.parse(present(text))
    assert doc.missing() == [] and doc.find("Iteration Budget") is not None
    assert predicates.parse(present(fsio.read_text(project.context))) == ([], [])
    models.validate(models.IterationBudget, fsio.read_json(project.iteration_budget), "x")
    models.validate(models.CostBudget, fsio.read_json(project.budget_state), "x")
    st = models.validate(models.Status, fsio.read_json(project.status), "x")
    assert st.state == "idle"
    models.validate(models.PodState, fsio.read_json(project.pod_state), "x")
    assert jsonl.read_jsonl(project.task_queue).records == []
    assert jsonl.read_jsonl(project.steps).records == []
    assert not os.path.exists(project.agent_stop) and not os.path.exists(project.steer)


def test_init_never_follows_or_replaces_existing_entries(project: Layout, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n")
    os.unlink(project.progress)
    os.symlink(outside, project.progress)
    result = workspace.init(project.root)
    assert ".cocoplus/session/PROGRESS.md" in result["kept"]
    assert outside.read_text() == "outside\n"
    assert os.path.islink(project.progress)
