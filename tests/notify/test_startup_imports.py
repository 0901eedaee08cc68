"""apprise and Textual load only where they are used: never when the CLI starts."""

from __future__ import annotations

import subprocess
import sys


def test_cli_start_up_imports_neither_apprise_nor_textual() -> None:
    probe = (
        "import sys\n"
        "from cocoplus.cli import app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('apprise', 'textual', 'requests')))\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
