"""`cocoplus replay RUN --policy FILE.toml`: a recorded run re-evaluated under another policy, without a model.

RUN is a worker (all its runs, in the order of the runtimes it ran in), a session (its cs_ id or alias), or a
supervised goal (its `g_` id from `supervision status`: every worker launched under it, in launch order).  Its
tool calls are read from its sessions' call logs (one fingerprint a call) and decided, call by call, by the same
functions the hooks decide with live: the iteration count (`session/iteration.py` `limit_at` and `advance`, before
or after the call as the session's runtime counts it) and the loop guard (`session/registry.py` `run_length` and
`loop_verdict`, over the same tail of the call log the hook reads).  It reports where the run would have stopped
and why, the checkpoints asked for on the way, what it cost up to there, and the first decision that differs from
the recorded ones (the steps the hooks logged for the run's sessions).

Replayed: `[session] max_iterations`, `iteration_warn_at`, `project_max_iterations` and `loop_guard_repeats`, and
`[permissions] allow` and `deny`: every permission request the audit log holds for the run is decided again by the
rule engine the permission hook decides with (`rules/engine.py` `decide`), and reported allowed, asked or denied
beside what was recorded (a rule's decision, an answer, the deadline).  The policy's two lists stand for every rule
in effect live (the project's, this user's "always" rules, a worker's `launch --allow` grants); the call's directory
and worker tree are the ones the hook logged with a rule's decision.  A request whose logged command was cut, or
written with its control characters spelled out, is not decided again: the log does not keep what the hook read.
Not yet: the cost budget and the stall threshold (`not_replayed` names them when the policy sets them).  What the
records do not keep is said, not guessed: a call log keeps no time per call, so the cost up
to a stop is the spend logged up to that call's estimated time (`cost_estimated`); and the calls of other
sessions running at the same time are not interleaved into the project's count (`project_max_iterations` counts
the run's own calls).
"""

from __future__ import annotations

import os
import tomllib
from typing import TYPE_CHECKING, Any

from cocoplus.core import clock, fsio, vocab
from cocoplus.core.errors import CocoplusError, NotFound
from cocoplus.core.keys import KEYS
from cocoplus.core.paths import Layout, is_valid_id
from cocoplus.core.records import MAX_COUNT, new_iteration_budget
from cocoplus.cost import enforce
from cocoplus.report import timeline
from cocoplus.rules import engine
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import iteration, permissions, registry

REPLAYED = ("max_iterations", "iteration_warn_at", "project_max_iterations", "loop_guard_repeats")
BUDGET = ("budget_limit", "budget_reserve_fraction")  # [session], in dollars and a share of the limit
RULES = ("allow", "deny")  # [permissions]: the rule lists replayed
STALL = ("stall_threshold_s", "stall_cooldown_s")  # [supervision], in seconds
NOT_YET: dict[str, str] = {}
if TYPE_CHECKING:
    from cocoplus.core.shapes import SessionRecord

# What a policy leaves out is at its default (the key table's, as in a project with no cocoplus.toml).
DEFAULTS: dict[str, float] = {k.name: int(k.default) for k in KEYS if k.section == "session" and k.name in REPLAYED}
DEFAULTS.update({k.name: float(k.default) for k in KEYS if k.section == "session" and k.name in BUDGET})
DEFAULTS.update({k.name: float(k.default) for k in KEYS if k.section == "supervision" and k.name in STALL})
_RECORDED = {"checkpoint_requested", "iteration_cap", "loop_guard_stop", "session_stop", "worker_stop"}


def load_policy(path: str) -> tuple[dict[str, float], list[str]]:
    """The replayed values a policy file sets (the others at their defaults) and what it sets that is not replayed.
    CocoplusError naming the file and the cause for one that cannot be read or holds a wrong value."""
    values, skipped, _rules = load_policy_rules(path)
    return values, skipped


def load_policy_rules(path: str) -> tuple[dict[str, float], list[str], dict[str, list[str]] | None]:
    """`load_policy`, and the policy's `[permissions]` rule lists (None: it sets neither, and rules are not
    replayed)."""
    try:
        raw = fsio.read_bytes(path)
    except (OSError, CocoplusError) as exc:
        raise CocoplusError(f"{path}: cannot read the policy ({exc})") from None
    if raw is None:
        raise CocoplusError(f"{path}: no such policy file")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CocoplusError(f"{path}: not valid TOML ({exc})") from None
    return policy_of(doc, path)


def policy_of(doc: dict[str, Any], where: str) -> tuple[dict[str, float], list[str], dict[str, list[str]] | None]:
    """The replayed values a policy (tables of keys, as a policy file holds them) sets, the others at their
    defaults, what it sets that is not replayed, and its `[permissions]` rule lists (None: it sets neither);
    CocoplusError naming `where` and the key for a wrong value."""
    values = dict(DEFAULTS)
    skipped: list[str] = []
    rules: dict[str, list[str]] | None = None
    for table, keys in doc.items():
        if not isinstance(keys, dict):
            raise CocoplusError(f"{where}: {table} is not a table; give keys under [session] or [permissions]")
        for key, value in keys.items():
            if table == "permissions" and key in RULES:
                rules = {**(rules or {"allow": [], "deny": []}), key: _rule_list(where, f"[{table}] {key}", value)}
            elif (table == "session" and key in (*REPLAYED, *BUDGET)) or (table == "supervision" and key in STALL):
                values[key] = _number(where, f"[{table}] {key}", key, value)
            else:
                skipped.append(f"[{table}] {key} ({NOT_YET.get(key, 'not replayed')})")
    return values, skipped, rules


def _rule_list(path: str, name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CocoplusError(f"{path}: {name} must be a list of rules (strings), got {value!r}")
    for text in value:
        try:
            engine.parse_rule(text)
        except CocoplusError as exc:
            raise CocoplusError(f"{path}: {name}: {exc}") from None
    return list(value)


def _number(path: str, name: str, key: str, value: Any) -> float:
    """A replayed key's value, checked as its kind wants it: whole counts, dollars and a share, seconds."""
    if key in STALL:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 7 * 86400:
            raise CocoplusError(f"{path}: {name} must be a number of seconds from 0 to 604800, got {value!r}")
        return float(value)
    if key in BUDGET:
        top = 1.0 if key == "budget_reserve_fraction" else 1e12
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < top:
            raise CocoplusError(f"{path}: {name} must be a number from 0 (below {top:g}), got {value!r}")
        return float(value)
    low = 1 if key == "max_iterations" else 0
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_COUNT:
        raise CocoplusError(f"{path}: {name} must be a whole number from {low} to {MAX_COUNT}, got {value!r}")
    return value


def _sessions_of(layout: Layout, run: str) -> tuple[str, list[SessionRecord]]:
    """(what RUN is, its sessions' records in the order they ran)."""
    if run.startswith("g_"):
        return "goal", _goal_sessions(layout, run)
    wrec = None
    if is_valid_id(run):
        try:
            wrec = fsio.read_json(layout.worker_record(run))
        except CocoplusError:
            wrec = None
    if isinstance(wrec, dict):
        order: list[str] = []
        for h in wrec.get("runtimes") or []:
            if isinstance(h, dict) and isinstance(h.get("session"), str) and h["session"] not in order:
                order.append(h["session"])
        if isinstance(wrec.get("session"), str) and wrec["session"] not in order:
            order.append(wrec["session"])
        recs = [r for cs in order if (r := registry.read_record(layout, cs)) is not None]
        return "worker", recs
    return "session", [registry.resolve(layout, run)]


def _goal_sessions(layout: Layout, goal: str) -> list[SessionRecord]:
    """The sessions of every worker launched under supervised goal `goal` (`supervision status` shows its id), in
    the order the workers were launched, each worker's in the order its runtimes ran."""
    from cocoplus.report import traces  # deferred: only a goal's replay names one

    found: list[tuple[str, str]] = []
    for wid, rec in timeline.worker_records(layout, []):
        started = rec.get("goal")
        if isinstance(started, str) and started and traces.goal_id(started) == goal:
            found.append((str(rec.get("created_at") or ""), wid))
    if not found:
        raise NotFound(f"no worker was launched under goal {goal!r} (supervision status shows the goal's id)")
    out: list[SessionRecord] = []
    for _at, wid in sorted(found):
        out.extend(_sessions_of(layout, wid)[1])
    return out


def _spend(layout: Layout, sessions: set[str]) -> list[tuple[str, float]]:
    problems: list[str] = []
    out = []
    for r in timeline.records(layout.spend_log, problems):
        if r.get("session") in sessions and isinstance(r.get("usd"), (int, float)) and isinstance(r.get("ts"), str):
            out.append((r["ts"], float(r["usd"])))
    return sorted(out)


def _boundaries(layout: Layout, limit: float, fraction: float) -> dict[str, dict[str, Any]]:
    """Where the cost budget under `limit` and `fraction` would have changed state: at each boundary the spend log
    records (the turn ends and stage ends that priced usage, each one's records marked with the same `measured_at`:
    a boundary that priced nothing leaves the spend as it was), the project's spend up to it (every session's, as
    the live check counts it) decided by `cost/enforce.py` `target_state`.  `{"reserve": {...}, "exhausted":
    {...}}`, each with the boundary's time and the spend there; a state never reached is missing."""
    out: dict[str, dict[str, Any]] = {}
    if limit <= 0:
        return out
    problems: list[str] = []
    spent = 0.0
    groups: dict[str, tuple[str, float]] = {}  # a boundary (its measure's stamp): (its last record's time, dollars)
    for r in timeline.records(layout.spend_log, problems):
        usd, ts = r.get("usd"), r.get("ts")
        if isinstance(usd, (int, float)) and not isinstance(usd, bool) and isinstance(ts, str):
            stamp = r.get("measured_at")
            key = stamp if isinstance(stamp, str) else ts  # older records: their own time
            last, total = groups.get(key, (ts, 0.0))
            groups[key] = (max(last, ts), total + float(usd))
    points: dict[str, float] = {}
    for at, usd in groups.values():
        points[at] = points.get(at, 0.0) + usd
    for ts in sorted(points):
        spent += points[ts]
        state = enforce.target_state(round(spent, 10), limit, fraction)
        if state != "normal" and state not in out:
            out[state] = {"at": ts, "spent_usd": round(spent, 6)}
        if state == "exhausted":
            out.setdefault("reserve", out[state])
            break
    return out


class _Replay:
    """One replay's state: the count as the hooks keep it, the decisions so far, where it stopped."""

    def __init__(self, policy: dict[str, float], budget: dict[str, dict[str, Any]] | None = None) -> None:
        self.cap, self.warn_at = max(1, int(policy["max_iterations"])), int(policy["iteration_warn_at"])
        self.ceiling, self.repeats = int(policy["project_max_iterations"]), int(policy["loop_guard_repeats"])
        self.limit, self.budget = float(policy["budget_limit"]), dict(budget or {})
        self.doc = new_iteration_budget(min(self.cap, MAX_COUNT), min(self.warn_at, MAX_COUNT))
        self.decisions: list[dict[str, Any]] = []
        self.stop: dict[str, Any] | None = None
        self.n = 0
        self.problems: list[str] = []
        self.times: dict[int, tuple[str, bool]] = {}  # a call's time, and whether it is estimated

    def session(self, layout: Layout, rec: SessionRecord) -> None:
        """Session `rec`'s calls, in order, until a stop."""
        cs = rec["id"]
        calls = timeline._calls(layout.session_calls(cs))
        if int(rec.get("calls_base") or 0):
            self.problems.append(f"{cs}: {rec.get('calls_base')} call(s) before its call log began are not replayed")
        try:
            before = bool(runtimes.get(str(rec.get("runtime"))).COUNTS_BEFORE_CALL)
        except KeyError:  # a runtime this version does not know: counted after the call
            before = False
        start, end = clock.parse_iso(rec.get("started_at")), _mtime(layout.session_calls(cs))
        known = timeline._matched(calls, timeline._transcript_calls(rec)) if calls else {}
        for i, fp in enumerate(calls):
            self.n += 1
            use = known.get(i)
            if use is not None and isinstance(use.get("ts"), str):
                self.times[self.n] = (use["ts"], False)
            elif start is not None and end is not None:
                self.times[self.n] = (clock.iso(start + (end - start) * (i + 1) / len(calls)), True)
            at: dict[str, Any] = {
                "call": self.n,
                "session": cs,
                "alias": rec.get("alias"),
                "runtime": rec.get("runtime"),
            }
            if self.budgeted(at):
                return
            if use is not None:  # the call as Claude Code's transcript names it
                at.update(tool=use["tool"], subject=use["subject"], tool_use_id=use["tool_use_id"])
            self.call(at, fp, calls[max(0, i + 1 - max(2 * self.repeats, 1)) : i + 1], before)
            if self.stop is not None:
                return

    def budgeted(self, at: dict[str, Any]) -> bool:
        """Whether the cost budget stopped the run before this call: a boundary before it exhausted the budget (the
        kill switch, for every session), after the reserve's notice (once) where one came first."""
        when = self.times.get(self.n)
        if when is None:
            return False
        reserve, exhausted = self.budget.get("reserve"), self.budget.get("exhausted")
        if reserve is not None and reserve["at"] < when[0]:
            self.decisions.append({**at, "call": self.n - 1, "decision": "reserve", "why": "cost budget reserve",
                                   "spent_usd": reserve["spent_usd"], "boundary_at": reserve["at"]})  # fmt: skip
            self.budget.pop("reserve")
        if exhausted is not None and exhausted["at"] < when[0]:
            self.stop = {**at, "call": self.n - 1, "why": "cost_budget", "limit_usd": self.limit,
                         "spent_usd": exhausted["spent_usd"], "boundary_at": exhausted["at"],
                         "refused_call": self.n}  # fmt: skip
            return True
        return False

    def call(self, at: dict[str, Any], fp: str, last: list[str], before: bool) -> None:
        """One call decided as the hooks decide it: counted (before or after it runs), then the loop guard over
        the call log's last fingerprints `last` (this call's included)."""
        n, out = self.n, iteration.Outcome()
        limit = iteration.limit_at(self.doc, self.cap, 1, out, None, self.ceiling)
        refused, warned_now, capped, capped_now = iteration.advance(self.doc, limit, self.warn_at, 0, before)
        if refused:  # counted before the call: the cap was reached by the call before, which was the last to run
            self.stop = {**at, "call": n - 1, "why": "iteration_cap", "refused_call": n}
            return
        if warned_now:
            self.decisions.append({**at, "decision": "checkpoint", "why": "iteration warn threshold",
                                   "consumed": self.doc["consumed"]})  # fmt: skip
        count = registry.run_length(fp, last)
        verdict = None if (capped and not before) else registry.loop_verdict(count, self.repeats)
        if verdict == "ask":
            self.decisions.append({**at, "decision": "checkpoint", "why": "repeated tool call", "repeats": count,
                                   "fingerprint": fp, "first_call": n - count + 1})  # fmt: skip
        if capped_now:
            by = "project_max_iterations" if out.ceiling else "max_iterations"
            self.stop = {**at, "why": "iteration_cap", "cap": self.ceiling if out.ceiling else self.cap, "by": by}
        elif verdict == "stop":
            self.stop = {**at, "why": "loop_guard", "repeats": count, "fingerprint": fp, "first_call": n - count + 1}


def replay(layout: Layout, run: str, policy_path: str) -> dict[str, Any]:
    """Run `run`'s recorded tool calls through the live decisions under the policy at `policy_path`."""
    policy, skipped, rules = load_policy_rules(policy_path)
    return replay_under(layout, run, policy, skipped, rules, policy_path)


def replay_under(
    layout: Layout,
    run: str,
    policy: dict[str, float],
    skipped: list[str] | None = None,
    rules: dict[str, list[str]] | None = None,
    where: str = "the policy",
) -> dict[str, Any]:
    """Run `run`'s recorded tool calls through the live decisions under `policy` (every replayed key; from
    `policy_of`), and its permission requests under `rules` where given; `skipped` names what the policy set that
    is not replayed, `where` the policy in what a rule's error says."""
    skipped = list(skipped or [])
    what, recs = _sessions_of(layout, run)
    r = _Replay(policy, _boundaries(layout, policy["budget_limit"], policy["budget_reserve_fraction"]))
    for rec in recs:
        r.session(layout, rec)
        if r.stop is not None:
            r.decisions.append({**r.stop, "decision": "stop"})
            break
    cs_ids = {rec["id"] for rec in recs}
    spend = _spend(layout, cs_ids)
    upto, estimated = None, False
    if r.stop is not None and (when := r.times.get(int(r.stop["call"]))) is not None:
        upto, estimated = round(sum(usd for ts, usd in spend if ts <= when[0]), 6), when[1]
        r.stop.update(ts=when[0], ts_estimated=when[1])  # when the call it stops at ran (the page draws it)
        r.decisions[-1].update(ts=when[0], ts_estimated=when[1])
    return timeline.clean(
        {
            "run": run,
            "kind": what,
            "sessions": [rec["id"] for rec in recs],
            "policy": {k: policy[k] for k in (*REPLAYED, *BUDGET, *STALL)},
            "not_replayed": skipped,
            "calls": r.n,
            "stopped_at": r.stop,
            "decisions": r.decisions,
            "cost_usd_to_stop": upto,
            "cost_usd_recorded": round(sum(usd for _ts, usd in spend), 6),
            "cost_estimated": estimated,
            "first_difference": _first_difference(layout, cs_ids, r.decisions),
            "permissions": None if rules is None else _requests(layout, where, rules, cs_ids, run, what),
            "stalls": _stalls(layout, cs_ids, policy["stall_threshold_s"], policy["stall_cooldown_s"]),
            "problems": r.problems,
        }
    )


def _stalls(layout: Layout, sessions: set[str], threshold: float, cooldown: float) -> dict[str, Any]:
    """Where the stall watchdog would have woken the brain: each time one of the run's sessions entered an attention
    state (its signal), how long it stayed there (until the session's next signal or step; still there at the end
    of the record: until its last activity or now), decided by `session/registry.py` `stall_due`, the
    watchdog's own check, at the moment the threshold was reached.  Beside them, the stalls the watcher recorded
    (`stall_detected` steps).  Live, the watchdog looks every `stall_watchdog_interval_s`, so it tells at most
    that much later than the moment given here, and only while supervision is on and the session in its scope."""
    problems: list[str] = []
    marks: dict[str, list[tuple[str, str, str | None]]] = {}  # session: [(ts, kind, attention state)]
    for r in timeline.records(layout.signals, problems):
        cs, ts = r.get("session"), r.get("ts")
        if cs in sessions and isinstance(ts, str):
            attention = r.get("kind") == "attention" and r.get("value") in vocab.ATTENTION_STATES
            state = str(r.get("value")) if attention else None
            marks.setdefault(str(cs), []).append((ts, "signal", state))
    recorded = []
    for r in timeline.records(layout.steps, problems):
        cs, ts = timeline._cs(r.get("session")), r.get("ts")
        if cs in sessions and isinstance(ts, str):
            marks.setdefault(str(cs), []).append((ts, "step", None))
            if r.get("event") == "stall_detected":
                recorded.append({"session": cs, "at": ts, "attention": r.get("attention"), "seconds": r.get("seconds")})
    out: list[dict[str, Any]] = []
    fired: dict[str, float] = {}
    for cs in sorted(marks):
        seq = sorted(marks[cs])
        for i, (ts, _kind, state) in enumerate(seq):
            if state is None:
                continue
            since = clock.parse_iso(ts)
            until = next((clock.parse_iso(t) for t, _k, _s in seq[i + 1 :] if t > ts), None)
            if since is None:
                continue
            at = since + threshold
            end = until if until is not None else max(at, since)
            key = f"{cs}|{state}"
            # Decided as the watchdog decides, at the last moment the state still held (`end`).
            if registry.stall_due(since, end, threshold, fired.get(key), cooldown):
                fired[key] = at
                out.append({"session": cs, "attention": state, "since": ts, "at": clock.iso(at),
                            "waited_s": None if until is None else round(until - since, 3)})  # fmt: skip
    return {"stalls": out, "recorded": recorded, "problems": problems}


# What a logged decision was, in the replay's words.
_LOGGED = {"allowed": "allow", "denied": "deny", "expired": "deny", "gone": "deny"}


def _requests(
    layout: Layout, policy_path: str, rules: dict[str, list[str]], sessions: set[str], run: str, what: str
) -> dict[str, Any]:
    """Every permission request of the run in the audit log, decided again by the rule engine under `rules`: what
    the rules would do (allow, ask, deny) beside what was recorded, and the counts."""
    allow = engine.rules_of(rules.get("allow") or [], f"{policy_path} [permissions] allow")
    deny = engine.rules_of(rules.get("deny") or [], f"{policy_path} [permissions] deny")
    problems: list[str] = []
    out: list[dict[str, Any]] = []
    counts = {"allow": 0, "ask": 0, "deny": 0, "not_replayed": 0}
    for r in timeline.records(layout.permission_log, problems):
        mine = r.get("session") in sessions or (what == "worker" and r.get("worker") == run)
        if not mine or r.get("behavior") not in _LOGGED:
            continue
        tool, text = str(r.get("tool") or ""), r.get("input")
        how = str(r.get("how") or "answer")
        item: dict[str, Any] = {
            "request": r.get("request"), "session": r.get("session"), "worker": r.get("worker"), "tool": tool,
            "subject": text, "recorded": _LOGGED[str(r["behavior"])], "recorded_by": how,
        }  # fmt: skip
        why_not = _not_replayable(text)
        if why_not is not None:
            item.update(replayed=None, why=why_not)
            counts["not_replayed"] += 1
        else:
            field = engine.PATTERN_FIELD.get(tool, "file_path")
            cwd, tree = r.get("cwd"), r.get("tree")  # the call's directory and worker tree, as the hook logged them
            decided = engine.decide(
                tool, {field: text}, allow=allow, deny=deny, project=layout.project,
                cwd=cwd if isinstance(cwd, str) else None, tree=tree if isinstance(tree, str) else None,
            )  # fmt: skip
            item.update(replayed=decided.behavior, why=decided.why, rule=decided.rule)
            counts[decided.behavior] += 1
        out.append(item)
    first = next((i for i in out if i["replayed"] is not None and i["recorded_by"] == "rule"
                  and i["replayed"] != i["recorded"]), None)  # fmt: skip
    return {"rules": rules, "requests": out, "counts": counts, "first_difference": first, "problems": problems}


def _not_replayable(text: Any) -> str | None:
    """Why a logged subject is not what the hook decided on (None: it is)."""
    if not isinstance(text, str) or not text:
        return "the log keeps no command or path for it"
    if len(text) >= permissions.MAX_SHOWN - 3 and text.endswith("..."):
        return f"the log keeps its first {permissions.MAX_SHOWN - 3} characters only"
    if "\\n" in text or "\\x" in text:
        return "the log wrote its control characters out, so it is not the command the hook read"
    return None


def _mtime(path: str) -> float | None:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return None


def _first_difference(layout: Layout, sessions: set[str], decisions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first of the recorded decisions (the steps logged for the run's sessions) and the replayed ones, in
    order, that is not the same on both sides (None: they agree)."""
    problems: list[str] = []
    live = []
    for r in timeline.records(layout.steps, problems):
        if r.get("event") in _RECORDED and timeline._cs(r.get("session")) in sessions:
            kind = "checkpoint" if r["event"] == "checkpoint_requested" else "stop"
            if kind == "stop" and r["event"] in ("session_stop", "worker_stop"):
                continue  # the stop's own record, beside the guard's step that made it
            live.append({"decision": kind, "why": str(r.get("reason") or r["event"])})
    replayed = [{"decision": d["decision"], "why": d["why"]} for d in decisions]
    for i in range(max(len(live), len(replayed))):
        a = live[i] if i < len(live) else None
        b = replayed[i] if i < len(replayed) else None
        if a is None or b is None or a["decision"] != b["decision"]:
            return {"index": i, "recorded": a, "replayed": decisions[i] if b is not None else None}
    return None
