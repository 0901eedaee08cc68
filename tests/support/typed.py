"""Narrowing for the type checker where a test requires a value to be there."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """`value`, which the test requires to exist (a record read back, a hook's JSON answer): None fails the test."""
    assert value is not None, "expected a value, got None"
    return value
