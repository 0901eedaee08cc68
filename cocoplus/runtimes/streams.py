"""A headless runtime's output as a transcript: `cocoplus workers logs` and dispatch's check of a resume.

A headless run prints one JSON event a line (`claude -p --output-format
stream-json`, `codex exec --json`, `gemini -p --output-format stream-json`),
each runtime in its own format; its adapter's `stream_entries(event)` turns
one event into transcript entries (the helpers below are what they share).
This module splits the output into lines, hands each JSON line to the
adapter of the run's runtime, keeps the other lines (what the runtime wrote
to stderr, the worker runner's `[cocoplus]` lines) as they are, joins text
that arrived in pieces, and names each tool result after its call.

An entry is a dict: `kind`, `text`, and where it applies `tool` (the tool's
name) and `error` (true for a failed tool call or run).  Kinds:

    session   the run started (its session id, its model)
    text      the model's text
    tool      a tool call: the tool and what it was asked (one line)
    result    that call's result (`error`: it failed)
    warning   something the runtime reported and went on
    error     something that failed the run, in the runtime's own words
    end       the run's end: how it finished (`error`: it failed, and why)
    output    a line that is not an event (stderr, a crash)
    cocoplus  a line the worker runner wrote (the run's command, how it ended)

`outcome` reads a run's first entries the way `cocoplus dispatch` needs:
whether the run is under way, or failed and why.

Standard library only; nothing here runs on the hook path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cocoplus.runtimes import registry

RUNNER_MARK = "[cocoplus] "  # the start of every line the worker runner writes into a worker's log
MAX_ARG = 400  # a tool call's arguments shown on one line, at most this many characters
# Argument names that say what a tool call does, in order of preference, where a runtime's tools use them.
SAYS = ("command", "cmd", "file_path", "path", "absolute_path", "pattern", "query", "url", "prompt", "description")
STARTED = ("text", "tool", "result")  # an entry of these kinds shows the model answered: the run is under way


def entry(kind: str, text: str, **fields: Any) -> dict[str, Any]:
    """One transcript entry (for the adapters); fields that are None are left out."""
    out: dict[str, Any] = {"kind": kind, "text": text}
    out.update((k, v) for k, v in fields.items() if v is not None and v is not False)
    return out


def mapping(event: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`event[name]` where it is an object, else an empty one."""
    value = event.get(name)
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """Text from a string, or from a list of content blocks (`{"type": "text", "text": ...}`), else JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [b.get("text") for b in value if isinstance(b, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def arguments(value: Any) -> str:
    """What a tool call was asked, on one line: its command or path where it has one, else its arguments."""
    if isinstance(value, Mapping):
        for name in SAYS:
            said = value.get(name)
            if isinstance(said, str) and said.strip():
                return _cut(said)
        value = dict(value)
    if isinstance(value, str):
        return _cut(value)
    return _cut(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_ARG else text[: MAX_ARG - 3] + "..."


def transcript(runtime: str | None, text: str) -> list[dict[str, Any]]:
    """The entries of a run's output `text` (whole lines) of `runtime` (None or unknown: every line as output)."""
    parse: Callable[[dict[str, Any]], list[dict[str, Any]] | None] | None = None
    if registry.known(runtime):
        parse = registry.get(str(runtime)).stream_entries
    out: list[dict[str, Any]] = []
    tools: dict[str, str] = {}  # a call's id -> its tool, so its result names the tool too
    for raw in text.split("\n"):  # not splitlines(): a CR, NEL or line separator inside a line is the line's own
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if line.startswith(RUNNER_MARK):
            out.append(entry("cocoplus", line[len(RUNNER_MARK) :]))
            other = run_runtime(line[len(RUNNER_MARK) :])
            if other is not None:  # a run in another runtime (a failover, or its work handed back) starts here
                parse = registry.get(other).stream_entries
                tools = {}
            continue
        event = _event(line) if parse is not None else None
        if parse is None or event is None:
            out.append(entry("output", line))
            continue
        try:
            got = parse(event)
        except (KeyError, TypeError, ValueError, AttributeError):
            got = None  # an event of a shape this adapter does not know: shown as it came
        if got is None:
            out.append(entry("output", line))
            continue
        for e in got:
            _add(out, tools, e)
    return out


def run_runtime(text: str) -> str | None:
    """The runtime of the run whose start the runner's line `text` records (`TIME run N: COMMAND`), by the name
    of the program its command starts (or of the script its interpreter runs); None for another line."""
    words = text.split(" ", 3)
    if len(words) < 4 or words[1] != "run" or not words[2].endswith(":"):
        return None
    commands = {registry.get(n).COMMAND: n for n in registry.names()}
    for word in words[3].split(" ")[:2]:
        name = commands.get(word.rsplit("/", 1)[-1])
        if name is not None:
            return name
    return None


def _event(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _add(out: list[dict[str, Any]], tools: dict[str, str], e: dict[str, Any]) -> None:
    call = e.pop("call", None)
    if e["kind"] == "tool" and isinstance(call, str) and e.get("tool"):
        tools[call] = e["tool"]
    elif e["kind"] == "result" and isinstance(call, str) and not e.get("tool") and call in tools:
        e["tool"] = tools[call]
    if e.pop("delta", False) and out and out[-1]["kind"] == "text" and e["kind"] == "text":
        out[-1]["text"] += e["text"]  # the rest of a text that arrives in pieces
        return
    if e["kind"] == "text" and not e["text"].strip():
        return
    out.append(e)


def outcome(entries: Iterable[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """("started", None) once the model answered, ("failed", why) once the run said it failed, else (None, None)."""
    for e in entries:
        if e["kind"] == "end":
            return ("failed", str(e["text"])) if e.get("error") else ("started", None)
        if e["kind"] in STARTED:
            return "started", None
    return None, None


def failure(entries: list[dict[str, Any]]) -> str | None:
    """Why a run failed, in its runtime's words: its failed end, else its last error, else (when it printed no
    event of its work) its last lines of output."""
    for e in reversed(entries):
        if e["kind"] == "end" and e.get("error"):
            return str(e["text"])
    for e in reversed(entries):
        if e["kind"] == "error":
            return str(e["text"])
    if any(e["kind"] in (*STARTED, "end") for e in entries):
        return None  # it got going: lines beside its events (warnings on stderr) are not why it ended
    said = [str(e["text"]).strip() for e in entries if e["kind"] == "output" and str(e["text"]).strip()]
    if said:
        last = " | ".join(said[-2:])
        return last if len(last) <= 500 else last[:497] + "..."
    return None
