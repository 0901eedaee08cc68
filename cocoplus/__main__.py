"""`python -m cocoplus`: the same as the `cocoplus` command."""

from __future__ import annotations

import sys

from cocoplus.cli.app import main as cli_main


def main() -> int:
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
