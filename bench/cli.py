"""CLI start-up cost, with cocoplus installed as a user installs it, side by side with its interpreter's floor.

The target: the CLI loads only the command it runs; `session status`, `sessions list` and `--help` each at
most 8x `python -c pass` of the same interpreter, with cocoplus installed as a user installs it (a non-editable
install in a venv of its own, or pipx).  An editable install's `.pth` files slow its interpreter's start, which
would raise the floor and flatter the ratio, so the bench does not measure the venv it runs in:

* by default it makes a venv in a temporary directory and `pip install`s this checkout into it (not editable);
  `--venv DIR` makes that venv in DIR, or reuses the one there (cocoplus is reinstalled from this checkout, its
  dependencies are kept);
* `--cocoplus PATH` benches an installed `cocoplus` instead (for example `pipx install`'s or `uv tool
  install`'s): the interpreter its first line names is the floor.

Each case runs that `cocoplus` script, as a user types it, in a throwaway project with three recorded sessions
(SessionStart through the real hook), with its output going nowhere; each is interleaved with `<its python> -c
pass`, alternating which goes first.  Printed: the median of each and its interquartile range, and the ratio of
the medians with the interquartile range of the per-round ratios.  Both floors are printed: the user venv's and
the editable venv's (`--python`, default this interpreter), whose `.pth` files make it slower.  `import typer`
and `import rich` of the user venv are shown for scale (no target).  `--baseline PATH` runs another installed
`cocoplus` (an earlier commit's, installed the same way) in the same rounds against its own interpreter's floor:
how a change is shown side by side.

    python bench/cli.py [--rounds N] [--venv DIR | --cocoplus PATH] [--baseline PATH] [--python PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = {
    "--help": ["--help"],
    "session status": ["session", "status"],
    "sessions list": ["sessions", "list"],
}
SCALE = {"import typer": "import typer", "import rich": "import rich.console, rich.text"}
TARGET = 8.0


def run(argv: list[str], cwd: str, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def interpreter_of(script: str) -> list[str]:
    """The interpreter an installed console script runs, with the options its first line gives it (pipx's: -E)."""
    with open(script, "rb") as fh:
        first = fh.readline().decode("utf-8", "replace").strip()
    words = first[2:].split() if first.startswith("#!") else []
    if not words or not os.path.isabs(words[0]) or os.path.basename(words[0]) in ("sh", "env"):
        raise SystemExit(f"bench/cli.py: {script}: its first line names no interpreter ({first!r})")
    return words


def user_venv(where: str, env: dict[str, str]) -> str:
    """A venv at `where` with this checkout installed (not editable); its `cocoplus` script."""
    python = os.path.join(where, "bin", "python")
    if not os.path.exists(python):
        print(f"making a venv at {where} and installing {REPO} into it (not editable) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", where], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", REPO], check=True, env=env)
    else:
        print(f"reinstalling {REPO} into the venv at {where} (not editable) ...", file=sys.stderr)
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", REPO], check=True, env=env
        )
    if os.path.exists(os.path.join(where, "lib")):
        for root, _dirs, files in os.walk(os.path.join(where, "lib")):
            if any(f.endswith(".pth") and "cocoplus" in f.lower() for f in files):
                raise SystemExit(f"bench/cli.py: {root}: cocoplus is installed editable there; give another --venv")
    return os.path.join(where, "bin", "cocoplus")


def project(cocoplus: str, env: dict[str, str]) -> str:
    """A project with `.cocoplus/` and three recorded sessions (SessionStart through the real hook)."""
    root = tempfile.mkdtemp(prefix="cocoplus-bench-cli-")
    subprocess.run([cocoplus, "init"], cwd=root, env=env, check=True, capture_output=True)
    for i in range(3):
        payload = json.dumps(
            {"session_id": f"bench-{i}", "hook_event_name": "SessionStart", "cwd": root, "source": "startup"}
        )
        subprocess.run(
            [cocoplus, "hook", "SessionStart", "--runtime", "claude"],
            input=payload.encode(),
            cwd=root,
            env=env,
            check=True,
            capture_output=True,
        )
    return root


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--venv", help="make the user venv here, or reuse the one here (default: a temporary one)")
    where.add_argument("--cocoplus", help="an installed cocoplus script to bench (pipx's, uv tool's)")
    ap.add_argument("--baseline", help="another installed cocoplus script, benched in the same rounds")
    ap.add_argument(
        "--python", default=sys.executable, help="the editable venv's interpreter, for its floor (default: this one)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    env = {k: v for k, v in os.environ.items() if not k.startswith(("COCOPLUS_", "CLAUDE", "PYTHON"))}
    home = tempfile.mkdtemp(prefix="cocoplus-bench-home-")
    env.update(
        HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_DATA_HOME=os.path.join(home, ".local/share")
    )
    made = None
    if args.cocoplus:
        cocoplus = shutil.which(args.cocoplus) or args.cocoplus
    else:
        made = None if args.venv else tempfile.mkdtemp(prefix="cocoplus-bench-venv-")
        cocoplus = user_venv(os.path.abspath(args.venv) if args.venv else os.path.join(made or "", "venv"), env)
    installs = [("this", cocoplus, interpreter_of(cocoplus))]
    if args.baseline:
        base = shutil.which(args.baseline) or args.baseline
        installs.insert(0, ("baseline", base, interpreter_of(base)))

    # (install, case) -> the command; each install's floor is its own interpreter's `-c pass`.
    cases: dict[tuple[str, str], list[str]] = {}
    roots = {}
    for name, script, python in installs:
        roots[name] = project(script, env)
        for case, words in CASES.items():
            cases[(name, case)] = [script, *words]
        if name == "this":
            for case, code in SCALE.items():
                cases[(name, f"{case} (scale)")] = [*python, "-c", code]
    pythons = {name: python for name, _script, python in installs}
    editable_floor = [args.python, "-c", "pass"]

    times: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    floors: dict[tuple[str, str], list[float]] = {k: [] for k in cases}
    editable: list[float] = []
    for (name, _case), argv in cases.items():  # warm the byte code and the page cache
        run(argv, roots[name], env)
    run(editable_floor, roots["this"], env)
    for i in range(args.rounds):
        for (name, case), argv in cases.items():
            floor = [*pythons[name], "-c", "pass"]
            if i % 2:
                times[(name, case)].append(run(argv, roots[name], env))
                floors[(name, case)].append(run(floor, roots[name], env))
            else:
                floors[(name, case)].append(run(floor, roots[name], env))
                times[(name, case)].append(run(argv, roots[name], env))
        editable.append(run(editable_floor, roots["this"], env))

    rows = []
    for key in cases:
        t, f = times[key], floors[key]
        ratios = [a / b for a, b in zip(t, f, strict=True)]
        lo, hi = quartiles(ratios)
        rows.append(
            {
                "install": key[0],
                "case": key[1],
                "ms": round(statistics.median(t) * 1000, 1),
                "ms_iqr": [round(x * 1000, 1) for x in quartiles(t)],
                "floor_ms": round(statistics.median(f) * 1000, 1),
                "ratio": round(statistics.median(t) / statistics.median(f), 2),
                "ratio_iqr": [round(lo, 2), round(hi, 2)],
            }
        )
    all_floors = {name: [x for (n, _c), v in floors.items() if n == name for x in v] for name in pythons}
    floor_rows = [
        {
            "floor": f"{name} (user venv)" if not args.cocoplus or name == "baseline" else f"{name} (installed)",
            "python": " ".join(pythons[name]),
            "ms": round(statistics.median(v) * 1000, 1),
            "ms_iqr": [round(x * 1000, 1) for x in quartiles(v)],
        }
        for name, v in all_floors.items()
    ]
    floor_rows.append(
        {
            "floor": "editable venv",
            "python": args.python,
            "ms": round(statistics.median(editable) * 1000, 1),
            "ms_iqr": [round(x * 1000, 1) for x in quartiles(editable)],
        }
    )
    for temporary in [made, home, *roots.values()]:  # the venv it made, the home and the projects
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
    if args.json:
        print(json.dumps({"rounds": args.rounds, "target": TARGET, "floors": floor_rows, "cases": rows}, indent=2))
        return 0
    print(f"cocoplus CLI start-up, {args.rounds} interleaved rounds; target <= {TARGET:g}x `python -c pass`")
    print("floors (`<python> -c pass`), median and interquartile range:")
    for r in floor_rows:
        print(f"  {r['floor']:<22} {r['ms']:6.1f} ms ({r['ms_iqr'][0]:.1f}-{r['ms_iqr'][1]:.1f})  {r['python']}")
    many = len(installs) > 1
    for r in rows:
        mark = "" if r["case"].endswith("(scale)") else ("  ok" if r["ratio"] <= TARGET else "  OVER")
        label = f"{r['install']}: {r['case']}" if many else r["case"]
        spread, ratio_spread = r["ms_iqr"], r["ratio_iqr"]
        print(
            f"  {label:<32} {r['ms']:7.1f} ms ({spread[0]:.1f}-{spread[1]:.1f})   floor {r['floor_ms']:5.1f} ms"
            f"   {r['ratio']:5.2f}x ({ratio_spread[0]:.2f}-{ratio_spread[1]:.2f}){mark}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
