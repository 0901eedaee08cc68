"""CONTEXT.md predicates: render/parse round trip, verbatim values, bad lines with their numbers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import predicates
from cocoplus.core.predicates import Predicate

FIRST = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
REST = FIRST + "0123456789-"

classes = st.builds(lambda a, b: a + b, st.sampled_from(FIRST), st.text(alphabet=REST, max_size=12))
keys = st.builds(
    lambda a, b: a + b,
    st.sampled_from(REST),
    st.text(alphabet=REST + ".", max_size=16),
).filter(lambda k: not k.endswith("."))
# Values are quoted verbatim: anything but a line break (a value may contain
# '=', '#', spaces at either end, unicode...).
values = st.text(
    st.characters(exclude_characters="\n\r", exclude_categories=["Cs"]),
    max_size=40,
).filter(lambda v: not v.endswith("\r"))

preds = st.builds(Predicate, classes, keys, values)


@given(st.lists(preds, max_size=20))
def test_render_parse_round_trip(items):
    text = predicates.render(items)
    parsed, bad = predicates.parse(text)
    assert bad == []
    assert parsed == items
    assert [p.value for p in parsed] == [p.value for p in items]  # byte for byte, spaces included
    assert [p.line for p in parsed] == list(range(1, len(items) + 1))


@given(st.lists(preds, max_size=10))
def test_round_trip_with_header_and_crlf(items):
    text = predicates.render(items, header=predicates.TEMPLATE)
    parsed, bad = predicates.parse(text)
    assert bad == [] and parsed == items
    header_lines = predicates.TEMPLATE.count("\n")
    assert [p.line for p in parsed] == [header_lines + i for i in range(1, len(items) + 1)]
    crlf = text.replace("\n", "\r\n")
    parsed_crlf, bad = predicates.parse(crlf)
    assert bad == [] and parsed_crlf == items


@given(
    st.lists(
        st.one_of(
            preds.map(lambda p: ("ok", f"{p.cls}.{p.key}={p.value}")),
            st.sampled_from(
                [
                    ("skip", ""),
                    ("skip", "   "),
                    ("skip", "# a comment"),
                    ("skip", "  # indented comment"),
                    ("skip", "## heading"),
                    ("bad", "no equals sign"),
                    ("bad", "nodot=1"),
                    ("bad", " task.state=1"),
                    ("bad", "task.state =1"),
                    ("bad", "1task.state=1"),
                    ("bad", "task.=1"),
                    ("bad", "task.state.=1"),
                    ("bad", ".state=1"),
                    ("bad", "ta sk.state=1"),
                    ("bad", "task.st ate=1"),
                    ("bad", "tâsk.state=1"),
                    ("bad", "- task.state=done"),
                ]
            ),
        ),
        max_size=30,
    )
)
def test_bad_lines_reported_with_their_numbers(lines):
    text = "\n".join(line for _, line in lines)
    parsed, bad = predicates.parse(text)
    expected_bad = [i for i, (kind, _) in enumerate(lines, start=1) if kind == "bad"]
    expected_ok = [i for i, (kind, _) in enumerate(lines, start=1) if kind == "ok"]
    assert [n for n, _ in bad] == expected_bad
    assert [p.line for p in parsed] == expected_ok
    assert all(isinstance(why, str) and why for _, why in bad)


def test_values_are_kept_verbatim():
    text = "task.state= in progress  \nurl.api=https://x.test/a?b=c#frag\nnote.x=\n"
    parsed, bad = predicates.parse(text)
    assert bad == []
    assert [(p.name, p.value) for p in parsed] == [
        ("task.state", " in progress  "),
        ("url.api", "https://x.test/a?b=c#frag"),
        ("note.x", ""),
    ]
    assert parsed[0].raw == "task.state= in progress  "
    assert parsed[0].as_dict() == {
        "class": "task",
        "key": "state",
        "value": " in progress  ",
        "line": 1,
        "text": "task.state= in progress  ",
    }


def test_template_has_no_predicates_and_no_problems():
    assert predicates.parse(predicates.TEMPLATE) == ([], [])
