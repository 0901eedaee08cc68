"""jsonfast (the hook path's JSON) reads and writes exactly what the json package does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cocoplus.core import jsonfast

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30,
)


@given(documents)
def test_dumps_matches_json(obj):
    assert jsonfast.dumps(obj) == json.dumps(obj, ensure_ascii=False)
    assert jsonfast.dumps(obj, compact=True) == json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    assert jsonfast.dumps(obj, indent=2) == json.dumps(obj, ensure_ascii=False, indent=2)


@given(documents, st.sampled_from([None, 2]), st.sampled_from(["", " ", "\n", "\t\r\n "]))
def test_loads_matches_json(obj, indent, pad):
    text = pad + json.dumps(obj, indent=indent) + pad
    assert jsonfast.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "NaN",
        '{"a": NaN}',
        "[Infinity]",
        "-Infinity",
        "{",
        '{"a": 1} x',
        '{"a": 1}{"b": 2}',
        "[1,]",
        "'a'",
        '"\\x"',
    ],
)
def test_loads_rejects_what_json_state_files_must_not_hold(text):
    with pytest.raises(ValueError):
        jsonfast.loads(text)


def test_loads_bounds_huge_and_deep_input():
    with pytest.raises(ValueError):
        jsonfast.loads("1" * 10_000)
    with pytest.raises((RecursionError, ValueError)):
        jsonfast.loads("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"a": [float("-inf")]}])
def test_dumps_rejects_nan(value):
    with pytest.raises(ValueError):
        jsonfast.dumps(value)
    with pytest.raises(ValueError):
        jsonfast.dumps(value, indent=2)


def test_dumps_rejects_what_json_cannot_hold():
    with pytest.raises(TypeError):
        jsonfast.dumps({"a": object()})


TRUNCATED = ['{"cap": 200, "consumed": 3', '{"a": [1, 2', '{"a": "unfinish', '{"a":', "[", '{"a": 1,']


@pytest.mark.parametrize("text", TRUNCATED)
def test_truncated_json_is_reported_as_truncated(text):
    with pytest.raises(jsonfast.Truncated) as info:
        jsonfast.loads(text)
    assert str(info.value).startswith("truncated:") and "nested" not in str(info.value)


@pytest.mark.parametrize("text", ['{"a" 1}', "[1,]", '{"a": 1} x', '{"a": tru}'])
def test_a_syntax_error_is_not_called_truncated(text):
    with pytest.raises(ValueError) as info:
        jsonfast.loads(text)
    assert not isinstance(info.value, jsonfast.Truncated) and "char" in str(info.value)


def test_truncated_without_the_json_package_loaded():
    # The hook path never loads the json package; the C parser's error must still say what happened.
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from cocoplus.core import jsonfast\n"
        "for t in sys.argv[2:]:\n"
        "    try: jsonfast.loads(t)\n"
        "    except ValueError as e: print(type(e).__name__, e)\n"
        "print('json' in sys.modules, 'json.decoder' in sys.modules)\n"
    )
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(jsonfast.__file__))))
    r = subprocess.run(
        [sys.executable, "-S", "-c", probe, package_parent, '{"cap": 200, "consu', '{"a" 1}'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Truncated truncated: the JSON stops at char 19"), r.stdout + r.stderr
    assert lines[1] == "ValueError Expecting ':' delimiter: char 5"
    assert lines[2] == "False False"  # nothing was left behind in sys.modules
