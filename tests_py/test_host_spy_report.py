"""tools/host_spy.py's report over a py-spy raw profile: per marker, the
samples with the marked frame on their stack and the frames they ended
in; then the frames with the most samples of their own."""

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "host_spy.py"

RAW = """\
process 1;<module> (a.py:3);forward (g.py:9);at::native::clone (libtorch_cpu.so);at::native::copy_ (libtorch_cpu.so);__futex_wait (libc.so.6) 30
process 1;<module> (a.py:3);forward (g.py:9);at::native::clone (libtorch_cpu.so);cudaLaunchKernel (libcudart.so) 2
process 1;<module> (a.py:3);forward (g.py:9);execute (nvfuse/_C.so) 8
thread 2;MeanBackward0::apply (libtorch_cpu.so) 5
"""


def test_report_names_where_a_marked_call_spent_its_samples(tmp_path):
    raw = tmp_path / "spy.txt"
    raw.write_text(RAW)
    out = subprocess.run(
        [sys.executable, str(TOOL), "report", str(raw), "native::clone", "MeanBackward0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-- native::clone: 32 of 45 samples (71.1%)" in out
    assert "30 __futex_wait < at::native::copy_" in out
    assert "2 cudaLaunchKernel" in out
    assert "5 (the marked frame itself)" in out
    own = out.split("most samples of their own:")[1]
    assert own.index("__futex_wait") < own.index("execute") < own.index("MeanBackward0")


def test_without_arguments_it_prints_its_usage():
    run = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True)
    assert run.returncode != 0 and "py-spy" in run.stderr
