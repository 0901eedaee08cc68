"""Managed workers: `cocoplus launch`, `cocoplus workers list|logs|kill|diff|merge|clean`, `/api/v1/workers`, and the
brain MCP tools `launch_worker` and `merge_worker`.  `cocoplus.supervision.workers` says what each does."""

from __future__ import annotations

from typing import Any

from cocoplus.core import inert
from cocoplus.core.paths import Layout
from cocoplus.ops import authority
from cocoplus.ops.authority import Principal
from cocoplus.rules import protected


def launch(
    layout: Layout,
    runtime: str,
    task: str,
    alias: str | None = None,
    model: str | None = None,
    effort: str | None = None,
    by: str | None = None,
    principal: Principal | None = None,
    allow: list[str] | None = None,
    worktree: bool | None = None,
    unsupervised: bool = False,
    sandbox: str | None = None,
    network: str | None = None,
) -> dict[str, Any]:
    """A headless worker on `task` in the project (queued while `[workers] max_parallel` run); its record.
    `allow`: permission rules for this worker (`launch --allow`); only the operator grants them.
    `worktree` (default `[workers] worktree`): in a git worktree of its own, on branch `cocoplus/<alias or id>`.
    Refused where the runtime will not run this project's cocoplus hooks for it, with the fix; `unsupervised`
    (the operator's alone) starts it anyway, and the message says what it gives up.
    `sandbox` (default: `[workers] sandbox`, which a project may only strengthen): its sandbox profile; only the
    operator chooses one, and `network` (default: `[sandbox] network`, which a project may only narrow): what its
    sandbox reaches."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    who, name = authority.acting(principal, "launch", f"launch {runtime}", layout, by)
    if allow and who.kind != "operator":
        authority.refuse(
            who,
            "approve",
            f"launch --allow: granting a worker permissions is for the operator, not {who.shown()}",
            layout,
        )
    if unsupervised and who.kind != "operator":
        authority.refuse(
            who,
            "launch",
            f"launch --unsupervised: a worker outside cocoplus' hooks is for the operator, not {who.shown()}",
            layout,
        )
    for option, given in (("--sandbox", sandbox), ("--network", network)):
        if given is not None and who.kind != "operator":
            authority.refuse(
                who,
                "approve",
                f"launch {option}: choosing a worker's sandbox is for the operator, not {who.shown()}",
                layout,
            )
    rec = workers.launch(
        layout,
        runtime,
        task,
        by=name,
        alias=alias,
        model=model,
        effort=effort,
        principal=who.word,
        allow=allow,
        worktree=worktree,
        unsupervised=unsupervised,
        sandbox=sandbox,
        network=network,
    )
    _start_inbox(rec)
    alias = rec.get("alias")
    named = f"worker {rec['id']}" + (f" ({alias})" if alias and alias != rec["id"] else "")
    tree = rec.get("worktree")
    where = f" in its worktree {tree['path']} (branch {tree['branch']})" if isinstance(tree, dict) else ""
    if rec["state"] == "queued":
        rec["message"] = (
            f"{named} queued{where}: {rec['max_parallel']} worker(s) run already; it starts when one finishes"
        )
    elif rec["state"] == "running":
        rec["message"] = f"{named} started{where}: {rec['runtime']}, output in {rec['log']}"
    else:
        rec["message"] = f"{named} {rec['state']}: {rec.get('reason') or 'see its log'} ({rec['log']})"
    if rec.get("unsupervised"):
        from cocoplus.install import doctor  # deferred: only an unsupervised launch says what it gives up

        rec["message"] += f"; unsupervised: {doctor.UNSUPERVISED_GIVES_UP}"
    return rec


def list_workers(layout: Layout) -> dict[str, Any]:
    """Every launched worker with its state, process, exit and session (alias, state, attention)."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    return workers.listing(layout)


def state_text(w: dict[str, Any]) -> str:
    """A worker's state as `workers list` and the decision page show it: why a queued one is held, until when a
    paused one waits."""
    if w.get("paused"):
        return inert.line(w["paused"])
    state = str(w["state"]) + (" (stale)" if w.get("stale") else "")
    held = w.get("held") if w["state"] == "queued" else None
    return f"{state} ({inert.line(held.get('reason'))})" if isinstance(held, dict) and held.get("reason") else state


def ended_text(w: dict[str, Any]) -> str:
    """How a worker ended, as `workers list` shows it (empty while it runs): why (who killed it; the loop guard,
    its iteration cap, an operator's or a budget stop; its runtime's limit) and its exit, the tool calls refused
    to it, and what it left behind."""
    from cocoplus.supervision.workers import ending  # deferred: the CLI imports every ops module at start

    ended = str((w.get("exit") or {}).get("status") or "")
    stopped, limit = w.get("stopped_by"), w.get("limit")
    if w.get("killed_by"):
        ended = f"killed by {w['killed_by']}"
    elif isinstance(stopped, dict):
        ended = f"{ending.stopped_text(stopped)}; {ended or 'exit status unknown'}"
    elif isinstance(limit, dict) and ended:
        ended = f"stopped by its runtime's {inert.line(str(limit.get('reason') or 'limit'))}; {ended}"
    if w.get("denied"):
        ended = f"{ended or '-'}; {w['denied']} denied"
    left = [p for p in w.get("left_behind") or [] if isinstance(p, dict)]
    if left:
        gone = all(p.get("ended") for p in left)
        ended = f"{ended or '-'}; left {len(left)} behind ({'ended' if gone else 'ending'})"
    return ended


def runtime_text(w: dict[str, Any]) -> str:
    """Its runtime, with each failover (`claude → codex (rate limit until 15:00)`)."""
    return inert.line(w.get("runtimes_text") or w["runtime"])


def logs(layout: Layout, worker: str, offset: int | None = None, raw: bool = False) -> dict[str, Any]:
    """The worker's output from `offset` (default: its last 256 KiB); `offset` in the answer reads on.
    `entries`: its transcript (the model's text, each tool call and its result, errors); `raw`: the output only."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    return workers.logs(layout, worker, offset, raw=raw)


def kill(layout: Layout, worker: str, by: str | None = None, principal: Principal | None = None) -> dict[str, Any]:
    """Stop the worker's process group; the record says `exited` and who killed it."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    _who, name = authority.acting(principal, "kill_worker", f"workers kill {worker}", layout, by)
    rec = workers.kill(layout, worker, name)
    rec["message"] = f"worker {rec['id']} {rec['state']}: {rec.get('reason')}"
    return rec


def diff(layout: Layout, worker: str) -> dict[str, Any]:
    """The worker's branch against the commit it started from (`launch --worktree`): files, summary and patch."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    out = workers.diff(layout, worker)
    n = len(out["files"])
    out["message"] = f"worker {out['worker']}: {n} file(s) changed on {out['branch']} since {out['base'][:12]}"
    out["message"] += _changes_what_runs(out["protected"])
    return out


def _listed(paths: list[str], most: int = 10) -> str:
    more = f" and {len(paths) - most} more" if len(paths) > most else ""
    return ", ".join(paths[:most]) + more


def _changes_what_runs(paths: list[str]) -> str:
    """`; it changes what runs: .claude/settings.json, ...` for the protected paths a branch changes, or ''."""
    return f"; it {protected.WHY}: {_listed(paths)}" if paths else ""


def merge(layout: Layout, worker: str, by: str | None = None, principal: Principal | None = None) -> dict[str, Any]:
    """Merge the worker's branch into the project's current branch.  A conflict stops the merge, lists the files
    and leaves the tree as git leaves it (`conflicts`; the CLI exits 1).  Refused while the worker runs; the main
    brain may merge only where `[supervision] brain_may_merge = true`, and never a branch that changes a protected
    path (`protected`: a runtime's settings or hooks, `.mcp.json`, `cocoplus.toml`, `.cocoplus/`): that is the
    operator's decision, whose merge goes ahead and says what it changes."""
    from cocoplus import config as config_mod  # deferred: as below
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    who, name = authority.acting(principal, "merge", f"workers merge {worker}", layout, by)
    if who.kind == "brain" and not config_mod.load_for(layout).get("supervision.brain_may_merge"):
        authority.refuse(
            who, "merge",
            f"merge_worker {worker}: merging is for the operator (`cocoplus workers merge {worker}`) unless "
            "[supervision] brain_may_merge = true; ask the human with ask_human",
            layout, target=worker,
        )  # fmt: skip

    def check(paths: list[str]) -> None:
        if paths and who.kind == "brain":  # whatever brain_may_merge says: what runs is the human's to change
            authority.refuse(
                who, "merge",
                f"merge_worker {worker}: its branch {protected.WHY} ({_listed(paths, 5)}): only the operator may "
                f"merge it (`cocoplus workers merge {worker}`); ask the human with ask_human",
                layout, target=worker,
            )  # fmt: skip

    out = workers.merge(layout, worker, name, check)
    if out["conflicts"]:
        out["message"] = (
            f"merge of {out['branch']} into {out['into']} stopped on conflicts in: {', '.join(out['conflicts'])}; "
            "the tree is as git left it: resolve and commit, or `git merge --abort`"
        )
    elif out["already"]:
        out["message"] = f"{out['branch']} is merged into {out['into']} already"
    else:
        out["message"] = f"merged {out['branch']} into {out['into']} ({(out['commit'] or '')[:12]})"
    out["message"] += _changes_what_runs(out.get("protected") or [])
    return out


def clean(
    layout: Layout, worker: str | None = None, force: bool = False, principal: Principal | None = None
) -> dict[str, Any]:
    """Remove the worktrees of ended workers (or of worker `worker`); a branch that is not merged is kept unless
    `force`.  A running worker is refused (named) or, without `worker`, left alone."""
    from cocoplus.supervision import workers  # deferred: the CLI imports every ops module at start

    authority.acting(principal, "clean_workers", "workers clean" + (f" {worker}" if worker else ""), layout)
    out = workers.clean(layout, worker, force)
    lines = []
    for c in out["cleaned"]:
        kept = f"; branch {c['branch']} kept (not merged: --force deletes it)" if c["branch_kept"] else ""
        gone = f"; branch {c['branch']} deleted" if c["branch_deleted"] else ""
        lines.append(f"worker {c['worker']}: worktree {c['path']} removed{kept}{gone}")
    lines += [f"worker {r['worker']}: {r['state']}, its worktree is kept" for r in out["running"]]
    out["message"] = "\n".join(lines) or "no ended worker has a worktree"
    return out


def failover(layout: Layout, session: str, by: str | None = None, principal: Principal | None = None) -> dict[str, Any]:
    """A managed worker paused by its runtime's usage limit continues in another runtime now: the failover the
    watcher makes when the reset is over `[workers] failover_after_s` away (the first runtime of `[workers]
    failover` on PATH and not limited), whenever the reset is.  The inbox's "resume in another runtime"."""
    import time  # deferred: as supervision

    from cocoplus.core.errors import CocoplusError  # deferred: as supervision
    from cocoplus.session import limits, registry  # deferred: as supervision
    from cocoplus.supervision import resumes  # deferred: the CLI imports every ops module at start

    who, name = authority.acting(principal, "launch", f"failover {session}", layout, by)
    rec = registry.resolve(layout, session)
    limit = limits.active(rec)
    if limit is None:
        raise CocoplusError(f"{rec.get('alias') or rec['id']} is not paused by a limit: there is nothing to fail over")
    now = time.time()
    plan = resumes.plan(layout, registry.list_sessions(layout)[0], now)
    target = resumes.operator_target(rec, limit, plan)
    if target is None:
        order = ", ".join(plan["order"]) or "none"
        raise CocoplusError(
            f"{rec.get('alias') or rec['id']}: no other runtime to continue in ([workers] failover: {order}; on "
            f"PATH and not limited: {', '.join(sorted(set(plan['on_path']) - set(plan['walls']))) or 'none'})"
        )
    message = resumes.fail_over(layout, rec, limit, now, plan, target=target, by=name, principal=who.word)
    return {"session": rec["id"], "worker": rec.get("worker"), "to": target, "message": message}


def _start_inbox(rec: dict[str, Any]) -> None:
    """A launched worker may ask: this user's `cocoplus inbox run` is started when phone channels are configured and
    it does not run (`inbox` in the record when it was)."""
    from cocoplus.inbox import runner  # deferred: only a launch starts the phone's service

    started = runner.ensure_running()
    if started is not None:
        rec["inbox"] = started
