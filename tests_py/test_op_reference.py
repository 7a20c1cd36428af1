"""docs/ops.md is generated from the op table and the docstrings: it must
match what nvfuse defines, and every op must have a description
(regenerate with python3 tools/generate_op_reference.py)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_op_reference_is_up_to_date_and_complete():
    checked = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "generate_op_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
