"""`cocoplus timeline [WORKER|SESSION] [--since DURATION]` for every door: the project's events in time order, read
from the logs cocoplus keeps (report/timeline.py), the newest first shown."""

from __future__ import annotations

from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.supervision.summary import parse_since

__all__ = ["DEFAULT_LIMIT", "parse_since", "replay", "timeline", "what_if"]

DEFAULT_LIMIT = 40  # the newest events shown when no limit is given: about one screen


def timeline(
    layout: Layout, target: str | None = None, since: str | None = None, limit: int = DEFAULT_LIMIT
) -> dict[str, Any]:
    """The events of the project, or of one worker (its id) or session (its cs_ id or alias), oldest first; the
    newest `limit` of them (0: all), within `since` (a duration such as 12h) where given."""
    from cocoplus.report import timeline as record  # deferred: the CLI imports every ops module at start

    since_s = parse_since(since) if since else None
    return record.timeline(layout, target, since_s, limit=max(0, int(limit)))


def replay(layout: Layout, run: str, policy: str) -> dict[str, Any]:
    """Worker or session `run`'s recorded tool calls decided again under the policy file `policy` (report/replay.py):
    where it would have stopped and why, the checkpoints on the way, the cost up to there, the first difference."""
    from cocoplus.report import replay as again  # deferred: the CLI imports every ops module at start

    return again.replay(layout, run, policy)


def what_if(layout: Layout, run: str, values: dict[str, float | None]) -> dict[str, Any]:
    """`replay` with the policy given as `[session]` values (those given; the rest at their defaults) instead of a
    file: the page's "what if the cap had been N?"."""
    from cocoplus.report import replay as again  # deferred: the CLI imports every ops module at start

    given = {k: v for k, v in values.items() if v is not None}
    policy, skipped, _rules = again.policy_of({"session": given}, "the policy")
    return again.replay_under(layout, run, policy, skipped)
