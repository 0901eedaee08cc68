"""The hook: what agent runtimes run on their events (entry.py, the fast path; runner.py, the rest: it takes each
event through its steps and handles the tool-call events; prompt.py, start.py, turns.py and permission.py the other
events; tripped.py what a tool call that trips a guard answers; timeouts.py how long a hook may run and wait).

`parse_timeout` lives here, in the package every hook process has loaded, so that the fast path
(entry.py) and the installer's reading of written commands (timeouts.py) share it without a cycle.
"""

# The flag `install` writes into the tool-call hooks of a runtime whose pre-tool hook counts each call before it runs
# and does the post-tool hook's work (Claude Code): its post-tool hooks count nothing (docs/architecture/hook-call.md,
# "Counting before the call").
COUNT_BEFORE_CALL = "--count-before-call"


def parse_timeout(value: "str | None") -> "float | None":
    """`--timeout`'s value: a positive, finite number of seconds, else None (a command an older release wrote)."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if 0 < seconds < float("inf") else None
