"""PROGRESS.md: parsing is lossless, and set_budget changes only the lines cocoplus owns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cocoplus.core import progress
from tests.support.typed import present

ORDER = ("Cap", "Consumed", "Warn At", "Cost")

# Lines a handoff is made of, including the tricky ones: headings of every
# level, fenced code (with headings inside), owned-looking labels outside the
# budget section, CRLF endings, trailing spaces and no final newline.
LINE_PIECES = st.sampled_from(
    [
        "# Progress",
        "## Done",
        "## In Progress",
        "## Next",
        "## Notes",
        "## Iteration Budget",
        "##  iteration   budget  ##",
        "## Custom",
        "##",
        "### Sub heading",
        "   ## Indented heading",
        "    ## four spaces: code, not a heading",
        "#### ## not h2",
        "```",
        "```python",
        "~~~",
        "- Cap: 200",
        "- Consumed: 7",
        "- Warn At: 160",
        "* **Cap**: 10",
        "Cost: $1.00",
        "- Cap 200",
        "- item one",
        "  - nested item",
        "text with ## inside",
        "",
        "   ",
        "\t",
        "- [x] done thing",
        "ünïcödé — text",
        "page\x0cbreak",
        "sep\u2028## Next",
        "rec\x1e",
        "nel\x85- Cap: 1",
    ]
)
ENDINGS = st.sampled_from(["\n", "\r\n", "\n", "\r", ""])


@st.composite
def handoff_text(draw) -> str:
    parts = draw(st.lists(st.tuples(st.one_of(LINE_PIECES, st.text(max_size=30)), ENDINGS), max_size=40))
    return "".join(line + end for line, end in parts)


ANY_TEXT = st.one_of(handoff_text(), st.text(max_size=400))

budget_values = st.dictionaries(
    st.sampled_from(["Cap", "Consumed", "Warn At", "Cost"]),
    st.text(alphabet="0123456789$.,/ abc", min_size=1, max_size=12).map(str.strip).filter(bool),
    min_size=1,
)


def owned(line: str) -> bool:
    return progress._owned_label(line) is not None


@given(ANY_TEXT)
def test_parse_render_is_lossless(text):
    assert progress.parse(text).render() == text


@given(ANY_TEXT)
def test_split_lines_breaks_only_at_lf_crlf_cr(text):
    lines = progress.split_lines(text)
    assert "".join(lines) == text
    for ln in lines[:-1]:
        assert ln.endswith(("\n", "\r"))
    for ln in lines:
        if ln.endswith("\r\n"):
            body = ln[:-2]
        elif ln.endswith(("\n", "\r")):
            body = ln[:-1]
        else:
            body = ln
        assert "\n" not in body and "\r" not in body


def test_only_markdown_line_endings_split_lines():
    text = "## Done\nx\u2028## Next\x0cy\r## Notes\r\n"
    doc = progress.parse(text)
    assert [s.title for s in doc.sections] == ["Done", "Notes"]
    assert present(doc.find("Done")).items() == ["x\u2028## Next\x0cy"]


@given(handoff_text())
def test_sections_are_found_outside_fences_only(text):
    doc = progress.parse(text)
    for sec in doc.sections:
        assert progress._is_h2(sec.heading)
        assert sec.heading.rstrip("\r\n").lstrip(" ").startswith("##")


def test_heading_inside_a_fence_is_not_a_section():
    text = "## Done\n```\n## Next\n```\n## Notes\n"
    doc = progress.parse(text)
    assert [s.title for s in doc.sections] == ["Done", "Notes"]
    assert doc.missing() == ["In Progress", "Next"]


def test_template_has_every_section_and_budget_lines():
    doc = progress.parse(progress.template(200, 0, 160))
    assert doc.missing() == []
    assert progress.budget_values(doc) == {"Cap": "200", "Consumed": "0", "Warn At": "160"}


@pytest.mark.slow
@settings(max_examples=300)
@given(handoff_text(), budget_values)
def test_set_budget_changes_only_owned_lines(text, values):
    new = progress.set_budget(text, values)
    doc_before = progress.parse(text)
    doc_after = progress.parse(new)
    had_section = doc_before.find(progress.BUDGET_SECTION) is not None

    # The values are there afterwards.
    got = progress.budget_values(doc_after)
    for label, value in values.items():
        assert got[label] == value

    if had_section:
        # Every line that is not an owned budget line is kept byte for byte, in order.
        before_sec = present(doc_before.find(progress.BUDGET_SECTION))
        after_sec = present(doc_after.find(progress.BUDGET_SECTION))
        kept_before = [ln for ln in progress.split_lines(before_sec.body) if not owned(ln)]
        kept_after = [ln for ln in progress.split_lines(after_sec.body) if not owned(ln)]
        assert kept_after == kept_before
        # Outside the budget section nothing changes at all.
        i = doc_before.sections.index(before_sec)
        assert doc_after.preamble == doc_before.preamble
        assert [s.heading + s.body for s in doc_after.sections[:i]] == [
            s.heading + s.body for s in doc_before.sections[:i]
        ]
        assert [s.heading + s.body for s in doc_after.sections[i + 1 :]] == [
            s.heading + s.body for s in doc_before.sections[i + 1 :]
        ]
        # Owned lines for labels not being set are untouched.
        untouched = [
            ln
            for ln in progress.split_lines(before_sec.body)
            if owned(ln) and present(progress._owned_label(ln))[0] not in values
        ]
        after_lines = [ln.rstrip("\r\n") for ln in progress.split_lines(after_sec.body)]
        for ln in untouched:
            assert ln.rstrip("\r\n") in after_lines
    else:
        # The section is added at the end; the old text is kept as it was, before it.
        assert new.startswith(text)
        nl = doc_before.newline
        block = f"## {progress.BUDGET_SECTION}{nl}" + "".join(f"- {k}: {values[k]}{nl}" for k in ORDER if k in values)
        rest = new[len(text) :]
        assert rest.endswith(block)
        between = rest[: -len(block)]
        fence = progress.open_fence(text)
        if fence is None:
            assert between.strip("\r\n") == ""
        else:
            # A code block left open is closed first, so the heading is a heading.
            assert between.strip("\r\n") == fence


@pytest.mark.slow
@settings(max_examples=300)
@given(handoff_text(), budget_values)
def test_set_budget_is_idempotent(text, values):
    once = progress.set_budget(text, values)
    assert progress.set_budget(once, values) == once


@given(handoff_text())
def test_set_budget_with_current_values_changes_nothing(text):
    doc = progress.parse(text)
    section = doc.find(progress.BUDGET_SECTION)
    if section is None:
        return
    current = progress.budget_values(doc)
    # Only lines already in canonical form ("- Label: value") are guaranteed to stay as they are.
    canonical = all(
        ln.lstrip().rstrip("\r\n") == f"- {present(progress._owned_label(ln))[0]}: {ln.split(':', 1)[1].strip()}"
        for ln in progress.split_lines(section.body)
        if owned(ln)
    )
    labels = [present(progress._owned_label(ln))[0] for ln in progress.split_lines(section.body) if owned(ln)]
    if current and canonical and len(labels) == len(set(labels)):  # a repeated label is set to one value everywhere
        again = progress.set_budget(text, current)
        # An owned last line without a line ending gets one; nothing else changes.
        assert again == text or (again == text + doc.newline and not text.endswith(("\n", "\r")))


def test_set_budget_keeps_user_prose_and_crlf():
    text = (
        "# P\r\n\r\n## Done\r\n- a\r\n\r\n## Iteration Budget\r\n"
        "Some prose the user wrote.\r\n- Cap: 200\r\n- Consumed: 3\r\n"
        "- Warn At: 160\r\n\r\nMore prose.\r\n## Notes\r\nn\r\n"
    )
    new = progress.set_budget(text, {"Consumed": "4", "Cost": "$0.12"})
    assert new == text.replace("- Consumed: 3\r\n", "- Consumed: 4\r\n").replace(
        "- Warn At: 160\r\n", "- Warn At: 160\r\n- Cost: $0.12\r\n"
    )


def test_set_budget_adds_a_missing_section():
    text = "# P\n\n## Done\n- a\n"
    new = progress.set_budget(text, {"Cap": "5", "Consumed": "1", "Warn At": "4"})
    assert new == text + "\n## Iteration Budget\n- Cap: 5\n- Consumed: 1\n- Warn At: 4\n"
    assert progress.set_budget("", {"Cap": "5"}) == "## Iteration Budget\n- Cap: 5\n"


def test_set_budget_inserts_under_heading_when_no_owned_line():
    text = "## Iteration Budget\nprose\n## Next\n"
    new = progress.set_budget(text, {"Cap": "9"})
    assert new == "## Iteration Budget\n- Cap: 9\nprose\n## Next\n"


def test_set_budget_after_an_unclosed_fence_adds_one_section_only():
    text = "## Notes\n```python\nprint(1)\n"
    once = progress.set_budget(text, {"Cap": "5", "Consumed": "1"})
    assert once == text + "```\n\n## Iteration Budget\n- Cap: 5\n- Consumed: 1\n"
    twice = progress.set_budget(once, {"Cap": "5", "Consumed": "2"})
    assert twice == once.replace("Consumed: 1", "Consumed: 2")
    assert progress.parse(twice).find("Iteration Budget") is not None


def test_set_budget_on_heading_without_newline():
    new = progress.set_budget("## Iteration Budget", {"Cap": "9"})
    assert progress.budget_values(progress.parse(new)) == {"Cap": "9"}
    assert new.startswith("## Iteration Budget\n")


# -- the handoff's checksum (the freshness stamp's) -----------------------------------------------------------


@given(st.text(alphabet="ab- \n#x", min_size=2, max_size=400), st.data())
def test_checksum_changes_when_two_bytes_trade_places(text, data):
    """Any two differing characters swapped changes it, at any distance (a sum of bytes times powers of a
    small base would miss swaps a fixed distance apart: 61 bytes for one modulo 2**61 - 1)."""
    i = data.draw(st.integers(0, len(text) - 2))
    j = data.draw(st.integers(i + 1, len(text) - 1))
    swapped = text[:i] + text[j] + text[i + 1 : j] + text[i] + text[j + 1 :]
    if progress.content_checksum(swapped) != progress.content_checksum(text):
        return
    # Equal checksums only for an equal handoff: same text, or a change inside the budget section alone
    # (or a line ending the checksum normalises).
    assert progress._handoff_bytes(swapped) == progress._handoff_bytes(text)


def test_checksum_ignores_the_budget_lines_and_line_endings_only():
    text = progress.template(200, 3, 150).replace("## Done\n", "## Done\n- parser\n")
    same = progress.set_budget(text, {"Cap": "200", "Consumed": "4", "Warn At": "150"})
    assert progress.content_checksum(same) == progress.content_checksum(text)
    assert progress.content_checksum(text.replace("\n", "\r\n")) == progress.content_checksum(text)
    assert progress.content_checksum(text.replace("- parser", "- parsed")) != progress.content_checksum(text)
    # Two characters 61 bytes apart trade places.
    far = text.replace("## Done\n", "## Done\n" + "a" + "-" * 60 + "b\n")
    swapped = text.replace("## Done\n", "## Done\n" + "b" + "-" * 60 + "a\n")
    assert progress.content_checksum(far) != progress.content_checksum(swapped)


def test_a_checksum_in_the_earlier_crc_form_still_matches():
    import zlib

    text = progress.template(200, 3, 150).replace("## Done\n", "## Done\n- parser\n")
    raw = progress._handoff_bytes(text)
    old = f"{zlib.crc32(raw):08x}{len(raw):x}"
    assert progress.checksum_matches(old, text)
    assert progress.checksum_matches(progress.content_checksum(text), text)
    assert not progress.checksum_matches(old, text.replace("parser", "parsed"))
    assert not progress.checksum_matches(progress.content_checksum(text), text.replace("parser", "parsed"))
