"""Who answers the master agent: the controller account, and the model and effort it uses.

Precedence for model and reasoning effort (seed 001): the conversation's
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
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any

from cocoplus.core import proc
from cocoplus.core.errors import CocoplusError


class BackendError(CocoplusError):
    pass


def controller(cfg: Any) -> tuple[str | None, dict[str, Any] | None]:
    """(name, account table) of the controller account, or (None, None)."""
    name = cfg.get("chat.controller")
    if name:
        acct = cfg.accounts.get(name)
        if acct is None:
            raise CocoplusError(f"cocoplus.toml: [chat] controller = {name!r} but there is no [accounts.{name}] table")
        return name, acct
    if len(cfg.accounts) == 1:
        only = next(iter(cfg.accounts))
        return only, cfg.accounts[only]
    return None, None


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


def _run(argv: list[str], prompt: str, timeout: float, cwd: str | None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return proc.run(argv, input=prompt, timeout=timeout, cwd=cwd, env=env)
    except OSError as exc:
        raise BackendError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    except proc.Timeout:
        raise BackendError(f"{os.path.basename(argv[0])} did not answer within {timeout:g}s") from None


def _fail(what: str, r: subprocess.CompletedProcess[str]) -> BackendError:
    tail = (r.stderr or r.stdout or "").strip().splitlines()
    return BackendError(f"{what} exited {r.returncode}" + (f": {tail[-1][:300]}" if tail else ""))


def run(acct: dict[str, Any], model: str | None, effort: str, prompt: str, *, timeout: float, cwd: str | None) -> str:
    kind = acct.get("kind")
    timeout = float(acct.get("timeout_s") or timeout)
    if kind == "command":
        argv = [part.replace("{model}", model or "").replace("{effort}", effort) for part in acct["command"]]
        r = _run(argv, prompt, timeout, cwd)
        if r.returncode != 0:
            raise _fail(os.path.basename(argv[0]), r)
        return r.stdout.strip()
    if kind == "claude":
        argv = [acct.get("binary") or "claude", "-p", "--output-format", "json"]
        if model:
            argv += ["--model", model]
        argv += ["--effort", effort]
        r = _run(argv, prompt, timeout, cwd)
        if r.returncode != 0 and not r.stdout.strip():
            raise _fail("claude", r)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            raise BackendError(f"claude printed something that is not JSON: {r.stdout[:200]!r}") from None
        if doc.get("is_error"):
            raise BackendError(f"claude reported an error: {str(doc.get('result') or doc.get('subtype'))[:300]}")
        return str(doc.get("result") or "").strip()
    if kind == "codex":
        with tempfile.TemporaryDirectory(prefix="cocoplus-codex-") as tmp:
            last = os.path.join(tmp, "last-message.txt")
            argv = [acct.get("binary") or "codex", "exec", "--skip-git-repo-check", "--output-last-message", last]
            if model:
                argv += ["--model", model]
            argv += ["-c", f'model_reasoning_effort="{effort}"', "-"]
            r = _run(argv, prompt, timeout, cwd)
            if r.returncode != 0:
                raise _fail("codex exec", r)
            try:
                with open(last, encoding="utf-8") as fh:
                    return fh.read().strip()
            except OSError:
                return r.stdout.strip()
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
