"""`cocoplus inbox run`: this user's one process that carries decisions to the phone and brings the taps back.

* One per user: it holds the flock on `run.lock` and writes `run.json` (pid, start ticks); a second one exits
  saying the first runs (`AlreadyRunning`).
* It scans every project of this user (`ops.inbox.projects`, the per-user registry) every `poll_s` seconds, and at
  once when a place where decisions appear changes: every `fast_s` seconds it looks at a few paths per project (the
  permission requests' directory, the conversation's ledger a question is appended to, the stops, `AGENT_STOP`,
  what was left) with one `stat` each, so a request is pushed within about `fast_s` rather than `poll_s`.  A stat
  rather than inotify: one process serves every project of this user, and a watchdog observer per project would
  take an inotify instance per directory from the user's small shared limit (fs.inotify.max_user_instances); a few
  stats per project ten times a second cost next to nothing.  A change the stat misses (two within the file
  system's timestamp granularity) is found by the next full scan.  Each
  decision that is open, not yet pushed, while the operator is not at the machine (`store.present`) gets one push
  on the first of `[inbox] channels`: Approve · Deny · Open (ntfy shows at most three), each answer a signed
  single-use token (`tokens.make`) that only the push carries; the text says the deadline and the default in local
  time with its zone ("denies at 14:05 CET unless you answer").  A decision a rule resolved never waits, so it is
  never pushed.  What the server said is in the delivery ledger (`accepted`, `failed`); a channel that has not
  accepted within `[inbox] escalate_after_s` hands the decision to the next one (`escalated`).
* Taps come from each channel's listener (ntfy's reply topic, read from where it stopped, `since=`; Telegram's
  `getUpdates`, from the configured chat only) and are applied by `ops.answer.tap`, as every door applies them;
  Telegram's button gets the outcome (`answerCallbackQuery`).
* When a decision it pushed is no longer open (answered anywhere, its deadline, its hook ended), each channel that
  carried it gets a follow-up, in place where the protocol allows (Telegram edits the message; ntfy replaces it by
  `sequence_id` on 2.16 and later), recorded as `followed_up`.
* What it pushed where (never a token) and where the ntfy stream stopped are kept in `pushes.json`, so a restart
  neither pushes twice nor loses a tap.

Pushes carrying tokens go only to the channels of the user's own configuration file (`[inbox]`, user only); a
project's `[notify] urls` get token-free notices only, as before.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from cocoplus.core import clock, fsio
from cocoplus.core.errors import CocoplusError
from cocoplus.core.paths import Layout
from cocoplus.inbox import decisions, store, tokens
from cocoplus.inbox.channels.common import ANSWER, OPEN, Action, Channel, Listener, Push, Tap
from cocoplus.inbox.settings import Settings

POLL_S = 1.0
FAST_S = 0.1  # how often the places where decisions appear are looked at (a stat each)
RETRY_S = 5.0  # a channel that did not accept is tried again this often until it escalates
TOKEN_TTL_S = 24 * 3600.0  # a decision without a deadline: its buttons work for a day (the page for longer)
DONE_KEEP_S = 7 * 24 * 3600.0
LABELS = {"approve": "Approve", "deny": "Deny", "resume": "Resume", "leave": "Leave", "later": "Later",
          "raise": "Raise cap", "failover": "Elsewhere", "nudge": "Nudge", "stop": "Stop"}  # fmt: skip
WILL = {"deny": "denies", "leave": "leaves it as it is", "later": "resumes at its reset"}
DID = {"deny": "denied", "leave": "left as it was", "later": "resumed at its reset"}
# What a settled decision's follow-up says was done: the source's own outcome, or the answer the inbox recorded.
DONE = {"allowed": "allowed", "denied": "denied", "approve": "allowed", "deny": "denied", "answer": "answered",
        "resume": "resumed", "raise": "cap raised and resumed", "failover": "moved to another runtime",
        "nudge": "nudged", "stop": "stopped", "leave": "left as it was",
        "later": "left to resume at its reset"}  # fmt: skip
WHERE = {"cli": "at the terminal", "top": "in cocoplus top", "page": "on the decision page",
         "phone:ntfy": "from ntfy", "phone:telegram": "from Telegram"}  # fmt: skip


class AlreadyRunning(CocoplusError):
    """Another `cocoplus inbox run` of this user holds the lock."""


def _key(d: dict[str, Any]) -> str:
    return f"{os.path.realpath(str(d['state_dir']))}\0{d['id']}"


def local_time(at: float) -> str:
    """`at` as the operator's clock shows it, with its zone: "14:05 CET" (a date too when not today)."""
    t = time.localtime(at)
    same_day = time.strftime("%Y-%m-%d", t) == time.strftime("%Y-%m-%d", time.localtime())
    return time.strftime("%H:%M %Z" if same_day else "%a %d %b %H:%M %Z", t)


def deadline_line(d: dict[str, Any]) -> str:
    at = clock.parse_iso(d.get("deadline"))
    default = str(d.get("default"))
    if at is None:
        return "it waits for you (no deadline)"
    return f"{WILL.get(default, default + 's')} at {local_time(at)} unless you answer"


def push_for(d: dict[str, Any], page_url: str, now: float) -> Push:
    """The push for decision `d`: its summary, deadline and default, and its buttons, each a fresh token."""
    handle = store.handle_of(str(d["state_dir"]), str(d["id"]))
    deadline = clock.parse_iso(d.get("deadline"))
    expires = deadline if deadline is not None and deadline > now else now + TOKEN_TTL_S
    taps = [a for a in d["actions"] if a not in decisions.TEXT_ACTIONS and a in tokens.ACTIONS]
    room = 2 if page_url else 3
    actions = [Action(LABELS.get(a, a.capitalize()), ANSWER, tokens.make(handle, a, expires)) for a in taps[:room]]
    if page_url:
        actions.append(Action("Open", OPEN, f"{page_url.rstrip('/')}/inbox/d/{d['id']}"))
    title = f"{decisions.project_name(d)}: {d['kind']} {d['id']}"
    return Push(title, f"{d['summary']}\n{deadline_line(d)}", tuple(actions), priority=4, tags=("cocoplus",))


def outcome_text(d: dict[str, Any] | None) -> str:
    """What the follow-up says about a decision that is no longer open."""
    if d is None or d.get("state") == "gone":
        return "gone: it ended before an answer (its hook or session is over)"
    default = str(d.get("default"))
    if d.get("state") == "expired":
        return f"{DID.get(default, default)} at its deadline"
    what = DONE.get(str(d.get("outcome")), "answered")
    who = d.get("resolved_by") or "someone"
    where = WHERE.get(str(d.get("channel")), f"via {d.get('channel')}" if d.get("channel") else "")
    return f"resolved: {what} by {who} {where}".rstrip()


class Service:
    """The loop of `cocoplus inbox run` (see the module's docstring); `run()` until `stop` is set."""

    def __init__(
        self,
        settings: Settings,
        channels: list[Channel],
        *,
        poll_s: float = POLL_S,
        fast_s: float = FAST_S,
        say: Callable[[str], None] = print,
    ) -> None:
        self.settings = settings
        self.channels = channels
        self.poll_s = poll_s
        self.fast_s = fast_s
        self.watched: list[str] = []  # where decisions appear, in every project of the last scan
        self.say = say
        self.stop = threading.Event()
        self.taps: queue.Queue[Tap] = queue.Queue()
        self.listeners: list[Listener] = []
        self.state = self._load()
        self.last_failure: dict[str, str] = {}
        self.held: set[str] = set()

    # -- what was pushed -------------------------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        try:
            doc = fsio.read_json(store.pushes_file())
        except CocoplusError:
            doc = None
        doc = doc if isinstance(doc, dict) else {}
        tracked = doc.get("tracked") if isinstance(doc.get("tracked"), dict) else {}
        return {"tracked": tracked, "ntfy_since": doc.get("ntfy_since")}

    def _save(self) -> None:
        now = time.time()
        tracked = self.state["tracked"]
        old = [k for k, t in tracked.items() if t.get("done") and now - float(t.get("done_at") or 0) > DONE_KEEP_S]
        for key in old:
            del tracked[key]
        for listener in self.listeners:
            position = getattr(listener, "position", None)
            where = position() if callable(position) else None
            if where:  # also before any tap was heard: the time it first listened, so a tap made while down is read
                self.state["ntfy_since"] = where
        fsio.ensure_dir(store.directory())
        fsio.atomic_write_json(store.pushes_file(), self.state)

    # -- listening -------------------------------------------------------------------------------------------------

    def _listen(self) -> None:
        for ch in self.channels:
            kwargs: dict[str, Any] = {}
            if ch.channel == "phone:ntfy" and self.state.get("ntfy_since"):
                kwargs["since"] = str(self.state["ntfy_since"])
            listener = ch.listener(self.taps.put, lambda line: self.say(f"cocoplus inbox run: {line}"), **kwargs)
            self.listeners.append(listener.start())

    def _apply(self, tap: Tap) -> dict[str, Any]:
        from cocoplus.ops import answer  # deferred: the answer's operations load when a tap comes

        result = answer.tap(tap.data, tap.channel)
        ch = next((c for c in self.channels if c.channel == tap.channel), None)
        if ch is not None:
            ch.answer(tap, str(result.get("message") or result.get("status")))
        self.say(f"cocoplus inbox run: a tap from {tap.channel}: {result.get('message')}")
        return result

    # -- pushing ---------------------------------------------------------------------------------------------------

    def scan(self) -> dict[str, dict[str, Any]]:
        """Every decision of every project of this user, by key (open and settled: the settled ones are followed
        up)."""
        from cocoplus.ops import inbox as inbox_ops  # deferred: as in _apply

        found: dict[str, dict[str, Any]] = {}
        watched: list[str] = []
        for lay in inbox_ops.projects():
            watched += _where_decisions_appear(lay)
            try:
                for d in decisions.collect(lay, state=None):
                    found[_key(d)] = d
            except CocoplusError:
                continue
        self.watched = watched
        return found

    def marks(self) -> tuple[tuple[int, int, int] | None, ...]:
        """What the places where decisions appear look like now (mtime, size, inode; None for a missing one): a
        scan is due when this changes."""
        out: list[tuple[int, int, int] | None] = []
        for path in self.watched:
            try:
                st = os.stat(path)
            except OSError:
                out.append(None)
                continue
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(out)

    def tick(self, now: float | None = None) -> None:
        now = time.time() if now is None else now
        found = self.scan()
        tracked = self.state["tracked"]
        present = store.present(self.settings.presence_s, self.settings.presence_file or None, now)
        changed = False
        for key, d in found.items():
            if d["state"] != "open" or key in tracked or not self.channels:
                continue
            if present:
                if key not in self.held:  # said once, so a push that does not come is never a silent drop
                    self.held.add(key)
                    store.note(d["id"], d["state_dir"], "-", "held", why="you are at the machine")
            else:
                tracked[key] = {"decision": d["id"], "state_dir": d["state_dir"], "index": 0, "since": now,
                                "tried": 0.0, "carried": [], "done": False}  # fmt: skip
                changed = True
        for key, t in tracked.items():
            if t.get("done"):
                continue
            now_d = found.get(key)
            if now_d is None or now_d["state"] != "open":
                self._follow_up(t, now_d, now)
                changed = True
            elif not t["carried"] or t.get("waiting"):
                changed |= self._deliver(t, now_d, now)
        if changed:
            self._save()

    def _deliver(self, t: dict[str, Any], d: dict[str, Any], now: float) -> bool:
        """Push `d` on its current channel (again, after RETRY_S, until it accepts), escalating to the next."""
        if t.get("tried") and now - float(t["tried"]) < min(RETRY_S, self.settings.escalate_after_s):
            return False
        index = int(t["index"])
        if (
            now - float(t["since"]) >= self.settings.escalate_after_s
            and t.get("tried")
            and index + 1 < len(self.channels)
        ):
            nxt = self.channels[index + 1].channel
            store.note(d["id"], d["state_dir"], self.channels[index].channel, "escalated", to=nxt)
            t.update(index=index + 1, since=now)
            index += 1
        ch = self.channels[index]
        t["tried"] = now
        # Open leads to `[inbox] page_url` when set, else to a running `cocoplus serve --public URL`'s page.
        sent = ch.send(push_for(d, self.settings.page_url or store.page_url() or "", now))
        if sent.accepted:
            t["carried"].append({"channel": ch.channel, "message_id": sent.message_id, "title": d["id"]})
            t["waiting"] = False
            store.note(d["id"], d["state_dir"], ch.channel, "accepted", message_id=sent.message_id)
            return True
        t["waiting"] = True
        if self.last_failure.get(f"{d['id']}\0{ch.channel}") != sent.error:
            self.last_failure[f"{d['id']}\0{ch.channel}"] = str(sent.error)
            store.note(d["id"], d["state_dir"], ch.channel, "failed", error=sent.error)
            self.say(f"cocoplus inbox run: {d['id']}: {sent.error}")
        return True

    def _follow_up(self, t: dict[str, Any], d: dict[str, Any] | None, now: float) -> None:
        text = outcome_text(d)
        for carried in t["carried"]:
            ch = next((c for c in self.channels if c.channel == carried["channel"]), None)
            if ch is None or not carried.get("message_id"):
                continue
            title = f"{decisions.project_name(d)}: {d['kind']} {d['id']}" if d else str(t["decision"])
            sent = ch.update(str(carried["message_id"]), Push(title, text, (), priority=2, tags=("cocoplus",)))
            store.note(str(t["decision"]), str(t["state_dir"]), ch.channel,
                       "followed_up" if sent.accepted else "failed", text=text, replaced=sent.replaced or None,
                       error=sent.error)  # fmt: skip
        t.update(done=True, done_at=now, outcome=text)

    # -- life ------------------------------------------------------------------------------------------------------

    def run(self) -> None:
        self._listen()
        try:
            last = 0.0
            seen: tuple[tuple[int, int, int] | None, ...] = ()
            while not self.stop.is_set():
                wait = max(0.0, min(self.fast_s, self.poll_s - (time.monotonic() - last)))
                try:
                    tap = self.taps.get(timeout=wait)
                except queue.Empty:
                    tap = None
                if tap is not None:
                    self._apply(tap)
                marks = self.marks()  # taken before the scan: a change during it brings another
                if tap is not None or marks != seen or time.monotonic() - last >= self.poll_s:
                    seen = marks
                    last = time.monotonic()
                    try:
                        self.tick()
                    except CocoplusError as exc:
                        self.say(f"cocoplus inbox run: {exc.message}")
        finally:
            for listener in self.listeners:
                listener.stop()
            self._save()


def _where_decisions_appear(lay: Layout) -> list[str]:
    """The paths of project `lay` whose change may mean a new or settled decision (see the module's docstring)."""
    from cocoplus.chat.store import DEFAULT_CONVERSATION  # deferred: as in Service.scan

    return [lay.permission_requests_dir, lay.ledger(DEFAULT_CONVERSATION), lay.session_stops_dir, lay.agent_stop,
            lay.inbox_left]  # fmt: skip


def serve(settings: Settings, channels: list[Channel], say: Callable[[str], None] = print) -> None:
    """Run this user's inbox process in the foreground until SIGTERM or SIGINT (AlreadyRunning when one runs)."""
    from cocoplus.core import lock  # deferred: only the process itself takes the lock
    from cocoplus.session import procinfo  # deferred: as lock

    fsio.ensure_dir(store.directory())
    fd = lock.try_lock(store.run_lock())
    if fd is None:
        try:
            doc = fsio.read_json(store.run_file())
        except CocoplusError:
            doc = None
        pid = doc.get("pid") if isinstance(doc, dict) else None
        raise AlreadyRunning(f"{store.run_file()}: this user's `cocoplus inbox run` runs already (pid {pid})")
    service = Service(settings, channels, say=say)
    me = {"pid": os.getpid(), "start_ticks": procinfo.start_ticks(os.getpid()), "started_at": clock.iso(),
          "channels": [c.channel for c in channels]}  # fmt: skip
    fsio.atomic_write_json(store.run_file(), me)
    previous = {s: signal.signal(s, lambda *_: service.stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        service.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        try:
            if (fsio.read_json(store.run_file()) or {}).get("pid") == os.getpid():
                os.unlink(store.run_file())
        except (CocoplusError, OSError, AttributeError):
            pass
        os.close(fd)
