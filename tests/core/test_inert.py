"""core.inert: untrusted text made inert for display, for each class of control sequence."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import inert, vocab

READABLE = "Café naïve Ærøskøbing 数据库のテスト 🚀 👩‍💻 🇫🇷 שלום مرحبا ½ ∑"

# (name, untrusted text, what it shows as, on several lines)
CASES = [
    ("CSI colour", "\x1b[31mred\x1b[0m text", "red text"),
    ("CSI cursor and erase", "a\x1b[2J\x1b[1;1Hb\x1b[?25l", "ab"),
    ("OSC 8 hyperlink, ST", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "click"),
    ("OSC title, BEL", "\x1b]0;owned\x07after", "after"),
    ("DCS", "x\x1bPq#0;2;0;0;0\x1b\\y", "xy"),
    ("APC, PM, SOS", "\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\z", "z"),
    ("8-bit CSI", "\x9b2Jcleared", "cleared"),
    ("8-bit OSC ended by 8-bit ST", "\x9d8;;https://evil.example/\x9clink", "link"),
    ("partial CSI at the end", "cut \x1b[3", "cut ␛[3"),
    ("unterminated OSC", "\x1b]8;;https://evil.example/ rest", "␛]8;;https://evil.example/ rest"),
    ("lone ESC and ESC c", "\x1bc reset \x1b", "␛c reset ␛"),
    ("BEL", "ding\x07", "ding␇"),
    ("backspace", "pass\x08\x08\x08\x08fail", "pass␈␈␈␈fail"),
    ("carriage return", "shown\rhidden", "shown␍hidden"),
    ("CR LF", "one\r\ntwo", "one\ntwo"),
    ("NUL, VT, FF, other C0", "a\x00b\x0bc\x0cd\x1fe", "a␀b␋c␌d␟e"),
    ("DEL", "x\x7fy", "x␡y"),
    ("C1", "nel\x85 ind\x84 st\x9c", "nel\\x85 ind\\x84 st\\x9c"),
    ("bidi override", "abc\u202edcba\u202c", "abc\\u202edcba\\u202c"),
    ("bidi isolates", "\u2066a\u2067b\u2068c\u2069", "\\u2066a\\u2067b\\u2068c\\u2069"),
    ("bidi marks", "\u200ex\u200fy\u061cz", "\\u200ex\\u200fy\\u061cz"),
    ("line separators", "a\u2028b\u2029c", "a\nb\nc"),
    ("lone surrogate", "bad\udcff", "bad\ufffd"),
    ("newline and tab", "a\n\tb", "a\n\tb"),
]

FORBIDDEN_CODES = (
    set(range(0x00, 0x20)) | set(range(0x7F, 0xA0)) | {ord(c) for c in vocab.BIDI_CONTROLS} | {0x2028, 0x2029}
)
FORBIDDEN_CODES |= set(range(0xD800, 0xE000))


# Any character, with the pieces of control sequences drawn often enough to build sequences, cut ones included.
PIECES = [
    "\x1b",
    "[",
    "]",
    "\\",
    "P",
    "_",
    "\x07",
    "\x9b",
    "\x9c",
    "\x9d",
    "\x90",
    "0",
    ";",
    "m",
    "8",
    "\r",
    "\n",
    "\u202e",
    "\udcff",
]
ANY = st.characters(codec=None) | st.sampled_from(PIECES)


def bad_chars(s: str, allowed: str = "") -> list[str]:
    return [c for c in s if ord(c) in FORBIDDEN_CODES and c not in allowed]


@pytest.mark.parametrize(("name", "raw", "want"), CASES, ids=[c[0] for c in CASES])
def test_each_class_of_control_is_removed_or_shown(name: str, raw: str, want: str) -> None:
    got = inert.text(raw)
    assert got == want
    assert not bad_chars(got, "\n\t")
    one = inert.line(raw)
    assert not bad_chars(one), (name, one)
    assert "\n" not in one and "\t" not in one


def test_one_line_turns_line_breaks_and_tabs_into_spaces() -> None:
    assert inert.line("a\nb\tc\r\nd\re\x0bf\u2028g") == "a b c d e f g"


def test_readable_text_is_kept_as_it_is() -> None:
    assert inert.text(READABLE) is READABLE  # nothing to do: the same object, no copy
    assert inert.line(READABLE) is READABLE
    mixed = f"\x1b[1m{READABLE}\x1b[0m\u202e"
    assert inert.text(mixed) == READABLE + "\\u202e"


def test_non_strings_are_shown_as_their_text() -> None:
    assert inert.line(12) == "12" and inert.text(None) == "None"


def test_a_sequence_hidden_in_a_sequence_leaves_no_control() -> None:
    # An ESC right before a CSI, an OSC whose payload holds another introducer, a string cut by ESC.
    for raw in ("\x1b\x1b[31mx", "\x1b]8;;\x9bhttp://e\x07t", "\x1b]0;a\x1bb\x07c", "\x9b\x9b1m", "\x1bP\x1b[1m\x1b\\"):
        assert not bad_chars(inert.text(raw), "\n\t"), raw


@given(st.text(alphabet=ANY, max_size=200))
def test_no_control_is_ever_emitted_and_the_result_is_a_fixed_point(s: str) -> None:
    many, one = inert.text(s), inert.line(s)
    assert not bad_chars(many, "\n\t")
    assert not bad_chars(one)
    assert inert.text(many) == many and inert.line(one) == one


@given(
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cs"), blacklist_characters=vocab.BIDI_CONTROLS + "\u2028\u2029"
        )
    )
)
def test_text_without_controls_passes_unchanged(s: str) -> None:
    assert inert.text(s) == s and inert.line(s) == s


@given(
    st.recursive(
        st.text(ANY) | st.integers(),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(), kids, max_size=4),
    )
)
def test_json_text_carries_the_same_data_and_no_control(obj: object) -> None:
    dumped = json.dumps(obj, ensure_ascii=False)
    shown = inert.json_text(dumped)
    assert json.loads(shown) == obj
    assert not bad_chars(shown)


def test_escaped_forms_are_visible_on_a_screen() -> None:
    got = inert.text("\x1b\x07\x08\x7f\x9b\u202e")
    assert got == "␛␇␈␡\\x9b\\u202e"
    assert all(c.isprintable() for c in got)


def test_a_toml_string_escapes_c1_and_bidi_controls_and_reads_back_the_same() -> None:
    import tomllib

    from cocoplus.core import keytypes

    raw = "a\x9b2J\x85\u202eb\u2066c\x1b[31m"
    shown = keytypes.toml_value(raw)
    assert shown == '"a\\u009b2J\\u0085\\u202eb\\u2066c\\u001b[31m"'
    assert tomllib.loads(f"k = {shown}")["k"] == raw
