"""PROGRESS.md, the human handoff: parse and render without losing a byte.

The document is a preamble plus level-2 sections (`## Done`, `## In
Progress`, `## Next`, `## Notes`, `## Iteration Budget`, and any the user
adds).  `render(parse(text)) == text` for every text, so cocoplus can change
the lines it owns (Cap, Consumed, Warn At and Cost in Iteration Budget) and
leave everything else exactly as the agent or the user wrote it.

Standard library only, no `re`: the PostToolUse hook updates the budget
lines on every tool call.
"""

from __future__ import annotations

HANDOFF_SECTIONS = ("Done", "In Progress", "Next", "Notes")
BUDGET_SECTION = "Iteration Budget"
BUDGET_LABELS = ("Cap", "Consumed", "Warn At")
COST_LABEL = "Cost"
# Each session's own count, which the cap applies to while several sessions are live (session/iteration.py).
SESSIONS_LABEL = "Sessions"
OWNED_LABELS = (*BUDGET_LABELS, COST_LABEL, SESSIONS_LABEL)


class Section:
    __slots__ = ("heading", "title", "body")

    def __init__(self, heading: str, body: str) -> None:
        self.heading = heading  # the raw heading line, with its line ending
        self.title = heading_title(heading)
        self.body = body  # raw text up to the next level-2 heading

    def items(self) -> list[str]:
        """The section's non-blank lines, stripped (bullets kept)."""
        return [ln.strip() for ln in split_lines(self.body) if ln.strip()]

    def text(self) -> str:
        return self.body.strip("\r\n")


class Progress:
    __slots__ = ("preamble", "sections")

    def __init__(self, preamble: str, sections: list[Section]) -> None:
        self.preamble = preamble
        self.sections = sections

    def render(self) -> str:
        return self.preamble + "".join(s.heading + s.body for s in self.sections)

    def find(self, title: str) -> Section | None:
        want = _norm(title)
        for s in self.sections:
            if _norm(s.title) == want:
                return s
        return None

    def missing(self, titles: tuple[str, ...] = HANDOFF_SECTIONS) -> list[str]:
        return [t for t in titles if self.find(t) is None]

    @property
    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.render() else "\n"


def split_lines(text: str) -> list[str]:
    """Lines with their endings. Only LF, CRLF and CR end a line, as in Markdown

    (str.splitlines also breaks at form feeds, U+2028 and other characters
    that are ordinary text in a Markdown file).
    """
    out: list[str] = []
    start, n = 0, len(text)
    while start < n:
        lf = text.find("\n", start)
        cr = text.find("\r", start, n if lf == -1 else lf)
        if cr != -1:
            end = cr + 2 if text.startswith("\n", cr + 1) else cr + 1
        elif lf != -1:
            end = lf + 1
        else:
            end = n
        out.append(text[start:end])
        start = end
    return out


def _norm(title: str) -> str:
    return " ".join(title.lower().split())


def heading_title(line: str) -> str:
    t = line.strip()[2:].strip()
    # Closing hashes of an ATX heading ("## Done ##") are not part of the title.
    if t.endswith("#"):
        t = t.rstrip("#").rstrip()
    return t


def _is_h2(line: str) -> bool:
    s = line.lstrip(" ")
    if len(line) - len(s) > 3:
        return False
    s = s.rstrip("\r\n")
    return s.startswith("## ") or s == "##"


def _fence(line: str) -> str | None:
    s = line.lstrip(" ")
    if len(line) - len(s) > 3:
        return None
    for mark in ("```", "~~~"):
        if s.startswith(mark):
            return mark
    return None


def _scan(lines: list[str]) -> tuple[list[tuple[str, bool]], str | None]:
    """Each line with whether it is a level-2 heading outside code fences, and the fence left open."""
    out: list[tuple[str, bool]] = []
    fence: str | None = None
    for line in lines:
        mark = _fence(line)
        if fence is not None:
            if mark == fence:
                fence = None
        elif mark is not None:
            fence = mark
        elif _is_h2(line):
            out.append((line, True))
            continue
        out.append((line, False))
    return out, fence


def open_fence(text: str) -> str | None:
    """The fence mark (```` ``` ```` or `~~~`) left open at the end of `text`, if any."""
    return _scan(split_lines(text))[1]


def parse(text: str) -> Progress:
    lines = split_lines(text)
    preamble: list[str] = []
    sections: list[Section] = []
    body: list[str] = []
    heading: str | None = None
    for line, is_heading in _scan(lines)[0]:
        if is_heading:
            if heading is None:
                preamble = body
            else:
                sections.append(Section(heading, "".join(body)))
            heading, body = line, []
            continue
        body.append(line)
    if heading is None:
        return Progress("".join(body), [])
    sections.append(Section(heading, "".join(body)))
    return Progress("".join(preamble), sections)


# The largest prime below 2**64.  The content read as one little-endian number, modulo this prime, is a
# fingerprint computed in C with nothing to load (zlib is a shared library: about a millisecond on
# every tool call); 256 has an order in this field far beyond any file, so moving bytes changes it too.
_FINGERPRINT_PRIME = 2**64 - 59
_CHECKSUM_PREFIX = "p64-"


def _handoff_bytes(text: str) -> bytes:
    doc = parse(text)
    budget = _norm(BUDGET_SECTION)
    kept = doc.preamble + "".join(s.heading + s.body for s in doc.sections if _norm(s.title) != budget)
    return kept.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8", "surrogatepass")


def content_checksum(text: str) -> str:
    """A checksum of what the handoff says: every byte but the Iteration Budget section

    (which cocoplus rewrites on every tool call), with line endings normalised
    so a checkout that converts them does not count as a change.
    """
    raw = _handoff_bytes(text)
    return f"{_CHECKSUM_PREFIX}{int.from_bytes(raw, 'little') % _FINGERPRINT_PRIME:016x}-{len(raw):x}"


def checksum_matches(checksum: str, text: str) -> bool:
    """Whether `checksum` (from `content_checksum`, or the CRC-32 form stamps were written in before)
    is the checksum of `text`'s handoff."""
    if checksum.startswith(_CHECKSUM_PREFIX):
        return checksum == content_checksum(text)
    return matches_earlier_form(checksum, text)


def matches_earlier_form(checksum: str, text: str) -> bool:
    """Whether `checksum` is in the CRC-32 form stamps were written in before, and `text`'s handoff's."""
    if checksum.startswith(_CHECKSUM_PREFIX):
        return False
    raw = _handoff_bytes(text)
    import zlib  # deferred: only a stamp written in the earlier form is checked with it, once, then written again

    return checksum == f"{zlib.crc32(raw):08x}{len(raw):x}"


def template(cap: int, consumed: int, warn_at: int, title: str = "Progress") -> str:
    return (
        f"# {title}\n\n"
        "## Done\n\n"
        "## In Progress\n\n"
        "## Next\n\n"
        "## Notes\n\n"
        f"## {BUDGET_SECTION}\n"
        f"- Cap: {cap}\n"
        f"- Consumed: {consumed}\n"
        f"- Warn At: {warn_at}\n"
    )


def _owned_label(line: str) -> tuple[str, str] | None:
    """(`label`, bullet prefix) if the line is one cocoplus owns, e.g. `- Cap: 200`."""
    s = line.strip()
    prefix = ""
    for b in ("- ", "* ", "+ "):
        if s.startswith(b):
            prefix, s = b, s[2:]
            break
    label, sep, _ = s.partition(":")
    if not sep:
        return None
    name = label.strip().strip("*").strip()
    for owned in OWNED_LABELS:
        if name.lower() == owned.lower():
            return owned, prefix
    return None


def budget_values(doc: Progress) -> dict[str, str]:
    """The Iteration Budget lines as written: {'Cap': '200', ...}."""
    sec = doc.find(BUDGET_SECTION)
    out: dict[str, str] = {}
    if sec is None:
        return out
    for line in split_lines(sec.body):
        owned = _owned_label(line)
        if owned:
            out[owned[0]] = line.split(":", 1)[1].strip()
    return out


def set_budget(text: str, values: dict[str, str]) -> str:
    """Return `text` with the Iteration Budget lines set to `values`.

    Only lines whose label is in `values` change; every other byte stays.
    A missing line is added after the section's last owned line; a missing
    section is appended at the end of the document (after closing a code
    block the document leaves open, so the new heading is a heading).
    """
    doc = parse(text)
    nl = doc.newline
    sec = doc.find(BUDGET_SECTION)
    if sec is None:
        base = doc.render()
        if base and not base.endswith(("\n", "\r")):
            base += nl
        fence = open_fence(base)
        if fence is not None:
            # A heading inside an unclosed code block is not a heading: close
            # the block, or the section would be appended again on every call.
            base += fence + nl
        if base and not base.endswith(nl + nl) and base.strip():
            base += nl
        order = [k for k in OWNED_LABELS if k in values]
        block = f"## {BUDGET_SECTION}{nl}" + "".join(f"- {k}: {values[k]}{nl}" for k in order)
        return base + block
    lines = split_lines(sec.body)
    seen: set[str] = set()
    last_owned = -1
    for i, line in enumerate(lines):
        owned = _owned_label(line)
        if owned is None:
            continue
        label, prefix = owned
        last_owned = i
        if label in values:
            seen.add(label)
            ending = line[len(line.rstrip("\r\n")) :] or nl
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = f"{indent}{prefix or '- '}{label}: {values[label]}{ending}"
    missing = [k for k in OWNED_LABELS if k in values and k not in seen]
    if missing:
        new = [f"- {k}: {values[k]}{nl}" for k in missing]
        if last_owned == -1:
            # Put them right under the heading, before any prose the user wrote.
            lines[0:0] = new
        else:
            if not lines[last_owned].endswith(("\n", "\r")):
                lines[last_owned] += nl
            lines[last_owned + 1 : last_owned + 1] = new
    if not sec.heading.endswith(("\n", "\r")):
        sec.heading += nl
    sec.body = "".join(lines)
    return doc.render()
