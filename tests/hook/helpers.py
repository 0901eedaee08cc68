"""Running the hook exactly as a runtime does: the installed command, a payload on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cocoplus.core.paths import Layout
from cocoplus.install.hooks import hook_script

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hook-payloads"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def expected(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / "outputs" / name).read_text())


class HookRun:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err

    @property
    def json(self) -> dict[str, Any] | None:
        if not self.out.strip():
            return None
        obj = json.loads(self.out)
        assert isinstance(obj, dict)
        return obj

    def __repr__(self) -> str:
        return f"HookRun(code={self.code}, out={self.out[:300]!r}, err={self.err[:300]!r})"


def hook_argv(event: str, runtime: str | None = "claude", *extra: str) -> list[str]:
    argv = [sys.executable, "-S", hook_script(), event]
    if runtime:
        argv += ["--runtime", runtime]
    return argv + list(extra)


def hook_env(layout: Layout | None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COCOPLUS_", "CLAUDE_", "GEMINI_", "CURSOR_", "CORTEX_"))
    }
    if layout is not None:
        env["COCOPLUS_DIR"] = layout.root
    env.update(extra)
    return env


def run_hook(
    layout: Layout | None,
    event: str,
    payload: dict[str, Any] | bytes | str,
    runtime: str | None = "claude",
    *extra: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 30,
    below: list[str] | None = None,
) -> HookRun:
    """Run the hook as the runtime would (`below`: under that command, such as tests/support/vouched.py's)."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    r = subprocess.run(
        [*(below or []), *hook_argv(event, runtime, *extra)],
        input=data,
        capture_output=True,
        env=env if env is not None else hook_env(layout),
        cwd=cwd,
        timeout=timeout,
    )
    return HookRun(r.returncode, r.stdout.decode(), r.stderr.decode())


def same_shape(actual: Any, want: Any, path: str = "$", extra: dict[str, Any] | None = None) -> None:
    """Same keys at every level; decisions and flags equal; free text only has to be text.

    `extra` names top-level keys cocoplus adds on purpose, with their values
    (None: any non-empty text).
    """
    exact = {"permissionDecision", "hookEventName", "decision", "permission", "continue", "behavior"}
    if extra:
        assert isinstance(actual, dict)
        for k, v in extra.items():
            assert k in actual, f"{path}: missing {k}"
            if v is None:
                assert isinstance(actual[k], str) and actual[k]
            else:
                assert actual[k] == v, f"{path}.{k}: {actual[k]!r} != {v!r}"
        actual = {k: v for k, v in actual.items() if k not in extra}
    if isinstance(want, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        assert set(actual) == set(want), f"{path}: keys {sorted(actual)} != {sorted(want)}"
        for k, v in want.items():
            if k in exact:
                assert actual[k] == v, f"{path}.{k}: {actual[k]!r} != {v!r}"
            else:
                same_shape(actual[k], v, f"{path}.{k}")
    elif isinstance(want, str):
        assert isinstance(actual, str) and actual, f"{path}: expected text, got {actual!r}"
    else:
        assert actual == want, f"{path}: {actual!r} != {want!r}"


def run_hook_failing(
    layout: Layout, event: str, payload: dict[str, Any] | bytes, runtime: str, patch: str, *, timeout: float = 60
) -> HookRun:
    """The hook's entry point in a child process, as the installed command runs it, after `patch` (Python
    source; `CocoplusError`, `entry`, `runner` and `killswitch` are imported for it) made a part of cocoplus fail."""
    code = (
        "import sys\n"
        "from cocoplus.core.errors import CocoplusError\n"
        "from cocoplus.hook import entry, runner\n"
        "from cocoplus.session import killswitch\n"
        f"{patch}\n"
        "sys.exit(entry.main())\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, event, "--runtime", runtime],
        input=json.dumps(payload).encode() if isinstance(payload, dict) else payload,
        capture_output=True,
        env=hook_env(layout),
        timeout=timeout,
    )
    return HookRun(r.returncode, r.stdout.decode(), r.stderr.decode())


def raising(target: str, exc: str = "RuntimeError", message: str = "disk went away (injected by the test)") -> str:
    """A `run_hook_failing` patch: `target` (e.g. `runner.block`) raises `exc(message)`."""
    return f"def _boom(*_a, **_k):\n    raise {exc}({message!r})\n{target} = _boom"


def raising_handler(kind: str, exc: str = "RuntimeError") -> str:
    """A `run_hook_failing` patch: the handler of events of `kind` (`runner.HANDLERS`, in its own module) raises."""
    from cocoplus.hook import runner

    home, name = runner.HANDLERS[kind]
    return f"from cocoplus.hook import {home} as _home\n" + raising(f"_home.{name}", exc)
