"""What every phone channel shares: the push it sends, what the server said, the tap it hears, and the listener
that hears it.

* `Action(label, kind, value, url=None)`: a button.  `ANSWER` carries `value`, the data a tap sends back (a
  decision's action token): through the channel's reply path (ntfy's reply topic, or `url` when given: a direct
  link the phone posts to; Telegram's callback query, where it must fit 1-64 bytes).  `OPEN` carries a URL the
  phone opens (the decision page).
* `Push(title, text, actions, priority, tags)`: at most three actions (ntfy's limit, an Android one).  The title
  and the text are made inert (core.inert) by the channel that sends them, and must hold no secret: the only
  secrets a push carries are its actions' own tokens (and, on ntfy, the reply topic's write-only token the
  buttons post with).
* `Sent(accepted, message_id, error, replaced)`: whether the server took it, its id there (what `update` takes),
  or why not, in one line; `replaced` when an update replaced the earlier message in place rather than
  following it.
* `Tap(channel, data, who, at, ref, message_id)`: an answer heard on a channel (`phone:ntfy`,
  `phone:telegram`): the data its button carried, who tapped as the channel tells it, when it was heard, the
  channel's id of the tap, and the message it was on where the channel says.
* `Channel`: what every channel offers (`send`, `update`, `answer`, `listener`), so the inbox process drives
  each the same way.
* `Listener`: a channel's receive loop in a thread of its own, outbound only: it reconnects with back-off after
  any failure, reports each problem as one line (`on_problem`), hands each tap to `on_tap`, and `stop()` ends it
  within a second.

Standard library only, and nothing is imported that touches the network at import time.
"""

from __future__ import annotations

import random
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, Self

from cocoplus.core.errors import CocoplusError

NTFY = "phone:ntfy"
TELEGRAM = "phone:telegram"
ANSWER = "answer"
OPEN = "open"
MAX_ACTIONS = 3


class ChannelError(CocoplusError):
    """A channel cannot be set up as asked (a bad URL, plain HTTP to another machine, a malformed push)."""


@dataclass(frozen=True)
class Action:
    label: str
    kind: str  # ANSWER or OPEN
    value: str  # ANSWER: the data a tap sends back; OPEN: the URL the phone opens
    url: str | None = None  # ANSWER only: where the phone posts `value` instead of the channel's reply path

    def __post_init__(self) -> None:
        if self.kind not in (ANSWER, OPEN):
            raise ChannelError(f"an action is {ANSWER!r} or {OPEN!r}, not {self.kind!r}")
        if not self.label.strip():
            raise ChannelError("an action needs a label")
        if not self.value:
            raise ChannelError(f"the action {self.label!r} carries nothing")
        if self.kind == OPEN and not self.value.startswith(("https://", "http://")):
            raise ChannelError(f"the action {self.label!r} opens {self.value[:40]!r}, which is not an http(s) URL")
        if self.url is not None and (self.kind != ANSWER or not self.url.startswith(("https://", "http://"))):
            raise ChannelError(f"the action {self.label!r}: only an answer posts to a URL, and it must be http(s)")


@dataclass(frozen=True)
class Push:
    title: str
    text: str
    actions: tuple[Action, ...] = ()
    priority: int = 4  # 1 (min) .. 5 (max), ntfy's scale; a decision waiting is "high"
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.actions) > MAX_ACTIONS:
            raise ChannelError(f"a push shows at most {MAX_ACTIONS} actions, not {len(self.actions)}")
        if self.priority not in range(1, 6):
            raise ChannelError(f"a push's priority is 1 to 5, not {self.priority}")


@dataclass(frozen=True)
class Sent:
    accepted: bool
    message_id: str | None = None
    error: str | None = None
    replaced: bool = False


@dataclass(frozen=True)
class Tap:
    channel: str
    data: str
    who: str
    at: float
    ref: str
    message_id: str | None = None


class Channel(Protocol):
    """What the inbox process drives, whichever the channel: ntfy.Ntfy and telegram.Telegram are both one."""

    channel: str

    def send(self, push: Push) -> Sent: ...

    def update(self, message_id: str, push: Push) -> Sent: ...

    def answer(self, tap: Tap, text: str = "") -> Sent: ...

    def listener(self, on_tap: Callable[[Tap], None], on_problem: Callable[[str], None] | None = None) -> Listener: ...


def one_line(text: object, limit: int = 300) -> str:
    """`text` on one line, at most `limit` characters: how every problem is reported."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Backoff:
    """Waits that grow after each failure (doubling from `first` up to `cap`, with a little jitter) and start
    over after a success."""

    def __init__(self, first: float = 1.0, cap: float = 60.0) -> None:
        self.first = first
        self.cap = cap
        self.failures = 0

    def next(self) -> float:
        wait = min(self.cap, self.first * 2**self.failures)
        self.failures += 1
        return wait * random.uniform(0.8, 1.0)

    def reset(self) -> None:
        self.failures = 0


class Closable(Protocol):
    def close(self) -> None: ...


@dataclass
class _Health:
    problems: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    taps: int = 0
    connected: bool = False


class Listener:
    """A channel's receive loop in a daemon thread: `start()`, then `stop()`, which returns within a second.

    A subclass implements `_serve()` (one connection: returns or raises when it ends; checks `stopping`) and
    hands each connection it opens to `_track`, so that `stop()` can cut it from another thread.  A failed
    connection is retried after
    the back-off's wait; every failure is one line to `on_problem` and in `problems`.  No tap is handed on once
    `stop()` was called."""

    channel = ""

    def __init__(
        self,
        on_tap: Callable[[Tap], None],
        on_problem: Callable[[str], None] | None = None,
        *,
        retry_first: float = 1.0,
        retry_cap: float = 60.0,
    ) -> None:
        self.on_tap = on_tap
        self.on_problem = on_problem
        self.backoff = Backoff(retry_first, retry_cap)
        self.stopping = threading.Event()
        self.health = _Health()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._current: Closable | None = None

    # -- life ---------------------------------------------------------------------------------------------------------

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"cocoplus-{self.channel}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 1.0) -> bool:
        """End the loop; True when its thread ended within `timeout` seconds."""
        self.stopping.set()
        self._interrupt()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def problems(self) -> list[str]:
        with self._lock:
            return list(self.health.problems)

    @property
    def connected(self) -> bool:
        """Whether a connection is open and answering now."""
        return self.health.connected

    # -- for subclasses -----------------------------------------------------------------------------------------------

    def _serve(self) -> None:
        raise NotImplementedError

    def _track(self, connection: Closable) -> None:
        """The connection now under way: stop() closes it (at once, if stop() came first)."""
        with self._lock:
            self._current = connection
        if self.stopping.is_set():
            connection.close()

    def _interrupt(self) -> None:
        with self._lock:
            current = self._current
        if current is not None:
            current.close()

    def _problem(self, line: str) -> None:
        line = one_line(line)
        with self._lock:
            self.health.problems.append(line)
        if self.on_problem is not None and not self.stopping.is_set():
            try:
                self.on_problem(line)
            except Exception:  # noqa: BLE001 - a reporter's failure must not end the loop
                pass

    def _hand_on(self, tap: Tap) -> None:
        if self.stopping.is_set():
            return
        with self._lock:
            self.health.taps += 1
        try:
            self.on_tap(tap)
        except Exception as exc:  # noqa: BLE001 - one tap's failure is reported; the loop goes on
            self._problem(f"{self.channel}: handling a tap failed: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._serve()
            except Exception as exc:  # noqa: BLE001 - any failure of a connection is retried
                if not self.stopping.is_set():
                    self._problem(f"{self.channel}: {type(exc).__name__}: {exc}")
            self.health.connected = False
            if self.stopping.is_set():
                break
            self.stopping.wait(self.backoff.next())
