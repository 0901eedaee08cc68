"""Token usage from the runtimes' own records, read incrementally.

* Claude Code transcripts (`transcript_path` in every hook payload, plus the
  session's `subagents/*.jsonl`): `message.usage` of assistant lines,
  de-duplicated by `message.id` + `requestId` as ccusage does; when a
  duplicate carries a larger usage (a streamed partial line was written
  first) only the difference is added.  `<synthetic>` entries are skipped.
* Codex rollout files: `event_msg` lines of type `token_count`; the delta of
  the cumulative `total_token_usage` (or `last_token_usage` when there is no
  total), priced by the model of the latest `turn_context`.
* Gemini CLI chat recordings (`transcript_path`, JSONL): each `gemini`
  message carries `tokens` `{input, output, cached, thoughts, tool}`; a
  message may be written again as it grows (also inside `$set` records), so
  it is de-duplicated by id like Claude's.  `input` includes `cached`;
  thoughts are billed as output, tool-use prompt tokens as input.

Each file has a cursor (byte offset, inode, and the state needed to
de-duplicate) so a file is never read twice; only complete lines are
consumed, a torn last line waits for the next read.  A runtime adapter
names its reader (USAGE) by its key in READERS.  Standard library only.
"""

from __future__ import annotations

import os

from cocoplus.core import jsonfast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMPONENTS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
MAX_READ = 64 * 1024 * 1024
# A step's lines sit close together in a record, so the cursor remembers only the
# most recent keys: enough to count each step once without growing for ever.
SEEN_KEEP = 2048


def empty() -> dict[str, int]:
    return {k: 0 for k in COMPONENTS}


def total(tokens: dict[str, int]) -> int:
    return sum(int(tokens.get(k, 0)) for k in COMPONENTS)


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _read_new_lines(path: str, cursor: dict[str, Any]) -> tuple[list[bytes], bool]:
    """Complete lines appended since the cursor; True if the file was replaced (re-read from 0)."""
    try:
        st = os.stat(path)
    except OSError:
        return [], False
    replaced = False
    offset = int(cursor.get("offset") or 0)
    if cursor.get("inode") not in (None, st.st_ino) or st.st_size < offset:
        offset = 0
        replaced = True
    if st.st_size == offset:
        cursor["inode"] = st.st_ino
        return [], replaced
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read(min(st.st_size - offset, MAX_READ))
    end = data.rfind(b"\n")
    if end == -1:
        return [], replaced
    cursor["offset"] = offset + end + 1
    cursor["inode"] = st.st_ino
    return data[: end + 1].splitlines(), replaced


def _once(seen: dict[str, list[int]], key: str | None, tokens: dict[str, int]) -> dict[str, int] | None:
    """Count a step once: a repeat adds nothing, a repeat with larger usage adds only the difference."""
    if key is None:
        return tokens
    vec = [tokens[k] for k in COMPONENTS]
    before = seen.get(key)
    if before is not None:
        if sum(vec) <= sum(before):
            return None
        tokens = {k: max(0, tokens[k] - before[i]) for i, k in enumerate(COMPONENTS)}
    seen[key] = vec
    if len(seen) > SEEN_KEEP:
        for old in list(seen)[: len(seen) - SEEN_KEEP]:
            del seen[old]
    return tokens


def claude_entries(path: str, cursor: dict[str, Any]) -> list[dict[str, Any]]:
    """New usage entries from a Claude Code transcript: [{"model", "tokens", "key"}]."""
    lines, _ = _read_new_lines(path, cursor)
    seen: dict[str, list[int]] = cursor.setdefault("seen", {})
    out: list[dict[str, Any]] = []
    for raw in lines:
        if b'"usage"' not in raw:
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") != "assistant":
            continue
        msg = obj.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            continue
        model = msg.get("model")
        if not isinstance(model, str) or model == "<synthetic>":
            continue
        u = msg["usage"]
        creation = _int(u.get("cache_creation_input_tokens"))
        detail = u.get("cache_creation") if isinstance(u.get("cache_creation"), dict) else {}
        one_hour = min(_int(detail.get("ephemeral_1h_input_tokens")), creation)
        tokens = {
            "input": _int(u.get("input_tokens")),
            "output": _int(u.get("output_tokens")),
            "cache_read": _int(u.get("cache_read_input_tokens")),
            "cache_write_5m": creation - one_hour,
            "cache_write_1h": one_hour,
        }
        mid = msg.get("id")
        rid = obj.get("requestId")
        key = (
            f"{mid}:{rid}" if isinstance(mid, str) and isinstance(rid, str) else (mid if isinstance(mid, str) else None)
        )
        counted = _once(seen, key, tokens)
        if counted is None:
            continue  # the same step again: counted once
        tokens = counted
        if total(tokens) == 0:
            continue
        out.append({"model": model, "tokens": tokens, "key": key, "speed": u.get("speed")})
    return out


def codex_entries(path: str, cursor: dict[str, Any]) -> list[dict[str, Any]]:
    """New usage entries from a Codex rollout file."""
    lines, replaced = _read_new_lines(path, cursor)
    if replaced:
        cursor.pop("last_total", None)
    out: list[dict[str, Any]] = []
    for raw in lines:
        if b"turn_context" not in raw and b"token_count" not in raw:
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        payload: dict[str, Any] = obj["payload"] if isinstance(obj.get("payload"), dict) else {}
        if obj.get("type") == "turn_context":
            if isinstance(payload.get("model"), str):
                cursor["model"] = payload["model"]
            continue
        if obj.get("type") != "event_msg" or payload.get("type") != "token_count":
            continue
        info: dict[str, Any] = payload["info"] if isinstance(payload.get("info"), dict) else {}
        total_u = info.get("total_token_usage")
        last_u = info.get("last_token_usage")
        if isinstance(total_u, dict):
            now = [_int(total_u.get(k)) for k in ("input_tokens", "cached_input_tokens", "output_tokens")]
            prev = cursor.get("last_total") or [0, 0, 0]
            if now == prev:
                continue  # repeated event, nothing new
            delta = [max(0, a - b) for a, b in zip(now, prev)]
            cursor["last_total"] = now
        elif isinstance(last_u, dict):
            delta = [_int(last_u.get(k)) for k in ("input_tokens", "cached_input_tokens", "output_tokens")]
        else:
            continue
        inp, cached, output = delta
        cached = min(cached, inp)
        tokens = {
            "input": inp - cached,
            "output": output,
            "cache_read": cached,
            "cache_write_5m": 0,
            "cache_write_1h": 0,
        }
        if total(tokens) == 0:
            continue
        out.append({"model": cursor.get("model") or payload.get("model") or "unknown", "tokens": tokens, "key": None})
    return out


def _gemini_messages(obj: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("type") == "gemini" and isinstance(x.get("tokens"), dict):
                found.append(x)
            else:
                stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(reversed(x))
    return found


def gemini_entries(path: str, cursor: dict[str, Any]) -> list[dict[str, Any]]:
    """New usage entries from a Gemini CLI chat recording."""
    lines, _ = _read_new_lines(path, cursor)
    seen: dict[str, list[int]] = cursor.setdefault("seen", {})
    out: list[dict[str, Any]] = []
    for raw in lines:
        if b'"tokens"' not in raw:
            continue
        try:
            obj = jsonfast.loads(raw.decode("utf-8", "replace"))
        except ValueError:
            continue
        for msg in _gemini_messages(obj):
            t = msg["tokens"]
            cached = min(_int(t.get("cached")), _int(t.get("input")))
            tokens = {
                "input": _int(t.get("input")) - cached + _int(t.get("tool")),
                "output": _int(t.get("output")) + _int(t.get("thoughts")),
                "cache_read": cached,
                "cache_write_5m": 0,
                "cache_write_1h": 0,
            }
            key = "gemini:" + msg["id"] if isinstance(msg.get("id"), str) else None
            counted = _once(seen, key, tokens)
            if counted is None:
                continue
            tokens = counted
            if total(tokens) == 0:
                continue
            model = msg.get("model") if isinstance(msg.get("model"), str) else "unknown"
            out.append({"model": model, "tokens": tokens, "key": key})
    return out


def claude_files(transcript_path: str) -> list[str]:
    """The session transcript and its subagents' transcripts."""
    files = [transcript_path]
    base = transcript_path.removesuffix(".jsonl")
    sub = os.path.join(base, "subagents")
    try:
        files.extend(os.path.join(sub, n) for n in sorted(os.listdir(sub)) if n.endswith(".jsonl"))
    except OSError:
        pass
    return files


def single_file(transcript_path: str) -> list[str]:
    return [transcript_path]


class Reader:
    """One record format: the files to read for a session, and how to read new entries from one.

    `keyed`: entries carry de-duplication keys, so a rebuilt cursor can skip
    what the spend log already holds.
    """

    __slots__ = ("entries", "files", "keyed")

    def __init__(self, files: Any, entries: Any, keyed: bool) -> None:
        self.files = files
        self.entries = entries
        self.keyed = keyed


READERS = {
    "claude-transcript": Reader(claude_files, claude_entries, keyed=True),
    "codex-rollout": Reader(single_file, codex_entries, keyed=False),
    "gemini-recording": Reader(single_file, gemini_entries, keyed=True),
}
