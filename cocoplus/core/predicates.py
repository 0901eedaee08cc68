"""CONTEXT.md predicates: one `CLASS.key=value` per line, values kept verbatim.

Blank lines and lines starting with `#` are allowed (headings, comments, and
predicates switched off by commenting them out).  Anything else that is not
a predicate is reported with its line number; it is never rewritten.
Standard library only (SessionStart injects active predicates).
"""

from __future__ import annotations

_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_REST = _NAME_FIRST | frozenset("0123456789-")
_KEY_CHARS = _NAME_REST | frozenset(".")


class Predicate:
    __slots__ = ("cls", "key", "value", "line", "raw")

    def __init__(self, cls: str, key: str, value: str, line: int = 0, raw: str | None = None) -> None:
        self.cls = cls
        self.key = key
        self.value = value
        self.line = line
        self.raw = raw if raw is not None else f"{cls}.{key}={value}"

    @property
    def name(self) -> str:
        return f"{self.cls}.{self.key}"

    def as_dict(self) -> dict[str, object]:
        return {"class": self.cls, "key": self.key, "value": self.value, "line": self.line, "text": self.raw}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Predicate) and (self.cls, self.key, self.value) == (other.cls, other.key, other.value)

    def __repr__(self) -> str:
        return f"Predicate({self.raw!r})"


def _valid_class(s: str) -> bool:
    return bool(s) and s[0] in _NAME_FIRST and all(c in _NAME_REST for c in s)


def _valid_key(s: str) -> bool:
    return bool(s) and s[0] in _NAME_REST and all(c in _KEY_CHARS for c in s) and not s.endswith(".")


def parse_line(line: str, lineno: int = 0) -> Predicate | str | None:
    """A Predicate, None for a blank/comment line, or the reason the line is bad."""
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    name, sep, value = line.partition("=")
    if not sep:
        return "not a predicate: expected CLASS.key=value"
    if name != name.strip():
        return "spaces around the predicate name"
    cls, dot, key = name.partition(".")
    if not dot:
        return f"predicate name {name!r} has no CLASS. prefix"
    if not _valid_class(cls):
        return f"bad class {cls!r}: use letters, digits, _ and -"
    if not _valid_key(key):
        return f"bad key {key!r}: use letters, digits, _, - and ."
    return Predicate(cls, key, value, lineno, line)


def parse(text: str) -> tuple[list[Predicate], list[tuple[int, str]]]:
    """(active predicates in order, [(line number, problem), ...])."""
    preds: list[Predicate] = []
    bad: list[tuple[int, str]] = []
    for i, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        got = parse_line(line, i)
        if isinstance(got, Predicate):
            preds.append(got)
        elif isinstance(got, str):
            bad.append((i, got))
    return preds, bad


def render(preds: list[Predicate], header: str = "") -> str:
    body = "".join(f"{p.cls}.{p.key}={p.value}\n" for p in preds)
    return header + body


TEMPLATE = (
    "# Predicates: one CLASS.key=value per line, quoted verbatim when cited.\n"
    "# Lines starting with # are comments; comment a predicate out to retire it.\n"
)
