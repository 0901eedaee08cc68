"""`python -m cocoplus`: the same as the `cocoplus` command."""

from __future__ import annotations

import sys


def main() -> int:
    from cocoplus.cli.app import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
