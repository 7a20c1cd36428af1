"""The layering of src/ holds: no folder includes from a folder above it
(tools/layering.py has the table of what may include what) and no two
folders include each other."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_folder_includes_from_above_and_no_cycles():
    checked = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "layering.py")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
