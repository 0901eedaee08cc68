"""`python -m cocoplus` and the `cocoplus` console script.

`cocoplus mcp` inside a cocoplus sandbox is the relay to the worker's MCP server outside (hook/mcprelay.py).
`cocoplus hook ...` goes straight to the hook's entry, before the CLI (and
typer) is imported: a hook launcher that finds no pointer file runs
`cocoplus hook` from PATH (install/launcher.py), on every tool call.  Then
the fast path (cli/fast.py) answers `--help`, `session status` and `session
list` without typer; the typer app (cli/app.py) answers everything else.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["hook"]:
        from cocoplus.hook.entry import command as hook_main  # deferred: the hook loads nothing else

        return hook_main(sys.argv[2:])
    if sys.argv[1:2] == ["mcp"] and "token" not in sys.argv[2:]:
        from cocoplus.hook.entry import inside_sandbox  # deferred: light, and only `cocoplus mcp` asks

        if inside_sandbox():  # the worker's tools are served outside, through the control channel
            from cocoplus.hook import mcprelay  # deferred: only inside a sandbox

            return mcprelay.main(sys.argv[2:])
    from cocoplus.cli.fast import run  # deferred: `cocoplus hook` must not load the CLI

    answered = run(sys.argv[1:])
    if answered is not None:
        return answered
    from cocoplus.cli.app import main as cli_main  # deferred: only what the fast path leaves loads typer

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
