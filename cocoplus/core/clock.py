"""UTC timestamps as ISO-8601 text, without importing datetime (hook path)."""

from __future__ import annotations

import time


def iso(t: float | None = None) -> str:
    """`2026-11-29T21:05:48.123Z` for epoch seconds `t` (default: now)."""
    if t is None:
        t = time.time()
    # Round to the nearest millisecond on the whole value: truncating the
    # fraction alone turns 5.356 (stored as 5.35599...) into ".355", so a
    # parsed timestamp would not print as it was read.
    whole, ms = divmod(round(t * 1000), 1000)
    g = time.gmtime(whole)  # fields by hand: strftime's %Y does not pad years before 1000
    return f"{g.tm_year:04d}-{g.tm_mon:02d}-{g.tm_mday:02d}T{g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}.{ms:03d}Z"


def compact(t: float | None = None) -> str:
    """`20261129T210548Z`: for file names such as `NAME.corrupt-<compact>`."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if t is None else t))


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm: days since 1970-01-01 for a proleptic Gregorian date.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_iso(text: object) -> float | None:
    """Epoch seconds for an ISO-8601 UTC timestamp, or None if it is not one.

    Accepts `YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00|+HH:MM|-HH:MM]`.
    """
    if not isinstance(text, str) or len(text) < 19 or len(text) > 40:
        return None
    try:
        y, mo, d = int(text[0:4]), int(text[5:7]), int(text[8:10])
        hh, mm, ss = int(text[11:13]), int(text[14:16]), int(text[17:19])
        if text[4] != "-" or text[7] != "-" or text[10] not in "T " or text[13] != ":" or text[16] != ":":
            return None
        if not (1 <= mo <= 12 and 1 <= d <= 31 and hh < 24 and mm < 60 and ss < 61):
            return None
        rest = text[19:]
        frac = 0.0
        if rest.startswith("."):
            i = 1
            while i < len(rest) and rest[i].isdigit():
                i += 1
            if i == 1:
                return None
            frac = float("0" + rest[:i])
            rest = rest[i:]
        offset = 0
        if rest in ("", "Z", "z"):
            offset = 0
        elif len(rest) == 6 and rest[0] in "+-" and rest[3] == ":":
            offset = (int(rest[1:3]) * 3600 + int(rest[4:6]) * 60) * (1 if rest[0] == "+" else -1)
        else:
            return None
    except ValueError:
        return None
    return _days_from_civil(y, mo, d) * 86400 + hh * 3600 + mm * 60 + ss + frac - offset


def age_text(seconds: float) -> str:
    """`3m`, `2h 5m`, `4d 1h`: a short human age."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"
