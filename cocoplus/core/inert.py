"""Untrusted text made inert for display: what a worker, a steer, a repository or a peer wrote,
before it reaches a person's terminal, phone or page.

A terminal acts on what it is sent: ANSI sequences move the cursor, clear
the screen, set the window title or make a hyperlink to any URL (OSC 8);
BEL rings, backspace and carriage return overwrite what was printed; C1
controls (U+0080-U+009F, U+009B being an 8-bit CSI) do the same in one
character; bidi overrides and isolates reorder what is read.  Every door
that shows such text (notifications, the CLI, `cocoplus top`) passes it
through here first:

* a complete CSI sequence (`ESC [` or U+009B, parameters, a final byte)
  and a complete string sequence (OSC `ESC ]`, DCS `ESC P`, SOS, PM, APC,
  or their 8-bit forms, ended by BEL or ST) is removed: colours and
  hyperlinks go, the text they wrapped stays;
* every control character left (a lone or partial ESC, BEL, backspace,
  CR, ...) is shown by its Unicode control picture (`␛`, `␇`, `␈`, `␍`;
  DEL as `␡`), so a cut-off sequence reads as the text it is;
* C1 controls are shown as `\\x85`, bidi controls (U+061C, U+200E,
  U+200F, U+202A-U+202E, U+2066-U+2069) as `\\u202e`, a lone surrogate as
  U+FFFD;
* `text` keeps newline and tab (a CR LF pair becomes a newline, U+2028 and
  U+2029 a newline); `line` is for one-line fields and turns tab, newline,
  CR, VT, FF, U+2028 and U+2029 into spaces.

Everything else (accents, CJK, emoji with their joiners and selectors)
is kept as it is.  No control character is ever emitted, and the result
is a fixed point (`text(text(s)) == text(s)`).  `json_text` does the same
for JSON printed to a terminal without changing the data it carries.

Standard library only; the hook never imports it (its output goes to the
agent, not to a person).
"""

from __future__ import annotations

import re

from cocoplus.core.vocab import BIDI_CONTROLS

# A complete CSI sequence: introducer, parameter bytes, intermediate bytes, final byte (ECMA-48 5.4).
_CSI = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
# A complete control string: OSC, DCS, SOS, PM, APC (7-bit or 8-bit), its payload, then BEL or ST.
# The payload stops at any introducer or ESC, so a string that never ends costs one scan, not one per start.
_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x90\x98\x9c\x9d\x9e\x9f]*(?:\x07|\x1b\\|\x9c)"
_BIDI = BIDI_CONTROLS
_OTHER = rf"\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029\ud800-\udfff"

_MULTI = re.compile(rf"{_CSI}|{_STRING}|\r\n|[{_OTHER}]")
_ONE = re.compile(rf"{_CSI}|{_STRING}|\r\n|[\t\n{_OTHER}]")
# Every sequence starts with a character of these classes: one scan of a class says whether there is work.
_ANY_MULTI = re.compile(rf"[{_OTHER}]")
_ANY_ONE = re.compile(rf"[\t\n{_OTHER}]")
_JSON = re.compile(rf"[\x7f-\x9f{_BIDI}\u2028\u2029\ud800-\udfff]")


def _picture(ch: str) -> str:
    o = ord(ch)
    if o < 0x20:
        return chr(0x2400 + o)  # ␀ .. ␟
    if o == 0x7F:
        return "\u2421"  # ␡
    if o <= 0x9F:
        return f"\\x{o:02x}"
    if 0xD800 <= o <= 0xDFFF:
        return "\ufffd"
    return f"\\u{o:04x}"


def _multi(m: re.Match[str]) -> str:
    s = m.group()
    if len(s) > 1:
        return "\n" if s == "\r\n" else ""
    if s in "\u2028\u2029":
        return "\n"
    return _picture(s)


def _one(m: re.Match[str]) -> str:
    s = m.group()
    if len(s) > 1:
        return " " if s == "\r\n" else ""
    if s in "\t\n\r\x0b\x0c\u2028\u2029":
        return " "
    return _picture(s)


def text(value: object) -> str:
    """`value` as text safe to show on several lines.

    Newline and tab are kept; every other control is made visible or removed."""
    s = value if isinstance(value, str) else str(value)
    return _MULTI.sub(_multi, s) if _ANY_MULTI.search(s) else s


def line(value: object) -> str:
    """`value` as text safe to show on one line: as `text`, with tabs and line breaks turned into spaces."""
    s = value if isinstance(value, str) else str(value)
    return _ONE.sub(_one, s) if _ANY_ONE.search(s) else s


def json_text(dumped: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with DEL, C1, bidi controls, line separators
    and lone surrogates written as `\\uXXXX` escapes: the same data, nothing a terminal acts on.

    json.dumps already escapes C0 controls; these characters occur only inside strings, where an escape
    means the same character.
    """
    return _JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped) if _JSON.search(dumped) else dumped
