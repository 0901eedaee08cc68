"""Pin what the hook imports, for every event of every runtime: the standard library and cocoplus' own modules.

Each case runs the installed hook script exactly as a runtime does
(`python -S <cocoplus/hook/__main__.py> <Event> --runtime R`, payload on
stdin) and lists the modules it loaded.  A slow import creeping onto a hook
shows up here as a failure, not as a timing wobble.  The turn-end cases have
new usage to price in a transcript that exists, and the test checks it was
priced, so the pricing path is the one pinned.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus import config
from cocoplus.core.paths import Layout
from cocoplus.install.hooks import hook_script
from cocoplus.ops import project as project_ops
from cocoplus.runtimes import registry
from cocoplus.session import killswitch
from cocoplus.session import registry as sessions
from tests.hook.helpers import FIXTURES, fixture, hook_env
from tests.support import vouched

HEAVY = {
    "typer", "rich", "pydantic", "pydantic_core", "filelock", "watchdog", "tomllib", "tomli_w", "click",
    "genai_prices", "httpx", "fastapi", "mcp", "decimal", "importlib", "asyncio", "apprise", "requests", "textual",
    "nats", "ssl", "socket",
}  # fmt: skip
# cocoplus modules that must never load in a hook process
NOT_IN_HOOK = {
    "cocoplus.cli", "cocoplus.report", "cocoplus.supervision", "cocoplus.chat", "cocoplus.server", "cocoplus.mcp",
    "cocoplus.notify", "cocoplus.inbox", "cocoplus.tui", "cocoplus.fleet", "cocoplus.install",
    "cocoplus.runtimes.mcp_config",
    "cocoplus.cost.price_table", "cocoplus.cost.live", "cocoplus.cost.forecast", "cocoplus.core.inert",
}  # fmt: skip
# Not even these on the events that run around every tool call.
NOT_ON_TOOL_EVENTS = {"json", "re", "typing", "enum", "zlib"}
RECORDS = Path(__file__).resolve().parent.parent / "fixtures" / "runtime-records"

# Runs the script the way `python -S script` would (compiled from source, as
# __main__), then lists what it loaded; the exit code goes on the last line.
PROBE = """
import posix, sys
before = set(sys.modules)

def _exit(code):  # the script leaves with posix._exit; come back here instead
    raise SystemExit(code)

posix._exit = _exit
script = sys.argv[1]
sys.argv = sys.argv[1:]
code = 0
try:
    exec(compile(open(script, "rb").read(), script, "exec"), {"__name__": "__main__", "__file__": script})
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nMODULES " + " ".join(sorted(set(sys.modules) - before)) + "\\n")
sys.stderr.write("RC %s\\n" % code)
"""


def loaded(
    layout: Layout,
    event: str,
    runtime: str,
    payload: dict[str, Any],
    argv_payload: bool = False,
    below: list[str] | None = None,
) -> tuple[set[str], str]:
    data = json.dumps(payload)
    argv = [*(below or []), sys.executable, "-S", "-c", PROBE, hook_script(), event, "--runtime", runtime]
    # As the runtime starts it: in the project, with the runtime's own variable naming it (if it has one).
    own = registry.get(runtime).PROJECT_ENV
    r = subprocess.run(
        argv + ([data] if argv_payload else []),
        input=b"" if argv_payload else data.encode(),
        capture_output=True,
        env=hook_env(None, **({own[0]: layout.project} if own else {})),
        cwd=layout.project,
        timeout=60,
    )
    err = r.stderr.decode()
    lines = err.splitlines()
    assert r.returncode == 0 and lines and lines[-1] == "RC 0", err
    mods = [x for x in lines if x.startswith("MODULES ")][-1]
    return set(mods.split()[1:]), r.stdout.decode()


def _top(mods: set[str]) -> set[str]:
    return {m.split(".")[0] for m in mods}


# -- realistic payloads for every event -------------------------------------------------------

TOOL = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}, "tool_use_id": "toolu_01"}
BY_KIND: dict[str, dict[str, Any]] = {
    "pre_tool": TOOL,
    "post_tool": {
        **TOOL,
        "tool_response": {"stdout": "12 passed\n", "stderr": "", "interrupted": False, "isImage": False},
    },
    "post_tool_failure": {**TOOL, "error": "Exit code 1"},
    "permission": {"tool_name": "Bash", "tool_input": {"command": "git push origin main"}},
    "prompt": {"prompt": "Continue with the next item in PLAN.md"},
    "session_start": {"source": "startup"},
    "stop": {"stop_hook_active": False, "last_assistant_message": "Done."},
    "stop_failure": {"error": "rate_limit"},
    "notification": {"notification_type": "idle_prompt", "message": "waiting for input"},
    "session_end": {"reason": "prompt_input_exit"},
    "subagent_stop": {"stop_hook_active": False, "agent_id": "a1", "agent_type": "general"},
    "other": {"trigger": "auto"},
}
CURSOR_BY_EVENT: dict[str, dict[str, Any]] = {
    "beforeShellExecution": {"command": "pytest -q"},
    "beforeMCPExecution": {"tool_name": "search", "tool_input": '{"q": "x"}', "command": "docs-server"},
    "beforeReadFile": {"file_path": "README.md", "content": "# x\n"},
    "afterShellExecution": {"command": "pytest -q", "output": "12 passed\n"},
    "afterMCPExecution": {"tool_name": "search", "tool_input": '{"q": "x"}', "result_json": "{}"},
    "afterFileEdit": {"file_path": "README.md", "edits": [{"old_string": "a", "new_string": "b"}]},
    "beforeSubmitPrompt": {"prompt": "go on", "attachments": []},
    "stop": {"status": "completed", "loop_count": 0},
}
# A record file each usage reader reads, as its runtime writes it.
USAGE_RECORD = {
    "claude-transcript": FIXTURES / "claude-transcript.jsonl",
    "codex-rollout": FIXTURES / "codex-rollout-token-count.jsonl",
    "gemini-recording": RECORDS / "gemini-chat-recording.jsonl",
}
IDENTITY = (
    "session_id",
    "conversation_id",
    "generation_id",
    "model",
    "cursor_version",
    "user_email",
    "timestamp",
    "permission_mode",
    "turn_id",
    "conversationId",
)


def base_payload(runtime: str) -> dict[str, Any]:
    """The identity fields of the runtime's own turn-end fixture (`<runtime>-<stop event>.json`)."""
    stop = next(e for e, k, m in registry.get(runtime).EVENTS if k == "stop" and m is not None)
    return {k: v for k, v in fixture(f"{runtime}-{stop.lower()}.json").items() if k in IDENTITY}


def payload_for(runtime: str, event: str, kind: str, project: Layout, transcript: str | None) -> dict[str, Any]:
    base = base_payload(runtime)
    base.update(cwd=project.project, hook_event_name=event)
    if runtime == "cursor":
        base.update(workspace_roots=[project.project], **CURSOR_BY_EVENT[event])
    else:
        base.update(BY_KIND[kind])
    if transcript is not None:
        base["transcript_path"] = transcript
    return base


def every_event() -> list[tuple[str, str, str]]:
    return [(a.NAME, e, k) for a in registry.ordered() for e, k, _m in a.EVENTS]


@pytest.fixture
def compiled(project: Layout) -> Layout:
    config.compile_for_hook(project)  # the common case: the compiled config and price table are current
    project_ops.prices_for_hooks(project)
    assert os.path.exists(project.price_table)
    return project


@pytest.mark.parametrize(("runtime", "event", "kind"), every_event())
def test_every_event_of_every_runtime_is_stdlib_only(
    compiled: Layout, tmp_path: Path, runtime: str, event: str, kind: str
) -> None:
    transcript = None
    reader = registry.get(runtime).USAGE
    if kind == "stop" and reader is not None:
        # New usage to price at the turn end: a record file that exists, as the runtime writes it.
        transcript = str(tmp_path / "session.jsonl")
        shutil.copyfile(USAGE_RECORD[reader], transcript)
    payload = payload_for(runtime, event, kind, compiled, transcript)
    mods, out = loaded(compiled, event, runtime, payload, argv_payload=event == "agent-turn-complete")
    assert not (_top(mods) & HEAVY), sorted(_top(mods) & HEAVY)
    assert not {m for m in mods if any(m == b or m.startswith(b + ".") for b in NOT_IN_HOOK)}, sorted(mods)
    outside = {m for m in _top(mods) if m not in sys.stdlib_module_names and m != "cocoplus"}
    assert outside == set(), outside
    # The compiled copy is current and nothing overrides it: read as it is, without the key table or TOML.
    assert not ({"cocoplus.config", "cocoplus.core.settings", "cocoplus.core.keys"} & mods), sorted(
        {"cocoplus.config", "cocoplus.core.settings", "cocoplus.core.keys"} & mods
    )
    if kind in ("pre_tool", "post_tool", "post_tool_failure", "prompt", "permission"):
        assert not (NOT_ON_TOOL_EVENTS & mods), sorted(NOT_ON_TOOL_EVENTS & mods)
    if kind == "pre_tool":
        # The path before every tool call: the entry module, the registry and this runtime's adapter, nothing else;
        # a runtime that refuses a tool on a missing answer (agy) also reads the payload and answers.
        assert mods == fast_path(runtime), sorted(mods ^ fast_path(runtime))
        adapter = registry.get(runtime)
        assert out == ("" if not adapter.FAILS_CLOSED else json.dumps(adapter.pass_answer(kind)))
    if transcript is not None and event != "agent-turn-complete":
        records = [json.loads(x) for x in open(compiled.spend_log).read().splitlines()]
        assert records and all(r["usd"] is not None and r["price_source"] == "genai-prices" for r in records), records
        assert "cocoplus.cost.prices" in mods


def fast_path(runtime: str) -> set[str]:
    defaults = {"cocoplus.runtimes.adapters._defaults"} if runtime in ("cursor", "cortex", "antigravity") else set()
    if registry.get(runtime).FAILS_CLOSED:  # it reads every payload, for the project and to refuse a bad one
        defaults |= {"cocoplus.core", "cocoplus.core.jsonfast", "_json"}
    return {
        "cocoplus", "cocoplus.hook", "cocoplus.hook.entry", "cocoplus.runtimes", "cocoplus.runtimes.registry",
        "cocoplus.runtimes.answers", "cocoplus.runtimes.adapters", f"cocoplus.runtimes.adapters.{runtime}",
        *defaults,  # the members a runtime takes from the adapters' defaults
    }  # fmt: skip


@pytest.mark.parametrize("runtime", [a.NAME for a in registry.ordered()])
def test_pre_tool_with_the_kill_switch_stays_light(compiled: Layout, runtime: str) -> None:
    adapter = registry.get(runtime)
    event = next(e for e, k, _m in adapter.EVENTS if k == "pre_tool")
    killswitch.stop(compiled, "t", "imports")
    mods, out = loaded(compiled, event, runtime, payload_for(runtime, event, "pre_tool", compiled, None))
    assert "imports" in out  # it denied, with the reason
    assert not (_top(mods) & HEAVY) and not (NOT_ON_TOOL_EVENTS & mods), sorted(mods)


def test_turn_end_never_compiles_prices_even_when_the_config_changed(compiled: Layout, tmp_path: Path) -> None:
    """The config changed (the hook recompiles it) and the price table is gone: still no genai-prices."""
    os.unlink(compiled.price_table)
    with open(compiled.config, "a") as fh:
        fh.write("[session]\nmax_iterations = 77\n")
    transcript = str(tmp_path / "t.jsonl")
    shutil.copyfile(USAGE_RECORD["claude-transcript"], transcript)
    mods, _out = loaded(compiled, "Stop", "claude", payload_for("claude", "Stop", "stop", compiled, transcript))
    assert not (_top(mods) & (HEAVY - {"tomllib"})), sorted(_top(mods) & HEAVY)
    assert "tomllib" in mods  # it did recompile the config (the rare run where cocoplus.toml changed)
    assert json.load(open(compiled.hook_config))["values"]["session"]["max_iterations"] == 77
    assert not os.path.exists(compiled.price_table)
    assert not os.path.exists(compiled.spend_log)  # nothing priced, and nothing read past: the cursor did not move


@pytest.mark.parametrize("kind", ["session_start", "pre_tool", "post_tool", "prompt", "stop", "session_end"])
def test_a_project_in_a_fleet_loads_no_network_client_on_any_event(compiled: Layout, kind: str) -> None:
    """A fleet configured in the project file (the config recompiled by the hook) and a relay's state on disk."""
    with open(compiled.config, "a") as fh:
        fh.write('[fleet]\nurl = "nats://127.0.0.1:4222"\nname = "ops"\nmachine = "m1"\n')
    os.makedirs(os.path.dirname(compiled.relay_state), exist_ok=True)
    with open(compiled.relay_state, "w") as fh:
        json.dump({"pid": os.getpid(), "fleet": "ops", "machine": "m1", "connected": True}, fh)
    event = next(e for e, k, _m in registry.get("claude").EVENTS if k == kind)
    mods, _out = loaded(compiled, event, "claude", payload_for("claude", event, kind, compiled, None))
    assert not (_top(mods) & {"nats", "ssl", "socket", "asyncio"}), sorted(_top(mods) & HEAVY)
    assert not {m for m in mods if m.startswith("cocoplus.fleet")}, sorted(mods)


def test_a_launched_workers_permission_request_decided_by_its_rule_stays_light(compiled: Layout) -> None:
    """The identity a worker's permission request is decided for (its sealed record checked, its runner among the
    hook's ancestors) loads nothing heavy, and not json."""
    vouched.sealed_worker(compiled, "w1", allow=["Bash"])
    payload = payload_for("claude", "PermissionRequest", "permission", compiled, None)
    below = vouched.prefix("worker", compiled.root, "w1")
    mods, out = loaded(compiled, "PermissionRequest", "claude", payload, below=below)
    assert json.loads(out)["hookSpecificOutput"]["decision"]["behavior"] == "allow"  # its rule decided
    assert {"cocoplus.session.identity", "cocoplus.session.procinfo", "cocoplus.core.seal"} <= mods
    assert not (_top(mods) & HEAVY) and not (NOT_ON_TOOL_EVENTS & mods), sorted(mods)
    assert not {m for m in mods if any(m == b or m.startswith(b + ".") for b in NOT_IN_HOOK)}, sorted(mods)
    assert "hashlib" not in mods and "hmac" not in mods  # the seal's HMAC and compare are the interpreter's own


# The turn-end hold may load these few stdlib-only modules besides the turn end's own.
HOLD_PATH = {"cocoplus.hook.hold", "cocoplus.session.holds", "cocoplus.session.procinfo"}


@pytest.mark.parametrize("runtime", [a.NAME for a in registry.ordered() if a.continue_turn("Stop", "-") is not None])
def test_the_turn_end_hold_stays_light(compiled: Layout, runtime: str) -> None:
    """A supervised turn end that holds (here for 1 s, then released) loads nothing heavy and nothing of the doors."""
    from cocoplus.core.lock import Lock
    from cocoplus.supervision import autonomy

    autonomy.enable(compiled)
    watcher = Lock(compiled.lock("supervisor"))  # a hold needs a watcher: the test holds its lock
    watcher.acquire()
    adapter = registry.get(runtime)
    event = next(e for e, k, m in adapter.EVENTS if k == "stop" and m is not None)
    payload = payload_for(runtime, event, "stop", compiled, None)
    probe = [sys.executable, "-S", "-c", PROBE, hook_script(), event, "--runtime", runtime]
    r = subprocess.run(
        probe, input=json.dumps(payload).encode(), capture_output=True, timeout=60,
        env=hook_env(compiled, COCOPLUS_SUPERVISION_HOLD_TURN_END_S="1"),
    )  # fmt: skip
    watcher.release()
    lines = r.stderr.decode().splitlines()
    assert lines and lines[-1] == "RC 0", r.stderr.decode()
    mods = set([x for x in lines if x.startswith("MODULES ")][-1].split()[1:])
    held = [json.loads(x) for x in open(compiled.steps).read().splitlines() if '"hold_' in x]
    assert [h["event"] for h in held] == ["hold_started", "hold_ended"]  # it did hold
    assert HOLD_PATH <= mods
    assert not (_top(mods) & HEAVY), sorted(_top(mods) & HEAVY)
    assert not {m for m in mods if any(m == b or m.startswith(b + ".") for b in NOT_IN_HOOK)}, sorted(mods)
    outside = {m for m in _top(mods) if m not in sys.stdlib_module_names and m != "cocoplus"}
    assert outside == set(), outside


# An edit or write tool's PostToolUse, per runtime: the same tool-event rules, and the one module more it may load.
EDITS: dict[str, dict[str, Any]] = {
    "claude": {"tool_name": "Write", "tool_input": {"file_path": "src/a.py", "content": "x"}},
    "cortex": {"tool_name": "write", "tool_input": {"file_path": "src/a.py", "content": "x"}},
    "codex": {
        "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch\n"},
    },
    "gemini": {"tool_name": "write_file", "tool_input": {"file_path": "src/a.py", "content": "x"}},
    "antigravity": {"toolCall": {"name": "write_to_file", "args": {"TargetFile": "src/a.py", "CodeContent": "x"}}},
    "cursor": {"file_path": "src/a.py", "edits": [{"old_string": "a", "new_string": "b"}]},
}


@pytest.mark.parametrize("runtime", [a.NAME for a in registry.ordered()])
def test_an_edit_recorded_after_the_tool_stays_light(compiled: Layout, runtime: str) -> None:
    adapter = registry.get(runtime)
    event = next(e for e, k, _m in adapter.EVENTS if k == "post_tool" and (runtime != "cursor" or e == "afterFileEdit"))
    payload = {**payload_for(runtime, event, "post_tool", compiled, None), **EDITS[runtime]}
    if runtime != "cursor":
        payload["tool_response"] = "ok"
    mods, _out = loaded(compiled, event, runtime, payload)
    assert "cocoplus.session.edits" in mods  # it did record the file
    assert os.path.getsize(compiled.session_edits(registry_cs(adapter, payload))) > 0
    assert not (_top(mods) & HEAVY) and not (NOT_ON_TOOL_EVENTS & mods), sorted(mods)
    assert not {m for m in mods if any(m == b or m.startswith(b + ".") for b in NOT_IN_HOOK)}, sorted(mods)


def registry_cs(adapter: Any, payload: dict[str, Any]) -> str:
    from cocoplus.session import registry as sessions

    return sessions.cs_id_for(adapter.session_id(payload))


@pytest.mark.parametrize("command", ["git push origin main", "git push origin main && git status"])
def test_a_headless_permission_request_parses_its_command_with_nothing_heavy(compiled: Layout, command: str) -> None:
    """The permission event is the one that loads the shell parser (cocoplus/rules/shell.py): its two extension
    modules straight from their files, with no `re`, `typing` or `enum` either; and only for a command that is more
    than plain words (`shell.plain` reads those without it)."""
    with open(compiled.config, "a") as fh:
        fh.write('[permissions]\nallow = ["Bash(git *)"]\n')
    from tests.support.trusting import trust_project

    trust_project(compiled)
    config.compile_for_hook(compiled)
    payload = payload_for("claude", "PermissionRequest", "permission", compiled, None)
    payload["tool_input"] = {"command": command}
    data = json.dumps(payload)
    # A headless session: one `dispatch` resumed, below its sealed `resumed` process.
    sid = registry.get("claude").session_id(payload)
    assert sid is not None
    sessions.ensure(compiled, "claude", sid, event="SessionStart")
    below = vouched.prefix("resumed", compiled.root, sessions.cs_id_for(sid))
    argv = [*below, sys.executable, "-S", "-c", PROBE, hook_script(), "PermissionRequest", "--runtime", "claude"]
    r = subprocess.run(
        argv, input=data.encode(), capture_output=True, timeout=60, cwd=compiled.project,
        env=hook_env(None, CLAUDE_PROJECT_DIR=compiled.project, COCOPLUS_HEADLESS="1"),
    )  # fmt: skip
    lines = r.stderr.decode().splitlines()
    assert lines and lines[-1] == "RC 0", r.stderr.decode()
    mods = set([x for x in lines if x.startswith("MODULES ")][-1].split()[1:])
    assert json.loads(r.stdout)["hookSpecificOutput"]["decision"]["behavior"] == "allow", r.stdout
    assert {"cocoplus.rules.engine", "cocoplus.rules.shell", "cocoplus.rules.commands"} <= mods
    assert not (_top(mods) & HEAVY) and not (NOT_ON_TOOL_EVENTS & mods), sorted(mods)
    outside = {m for m in mods if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "cocoplus"}
    if "&&" in command:
        assert outside == {"tree_sitter._binding"}, outside  # the parser's extension module alone, not its package
        assert "cocoplus.rules.parser" in mods
    else:
        assert outside == set(), outside  # plain words: read without the parser
        assert "cocoplus.rules.parser" not in mods


def test_a_workers_edit_before_the_tool_loads_no_rule_engine(compiled: Layout) -> None:
    """A launched worker's edit (PreToolUse, nothing stopped): its target checked for protected paths with a few
    `lstat` calls, without `os`, the rule engine or the parser."""
    payload = {**payload_for("claude", "PreToolUse", "pre_tool", compiled, None), **EDITS["claude"]}
    argv = [sys.executable, "-S", "-c", PROBE, hook_script(), "PreToolUse", "--runtime", "claude"]
    r = subprocess.run(
        argv, input=json.dumps(payload).encode(), capture_output=True, timeout=60, cwd=compiled.project,
        env=hook_env(None, CLAUDE_PROJECT_DIR=compiled.project, COCOPLUS_WORKER="w1"),
    )  # fmt: skip
    lines = r.stderr.decode().splitlines()
    assert lines and lines[-1] == "RC 0", r.stderr.decode()
    mods = set([x for x in lines if x.startswith("MODULES ")][-1].split()[1:])
    assert r.stdout == b""
    worker = {"cocoplus.core", "cocoplus.core.jsonfast", "_json", "cocoplus.hook.guard"}
    assert mods == fast_path("claude") | worker, sorted(mods ^ fast_path("claude"))
