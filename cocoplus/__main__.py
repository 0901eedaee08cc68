"""`python -m cocoplus` and the `cocoplus` console script.

`cocoplus hook ...` goes straight to the hook's entry, before the CLI (and
typer) is imported: a hook launcher that finds no pointer file runs
`cocoplus hook` from PATH (install/launcher.py), on every tool call.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["hook"]:
        from cocoplus.hook.entry import main as hook_main  # deferred: the hook loads nothing else

        return hook_main(sys.argv[2:])
    from cocoplus.cli.app import main as cli_main  # deferred: `cocoplus hook` must not load the CLI (typer)

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
