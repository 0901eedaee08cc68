"""Who answers the master agent: the controller account, and the model and effort it uses.

Precedence for model and reasoning effort (docs/backends.md): the conversation's
override, else the controller account's default (`[chat] controller` names
an `[accounts.NAME]` table; with no controller named and exactly one
account, that one), else the system default (`[chat] default_model` and `default_effort`).

Backends (account `kind`), none through a shell:

* `claude`: `claude -p --output-format json --model M --effort E` with the
  prompt on stdin; the reply is the JSON `result`.  (Claude Code 2.1: `--effort`
  takes low, medium, high, xhigh, max.)
* `codex`: `codex exec --skip-git-repo-check --model M -c
  model_reasoning_effort="E" --output-last-message FILE -` with the prompt on
  stdin; the reply is the file's content.
* `openai`: an OpenAI-compatible Responses endpoint through the `openai`
  client (`base_url`, key from the environment variable `api_key_env`,
  `reasoning.effort`).
* `command`: `command = ["prog", "--model", "{model}", ...]`; `{model}` and
  `{effort}` are filled in, the prompt goes to stdin, the reply is stdout.

The main brain acts (controllers/brain.py): given a `brain` context (the
project, and the supervision round if the task is one), a `claude` or
`codex` controller runs with cocoplus' brain MCP server mounted and only
its tools allowed: no shell, no file tools, no hooks of its own (so the
brain is never mistaken for a worker session), no other MCP server.  A
`command` controller gets `cocoplus` on its PATH.  Every backend process
gets `COCOPLUS_DIR` (the project's `.cocoplus/`) and, in a round,
`COCOPLUS_ROUND` (its number), which the MCP server and the CLI record
with each action.  docs/backends.md lists the flags and why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
import tempfile
from typing import Any

from cocoplus.controllers import AGENT_CLIS, KINDS
from cocoplus.controllers import brain as brain_mod
from cocoplus.core import proc, seal, userfiles
from cocoplus.core.errors import CocoplusError
from cocoplus.runtimes import registry as runtimes

# Set in a brain's environment so that what it runs knows the round (None outside a round).
ENV_ROUND = "COCOPLUS_ROUND"
ENV_DIR = "COCOPLUS_DIR"
# Names a parent agent session leaves in the environment: the brain is not that session.
_NOT_INHERITED = ("COCOPLUS_SESSION", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")


class BackendError(CocoplusError):
    pass


def controller(cfg: Any) -> tuple[str | None, dict[str, Any] | None]:
    """(name, account table) of the controller account, or (None, None)."""
    name = cfg.get("chat.controller")
    if name:
        acct = cfg.accounts.get(name)
        if acct is None:
            withheld = cfg.withheld.get(
                f"accounts.{name}"
            )  # an untrusted project file's entry (docs/guides/configuration.md, "Trust")
            raise CocoplusError(
                withheld or f"cocoplus.toml: [chat] controller = {name!r} but there is no [accounts.{name}] table"
            )
        return name, acct
    if len(cfg.accounts) == 1:
        only = next(iter(cfg.accounts))
        return only, cfg.accounts[only]
    return None, None


def _program(argv0: str, cwd: str | None) -> str | None:
    """Where `argv0` would be run from (PATH, or a path relative to `cwd`), or None."""
    if os.sep in argv0:
        path = argv0 if os.path.isabs(argv0) else os.path.join(cwd or os.getcwd(), argv0)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(argv0)


def agents_on_path() -> list[str]:
    """The agent CLIs a controller account can run that are on PATH."""
    return [name for name in AGENT_CLIS if shutil.which(name)]


def problem(cfg: Any, project: str | None = None) -> str | None:
    """Why no controller account can answer (a supervision round, a message), in a few words; None if one can.

    What can be known without running it: an account is named, its
    program is there, an API account has its key and a model.
    """
    try:
        name, acct = controller(cfg)
    except CocoplusError as exc:
        return str(exc)
    if acct is None:
        if cfg.accounts:
            return f"cocoplus.toml has {len(cfg.accounts)} accounts and no [chat] controller naming one"
        return "cocoplus.toml has no controller account"
    kind = acct.get("kind")
    if kind in AGENT_CLIS:
        binary = acct.get("binary") or kind
        if _program(binary, project) is None:
            return f"the controller account {name} runs {binary}, which is not on PATH"
    elif kind == "command":
        argv0 = (acct.get("command") or [""])[0]
        if _program(argv0, project) is None:
            return f"the controller account {name} runs {argv0}, which is not on PATH"
    elif kind == "openai":
        env_name = acct.get("api_key_env") or "OPENAI_API_KEY"
        if not os.environ.get(env_name):
            return f"the controller account {name} reads its API key from {env_name}, which is not set"
        if not (acct.get("default_model") or cfg.get("chat.default_model")):
            return f"the controller account {name} names no model (default_model)"
    return None


def resolve(cfg: Any, conversation: dict[str, Any]) -> dict[str, Any]:
    """The effective model and effort, and where each came from."""
    name, acct = controller(cfg)
    model, model_src = conversation.get("modelOverride"), "conversation"
    if not model:
        model, model_src = (acct or {}).get("default_model"), f"account {name}"
    if not model:
        model, model_src = cfg.get("chat.default_model") or None, "system default"
    effort, effort_src = conversation.get("reasoningEffortOverride"), "conversation"
    if not effort:
        effort, effort_src = (acct or {}).get("default_reasoning_effort"), f"account {name}"
    if not effort:
        effort, effort_src = cfg.get("chat.default_effort"), "system default"
    return {
        "controller": name,
        "kind": (acct or {}).get("kind"),
        "model": model,
        "model_source": model_src if model else "none (the backend's own default)",
        "effort": effort,
        "effort_source": effort_src,
    }


def context(state_dir: str, project: str, round_no: int | None) -> dict[str, Any]:
    """What a backend needs to let the brain act: the project, and the supervision round if the task is one."""
    return {"state_dir": state_dir, "project": project, "round": round_no}


def scripts_dir() -> str | None:
    """The directory holding this installation's `cocoplus` script (put on a command brain's PATH)."""
    here = sysconfig.get_path("scripts")
    if here and os.path.isfile(os.path.join(here, "cocoplus")):
        return here
    found = shutil.which("cocoplus")
    return os.path.dirname(found) if found else None


def environment(brain: dict[str, Any] | None) -> dict[str, str] | None:
    """The backend process's environment: COCOPLUS_DIR, COCOPLUS_ROUND in a round, `cocoplus` on PATH."""
    if brain is None:
        return None
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED and k not in runtimes.session_env()}
    env[ENV_DIR] = brain["state_dir"]
    env[userfiles.CAPABILITY_ENV] = _capability()  # the controller acts as the main brain (docs/authority.md)
    env.pop(ENV_ROUND, None)
    if brain.get("round") is not None:
        env[ENV_ROUND] = str(brain["round"])
    scripts = scripts_dir()
    if scripts:
        env["PATH"] = scripts + os.pathsep + env.get("PATH", "")
    return env


def _capability() -> str:
    token = seal.capability()
    assert token is not None  # made on first use
    return token


def _server_env(brain: dict[str, Any]) -> dict[str, str]:
    # The server finds this user's files (capability, trust, config) where this process does, from the password
    # database (core/userfiles.py), whatever environment the runtime starts it with.
    out = {ENV_DIR: brain["state_dir"], userfiles.CAPABILITY_ENV: _capability()}
    # Where this process's password database comes from another source (nss_wrapper's variables, as in the test
    # suite), the server must see the same one: a runtime that starts it with a reduced environment drops them.
    for name in ("LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP"):
        if os.environ.get(name):
            out[name] = os.environ[name]
    if brain.get("round") is not None:
        out[ENV_ROUND] = str(brain["round"])
    return out


def brain_server(project: str) -> tuple[str, list[str]]:
    """(command, args) that start cocoplus' MCP server with the brain's tools, for this project, on this machine."""
    argv = proc.python_m("cocoplus", "--dir", os.path.abspath(project), "mcp", "--role", "brain")
    return argv[0], argv[1:]


def brain_spec(brain: dict[str, Any]) -> dict[str, Any]:
    """What a controller's adapter needs to give the brain its tools (`controller_argv`'s `brain`): cocoplus' brain MCP
    server for this project and the tools of this turn (a round's, or a conversation's)."""
    command, args = brain_server(brain["project"])
    in_round = brain.get("round") is not None
    return {
        "server": brain_mod.SERVER,
        "command": command,
        "args": args,
        "env": _server_env(brain),
        "tools": brain_mod.tools(in_round),
        "excluded": list(brain_mod.ROUND_EXCLUDED) if in_round else [],
        "project": brain["project"],
    }


def _run(
    argv: list[str], prompt: str, timeout: float, cwd: str | None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return proc.run(argv, input=prompt, timeout=timeout, cwd=cwd, env=env)
    except OSError as exc:
        raise BackendError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    except proc.Timeout:
        raise BackendError(f"{os.path.basename(argv[0])} did not answer within {timeout:g}s") from None


def _fail(what: str, r: subprocess.CompletedProcess[str]) -> BackendError:
    tail = (r.stderr or r.stdout or "").strip().splitlines()
    return BackendError(f"{what} exited {r.returncode}" + (f": {tail[-1][:300]}" if tail else ""))


def run(
    acct: dict[str, Any],
    model: str | None,
    effort: str,
    prompt: str,
    *,
    timeout: float,
    cwd: str | None,
    brain: dict[str, Any] | None = None,
) -> str:
    """The controller's reply to `prompt`; with `brain` (see `context`), the brain may act while it answers."""
    kind = acct.get("kind")
    timeout = float(acct.get("timeout_s") or timeout)
    env = environment(brain)
    if kind == "command":
        argv = [part.replace("{model}", model or "").replace("{effort}", effort) for part in acct["command"]]
        r = _run(argv, prompt, timeout, cwd, env)
        if r.returncode != 0:
            raise _fail(os.path.basename(argv[0]), r)
        return r.stdout.strip()
    runtime = KINDS[kind].runtime if kind in KINDS else None
    if runtime is not None:
        adapter = runtimes.get(runtime)
        with tempfile.TemporaryDirectory(prefix=f"cocoplus-{kind}-") as tmp:
            reply = os.path.join(tmp, "reply.txt")
            spec = brain_spec(brain) if brain is not None else None
            line = adapter.controller_argv([acct.get("binary") or adapter.COMMAND], model, effort, spec, reply)
            if line is None:
                raise BackendError(f"{runtime} cannot run a controller")
            r = _run(line, prompt, timeout, cwd, env)
            try:
                answer = adapter.controller_reply(r.returncode, r.stdout, reply)
            except ValueError as exc:
                raise BackendError(str(exc)) from None
            if answer is None:
                raise _fail(os.path.basename(line[0]), r)
            return answer
    if kind == "openai":
        return _openai(acct, model, effort, prompt, timeout)
    raise BackendError(f"unknown account kind {kind!r}")


def _openai(acct: dict[str, Any], model: str | None, effort: str, prompt: str, timeout: float) -> str:
    try:
        import openai  # deferred: heavy (the openai client), only for `openai` accounts
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise BackendError(f"the openai package is not installed: {exc}") from None
    env_name = acct.get("api_key_env") or "OPENAI_API_KEY"
    key = os.environ.get(env_name)
    if not key:
        raise BackendError(f"environment variable {env_name} (api_key_env) is not set")
    if not model:
        raise BackendError("no model: set modelOverride, the account's default_model, or [chat] default_model")
    client = openai.OpenAI(api_key=key, base_url=acct.get("base_url") or None, timeout=timeout, max_retries=0)
    try:
        resp = client.responses.create(model=model, input=prompt, reasoning={"effort": effort})  # type: ignore[call-overload]  # effort is one of vocab.EFFORTS, checked at config load
    except openai.OpenAIError as exc:
        raise BackendError(f"OpenAI API: {type(exc).__name__}: {str(exc)[:300]}") from None
    text = getattr(resp, "output_text", None)
    if not text:
        raise BackendError("the OpenAI API returned no text")
    return str(text).strip()
