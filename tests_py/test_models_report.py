"""benchmarks/models_report.py over one JSON per model, as
tools/models_bench.sh writes them: the cases of every file in one table,
and a file a time limit cut off (empty) counted as no results."""

import json
import subprocess
import sys
from pathlib import Path

REPORT = Path(__file__).resolve().parents[1] / "benchmarks" / "models_report.py"


def _case(model, step, executor, ms):
    return {
        "params": {"model_name": model, "step": step, "executor": executor},
        "stats": {"median": ms / 1e3},
        "extra_info": {"first_call_s": 1.0, "peak_mb": 100},
    }


def _model_file(folder, model, nvfuse_ms, inductor_ms):
    """The JSON of one model's training step, as one run writes it."""
    path = folder / f"models_{model}.json"
    cases = [
        _case(model, "training", "nvfuse", nvfuse_ms),
        _case(model, "training", "compile", inductor_ms),
    ]
    path.write_text(json.dumps({"benchmarks": cases}))
    return path


def test_the_table_joins_the_models_files_and_skips_a_cut_off_one(tmp_path):
    gpt2 = _model_file(tmp_path, "gpt2", 8.0, 8.8)
    bert = _model_file(tmp_path, "bert", 10.0, 9.0)
    cut = tmp_path / "models_llama.json"
    cut.write_text("")
    out = subprocess.run(
        [sys.executable, str(REPORT), str(gpt2), str(bert), str(cut)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"(no results in {cut})" in out
    assert "gpt2      training" in out and "1.10x" in out
    assert "bert      training" in out and "0.90x" in out
    assert "training: 0.99x over 2 models" in out


def test_host_times_are_listed_for_cases_that_recorded_them(tmp_path):
    path = tmp_path / "models_resnet.json"
    timed = _case("resnet", "training", "nvfuse", 20.0)
    timed["extra_info"].update(host_enqueue_us=18_500.0, host_wall_us=21_250.0)
    untimed = _case("resnet", "training", "compile", 22.0)  # an older JSON's case
    path.write_text(json.dumps({"benchmarks": [timed, untimed]}))
    out = subprocess.run(
        [sys.executable, str(REPORT), str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "GPU / host enqueue / host wall" in out
    assert "resnet    training  nvfuse 20.00 / 18.50 / 21.25" in out
    assert "compile 22.00 /" not in out


def test_the_gpu_split_is_listed_only_for_cases_that_recorded_it(tmp_path):
    path = tmp_path / "models_vit.json"
    split = _case("vit", "training", "nvfuse", 9.0)
    split["extra_info"]["gpu_ms"] = {"nvfuse": 1.27, "gemm": 3.98, "kernels": 193}
    unsplit = _case("vit", "training", "compile", 11.0)  # timed without the profiler
    path.write_text(json.dumps({"benchmarks": [split, unsplit]}))
    out = subprocess.run(
        [sys.executable, str(REPORT), str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "vit       training  nvfuse   nvfuse 1.27, gemm 3.98 (193 kernels)" in out
    assert "compile  " not in out.split("GPU ms per step by kernel author")[1]
    split["extra_info"].pop("gpu_ms")
    path.write_text(json.dumps({"benchmarks": [split, unsplit]}))
    out = subprocess.run(
        [sys.executable, str(REPORT), str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert "GPU ms per step by kernel author" not in out
