"""What a worker's network setting means, who chooses it, and how a project may only narrow it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cocoplus.core import userfiles
from cocoplus.core.errors import Refused, UsageError
from cocoplus.core.paths import Layout
from cocoplus.sandbox import network
from cocoplus.session import permissions
from tests.sandbox.test_fail_closed import hooked, no_worker_ran, standins_dir

__all__ = ["hooked"]  # a fixture, used below


def test_a_setting_is_all_none_or_hosts_and_nothing_else() -> None:
    assert network.parse(["all"], "x") == "all" and network.parse("none", "x") == "none"
    assert network.parse("Registry.npmjs.org, *.pypi.org,example.com:8443", "x") == [
        "registry.npmjs.org", "*.pypi.org", "example.com:8443",
    ]  # fmt: skip
    for bad in (["all", "pypi.org"], ["none", "pypi.org"], [], "", ["a b"], ["x.org:99999"], ["*."], [".x"], [3]):
        with pytest.raises(UsageError) as exc:
            network.parse(bad, "[sandbox] network")
        assert str(exc.value).startswith("[sandbox] network: ")


def test_a_host_matches_its_entry_exactly_or_below_a_wildcard() -> None:
    assert network.allows(["registry.npmjs.org"], "registry.npmjs.org", 443)
    assert not network.allows(["registry.npmjs.org"], "registry.npmjs.org.evil.com", 443)
    assert network.allows(["*.npmjs.org"], "registry.npmjs.org", 443)
    assert not network.allows(["*.npmjs.org"], "evilnpmjs.org", 443)
    assert not network.allows(["*.npmjs.org"], "npmjs.org", 443)
    assert network.allows(["example.com:8443"], "example.com", 8443)
    assert not network.allows(["example.com:8443"], "example.com", 443)
    assert network.split("[::1]:8080", 80) == ("::1", 8080) and network.split("Pypi.org.", 443) == ("pypi.org", 443)
    # What the proxy refuses before matching: a name a wildcard would match but a resolver would read otherwise.
    for bad in ("evil.example@x.pypi.org", "x.pypi.org\r\nX: y", "x .pypi.org", "", "ünï.pypi.org"):
        assert not network.well_formed(bad), bad
    assert network.well_formed("registry.npmjs.org") and network.well_formed("::1")


def test_the_model_endpoint_is_the_adapters_variable_or_its_vendor() -> None:
    assert network.endpoints("claude", {}) == [("api.anthropic.com", 443)]
    assert network.endpoints("claude", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4321/x"}) == [("127.0.0.1", 4321)]
    assert network.endpoints("codex", {}) == [("api.openai.com", 443), ("chatgpt.com", 443)]  # and its sign-in backend
    assert network.endpoints("codex", {"OPENAI_BASE_URL": "https://gw.example"}) == [("gw.example", 443)]
    assert network.endpoints("gemini", {"GOOGLE_GEMINI_BASE_URL": "https://gw.example:8443"}) == [("gw.example", 8443)]


def test_the_narrower_setting_wins() -> None:
    assert network.stronger("all", ["a.org"]) == ["a.org"] and network.stronger(["a.org"], "all") == ["a.org"]
    assert network.stronger("none", ["a.org"]) == "none" and network.stronger("all", "none") == "none"
    assert network.stronger(["a.org", "b.org"], ["b.org", "c.org"]) == ["b.org"]
    assert network.stronger(["a.org"], ["c.org"]) == "none"


def test_a_project_file_may_narrow_the_users_network_but_never_widen_it(project: Layout) -> None:
    user = Path(userfiles.config_file())
    user.parent.mkdir(parents=True, exist_ok=True)
    toml = Path(project.project, "cocoplus.toml")
    user.write_text('[sandbox]\nnetwork = ["none"]\n')
    toml.write_text('[sandbox]\nnetwork = ["all"]\n')
    assert network.effective(project) == "none"
    user.write_text('[sandbox]\nnetwork = ["pypi.org", "registry.npmjs.org"]\n')
    toml.write_text('[sandbox]\nnetwork = ["registry.npmjs.org", "evil.example"]\n')
    assert network.effective(project) == ["registry.npmjs.org"]
    assert network.effective(project, "all") == "all"  # the operator's command line decides


def test_a_limited_network_without_a_sandbox_starts_nothing(cli_subprocess: Any, hooked: Layout) -> None:
    env = {"PATH": standins_dir()}
    r = cli_subprocess("launch", "claude", "Work.", "--network", "none", cwd=hooked.project, env=env)
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1, r
    assert "is limited only in a sandbox" in r.err and "--sandbox workspace" in r.err, r
    no_worker_ran(hooked)


def test_only_the_operator_chooses_a_workers_network(hooked: Layout) -> None:
    """The main brain may launch workers, but not choose their network (a worker may not launch at all)."""
    from cocoplus.ops import authority
    from cocoplus.ops import workers as workers_ops

    with pytest.raises(Refused) as exc:
        workers_ops.launch(hooked, "claude", "Work.", principal=authority.BRAIN, network="all")
    assert "launch --network" in str(exc.value) and "for the operator" in str(exc.value)
    no_worker_ran(hooked)


def test_a_held_host_is_approved_for_the_run_only_never_always(cli_subprocess: Any, project: Layout) -> None:
    req = permissions.open_request(
        project, None, runtime="claude", tool="Network", tool_input={"host": "registry.npmjs.org", "port": 443},
        wait_s=60, worker="w1",
    )  # fmt: skip
    r = cli_subprocess("approve", req["id"], "--always", cwd=project.project)
    assert r.code != 0 and "for this run only" in r.err and "[sandbox] network" in r.err, r
    assert permissions.read_request(project, req["id"])["state"] == "pending"  # type: ignore[index]
    assert permissions.user_rules(project.project)["allow"] == []


def test_the_network_is_sealed_with_the_worker_and_an_older_record_seals_as_before() -> None:
    from cocoplus.core import seal

    rec = {"id": "w1", "command": ["claude", "-p", "x"], "allow": [], "headless": True, "sandbox": "workspace"}
    before = seal.worker_fields_of(rec, "/p", "w1")
    assert seal.worker_fields_of({**rec, "network": "all"}, "/p", "w1") == before
    limited = seal.worker_fields_of({**rec, "network": ["pypi.org"]}, "/p", "w1")
    assert limited != before and limited != seal.worker_fields_of({**rec, "network": "none"}, "/p", "w1")


def test_the_brain_approves_a_held_host_only_within_brain_may_allow(project: Layout) -> None:
    """`[permissions] brain_may_allow` (a trusted key) may name hosts (`Network(*.npmjs.org)`): the main brain may
    approve those, and only those; the operator any."""
    from cocoplus.ops import authority
    from cocoplus.ops import permissions as permissions_ops
    from tests.support.trusting import trust_project

    def held(host: str) -> str:
        return permissions.open_request(
            project, None, runtime="claude", tool="Network", tool_input={"host": host, "port": 443}, wait_s=60,
            worker="w1",
        )["id"]  # fmt: skip

    Path(project.config).write_text('[permissions]\nbrain_may_allow = ["Network(*.npmjs.org)"]\n')
    trust_project(project)
    assert permissions_ops.approve(project, held("registry.npmjs.org"), principal=authority.BRAIN)["state"] == "allowed"
    for host in ("npmjs.org.evil.example", "evilnpmjs.org"):
        with pytest.raises(Refused, match="brain_may_allow does not cover it"):
            permissions_ops.approve(project, held(host), principal=authority.BRAIN)


def test_loopback_model_endpoints_and_listed_loopback_ports_are_served_inside_at_their_address() -> None:
    from cocoplus.sandbox import bwrap

    env = {"ANTHROPIC_BASE_URL": "http://localhost:4321/v1"}
    cmd = bwrap.network_command(["127.0.0.1:8080", "pypi.org", "127.0.0.1"], "claude", env, ["claude", "-p"])
    cut = cmd.index("--")
    assert cmd[cut + 1 :] == ["claude", "-p"] and cmd[2] == network.FORWARD and cmd[3] == bwrap.PROXY
    maps = cmd[4:cut]
    assert maps == ["--map", "4321=localhost", "--map", "8080=127.0.0.1"], maps
    assert bwrap.network_command("all", "claude", env, ["claude"]) == ["claude"]


def test_under_srt_the_allow_lists_hosts_are_given_to_srts_own_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under `srt` its own proxy holds the network: the runner gives it the worker's allow list, beside the model
    endpoint (srt's settings, as the runner writes them for the run)."""
    import json
    import os
    import shutil
    import tempfile

    from cocoplus.core.paths import Layout
    from cocoplus.supervision import workerrun

    tmp_path = Path(tempfile.mkdtemp(prefix="cocoplus-srt-", dir="/var/tmp"))  # srt refuses a tree under /dev
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(userfiles, "home", lambda: str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "project"
    (project / ".cocoplus").mkdir(parents=True)
    layout = Layout(str(project / ".cocoplus"))
    found = {"ok": True, "bwrap": "/usr/bin/bwrap", "srt": "/usr/local/bin/srt"}
    _args, _env, fds = workerrun.srt_held(
        layout, "w1", found, "claude", str(project), str(project), ["claude", "-p"], str(tmp_path / "c.sock"), (),
        ("registry.npmjs.org", "*.pypi.org"),
    )  # fmt: skip
    with os.fdopen(fds[1], "rb") as f:
        allowed = json.loads(f.read())["network"]["allowedDomains"]
    os.close(fds[0])
    shutil.rmtree(tmp_path, ignore_errors=True)
    assert {"registry.npmjs.org", "*.pypi.org"} <= set(allowed) and "api.anthropic.com" in allowed, allowed
