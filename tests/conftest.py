"""Shared fixtures: an isolated environment for every test, a fresh project, and CLI runners.

Every test runs with HOME and the XDG directories inside its own tmp_path and
without any COCOPLUS_*, CLAUDE_*, GEMINI_*, CURSOR_* or CORTEX_* variables from the
caller's environment, so nothing a test does can reach the real home
directory or an agent session the developer has open.  Only tests marked
`e2e` may run a real agent runtime CLI (tests/support/runtimes.py says how
that is enforced).
"""

from __future__ import annotations

import atexit
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from hypothesis import settings as hypothesis_settings

from cocoplus.core.paths import Layout
from tests.support import runtimes

# Property tests check results, not speed: no per-example deadline, so a busy
# machine cannot turn a slow example into a failure.
hypothesis_settings.register_profile("cocoplus", deadline=None)
hypothesis_settings.load_profile("cocoplus")

ENV_PREFIXES = ("COCOPLUS_", "JARVIS_", "CLAUDE_", "GEMINI_", "CURSOR_", "CODEX_", "CORTEX_", "ANTHROPIC_", "OPENAI_")
XDG_DIRS = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
OPERATOR = "tester"

# The home directory of whoever runs the suite, remembered before any test changes HOME.
REAL_HOME = os.path.realpath(os.path.expanduser("~"))
# cocoplus finds this user's home in the password database, not in $HOME (a repository can set a hook's
# environment). Each test gets a password database of its own whose entry for this user names the test's
# home: nss_wrapper (tests/e2e/runtimes/install-nss-wrapper.sh) for the processes a test starts, and
# `pwd.getpwuid` for this process.  The databases live on the disk, under /var/tmp, not in the suite's temporary
# directory: that is often /dev/shm, and a sandbox (Codex's own, and cocoplus's) gives its commands a /dev of its
# own, where a database there would be missing and every program asking who its user is would print
# nss_wrapper's errors into what the test reads.
NSS_TOP = "/var/tmp"
NSS_WRAPPER = next(
    (
        os.path.join(d, "libnss_wrapper.so")
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib")
        if os.path.exists(os.path.join(d, "libnss_wrapper.so"))
    ),
    None,
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """What `-n auto` (pyproject's addopts) means here: one worker more than the cores.

    Many tests spend most of their time waiting on purpose (a fleet server down
    for 30 s, a cluster electing a leader, a quiet window, a runtime starting),
    so two workers on two cores kept about 1.4 cores busy; a third fills that
    (on 2 cores the suite took 10 min 48 s instead of 11 min 54 s).
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when it is set, as in xdist.
    """
    env = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if env.isdigit():
        return int(env)
    return len(os.sched_getaffinity(0)) + 1


SHM = "/dev/shm"
SHM_FREE_BYTES = 4 << 30  # leave it alone when it has less free


def _temp_in_memory(config: pytest.Config) -> None:
    """The tests' temporary directories in memory (tmpfs at /dev/shm), unless TMPDIR or --basetemp says where.

    cocoplus syncs every file it writes (core/fsio.py), and the tests create
    thousands of projects and hook records: on a disk each sync waits for it
    (about 100 ms a fresh project, against 10 ms in memory), and nothing a test
    can observe depends on the sync having reached a disk.  The tests that
    need a particular filesystem (a full disk, another user's directory) make
    their own.  `TMPDIR=/tmp pytest` keeps everything on the disk.
    """
    if config.option.basetemp or os.environ.get("TMPDIR"):
        return
    try:
        with open("/proc/mounts") as fh:
            on_tmpfs = any(f"{SHM} tmpfs" in line for line in fh)
        st = os.statvfs(SHM)
    except OSError:
        return
    if on_tmpfs and os.access(SHM, os.W_OK) and st.f_bavail * st.f_frsize >= SHM_FREE_BYTES:
        os.environ["TMPDIR"] = SHM  # xdist's workers, and every process a test starts, inherit it
        tempfile.tempdir = None  # forget a directory chosen before this


def pytest_configure(config: pytest.Config) -> None:
    _temp_in_memory(config)
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has checked already
    # Byte-compile the package once, as installing a wheel does: the suite starts hundreds of cocoplus
    # processes, and from a fresh checkout installed in editable mode (or where PYTHONDONTWRITEBYTECODE is
    # set) each of them would otherwise compile every module it imports from source.
    import compileall

    import cocoplus

    compileall.compile_dir(os.path.dirname(cocoplus.__file__), quiet=1)
    if NSS_WRAPPER is None:
        raise pytest.UsageError(
            "nss_wrapper (libnss_wrapper.so) is missing: run `sh tests/e2e/runtimes/install.sh` (the README's "
            "test command does); every test needs a password database entry naming its own home"
        )
    named = runtimes.sources_naming_the_cli_dir()
    if named:
        raise pytest.UsageError(
            "these test sources spell out where the runtime CLIs are installed; get a CLI's path from "
            "tests.support.runtimes.runtime_bin, which only e2e tests may call: " + ", ".join(named)
        )


# The marks that make a test slow by themselves (pyproject's `slow` marker says the rule): a real agent CLI, a
# real nats-server cluster.
SLOW_BY_MARK = ("e2e", "nats")
# The fixtures that make a test slow wherever it is: a real Chromium (tests/server/test_browser.py's `page`).
SLOW_FIXTURES = {"page": "tests.server.test_browser"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast lane's rule: a test is `slow` when it is marked so, or e2e or nats, or uses a real browser.

    So a new test lands in the right lane by what it drives, not by a list someone must keep.
    """
    for item in items:
        if item.get_closest_marker("slow") is not None:
            continue
        if any(item.get_closest_marker(name) is not None for name in SLOW_BY_MARK) or _uses_slow_fixture(item):
            item.add_marker(pytest.mark.slow)


# The tests this run collected and then left out (`-m`, `-k`, `--deselect`): tests/test_lanes.py reads their marks.
DESELECTED = pytest.StashKey[list[pytest.Item]]()


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        config = items[0].config
        config.stash.setdefault(DESELECTED, []).extend(items)


def _uses_slow_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name, module in SLOW_FIXTURES.items():
        defs = info.name2fixturedefs.get(name, ())
        if any(getattr(d.func, "__module__", None) == module for d in defs):
            return True
    return False


def _scrub(env: dict[str, str] | os._Environ[str]) -> list[str]:
    return [name for name in env if name.startswith(ENV_PREFIXES)]


@pytest.fixture(autouse=True)
def isolated_env(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """HOME and XDG_* in a private directory; no cocoplus or agent-runtime variables; runtime CLIs
    on PATH are stand-ins, and only an `e2e` test may ask for the real ones."""
    runtimes.current.update(nodeid=request.node.nodeid, e2e=request.node.get_closest_marker("e2e") is not None)
    standins = runtimes.install_standins(tmp_path_factory.mktemp("bin"))
    monkeypatch.setenv("PATH", f"{standins.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    for name in XDG_DIRS:
        d = home / name.lower()
        d.mkdir(mode=0o700)
        monkeypatch.setenv(name, str(d))
    for name in _scrub(os.environ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COCOPLUS_OPERATOR", OPERATOR)
    _own_passwd(home, monkeypatch)
    # Wide enough that Rich never wraps a file name across two lines.
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setenv("NO_COLOR", "1")
    assert os.path.realpath(os.path.expanduser("~")) != REAL_HOME
    yield str(home)
    runtimes.current.update(nodeid=None, e2e=False)
    ran = runtimes.standin_calls(standins)
    if ran:
        pytest.fail(f"a runtime CLI was run through PATH during this test: {ran!r}", pytrace=False)


# The variables that give a process the test's password database (see `_own_passwd`): an environment a
# test builds from nothing takes these along (`passwd_env()`).
PASSWD_ENV = ("LD_PRELOAD", "NSS_WRAPPER_PASSWD", "NSS_WRAPPER_GROUP")


def passwd_env() -> dict[str, str]:
    return {k: os.environ[k] for k in PASSWD_ENV if k in os.environ}


def passwd_env_for(home: os.PathLike[str] | str) -> dict[str, str]:
    """The variables that give a process a password database whose entry for this user names `home`: how a test
    stands for another account or machine (cocoplus reads this user's files from the password database's home,
    never from HOME or XDG_*)."""
    import pwd

    os.makedirs(str(home), exist_ok=True)
    db = os.path.join(str(home), ".nss-passwd")
    fields = list(pwd.getpwuid(os.getuid()))
    fields[5] = str(home)
    with open(db, "w") as fh:
        fh.write(":".join(str(f) for f in fields) + "\n")
    return {**passwd_env(), "NSS_WRAPPER_PASSWD": db}


@functools.cache
def _nss_top() -> str:
    """This process's directory of password databases under NSS_TOP, made at its first test and removed at exit."""
    made = tempfile.mkdtemp(prefix="cocoplus-tests-passwd-", dir=NSS_TOP if os.access(NSS_TOP, os.W_OK) else None)
    os.chmod(made, 0o755)
    atexit.register(shutil.rmtree, made, True)
    return made


def _own_passwd(home: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """This user's password database entry, with the test's home, for this process and the ones it starts."""
    import grp
    import pwd

    real_getpwuid = pwd.getpwuid
    me = real_getpwuid(os.getuid())
    fields = list(me)
    fields[5] = str(home)
    entry = pwd.struct_passwd(fields)
    db = tempfile.mkdtemp(prefix="db-", dir=_nss_top())
    os.chmod(db, 0o755)  # a test's non-root user reads it too
    with open(os.path.join(db, "passwd"), "w") as fh:
        fh.write(":".join(str(f) for f in entry) + "\n")
    group = grp.getgrgid(os.getgid())
    with open(os.path.join(db, "group"), "w") as fh:
        fh.write(f"{group.gr_name}:x:{group.gr_gid}:\n")
    assert NSS_WRAPPER is not None
    preload = os.environ.get("LD_PRELOAD")
    monkeypatch.setenv("LD_PRELOAD", NSS_WRAPPER + (f":{preload}" if preload else ""))
    monkeypatch.setenv("NSS_WRAPPER_PASSWD", os.path.join(db, "passwd"))
    monkeypatch.setenv("NSS_WRAPPER_GROUP", os.path.join(db, "group"))
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: entry if uid == me.pw_uid else real_getpwuid(uid))


@pytest.fixture
def project_dir(tmp_path: os.PathLike[str]) -> str:
    d = os.path.join(str(tmp_path), "proj")
    os.mkdir(d)
    return d


@pytest.fixture
def project(project_dir: str) -> Layout:
    """A project with a freshly initialised `.cocoplus/`; returns its Layout."""
    from cocoplus.ops.project import prices_for_hooks
    from cocoplus.session.workspace import init

    init(os.path.join(project_dir, ".cocoplus"))
    layout = Layout(os.path.join(project_dir, ".cocoplus"))
    prices_for_hooks(layout)  # as `cocoplus init` does: the hooks price turns from the first one
    return layout


@dataclass
class Result:
    code: int
    out: str
    err: str

    def __iter__(self) -> Iterator[object]:
        return iter((self.code, self.out, self.err))


def _restore_environ(saved: dict[str, str]) -> None:
    for name in list(os.environ):
        if name not in saved:
            del os.environ[name]
    for name, value in saved.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`cli("session", "status", cwd=dir)` runs `cocoplus.cli.app.main` in this process.

    Returns a Result that unpacks as (exit_code, stdout, stderr).  `stdin`
    replaces sys.stdin (a non-terminal stream) for the call.
    """
    from cocoplus.cli import output
    from cocoplus.cli.app import main

    def run(*argv: str, cwd: str | os.PathLike[str] | None = None, stdin: str | None = None) -> Result:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()  # drop anything printed before the call
        output.reset()
        saved = dict(os.environ)
        try:
            code = main(list(argv))
        finally:
            _restore_environ(saved)  # `--dir` sets COCOPLUS_DIR in os.environ
            output.reset()
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def run_cli_subprocess(
    *argv: str,
    cwd: str | os.PathLike[str],
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> Result:
    """`python -m cocoplus ARGV` in a real child process (environment: the isolated one)."""
    child_env = dict(os.environ)
    if env:
        child_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "cocoplus", *argv],
        cwd=str(cwd),
        env=child_env,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli_subprocess() -> Callable[..., Result]:
    return run_cli_subprocess


def assert_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback (most recent call last)" not in text, text
        assert "internal error" not in text, text
