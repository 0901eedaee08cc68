"""What each hook event does, for every runtime: the steps from the entry to an answer, the kill switch first
(`decide_order`), and the `Hook` every handler gets.

Called by `cocoplus.hook.entry` once it knows there is work.  What differs
between runtimes (how an answer is written, where the session id is) comes
from the runtime's adapter (`cocoplus.runtimes.adapters`).  The other
events' handlers live in their own modules, imported only when their event
is handled (`HANDLERS`): `tools` (the events around every tool call: the
kill switch, the count and its cap, the loop guard), `prompt` (prompts),
`start` (session start), `turns` (turn end, session end, notifications),
`permission` (permission requests); and what a tool call answers when one of
cocoplus' own guards trips is in `tripped`, imported only then.  They get the
`Hook` (defined here) as their argument and import nothing from this module
but its type, so the tool-call events load two hook modules besides the entry.  Standard library only.  The
failure policy (reference/hooks-protocols.md 6.2): the kill switch is
checked before anything that can fail; any of cocoplus' own failures is
logged to `.cocoplus/logs/hook.log` as one line and lets the tool run, except
that a damaged iteration budget stops the agent (fail closed); nothing ever
hangs (every lock has a finite timeout, and every wait ends within the
installed timeout: `timeouts.wait_for`).
"""

from __future__ import annotations

import os
import sys
import time

from cocoplus.core import clock, fsio, jsonfast
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Budget, set_process_budget
from cocoplus.core.paths import Layout, walk_up
from cocoplus.runtimes import answers
from cocoplus.runtimes import registry as runtimes
from cocoplus.session import killswitch, registry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from collections.abc import Callable
    from typing import Any

    from cocoplus.core.shapes import SessionRecord
    from cocoplus.runtimes.protocol import Adapter

    Answer = tuple[dict[str, Any] | None, int]
    Step = Callable[["Hook"], int | None]


# When this process began, near enough: the runner is imported a few
# milliseconds after start, and the hook budget keeps a margin of seconds.
STARTED = time.monotonic()

# The hook timeout `cocoplus install` writes by default ([hooks] timeout_s):
# every lock wait draws from a budget below it (or below the installed
# timeout, if that is shorter) until the config is read.
DEFAULT_HOOK_TIMEOUT_S = 10
# The kinds of event the kill switch answers with a block (`block`).
BLOCKING = ("pre_tool", "permission")
# Whether this process has written its answer (last_resort in entry.py must not write a second one).
ANSWERED = False
# What a payload says happened, in the words a session's attention signal carries (the first one found).
DETAILS = ("notification_type", "error", "message", "last_assistant_message", "tool_name")


class Hook:
    """One hook invocation: where, who, what was sent, and what to say back.

    Made from what the entry found: `state` the project's `.cocoplus/` (None:
    to be found from the payload), `guards` the other state directories whose
    stops apply, `problem` why some place cannot be trusted (every tool is then
    blocked; see `entry.places`), `installed` the command's `--timeout` (the
    seconds its runtime gives it; None from an older command).  The steps
    `decide_order` lists add the payload, the adapter and the project; then
    the event's handler gets it.
    """

    layout: Layout  # the project's state directory, where this hook counts and records (known after the steps)
    adapter: Adapter  # the runtime that answers (known after the steps)
    runtime: str  # its name
    event_name: str  # the event as the payload names it, else as the command does

    def __init__(
        self,
        event: str,
        kind: str,
        runtime: str | None,
        data: bytes,
        state: str | None,
        directory: str | None,
        environ: Any,
        rest: list[str],
        guards: list[str] | None = None,
        problem: str | None = None,
        installed: float | None = None,
    ) -> None:
        self.event = event
        self.kind = kind
        self.given = runtime  # `--runtime` as given
        self.named = runtime if runtimes.known(runtime) else None  # it, when cocoplus knows it
        self.data = data
        self.rest = rest
        self.directory = directory
        self.environ = environ
        # Every state directory whose stops apply to this hook: the project's first (where it counts and
        # records), then the others the entry found (an override only adds one: entry.places).
        self.guards = [Layout(g) for g in guards or ()]
        self.places = list(self.guards)
        self.state_known = state is not None
        if state is not None:
            self.at(state)
        self.place_problem = problem
        self.payload: dict[str, Any] = {}
        self.bad_payload: str | None = None
        self.host: str | None = None  # the runtime whose hooks these are, when another one runs them
        self._values: dict[str, dict[str, Any]] | None = None
        self.after: list[Any] = []  # callbacks run once the answer reached stdout
        self.record: SessionRecord | None = None
        self.stopped: str | None = None  # what cocoplus' own stop of this call stopped (`tripped.stop_own`)
        # While the cap is each session's: this call in its call log, and its own count with it, both taken under
        # the count's lock (`tools._shared`), so that a session's racing calls are counted in order.
        self.logged_call: tuple[int, list[str]] | None = None
        self.own: int | None = None
        self._installed = installed  # the command's --timeout (None: an older command, see installed_s)
        self.started = STARTED  # when this process began (the waits of the handlers end in time from it)

    def at(self, state: str) -> None:
        self.layout = Layout(state)
        self.places = [self.layout, *self.guards]

    def speaker(self, adapter: Adapter, host: str | None = None) -> None:
        self.adapter, self.host, self.runtime = adapter, host, adapter.NAME

    # -- the steps (`decide_order`) ------------------------------------------------------------
    def kill_switch(self) -> int | None:
        """A stop in any place, or a place that cannot be trusted, blocks the tool: in the runtime's own words, or
        with exit 2 and the reason on stderr when no runtime is named."""
        reason = killswitch.anywhere(self.places, self.place_problem)
        if reason is None:
            return None
        if self.named is None:
            sys.stderr.write(reason + "\n")
            return 2
        emit(block(runtimes.resolve(self.named, self.environ)[0], self.kind, self.event, reason))
        return 0

    def parse(self) -> None:
        self.payload, self.bad_payload = parse_payload(self.data, self.rest)
        sent = self.payload.get("hook_event_name")
        self.event_name = sent if isinstance(sent, str) and sent else self.event
        if self.named is not None:
            self.speaker(*runtimes.resolve(self.named, self.environ))

    def locate(self) -> int | None:
        # With no runtime named, the one the payload's shape says names the directories to search from.
        by = self.adapter if self.named is not None else runtimes.detect(self.event, self.payload, self.environ)
        state = locate(self.payload, by, self.directory)
        if state is None:
            return 0  # not a cocoplus project: do nothing
        self.at(state)
        return None

    def unknown_runtime(self) -> int | None:
        """No adapter: an unknown runtime, or none named and an unreadable payload, is blocked with exit 2 and the
        reason on stderr (which blocks everywhere) when stopped; an unknown runtime else does nothing."""
        if self.given is not None or self.bad_payload:
            sentence = killswitch.anywhere(self.places, self.place_problem) if self.kind in BLOCKING else None
            if sentence is not None:
                sys.stderr.write(sentence + "\n")
                why = self.bad_payload or "unknown runtime"
                log_line(self.layout, f"{self.given} {self.event}: {why}; blocked with exit 2: {sentence}")
                return 2
            if self.given is not None:
                log_line(self.layout, f"unknown runtime {self.given!r} for event {self.event!r}; nothing done")
                return 0
        self.speaker(runtimes.detect(self.event, self.payload, self.environ))
        if self.kind == "other":
            self.kind = runtimes.kind(self.adapter, self.event)
        return None

    def step_aside(self) -> int | None:
        """This runtime also runs another runtime's hooks, and its own are wired too: they do the work.

        Only the kill switch is repeated here (a second deny is harmless);
        nothing is counted, steered or registered twice.
        """
        if self.kind == "other" or self.host is not None:
            self.kind = runtimes.kind(self.adapter, self.event)
        if self.host is None or not runtimes.wired(self.adapter, self.layout.project):
            return None
        reason = killswitch.anywhere(self.places, self.place_problem) if self.kind in BLOCKING else None
        if reason is not None:
            emit(block(self.adapter, self.kind, self.event, reason))
        return 0

    def handle(self) -> int:
        """The handler of the event's kind; a failure of cocoplus' own is logged, and a stop still blocks."""
        if self.bad_payload:
            self.log(self.bad_payload)
        if self.place_problem:
            self.log(self.place_problem)
        try:
            answer, code = handler(self.kind)(self)
        except CocoplusError as exc:
            self.log(f"{self.kind}: {exc}")
            answer, code = None, 0
            sentence = killswitch.anywhere(self.places, self.place_problem) if self.kind in BLOCKING else None
            if sentence is None and self.adapter.FAILS_CLOSED and self.kind in BLOCKING:
                sentence = (
                    f"cocoplus: this call could not be checked ({exc}); the tool is refused ({self.adapter.TITLE} "
                    "fails closed)."
                )
            if sentence is not None:
                answer = block(self.adapter, self.kind, self.event_name, sentence)
        if emit(answer):
            for fn in self.after:
                try:
                    fn()
                except CocoplusError as exc:
                    self.log(f"after answering: {exc}")
        return code

    # -- helpers -------------------------------------------------------------
    @property
    def values(self) -> dict[str, dict[str, Any]]:
        if self._values is None:
            from cocoplus.session import values as hook_values  # deferred: only the events that read a value

            self._values, problem = hook_values.for_hook(self.layout, self.environ)
            # Every lock wait stays under the timeout a hook without a wait has ([hooks] timeout_s), and under
            # the installed one (the configuration may have changed since `install`).
            set_process_budget(Budget.for_hook(self.base_s, started=STARTED))
            if problem:
                self.log(f"config: {problem} (using the last good values)")
        return self._values

    @property
    def installed_s(self) -> float:
        """The timeout this hook's runtime kills it at: the command's `--timeout`; for a command an older release
        wrote, the timeout `install` wrote beside it; where neither says, what `install` writes now."""
        if self._installed is None:
            from cocoplus.hook import timeouts  # deferred: only a command an older release wrote has no --timeout

            # The runtime whose hook files hold this command (the one `--runtime` names, else the one answering).
            by = runtimes.get(self.named) if self.named is not None else self.adapter
            self._installed = timeouts.of_older_command(
                by, self.event, self.kind, self.layout.project, lambda: self.values
            )
        return self._installed

    @property
    def base_s(self) -> float:
        """What this hook needs besides a wait: `[hooks] timeout_s`, within the installed timeout."""
        return min(float(self.values["hooks"]["timeout_s"]), self.installed_s)

    @property
    def timeout(self) -> float:
        return float(self.values["hooks"]["lock_timeout_s"])

    @property
    def session_id(self) -> str | None:
        sid: str | None = self.adapter.session_id(self.payload)
        return sid

    def log(self, message: str) -> None:
        log_line(self.layout, f"{self.runtime} {self.event} session={self.session_id}: {message}")

    def touch_session(
        self,
        change: Callable[[SessionRecord], object] | None = None,
        info: dict[str, Any] | None = None,
        alias: str | None = None,
    ) -> SessionRecord | None:
        """Record this event on the session (registering it if new)."""
        sid = self.session_id
        if sid is None:
            return None
        tp = self.adapter.transcript(self.payload)
        if tp:
            info = {"transcript_path": tp, **(info or {})}
        try:
            rec, _before = registry.ensure(
                self.layout, self.runtime, sid, event=self.event_name, change=change, info=info, alias=alias
            )
        except CocoplusError as exc:
            self.log(f"session record not updated: {exc}")
            return None
        self.record = rec
        return rec

    def signal(self, kind: str, value: str | None = None, **extra: Any) -> None:
        if self.record is None:
            return
        try:
            registry.append_signal(self.layout, self.record, kind, value, event=self.event_name, **extra)
        except CocoplusError as exc:
            self.log(f"signal not recorded: {exc}")

    def step(self, event: str, **fields: Any) -> None:
        from cocoplus.session import events  # deferred: most tool calls log no step

        try:
            events.log_step(
                self.layout, event, timeout=self.timeout, runtime=self.runtime, session=self.session_id, **fields
            )
        except CocoplusError as exc:
            self.log(f"steps.jsonl not updated ({event}): {exc}")

    def stop_sentence(self) -> str | None:
        """Why this hook's tools are blocked, or None: a place that cannot be trusted, AGENT_STOP or this session's
        own stop in any place (the project's first)."""
        if self.place_problem is not None:
            return f"cocoplus: {self.place_problem}."
        for layout in self.places:
            reason = killswitch.kill_switch_sentence(layout) or self._session_stop(layout)
            if reason is not None:
                return reason
        return None

    def _session_stop(self, layout: Layout) -> str | None:
        """Why this session's tools are blocked by its own stop (`session stop --session`), or None.

        The session comes from the payload, else from the runtime's session variables in the hook's environment.
        An event that names no session cannot be matched to a session stop: its tool runs (AGENT_STOP is what
        stops every session), and the hook log says so."""
        try:  # `stops.any_present`, without importing it while no session is stopped anywhere (the usual case)
            os.lstat(layout.session_stops_dir)
        except FileNotFoundError:
            return None
        except OSError:
            pass  # cannot tell: looked into below
        from cocoplus.session import stops  # deferred: only when a session stop may exist

        sid = self.session_id or next((v for v in (self.environ.get(n) for n in self.adapter.SESSION_ENV) if v), None)
        if sid is None:
            self.log("a session stop exists but this event names no session, so it cannot apply here; the tool runs")
            return None
        return stops.sentence(layout, registry.cs_id_for(sid))

    def stop_agent(self, reason: str, *, source: str, state: str = "exited") -> bool:
        """Create AGENT_STOP (keeping an operator's own) and set the run state, under the kill-switch lock."""
        try:
            result = killswitch.auto_stop(self.layout, reason, source=source, state=state, timeout=self.timeout)
        except CocoplusError as exc:
            self.log(f"could not create AGENT_STOP: {exc}")
            return False
        for problem in result["problems"]:
            self.log(problem)
        self.touch_session(lambda r: r.update({"state": state, "exit_reason": reason}))  # the stopped session says so
        return bool(result["created"])

    def attention(
        self, rec: SessionRecord, attention: str | None, detail: str | None = None, request: str | None = None
    ) -> None:
        """Set the session's attention; a change is also a signal (`request`: the permission request it waits on)."""
        said = answers.first_text(self.payload, *DETAILS)
        detail = detail or (said[:300] if said else None)
        if registry.attend(rec, attention, detail):
            self.after.append(lambda: self.signal("attention", attention, detail=detail, request=request))


def decide_order(kind: str, runtime_known: bool, state_known: bool, problem: bool) -> list[Step]:
    """The steps one hook event takes, in order (`Hook` methods, each ending the event with an exit code or returning
    None to go on), decided from what is known before anything is read: the kill switch before anything that can fail.

    A pre-tool or permission event with a place that cannot be trusted is
    blocked, and nothing else happens; a pre-tool event whose runtime and
    project are known checks every place's kill switch before its payload is
    parsed (a garbage payload must not open the gate).  Every later step that
    can answer checks the kill switch again: the unknown runtime's (exit 2),
    the step aside's, the handler's own checks and its failure's.
    """
    if problem and kind in BLOCKING:
        return [Hook.kill_switch]
    order: list[Step] = [Hook.kill_switch] if kind == "pre_tool" and runtime_known and state_known else []
    order.append(Hook.parse)
    if not state_known:
        order.append(Hook.locate)
    order.append(Hook.step_aside if runtime_known else Hook.unknown_runtime)
    order.append(Hook.handle)
    return order


def log_line(layout: Layout, message: str) -> None:
    """One line in `.cocoplus/logs/hook.log` (`fsio.append_line`: no symlinks, rotated, a loss noted); never raises."""
    fsio.append_line(layout.hook_log, f"{clock.iso()} {message}")


# -- the tool-call handlers ------------------------------------------------------------------


def on_other(h: Hook) -> Answer:
    if h.kind == "other":
        h.log(f"event {h.event!r} is not one cocoplus handles; nothing done")
    h.touch_session()
    return None, 0


# Per kind of event, the module (in cocoplus.hook) and the function that handle it: a module other than this one is
# imported only when its event is handled (`handler`), so the events around every tool call load none of them.
HANDLERS = {
    "pre_tool": ("tools", "on_pre_tool"),
    "post_tool": ("tools", "on_post_tool"),
    "post_tool_failure": ("tools", "on_post_tool"),
    "prompt": ("prompt", "on_prompt"),
    "session_start": ("start", "on_session_start"),
    "stop": ("turns", "on_stop"),
    "stop_failure": ("turns", "on_stop_failure"),
    "permission": ("permission", "on_permission"),
    "notification": ("turns", "on_notification"),
    "session_end": ("turns", "on_session_end"),
    "subagent_stop": ("runner", "on_other"),
    "other": ("runner", "on_other"),
}


def handler(kind: str) -> Any:
    """The function that handles events of `kind` (see `HANDLERS`), its module imported now."""
    home, name = HANDLERS.get(kind, HANDLERS["other"])
    if home == "tools":
        from cocoplus.hook import tools  # deferred: only the events around a tool call load their handlers

        return getattr(tools, name)
    if home == "start":
        from cocoplus.hook import start  # deferred: only a session start loads its handler

        return getattr(start, name)
    if home == "turns":
        from cocoplus.hook import turns  # deferred: only a turn end, a session end or a notification loads them

        return getattr(turns, name)
    if home == "permission":
        from cocoplus.hook import permission  # deferred: only a permission request loads its handler

        return getattr(permission, name)
    if home == "prompt":
        from cocoplus.hook import prompt  # deferred: only a prompt loads its handler

        return getattr(prompt, name)
    return globals()[name]


# -- reading the event and answering ---------------------------------------------------------------


def parse_payload(data: bytes, rest: list[str]) -> tuple[dict[str, Any], str | None]:
    """The payload object, and a problem to log if stdin was not one."""
    candidates = [data] + [a.encode("utf-8", "surrogatepass") for a in rest if a.lstrip().startswith("{")]
    problem = None
    for raw in candidates:
        if not raw.strip():
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            problem = f"stdin is not JSON ({len(raw)} bytes; {str(exc)[:80]})"
            continue
        if isinstance(obj, dict):
            return obj, None
        problem = f"stdin is JSON but not an object ({type(obj).__name__})"
    return {}, problem


def locate(payload: dict[str, Any], adapter: Adapter | None, directory: str | None = None) -> str | None:
    """`.cocoplus/` above a directory the payload names, else above the working directory.

    `directory` (a `--dir` written into the hook command by an older
    `cocoplus install`) comes last: the project the agent works in decides.
    """
    starts: list[str] = list(adapter.project_dirs(payload)) if adapter is not None else answers.cwd(payload)
    try:
        starts.append(os.getcwd())
    except OSError:
        pass
    if directory and os.path.isabs(directory):
        starts.append(directory)
    for start in starts:
        try:
            found = walk_up(start)
        except CocoplusError:
            continue  # a damaged worktree marker: the entry found it first and blocks tools
        if found:
            return found
    return None


def emit(obj: dict[str, Any] | None) -> bool:
    global ANSWERED
    if obj is None:
        return True
    ANSWERED = True
    try:
        sys.stdout.write(jsonfast.dumps(obj))
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError):
        return False
    return True


def run(h: Hook) -> int:
    """One hook event, as the entry found it: the steps `decide_order` lists, in order, until one ends it."""
    global ANSWERED
    ANSWERED = False
    # Every lock this hook takes waits within the installed timeout, with a margin (until the config is read,
    # against the default timeout `install` writes, or the installed one if it is shorter).
    set_process_budget(
        Budget.for_hook(min(DEFAULT_HOOK_TIMEOUT_S, h._installed or DEFAULT_HOOK_TIMEOUT_S), started=STARTED)
    )
    for step in decide_order(h.kind, h.named is not None, h.state_known, h.place_problem is not None):
        code = step(h)
        if code is not None:
            return code
    return 0


def block(adapter: Adapter, kind: str, event: str, reason: str) -> dict[str, Any] | None:
    """The kill switch's answer to a pre-tool or permission event, in the dialect of that event.

    A permission request is answered with the runtime's permission deny, never
    with its pre-tool deny: Codex refuses an answer with fields its event does
    not have (the hook counts as failed and the request goes on), and Claude
    Code reads a PermissionRequest's decision only from `decision.behavior`.
    """
    if kind == "permission":
        answer: dict[str, Any] | None = adapter.deny_permission(reason)
        return answer
    denied: dict[str, Any] = adapter.deny_tool(event, reason)
    return denied
