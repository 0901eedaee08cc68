"""Measured spend: transcripts and rollouts read incrementally, de-duplicated, priced."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cocoplus.core.paths import Layout
from cocoplus.core.shapes import SessionRecord
from cocoplus.cost import spend
from cocoplus.session import registry
from tests.hook.helpers import FIXTURES

# List prices per million tokens, written down here independently of the
# price table cocoplus uses: input, output, cache read, 5-minute cache write, 1-hour cache write.
PRICES = {
    "claude-sonnet-4-5": (3.00, 15.00, 0.30, 3.75, 6.00),
    "claude-haiku-4-5": (1.00, 5.00, 0.10, 1.25, 2.00),
    "claude-sonnet-5": (2.00, 10.00, 0.20, 2.50, 4.00),
    "gpt-5.5": (5.00, 30.00, 0.50, 0.0, 0.0),
}


def expected_usd(model: str, inp: int, out: int, read: int = 0, w5: int = 0, w1h: int = 0) -> float:
    p = PRICES[model]
    return (inp * p[0] + out * p[1] + read * p[2] + w5 * p[3] + w1h * p[4]) / 1_000_000


def assistant_line(
    model: str,
    msg_id: str,
    req_id: str,
    inp: int,
    out: int,
    read: int = 0,
    w5: int = 0,
    w1h: int = 0,
    session: str = "s1",
) -> str:
    usage: dict[str, Any] = {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5 + w1h,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1h},
    }
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": session,
            "requestId": req_id,
            "message": {"id": msg_id, "model": model, "role": "assistant", "content": [], "usage": usage},
        }
    )


def register(layout: Layout, sid: str, runtime: str, transcript: Path) -> SessionRecord:
    rec, _ = registry.ensure(layout, runtime, sid, event="SessionStart", info={"transcript_path": str(transcript)})
    return rec


def test_two_models_priced_to_the_cent_duplicates_once_and_only_new_lines_later(
    project: Layout, tmp_path: Path
) -> None:
    t = tmp_path / "t.jsonl"
    lines = [
        json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}),
        assistant_line("claude-sonnet-4-5", "m1", "r1", 1200, 3400, read=50_000, w5=2_000, w1h=8_000),
        assistant_line(
            "claude-sonnet-4-5", "m1", "r1", 1200, 3400, read=50_000, w5=2_000, w1h=8_000
        ),  # the same step again
        assistant_line("claude-haiku-4-5", "m2", "r2", 9_000, 12_000, read=120_000),
        assistant_line("<synthetic>", "m3", "r3", 999, 999),
    ]
    t.write_text("\n".join(lines) + "\n")
    register(project, "s1", "claude", t)
    first = spend.measure(project, {})
    assert first["added"] == 2 and first["unpriced"] == {}
    want = expected_usd("claude-sonnet-4-5", 1200, 3400, 50_000, 2_000, 8_000) + expected_usd(
        "claude-haiku-4-5", 9_000, 12_000, 120_000
    )
    tot = spend.totals(project)
    assert round(tot["spent"], 2) == round(want, 2)
    assert abs(tot["spent"] - want) < 1e-9
    by_model = {r["model"]: r["usd"] for r in tot["by_model"]}
    assert abs(by_model["claude-haiku-4-5"] - expected_usd("claude-haiku-4-5", 9_000, 12_000, 120_000)) < 1e-9

    # Nothing new: nothing added.
    assert spend.measure(project, {})["added"] == 0
    # Appending adds only the new spend (and a duplicate of an old step adds nothing).
    with t.open("a") as fh:
        fh.write(assistant_line("claude-haiku-4-5", "m2", "r2", 9_000, 12_000, read=120_000) + "\n")
        fh.write(assistant_line("claude-sonnet-4-5", "m4", "r4", 10, 500) + "\n")
    again = spend.measure(project, {})
    assert again["added"] == 1
    assert abs(spend.totals(project)["spent"] - (want + expected_usd("claude-sonnet-4-5", 10, 500))) < 1e-9


def test_a_streamed_partial_then_full_usage_counts_the_larger_once(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 100, 10) + "\n")
    register(project, "s2", "claude", t)
    spend.measure(project, {})
    with t.open("a") as fh:
        fh.write(assistant_line("claude-haiku-4-5", "m1", "r1", 100, 400) + "\n")
    spend.measure(project, {})
    assert abs(spend.totals(project)["spent"] - expected_usd("claude-haiku-4-5", 100, 400)) < 1e-12


def test_a_torn_last_line_waits_for_its_end(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    line = assistant_line("claude-haiku-4-5", "m1", "r1", 100, 10)
    t.write_text(line[:40])
    register(project, "s3", "claude", t)
    assert spend.measure(project, {})["added"] == 0
    t.write_text(line + "\n")
    assert spend.measure(project, {})["added"] == 1


def test_claude_fixture_transcript_deduplicated_totals(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "fixture.jsonl"
    t.write_bytes((FIXTURES / "claude-transcript.jsonl").read_bytes())
    register(project, "fx", "claude", t)
    spend.measure(project, {})
    records = [json.loads(x) for x in open(project.spend_log).read().splitlines()]
    sums = {k: sum(r["tokens"][k] for r in records) for k in ("input", "output", "cache_read")}
    writes = sum(r["tokens"]["cache_write_5m"] + r["tokens"]["cache_write_1h"] for r in records)
    # The fixture's documented de-duplicated totals.
    assert sums == {"input": 15, "output": 567, "cache_read": 68158} and writes == 6812
    assert len(records) == 3  # 4 assistant lines, 2 of them one step


def test_subagent_transcripts_are_included(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "sess.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 100, 100) + "\n")
    (tmp_path / "sess" / "subagents").mkdir(parents=True)
    (tmp_path / "sess" / "subagents" / "agent-a1.jsonl").write_text(
        assistant_line("claude-haiku-4-5", "m9", "r9", 1000, 1000) + "\n"
    )
    register(project, "s4", "claude", t)
    spend.measure(project, {})
    assert abs(spend.totals(project)["spent"] - expected_usd("claude-haiku-4-5", 1100, 1100)) < 1e-12


def test_codex_rollout_token_counts(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "rollout.jsonl"
    t.write_bytes((FIXTURES / "codex-rollout-token-count.jsonl").read_bytes())
    register(project, "cx", "codex", t)
    spend.measure(project, {})
    # total_token_usage at the end: input 37512 (30208 cached), output 702.
    want = expected_usd("gpt-5.5", 37512 - 30208, 702, 30208)
    assert abs(spend.totals(project)["spent"] - want) < 1e-9
    # A repeated token_count (same totals) adds nothing; a new one adds its delta.
    last = (FIXTURES / "codex-rollout-token-count.jsonl").read_text().splitlines()[-1]
    obj = json.loads(last)
    obj["payload"]["info"]["total_token_usage"].update(input_tokens=40000, cached_input_tokens=31000, output_tokens=802)
    with t.open("a") as fh:
        fh.write(last + "\n" + json.dumps(obj) + "\n")
    spend.measure(project, {})
    want2 = expected_usd("gpt-5.5", 40000 - 31000, 802, 31000)
    assert abs(spend.totals(project)["spent"] - want2) < 1e-9


def test_unknown_model_is_reported_not_priced_at_zero(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("acme-local-9000", "m1", "r1", 1_000_000, 1_000_000) + "\n")
    register(project, "s5", "claude", t)
    got = spend.measure(project, {})
    assert "acme-local-9000" in got["unpriced"]
    tot = spend.totals(project)
    assert tot["spent"] == 0.0
    assert tot["unpriced"][0]["model"] == "acme-local-9000" and tot["unpriced"][0]["tokens"] == 2_000_000


def test_pricing_override_prices_an_unknown_model(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("acme-local-9000", "m1", "r1", 2_000_000, 1_000_000, read=1_000_000) + "\n")
    register(project, "s6", "claude", t)
    spend.measure(project, {"acme-local-9000": {"input": 0.5, "output": 1.5, "cache_read": 0.05}})
    assert abs(spend.totals(project)["spent"] - (1.0 + 1.5 + 0.05)) < 1e-9


def test_add_cost_and_categories(project: Layout) -> None:
    spend.add_cost(project, 0.25, "landing", note="CI")
    spend.add_cost(project, 1.5, "coordination")
    tot = spend.totals(project)
    assert tot["spent"] == 1.75
    assert tot["by_category"] == {"execution": 0.0, "coordination": 1.5, "landing": 0.25}
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(Exception) as ei:
            spend.add_cost(project, bad)
        assert "finite number" in str(ei.value)
    with pytest.raises(Exception, match="category"):
        spend.add_cost(project, 1.0, "travel")


def test_cursors_survive_damage_without_double_counting(project: Layout, tmp_path: Path) -> None:
    t = tmp_path / "t.jsonl"
    t.write_text(assistant_line("claude-haiku-4-5", "m1", "r1", 1000, 1000) + "\n")
    register(project, "s7", "claude", t)
    spend.measure(project, {})
    with open(project.cost_cursors, "w") as fh:
        fh.write("{garbage")
    spend.measure(project, {})
    assert abs(spend.totals(project)["spent"] - expected_usd("claude-haiku-4-5", 1000, 1000)) < 1e-12
    assert any(n.startswith("cursors.json.corrupt-") for n in os.listdir(project.cost_dir))


def test_gemini_chat_recording_tokens(project: Layout, tmp_path: Path) -> None:
    """Gemini CLI 0.61 recordings: `tokens` per gemini message, repeated inside `$set` records."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "runtime-records" / "gemini-chat-recording.jsonl"
    t = tmp_path / "session.jsonl"
    t.write_bytes(src.read_bytes())
    register(project, "gm-1", "gemini", t)
    got = spend.measure(project, {})
    assert got["added"] == 2 and got["unpriced"] == {}
    # gemini-2.5-flash: $0.30 input, $2.50 output (thoughts billed as output), $0.03 cached input per MTok.
    want = (4000 * 0.30 + 500 * 2.50 + 8000 * 0.03) / 1e6 + ((3000 + 100) * 0.30 + 40 * 2.50 + 12000 * 0.03) / 1e6
    assert abs(spend.totals(project)["spent"] - want) < 1e-9
    assert spend.measure(project, {})["added"] == 0
