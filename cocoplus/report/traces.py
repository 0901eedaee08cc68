"""The timeline (`report/timeline.py`) as OpenTelemetry spans, in plain data: what `telemetry/export.py` sends.

Standard library only, so that a worker's launch can name its span (`traceparent`) without loading the SDK.

The shape follows the GenAI semantic conventions (development status), with the names pinned in `SEMCONV`:

- one trace per supervised goal (an enable of supervision, to its finish or the next enable), or per worker run
  outside supervision, or per session no worker ran;
- under a goal, a root span `invoke_workflow cocoplus` and the brain's rounds (`cocoplus.round N`);
- an `invoke_agent WORKER` span per run of a worker in one runtime (`gen_ai.provider.name`, `gen_ai.agent.name` the
  worker); a failover or a hand-back starts the next one, linked to the one before;
- an `execute_tool TOOL` span per tool call, `gen_ai.tool.call.id` the runtime's tool-use id where the record has it
  (a Claude Code transcript: the same id as Claude Code's own spans);
- cocoplus's decisions (stops, steers, permissions, verdicts, limits, refusals, costs) as span events named
  `cocoplus.KIND` with `cocoplus.*` attributes, on the span of the run they concern (else the goal's).

Ids are derived from the records: a trace's from its goal (or run), a span's from its worker, runtime segment or
event id, so building the spans again gives the same ids, and an exporter that restarts skips what it sent.
A span is `ended` once its end is in the records; an open one (a run still going) has `end` None.

Prompts, tool inputs and outputs stay out unless `content` is asked for; every string is redacted either way
(`timeline.redact`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from cocoplus.core import clock
from cocoplus.core.paths import Layout
from cocoplus.report import timeline
from cocoplus.session import registry

# The attribute names, pinned (GenAI semantic conventions 1.37).  `OTEL_SEMCONV_STABILITY_OPT_IN` holding
# `gen_ai_latest_experimental` asks for the newest: then a tool call's input (when content is opted in) goes under
# `gen_ai.tool.call.arguments` rather than cocoplus's own `cocoplus.tool.input`.
SEMCONV_VERSION = "1.37.0"
SEMCONV_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGS_LATEST = "gen_ai.tool.call.arguments"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ERROR_TYPE = "error.type"
LATEST = "gen_ai_latest_experimental"

# gen_ai.provider.name of each runtime's models (the well-known values where there is one).
PROVIDERS = {
    "claude": "anthropic", "codex": "openai", "gemini": "gcp.gemini", "cursor": "cursor", "cortex": "snowflake",
}  # fmt: skip

# The fields of a record a decision's span event carries (values only: what a command was stays out).
_FIELDS = (
    "event", "reason", "principal", "operator", "decision", "state", "outcome", "tool", "repeats", "consumed", "cap",
    "scope", "value", "action", "model", "usd",
)  # fmt: skip
_CONTENT_FIELDS = ("text",)


def latest(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the newest GenAI names are asked for (`OTEL_SEMCONV_STABILITY_OPT_IN`, comma-separated)."""
    env = os.environ if environ is None else environ
    return LATEST in {p.strip() for p in env.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")}


def _hash(size: int, *parts: str) -> str:
    digest = hashlib.blake2b("\0".join(parts).encode(), digest_size=size).hexdigest()
    return digest if digest.strip("0") else "0" * (2 * size - 1) + "1"  # an all-zero id is invalid


def trace_id(key: str) -> str:
    """The 32-hex-digit trace id of a goal or run key."""
    return _hash(16, "cocoplus.trace", key)


def span_id(key: str) -> str:
    """The 16-hex-digit span id of a span key."""
    return _hash(8, "cocoplus.span", key)


def goal_key(started: str) -> str:
    return f"goal:{started}"


def goal_id(started: str) -> str:
    """A supervised goal's id, as `supervision status` shows it and `cocoplus replay` takes it: `g_` and the time
    supervision was enabled for it, its digits (`g_20261206T105440732Z`)."""
    return "g_" + "".join(c for c in started if c.isalnum())


def run_key(wid: str, created_at: Any) -> str:
    return f"run:{wid}:{created_at}"


def segments(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A worker's runs in each runtime it ran in, in order (its `runtimes`, or its one runtime since its creation)."""
    history = [dict(h) for h in rec.get("runtimes") or [] if isinstance(h, dict)]
    if not history:
        history = [{"runtime": rec.get("runtime"), "since": rec.get("created_at"), "session": rec.get("session")}]
    if history[-1].get("session") is None and rec.get("session"):
        history[-1]["session"] = rec.get("session")
    return history


def worker_span_key(rec: Mapping[str, Any], index: int) -> str:
    return f"worker:{rec.get('id')}:{rec.get('created_at')}:{index}"


def worker_trace_key(rec: Mapping[str, Any]) -> str:
    goal = rec.get("goal")
    return goal_key(goal) if isinstance(goal, str) and goal else run_key(str(rec.get("id")), rec.get("created_at"))


def traceparent(rec: Mapping[str, Any]) -> str:
    """The W3C `TRACEPARENT` of a worker's current run (its newest runtime segment), sampled (`01`): a runtime that
    reads it (Claude Code in `-p`) parents its own spans under the worker's `invoke_agent` span."""
    index = len(segments(rec)) - 1
    return f"00-{trace_id(worker_trace_key(rec))}-{span_id(worker_span_key(rec, index))}-01"


# -- building -----------------------------------------------------------------------------------------------------


def _span(trace: str, key: str, name: str, start: str | None, end: str | None, **attrs: Any) -> dict[str, Any]:
    return {
        "trace_id": trace_id(trace),
        "span_id": span_id(key),
        "parent_id": None,
        "name": name,
        "start": start,
        "end": end,
        "attributes": {k: v for k, v in attrs.items() if v is not None},
        "events": [],
        "links": [],
        "error": None,
    }


def _goals(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The supervision goals, from the steps: each `supervision_enabled` to its `supervision_finished` or the next."""
    goals: list[dict[str, Any]] = []
    for e in events:
        if e["source"] != "steps":
            continue
        name = e["detail"].get("event")
        if name == "supervision_enabled":
            if goals and goals[-1]["end"] is None:
                goals[-1]["end"] = e["ts"]
            start = e["detail"].get("goal") or e["ts"]
            goals.append({"key": goal_key(start), "start": e["ts"], "end": None, "hint": e["detail"].get("task_hint")})
        elif name == "supervision_finished" and goals and goals[-1]["end"] is None:
            goals[-1]["end"] = e["ts"]
    return goals


def _goal_at(goals: list[dict[str, Any]], ts: Any) -> dict[str, Any] | None:
    if not isinstance(ts, str):
        return None
    for g in reversed(goals):
        if g["start"] <= ts and (g["end"] is None or ts <= g["end"]):
            return g
    return None


def _workers(layout: Layout) -> list[dict[str, Any]]:
    return [rec for wid, rec in timeline.worker_records(layout, []) if rec.get("id") == wid]


def _decision(e: dict[str, Any], content: bool) -> dict[str, Any]:
    d = e["detail"]
    attrs: dict[str, Any] = {"cocoplus.kind": e["kind"], "cocoplus.event_id": e["id"], "cocoplus.source": e["source"]}
    for f in _FIELDS:
        v = d.get(f)
        if isinstance(v, (str, int, float, bool)):
            attrs[f"cocoplus.{f}"] = v
    if e["kind"] == "cost":
        tokens = d.get("tokens") if isinstance(d.get("tokens"), dict) else {}
        if isinstance(tokens.get("input"), int):
            attrs[INPUT_TOKENS] = tokens["input"]
        if isinstance(tokens.get("output"), int):
            attrs[OUTPUT_TOKENS] = tokens["output"]
        if isinstance(d.get("model"), str):
            attrs[REQUEST_MODEL] = d["model"]
    if content:
        attrs["cocoplus.text"] = e["text"]
    for who in ("worker", "session", "alias", "runtime"):
        if e.get(who):
            attrs[f"cocoplus.{who}"] = e[who]
    return {"name": f"cocoplus.{e['kind']}", "ts": e["ts"], "attributes": timeline.clean(attrs)}


def build(layout: Layout, *, content: bool = False, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every span of the project's timeline: `spans` (each with `trace_id`, `span_id`, `parent_id`, `name`, `start`,
    `end` (None while open), `attributes`, `events`, `links`, `error`) and `problems` (what could not be read).
    `content`: tool inputs and decisions' texts go in (redacted)."""
    read = timeline.timeline(layout)
    b = _Builder(read["events"], content, latest(environ))
    for rec in _workers(layout):
        b.worker(rec)
    b.ended = _ended_sessions(layout)
    for e in read["events"]:
        b.place(e)
    out = [_finish(s) for s in b.spans.values()]
    out.sort(key=lambda s: (s["start"] or "", s["span_id"]))
    return {"spans": out, "problems": read["problems"], "semconv": SEMCONV_VERSION, "latest": b.newest}


class _Builder:
    """The spans of one reading of the timeline, made goal by goal, worker by worker, then event by event."""

    def __init__(self, events: list[dict[str, Any]], content: bool, newest: bool) -> None:
        self.content = content
        self.newest = newest
        self.goals = _goals(events)
        self.spans: dict[str, dict[str, Any]] = {}
        self.by_session: dict[str, str] = {}  # cs_ id -> the span key of the worker segment it ran in
        self.by_worker: dict[str, list[tuple[str, str]]] = {}  # worker -> [(since, span key)]
        self.ended: dict[str, str] = {}
        for g in self.goals:
            attrs = {OPERATION: "invoke_workflow", "cocoplus.goal": g["start"]}
            s = _span(g["key"], g["key"], "invoke_workflow cocoplus", g["start"], g["end"], **attrs)
            if content and g.get("hint"):
                s["attributes"]["cocoplus.goal.text"] = timeline.redact(str(g["hint"]))
            self.spans[g["key"]] = s

    def worker(self, rec: dict[str, Any]) -> None:
        """A worker's `invoke_agent` span for each runtime it ran in, a failover's link to the one before."""
        wid = str(rec["id"])
        goal = None
        if not rec.get("goal") and not rec.get("unsupervised"):
            goal = _goal_at(self.goals, rec.get("created_at"))
        trace = goal["key"] if goal else worker_trace_key(rec)
        parent = self.spans.get(trace)
        segs = segments(rec)
        for i, seg in enumerate(segs):
            key = worker_span_key(rec, i)
            runtime = seg.get("runtime")
            start = seg.get("since") or rec.get("created_at")
            if i + 1 < len(segs):
                end = segs[i + 1].get("since")
            else:
                end = rec.get("ended_at") if rec.get("state") not in ("running", "queued", "waiting") else None
            s = _span(
                trace, key, f"invoke_agent {wid}", start, end,
                **{OPERATION: "invoke_agent", PROVIDER: PROVIDERS.get(str(runtime), str(runtime)), AGENT_NAME: wid,
                   AGENT_ID: f"{wid}:{i}", "cocoplus.worker": wid, "cocoplus.runtime": runtime,
                   "cocoplus.session": seg.get("session"), "cocoplus.alias": rec.get("alias")},
            )  # fmt: skip
            if parent is not None:
                s["parent_id"] = parent["span_id"]
            if i == len(segs) - 1 and end is not None:
                _ended(s, rec)
            if i:
                s["links"].append(_link(self.spans[worker_span_key(rec, i - 1)], segs[i - 1], seg))
            self.spans[key] = s
            if isinstance(seg.get("session"), str):
                self.by_session[seg["session"]] = key
            self.by_worker.setdefault(wid, []).append((str(start or ""), key))

    def owner(self, e: dict[str, Any]) -> str | None:
        """The span key an event belongs to: its session's worker run, its worker's run at that time, its own
        session's span (made here for a session no worker ran), else the goal of its time."""
        if e.get("session") in self.by_session:
            return self.by_session[e["session"]]
        if e.get("worker") in self.by_worker:
            runs = self.by_worker[e["worker"]]
            mine = [k for since, k in runs if since <= (e["ts"] or "")]
            return mine[-1] if mine else runs[0][1]
        if e.get("session") and e["source"] in ("calls", "edits", "spend"):
            return _session_span(self.spans, e, self.goals, self.ended)
        g = _goal_at(self.goals, e["ts"])
        return g["key"] if g else None

    def place(self, e: dict[str, Any]) -> None:
        if e["source"] == "rounds" and e["detail"].get("event") in ("round_started", "round_finished"):
            self.round(e)
            return
        if e["kind"] == "worker":
            return  # a worker's launch, start and end are its span's own
        where = self.owner(e)
        if where is None:
            return
        host = self.spans[where]
        if e["kind"] == "tool":
            self.tool(e, host)
        else:
            host["events"].append(_decision(e, self.content))

    def round(self, e: dict[str, Any]) -> None:
        """A brain's round: a span under its goal's, from its start to its end."""
        d = e["detail"]
        g = _goal_at(self.goals, e["ts"])
        if g is None:
            return
        n = d.get("number") or d.get("round")
        key = f"round:{g['key']}:{n}"
        if key not in self.spans:  # (a round's start and end in the same millisecond may come in either order)
            s = _span(g["key"], key, f"cocoplus.round {n}", e["ts"], None, **{"cocoplus.round": n})
            s["parent_id"] = self.spans[g["key"]]["span_id"]
            self.spans[key] = s
        s = self.spans[key]
        if d["event"] == "round_started":
            s["start"] = e["ts"]
            s["attributes"]["cocoplus.round.source"] = d.get("source")
        else:
            s["end"] = e["ts"]
            s["attributes"]["cocoplus.outcome"] = d.get("outcome")
            if d.get("error"):
                s["error"] = timeline.redact(str(d["error"]))

    def tool(self, e: dict[str, Any], host: dict[str, Any]) -> None:
        """A tool call: an `execute_tool` span under its run's, the runtime's tool-use id where known."""
        d = e["detail"]
        key = f"tool:{e['id']}"
        tool = str(d.get("tool") or "tool")
        end = e["ts"]
        began = clock.parse_iso(e["ts"])
        if began is not None and isinstance(d.get("duration_s"), (int, float)):
            end = clock.iso(began + float(d["duration_s"]))
        elif d.get("tool_use_id") and d.get("error") is None and host["end"] is None:
            end = None  # its result is not in the transcript yet: it ends when it is, or when its run does
        s = _span(
            key, key, f"execute_tool {tool}", e["ts"], end,
            **{OPERATION: "execute_tool", TOOL_NAME: tool, TOOL_CALL_ID: d.get("tool_use_id"),
               "cocoplus.call": d.get("call"), "cocoplus.run": d.get("run"),
               "cocoplus.ts_estimated": bool(d.get("ts_estimated")), "cocoplus.event_id": e["id"]},
        )  # fmt: skip
        s["trace_id"] = host["trace_id"]
        s["parent_id"] = host["span_id"]
        if d.get("error") is True:
            s["error"] = "tool call failed"
            s["attributes"][ERROR_TYPE] = "tool_error"
        if self.content and d.get("subject"):
            name = TOOL_ARGS_LATEST if self.newest else "cocoplus.tool.input"
            s["attributes"][name] = timeline.redact(str(d["subject"]))
        self.spans[key] = s


def _ended(s: dict[str, Any], rec: Mapping[str, Any]) -> None:
    """A worker's last run, ended: why, and an error status for a non-zero exit."""
    if rec.get("reason"):
        s["attributes"]["cocoplus.reason"] = timeline.redact(str(rec["reason"]))
    code = rec["exit"].get("code") if isinstance(rec.get("exit"), dict) else None
    if isinstance(code, int) and code != 0:
        s["error"] = f"exit code {code}"


def _link(prev: dict[str, Any], before: Mapping[str, Any], seg: Mapping[str, Any]) -> dict[str, Any]:
    """The link of a worker's run in a new runtime to its run before: a failover or a hand-back."""
    back = seg.get("reason") == "handed back"
    return {
        "trace_id": prev["trace_id"],
        "span_id": prev["span_id"],
        "attributes": {
            "cocoplus.link": "hand-back" if back else "failover",
            "cocoplus.from_runtime": str(before.get("runtime")),
            "cocoplus.to_runtime": str(seg.get("runtime")),
            "cocoplus.reason": timeline.redact(str(seg.get("reason") or "")),
        },
    }


def _session_span(
    spans: dict[str, dict[str, Any]], e: dict[str, Any], goals: list[dict[str, Any]], ended: dict[str, str]
) -> str:
    """The span of a session no worker ran (an interactive one): a run of its own, in its goal's trace if any."""
    key = f"session:{e['session']}"
    if key not in spans:
        g = _goal_at(goals, e["ts"])
        trace = g["key"] if g else f"session:{e['session']}"
        name = e.get("alias") or e["session"]
        runtime = e.get("runtime")
        s = _span(
            trace, key, f"invoke_agent {name}", e["ts"], ended.get(e["session"]),
            **{OPERATION: "invoke_agent", PROVIDER: PROVIDERS.get(str(runtime), str(runtime)), AGENT_NAME: name,
               "cocoplus.session": e["session"], "cocoplus.runtime": runtime},
        )  # fmt: skip
        if g is not None:
            s["parent_id"] = spans[g["key"]]["span_id"]
        spans[key] = s
    return key


def _ended_sessions(layout: Layout) -> dict[str, str]:
    """Each ended session's last event time (the end of its span when no worker ran it)."""
    records, _trouble = registry.list_sessions(layout, settle=False)
    return {
        r["id"]: str(r.get("last_event_at") or "")
        for r in records
        if r.get("state") == "ended" and r.get("last_event_at")
    }


def _finish(s: dict[str, Any]) -> dict[str, Any]:
    s["attributes"] = timeline.clean({k: v for k, v in s["attributes"].items() if v is not None})
    if s["start"] is None and s["end"] is not None:
        s["start"] = s["end"]
    return s
