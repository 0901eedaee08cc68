"""The master-agent conversation: fast send, background replies, overrides, backends, recovery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cocoplus.chat import api, backends, store, worker
from cocoplus.config import load_for
from cocoplus.core.paths import Layout
from tests.support.model_stubs import AnthropicStub, ResponsesStub, text
from tests.support.runtimes import runtime_bin
from tests.support.trusting import trust_project
from tests.support.waiting import wait_until


def write_config(layout: Layout, body: str) -> None:
    """Write cocoplus.toml and trust it: these tests are about what the configured accounts do."""
    Path(layout.config).write_text(body)
    trust_project(layout)


def sleeper(layout: Layout, seconds: float, extra: str = "", gate: Path | None = None) -> None:
    """A `command` backend that sleeps (or, given `gate`, waits until that file exists, 60 s at most),
    then echoes what it was given."""
    script = Path(layout.project) / "backend.sh"
    wait = f"i=0; while [ ! -e '{gate}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n" if gate else ""
    script.write_text(
        "#!/bin/sh\n"
        f"sleep {seconds}\n"
        f"{wait}"
        "prompt=$(cat)\n"
        'echo "reply model=$1 effort=$2 last=$(printf "%s" "$prompt" | tail -n 1)"\n'
    )
    script.chmod(0o755)
    write_config(
        layout,
        f'[chat]\ncontroller = "local"\n{extra}\n[accounts.local]\nkind = "command"\n'
        f'command = ["{script}", "{{model}}", "{{effort}}"]\ndefault_model = "acct-model"\n',
    )


def stop_worker(layout: Layout) -> None:
    try:
        pid = json.load(open(layout.chat_worker_pid))["pid"]
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    wait_until(lambda: not worker.worker_running(layout), timeout=15)


@pytest.fixture
def chat_project(project: Layout):
    yield project
    stop_worker(project)


def finished_task(layout: Layout, task_id: str, conversation: str = "master-agent") -> dict[str, Any]:
    """Wait until the task is `succeeded` or `failed` (the worker appends the reply first, then marks the task)."""
    return wait_until(
        lambda: (t := store.read_task(layout, conversation, task_id))["state"] in ("succeeded", "failed") and t,
        timeout=30,
    )


def test_send_returns_before_a_slow_backend_answers(chat_project: Layout, cli_subprocess, tmp_path: Path) -> None:
    p = chat_project
    gate = tmp_path / "gate"
    sleeper(p, 0, gate=gate)  # the backend answers only once the test opens the gate
    r = cli_subprocess("chat", "send", "status of the migration?", "--json", cwd=p.project)
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["masterReplyState"] in ("queued", "running")
    assert out["message"]["role"] == "user" and out["message"]["text"] == "status of the migration?"
    assert "reply" not in out
    # It returned while the backend was held: no reply in the ledger yet. (How fast it returns is bench/chat.py's.)
    assert [m["role"] for m in api.conversation_view(p)["messages"]] == ["user"]
    task_id = out["task"]["id"]
    wait_until(lambda: store.read_task(p, "master-agent", task_id)["state"] == "running", timeout=30)
    gate.touch()
    task = finished_task(p, task_id)
    assert task["state"] == "succeeded" and task["model"] == "acct-model" and task["effort"] == "medium", task
    reply = [m for m in api.conversation_view(p)["messages"] if m["role"] == "assistant"]
    assert [m["text"] for m in reply] == ["reply model=acct-model effort=medium last=status of the migration?"]
    assert reply[0]["task"] == task_id and task["reply_message"] == reply[0]["id"]


@pytest.mark.slow
def test_chat_log_shows_thinking_then_the_reply(chat_project: Layout, cli_subprocess, tmp_path: Path) -> None:
    p = chat_project
    gate = tmp_path / "gate"
    sleeper(p, 0, gate=gate)
    cli_subprocess("chat", "send", "hello", cwd=p.project)
    r = cli_subprocess("chat", "log", cwd=p.project)
    assert "you: hello" in r.out and "master agent is thinking" in r.out
    gate.touch()
    wait_until(lambda: api.conversation_view(p)["masterReplyState"] == "idle", timeout=30)
    r = cli_subprocess("chat", "log", cwd=p.project)
    assert "master agent: reply" in r.out and "thinking" not in r.out


@pytest.mark.slow
def test_killing_the_worker_mid_task_fails_the_task_and_retry_replies(chat_project: Layout, cli_subprocess) -> None:
    p = chat_project
    sleeper(p, 30)
    out = json.loads(cli_subprocess("chat", "send", "long job", "--json", cwd=p.project).out)
    tid = out["task"]["id"]
    wait_until(lambda: store.read_task(p, "master-agent", tid)["state"] == "running", timeout=30)
    pid = store.read_task(p, "master-agent", tid)["worker_pid"]
    os.kill(pid, signal.SIGKILL)

    # Whoever looks next (here `chat log`) finds the task was orphaned and fails it.
    def failed() -> dict[str, Any] | None:
        view = json.loads(cli_subprocess("chat", "log", "--json", cwd=p.project).out)
        return view["failed"]

    f = wait_until(failed, timeout=20)
    assert f["id"] == tid and f"pid {pid}" in f["error"] and f["retry"] == f"cocoplus chat retry {tid}"
    r = cli_subprocess("chat", "log", cwd=p.project)
    assert "reply failed" in r.out and "cocoplus chat retry" in r.out
    sleeper(p, 0.2)  # the backend is quick now
    r = cli_subprocess("chat", "retry", cwd=p.project)
    assert r.code == 0, r.err
    task = finished_task(p, tid)
    assert task["state"] == "succeeded" and task["attempts"] == 2 and "pid" in task["previous_error"], task
    reply = [m for m in api.conversation_view(p)["messages"] if m["role"] == "assistant"]
    assert [m["task"] for m in reply] == [tid]


def test_backend_error_and_timeout_fail_with_a_readable_reason(chat_project: Layout) -> None:
    p = chat_project
    write_config(
        p,
        '[chat]\ncontroller = "bad"\nreply_timeout_s = 1\n[accounts.bad]\nkind = "command"\n'
        'command = ["sh", "-c", "echo boom >&2; exit 7"]\n',
    )
    out = api.send(p, "hi")
    t = api.wait(p, "master-agent", out["task"]["id"], 30)["task"]
    assert t["state"] == "failed" and "exited 7" in t["error"] and "boom" in t["error"]
    write_config(
        p,
        '[chat]\ncontroller = "slow"\nreply_timeout_s = 1\n[accounts.slow]\nkind = "command"\ncommand = ["sleep", '
        '"30"]\n',
    )
    out = api.send(p, "hi again")
    t = api.wait(p, "master-agent", out["task"]["id"], 30)["task"]
    assert t["state"] == "failed" and "did not answer within 1s" in t["error"]


def test_send_without_a_controller_fails_and_says_why(chat_project: Layout, cli_subprocess) -> None:
    r = cli_subprocess("chat", "send", "anyone?", "--json", cwd=chat_project.project)
    assert r.code == 1
    out = json.loads(r.out)
    assert out["masterReplyState"] == "failed" and "[accounts.NAME]" in out["task"]["error"]


def test_precedence_of_model_and_effort_and_no_leak_between_conversations(chat_project: Layout) -> None:
    p = chat_project
    # Level 3: system defaults only (no account defaults).
    write_config(
        p, '[chat]\ncontroller = "a"\ndefault_model = "sys-model"\n[accounts.a]\nkind = "command"\ncommand = ["true"]\n'
    )
    res = backends.resolve(load_for(p), store.conversation(p, "master-agent"))
    assert (res["model"], res["model_source"], res["effort"], res["effort_source"]) == (
        "sys-model",
        "system default",
        "medium",
        "system default",
    )
    # Level 2: the controller account's defaults.
    write_config(
        p,
        '[chat]\ncontroller = "a"\ndefault_model = "sys-model"\n[accounts.a]\nkind = "command"\ncommand = ["true"]\n'
        'default_model = "acct-model"\ndefault_reasoning_effort = "low"\n[accounts.b]\nkind = "command"\n'
        'command = ["true"]\ndefault_model = "other-acct"\n',
    )
    res = backends.resolve(load_for(p), store.conversation(p, "master-agent"))
    assert (res["model"], res["model_source"], res["effort"], res["effort_source"]) == (
        "acct-model",
        "account a",
        "low",
        "account a",
    )
    # Level 1: this conversation's overrides.
    api.set_overrides(p, "master-agent", model="conv-model", effort="high")
    res = backends.resolve(load_for(p), store.conversation(p, "master-agent"))
    assert (res["model"], res["model_source"], res["effort"], res["effort_source"]) == (
        "conv-model",
        "conversation",
        "high",
        "conversation",
    )
    # Another conversation is untouched.
    res2 = backends.resolve(load_for(p), store.conversation(p, "other-conv"))
    assert (res2["model"], res2["effort"]) == ("acct-model", "low")
    # Only the effort overridden: the model falls back to the account.
    api.set_overrides(p, "third", effort="high")
    res3 = backends.resolve(load_for(p), store.conversation(p, "third"))
    assert (res3["model"], res3["model_source"], res3["effort"]) == ("acct-model", "account a", "high")
    # --clear removes them.
    api.set_overrides(p, "master-agent", clear=True)
    assert backends.resolve(load_for(p), store.conversation(p, "master-agent"))["model"] == "acct-model"


def test_the_worker_uses_the_conversation_override_end_to_end(chat_project: Layout) -> None:
    p = chat_project
    sleeper(p, 0)
    api.set_overrides(p, "alpha", model="alpha-model", effort="high")
    a = api.send(p, "one", "alpha")
    b = api.send(p, "two", "beta")
    ra = api.wait(p, "alpha", a["task"]["id"], 30)["reply"]
    rb = api.wait(p, "beta", b["task"]["id"], 30)["reply"]
    assert ra["text"].startswith("reply model=alpha-model effort=high")
    assert rb["text"].startswith("reply model=acct-model effort=medium")


def test_chat_info_json(chat_project: Layout, cli_subprocess) -> None:
    p = chat_project
    sleeper(p, 0)
    cli_subprocess("chat", "set", "--model", "m-x", cwd=p.project)
    info = json.loads(cli_subprocess("chat", "info", "--json", cwd=p.project).out)
    assert info["controller"] == "local" and info["model"] == "m-x" and info["modelSource"] == "conversation"
    assert info["effort"] == "medium" and info["effortSource"] == "system default"
    assert info["files"]["ledger"].endswith("chat/master-agent/ledger.jsonl")
    bad = cli_subprocess("chat", "set", "--effort", "extreme", cwd=p.project)
    assert bad.code == 2 and "low, medium, high" in bad.err
    bad_conv = cli_subprocess("chat", "send", "x", "--conversation", "../etc", cwd=p.project)
    assert bad_conv.code == 2 and "invalid conversation id" in bad_conv.err


def test_chat_menu_driven_input_changes_the_saved_override(chat_project: Layout, cli_subprocess) -> None:
    p = chat_project
    sleeper(p, 0)
    # 1 Model -> 2 "Other" -> type a name; 2 Reasoning effort -> 3 (high); 3 Session info; 4 Refresh; q.
    keys = "1\n2\nmenu-model\n2\n3\n3\n4\nq\n"
    r = cli_subprocess("chat", "menu", cwd=p.project, input=keys)
    assert r.code == 0, r.err
    for item in ("1. Model", "2. Reasoning effort", "3. Session info", "4. Refresh"):
        assert item in r.out
    doc = store.conversation(p, "master-agent")
    assert doc["modelOverride"] == "menu-model" and doc["reasoningEffortOverride"] == "high"
    assert "model          menu-model  [conversation]" in r.out
    # Picking an existing option and clearing the effort.
    r = cli_subprocess("chat", "menu", cwd=p.project, input="1\n1\n2\n4\nq\n")
    doc = store.conversation(p, "master-agent")
    assert doc["modelOverride"] == "acct-model" and doc["reasoningEffortOverride"] is None


@pytest.mark.e2e
def test_claude_backend_runs_the_real_cli_with_the_overridden_model(chat_project: Layout) -> None:
    p = chat_project
    claude = runtime_bin("claude")
    with AnthropicStub([text("master reply via claude")]) as stub:
        write_config(
            p,
            f'[chat]\ncontroller = "cc"\n[accounts.cc]\nkind = "claude"\nbinary = "{claude}"\n'
            'default_model = "claude-sonnet-4-5"\n',
        )
        api.set_overrides(p, "master-agent", model="claude-haiku-4-5", effort="low")
        env = {
            "ANTHROPIC_BASE_URL": stub.url,
            "ANTHROPIC_API_KEY": "sk-test-local",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            out = api.send(p, "what is next?", start_worker=False)
            worker.serve(p, once=True)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        task = store.read_task(p, "master-agent", out["task"]["id"])
        assert task["state"] == "succeeded", task.get("error")
        assert [m["text"] for m in api.conversation_view(p)["messages"] if m["role"] == "assistant"] == [
            "master reply via claude"
        ]
        models = {
            r["body"].get("model")
            for r in stub.requests
            if r["path"].startswith("/v1/messages") and r["body"].get("tools")
        }
        assert models == {"claude-haiku-4-5"}
        assert "what is next?" in stub.all_text()


@pytest.mark.slow
def test_openai_backend_sends_the_model_and_reasoning_effort(
    chat_project: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = chat_project
    with ResponsesStub() as stub:
        stub.plain_reply = "master reply via the Responses API"
        write_config(
            p,
            f'[chat]\ncontroller = "api"\n[accounts.api]\nkind = "openai"\nbase_url = "{stub.url}/v1"\n'
            'api_key_env = "TEST_OPENAI_KEY"\ndefault_model = "gpt-5.4"\ndefault_reasoning_effort = "low"\n',
        )
        monkeypatch.setenv("TEST_OPENAI_KEY", "sk-local")
        api.set_overrides(p, "master-agent", effort="high")
        out = api.send(p, "plan the release", start_worker=False)
        worker.serve(p, once=True)
        task = store.read_task(p, "master-agent", out["task"]["id"])
        assert task["state"] == "succeeded", task.get("error")
        (req,) = [r for r in stub.requests if r["path"].endswith("/responses")]
        assert req["body"]["model"] == "gpt-5.4"
        assert req["body"]["reasoning"] == {"effort": "high"}
        assert {k.lower(): v for k, v in req["headers"].items()}["authorization"] == "Bearer sk-local"
        assert "plan the release" in json.dumps(req["body"]["input"])
        assert api.conversation_view(p)["messages"][-1]["text"] == "master reply via the Responses API"


def test_openai_backend_without_its_key_fails_readably(chat_project: Layout) -> None:
    p = chat_project
    write_config(
        p,
        '[chat]\ncontroller = "api"\n[accounts.api]\nkind = "openai"\napi_key_env = "NO_SUCH_KEY_VAR"\n'
        'default_model = "gpt-5.4"\n',
    )
    out = api.send(p, "x", start_worker=False)
    worker.serve(p, once=True)
    t = store.read_task(p, "master-agent", out["task"]["id"])
    assert t["state"] == "failed" and "NO_SUCH_KEY_VAR" in t["error"]


@pytest.mark.slow
def test_only_one_worker_runs(chat_project: Layout) -> None:
    p = chat_project
    sleeper(p, 3)
    api.send(p, "x")
    wait_until(lambda: worker.worker_running(p), timeout=15)
    r = subprocess.run(
        [sys.executable, "-m", "cocoplus", "chat", "worker", "--once"],
        cwd=p.project,
        capture_output=True,
        text=True,
        env=dict(os.environ, COCOPLUS_DIR=p.root),
    )
    assert r.returncode == 0 and "already runs" in r.stderr


def test_every_account_kind_has_one_controller_kind() -> None:
    """The configuration's word list (core/vocab) and the controller registry (cocoplus/controllers) name the same
    kinds; each agent-CLI kind runs a runtime that has an adapter."""
    from cocoplus import controllers
    from cocoplus.core import vocab
    from cocoplus.runtimes import registry

    assert tuple(controllers.KINDS) == vocab.ACCOUNT_KINDS
    for kind in controllers.AGENT_CLIS:
        assert registry.get(str(controllers.KINDS[kind].runtime)).NAME == kind
    assert set(controllers.MCP_KINDS) | set(controllers.CLI_KINDS) < set(controllers.KINDS)
