"""Every word list is written once, in cocoplus/core/vocab.py, and the other places take it from there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cocoplus.core import keys, vocab

PACKAGE = Path(vocab.__file__).resolve().parents[1]
SOURCES = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".js", ".html") and p.is_file())


def spelled_out(words: tuple[str, ...]) -> re.Pattern[str]:
    """The words quoted and comma-separated in a row, in Python or JavaScript, as a list literal would have them."""
    quoted = [rf"""["']{re.escape(w)}["']""" for w in words]
    return re.compile(r"\s*,\s*".join(quoted))


@pytest.mark.parametrize("name", sorted(vocab.as_dict()))
def test_each_list_is_spelled_out_only_in_vocab(name: str) -> None:
    words = tuple(vocab.as_dict()[name])
    pattern = spelled_out(words)
    where = [str(p.relative_to(PACKAGE.parent)) for p in SOURCES if pattern.search(p.read_text(encoding="utf-8"))]
    assert set(where) <= {"cocoplus/core/vocab.py"}, where  # lists built from others are not spelled out at all


def test_the_fence_finds_a_copy() -> None:
    """The pattern above does see a list written elsewhere (in either language), so a pass means something."""
    assert spelled_out(vocab.EFFORTS).search('EFFORTS = ("low", "medium", "high")')
    assert spelled_out(vocab.ACTIVE_STATES).search("const ACTIVE = new Set(['running', 'paused',\n  'idle']);")
    assert len(SOURCES) > 50 and any(p.name == "app.js" for p in SOURCES)


def test_the_config_keys_take_their_choices_from_vocab() -> None:
    assert keys.BY_DOTTED["chat.default_effort"].choices is vocab.EFFORTS
    assert keys.BY_DOTTED["session.budget_enforcement"].choices is vocab.BUDGET_ENFORCEMENTS
    accounts = keys.TABLES_BY_SECTION["accounts"]
    assert accounts.field("kind").choices is vocab.ACCOUNT_KINDS  # type: ignore[union-attr]
    assert accounts.field("default_reasoning_effort").choices is vocab.EFFORTS  # type: ignore[union-attr]


def test_the_max_turns_default_is_written_once() -> None:
    """60 appears as the [supervision] max_turns default and nowhere else that sets a turn cap."""
    key = keys.BY_DOTTED["supervision.max_turns"]
    assert (key.default, key.minimum, key.maximum) == (60, 1, 10_000)
    # `max_turns` then 60 within 40 characters, line breaks included: the key table puts one argument a line.
    cap = re.compile(
        r"max_turns[\s\S]{0,40}\b60\b|\b60\b[^\n]{0,20}max_turns|max-turns[^\n]{0,60}\b60\b|DEFAULT_MAX_TURNS\s*="
    )
    where = [str(p.relative_to(PACKAGE.parent)) for p in SOURCES if cap.search(p.read_text(encoding="utf-8"))]
    assert where == ["cocoplus/core/keys.py"], where  # the key's own declaration
