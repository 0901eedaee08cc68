"""What every hook handler shares: the `Hook` (one invocation: where, who, what was sent, the configuration it
reads, the waits it may make) and the helpers the handlers of several events use.

Imported by the runner (`cocoplus.hook.runner`) and by each handler module
(`start`, `turns`, `permission`), never the other way round.  Standard
library only.

Every wait ends in time to answer within the timeout the hook was
installed with (`Hook.installed_s`: the command's `--timeout`, else what
`install` wrote beside an older command): lock waits draw from one budget
per process (`core.lock.Budget`), and the turn-end hold and a permission
request's wait last at most what that timeout leaves once the rest of the
hook is provided for (`Hook.wait_for`), however long the configuration asks.
"""

from __future__ import annotations

import time

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.lock import Budget, hook_margin, set_process_budget, wait_allowed
from cocoplus.core.paths import is_valid_id
from cocoplus.session import control, registry, stops

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs start-up time on the hook path
    from typing import Any

    from cocoplus.core.paths import Layout
    from cocoplus.runtimes.protocol import Adapter

    Answer = tuple[dict[str, Any] | None, int]


# When this process began, near enough: the runner is imported a few
# milliseconds after start, and the hook budget keeps a margin of seconds.
STARTED = time.monotonic()


class Hook:
    """One hook invocation: where, who, what was sent, and what to say back."""

    def __init__(
        self,
        layout: Layout,
        event: str,
        kind: str,
        adapter: Adapter,
        payload: dict[str, Any],
        environ: Any,
        guards: list[Layout] | None = None,
        problem: str | None = None,
        installed: float | None = None,
        installed_by: Adapter | None = None,
    ) -> None:
        self.layout = layout
        # Every state directory whose stops apply to this hook: the project's first (where it counts and
        # records), then the others it found (an override only adds one: entry.places).
        self.places = [layout, *(guards or [])]
        self.place_problem = problem
        self.event = event
        self.kind = kind
        self.adapter = adapter
        self.runtime: str = adapter.NAME
        self.payload = payload
        self.environ = environ
        sent = payload.get("hook_event_name")
        self.event_name = sent if isinstance(sent, str) and sent else event
        self._values: dict[str, dict[str, Any]] | None = None
        self.after: list[Any] = []  # callbacks run once the answer reached stdout
        self.record: dict[str, Any] | None = None
        self._installed = installed  # the command's --timeout (None: an older command, see installed_s)
        self._installed_by = installed_by or adapter  # the runtime whose hook files hold this command

    # -- helpers -------------------------------------------------------------
    @property
    def values(self) -> dict[str, dict[str, Any]]:
        if self._values is None:
            from cocoplus.session import (
                values as hook_values,  # deferred: keeps the configuration off the events that read no value
            )

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

            found = timeouts.recorded(self._installed_by, self.event, self.layout.project)
            if found is None:
                v = self.values
                found = timeouts.for_event(
                    self._installed_by, self.event, self.kind,
                    v["hooks"]["timeout_s"], v["supervision"]["hold_turn_end_s"], v["permissions"]["wait_s"],
                )  # fmt: skip
            self._installed = float(found)
        return self._installed

    @property
    def base_s(self) -> float:
        """What this hook needs besides a wait: `[hooks] timeout_s`, within the installed timeout."""
        return min(float(self.values["hooks"]["timeout_s"]), self.installed_s)

    def wait_for(self, wanted_s: float, key: str) -> float:
        """How long a wait the configuration sets at `wanted_s` (by `key`) may last, counted from this process's
        start: all of it, or what the installed timeout leaves once the rest of the hook is provided for."""
        allowed = wait_allowed(self.installed_s, self.base_s)
        if wanted_s <= allowed:
            return wanted_s
        self.log(
            f"{key} is {wanted_s:g} s, but this hook was installed with a timeout of {self.installed_s:g} s: it waits "
            f"at most {allowed:g} s (`cocoplus doctor` says how to make the timeout fit)"
        )
        return allowed

    def after_wait(self) -> None:
        """The lock budget of the work after a wait: what a hook without a wait has, and no later than the margin
        before the installed timeout."""
        now = time.monotonic()
        margin = hook_margin(self.base_s)
        set_process_budget(Budget(min(self.base_s - margin, STARTED + self.installed_s - margin - now), started=now))

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
        self, change: Any = None, info: dict[str, Any] | None = None, alias: str | None = None
    ) -> dict[str, Any] | None:
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

    def flush_after(self) -> None:
        """Run the callbacks waiting for the answer now (the turn-end hold signals `pending` before it waits)."""
        pending, self.after = self.after, []
        for fn in pending:
            try:
                fn()
            except CocoplusError as exc:
                self.log(f"before holding: {exc}")

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
            reason = control.kill_switch_sentence(layout) or session_stop_sentence(self, layout)
            if reason is not None:
                return reason
        return None

    def stop_agent(self, reason: str, *, source: str, state: str = "exited") -> bool:
        """Create AGENT_STOP (keeping an operator's own) and set the run state, under the kill-switch lock."""
        try:
            result = control.auto_stop(self.layout, reason, source=source, state=state, timeout=self.timeout)
        except CocoplusError as exc:
            self.log(f"could not create AGENT_STOP: {exc}")
            return False
        for problem in result["problems"]:
            self.log(problem)
        self.touch_session(lambda r: r.update(state=state, exit_reason=reason))  # the stopped session's record says so
        return bool(result["created"])


def session_stop_sentence(h: Hook, layout: Layout | None = None) -> str | None:
    """Why this session's tools are blocked by its own stop (`session stop --session`), or None.

    The session comes from the payload, else from the runtime's session
    variables in the hook's environment.  An event that names no session
    cannot be matched to a session stop: its tool runs (AGENT_STOP is what
    stops every session), and the hook log says so.
    """
    layout = h.layout if layout is None else layout
    if stops.any_present(layout) is False:
        return None
    sid = h.session_id or next((v for v in (h.environ.get(n) for n in h.adapter.SESSION_ENV) if v), None)
    if sid is None:
        h.log("a session stop exists but this event names no session, so it cannot apply here; the tool runs")
        return None
    return stops.sentence(layout, registry.cs_id_for(sid))


def log_line(layout: Layout, message: str) -> None:
    """One line in `.cocoplus/logs/hook.log` (`fsio.append_line`: no symlinks, rotated, a loss noted); never raises."""
    fsio.append_line(layout.hook_log, f"{clock.iso()} {message}")


def attention(
    h: Hook, rec: dict[str, Any], attention: str | None, detail: str | None = None, request: str | None = None
) -> None:
    """Set the session's attention; a change is also a signal (`request`: the permission request it waits on)."""
    if registry.set_attention(rec, attention) and attention is not None:
        detail = detail or _detail(h)
        rec["last_signal"] = {"kind": "attention", "value": attention, "message": detail, "ts": clock.iso()}
        h.after.append(lambda: h.signal("attention", attention, detail=detail, request=request))


def _detail(h: Hook) -> str | None:
    p = h.payload
    for key in ("notification_type", "error", "message", "last_assistant_message", "tool_name"):
        v = p.get(key)
        if isinstance(v, str) and v:
            return v[:300]
    return None


def claim_steer(h: Hook, session: str | None) -> control.Claim | None:
    """The project's pending steer (`session` None) or this session's own, claimed for delivery."""
    try:
        return control.claim_steer(h.layout, timeout=h.timeout, session=session)
    except CocoplusError as exc:
        h.log(f"steer not claimed: {exc}")
        return None


def finisher(h: Hook, claim: control.Claim) -> Any:
    sid, runtime = h.session_id, h.runtime
    return lambda: control.finish_steer(h.layout, claim, session=sid, runtime=runtime)


def env_id(h: Hook, name: str) -> str | None:
    value = h.environ.get(name)
    return value if is_valid_id(value) else None
