"""One module per command group.

Each command is a module-level function (importable and callable on its
own) that parses its arguments, calls one operation in `cocoplus.ops`, and
hands the result to `output.show` with its text renderer; `register(app)`
attaches the functions to the typer app.  The project a command acts on
comes from `cli/project.py` (re-exported here).
"""

from __future__ import annotations

from typing import Annotated

import typer

from cocoplus.cli.project import dir_error as dir_error
from cocoplus.cli.project import layout as layout
from cocoplus.cli.project import named_dir as named_dir
from cocoplus.cli.project import optional_layout as optional_layout

JSON_HELP = "Print JSON (stable: fields are only added; see 'JSON output' in the documentation)."
JsonFlag = Annotated[bool, typer.Option("--json", help=JSON_HELP)]
