"""The differential fuzzer (tools/fuzz.py): a fixed-seed batch of random
fusions against torch on the CPU path (and, marked, on the GPU), and its
crash and shrink machinery."""

import pytest

from tools import fuzz


def test_fixed_seed_batch_matches_torch_on_the_cpu_path():
    findings, ran = fuzz.run_cases([fuzz.random_case(seed) for seed in range(400)], "cpu")
    assert not fuzz.unexplained(findings) and ran == 400, findings


@pytest.mark.gpu
def test_fixed_seed_batch_matches_torch_on_the_gpu():
    findings, ran = fuzz.run_cases([fuzz.random_case(seed) for seed in range(400)], "cuda")
    assert not fuzz.unexplained(findings) and ran == 400, findings


def test_a_case_that_kills_its_worker_is_a_crash_finding_and_the_run_goes_on():
    cases = [fuzz.random_case(1), dict(fuzz.random_case(2), abort=True), fuzz.random_case(3)]
    findings, ran = fuzz.run_cases(cases, "cpu")
    assert list(findings) == [2] and findings[2].startswith("CRASH") and ran == 3


def test_a_batch_past_its_deadline_reports_only_the_cases_it_ran():
    import time

    cases = [fuzz.random_case(seed) for seed in range(50)]
    findings, ran = fuzz.run_cases(cases, "cpu", deadline=time.monotonic() - 1)
    assert findings == {} and ran == 0


def test_cases_are_reproducible_and_shrink_to_what_an_output_needs():
    case = fuzz.random_case(65)
    assert case == fuzz.random_case(65)
    last = case["outputs"][-1]
    smaller = fuzz.only_outputs(case, [last])
    assert len(smaller["ops"]) <= len(case["ops"])
    assert smaller["outputs"] == [len(smaller["inputs"]) + sum(fuzz.value_counts(smaller)) - 1]
    assert fuzz.check_case(smaller, "cpu") is None


def test_the_generator_reaches_the_widened_ops_and_inputs():
    cases = [fuzz.random_case(seed) for seed in range(1500)]
    names = {name for case in cases for name, _, _ in case["ops"]}
    assert {"lerp", "clamp", "var", "amin", "pad", "fmod", "lgamma", "cosh", "where"} <= names
    assert max(len(case["ops"]) for case in cases) > 20
    assert any(case["spiced"] for case in cases)
    assert any(layout == "padded" for case in cases for _, _, layout in case["inputs"])
    slices = [p for case in cases for name, _, p in case["ops"] if name == "slice"]
    assert any(min(p["starts"]) < 0 for p in slices)
    assert any(max(p["ends"]) >= 1 << 40 for p in slices)


# atan2(v, v) of the variance of 130 equal values: the exact variance is 0,
# and a float32 one a rounding error away from it (atan2 then gives pi/4):
# torch's CPU variance on one side, nvfuse's sum-based kernels on the other
# (docs/api.md).
_AMPLIFIED_ROUNDING = {
    "seed": 2110,
    "inputs": [([130], "float32", "expanded")],
    "indices": [],
    "ops": [("var", [0], {"dim": 0, "correction": 0}), ("atan2", [1, 1], {})],
    "outputs": [2],
    "spiced": False,
}


def test_a_difference_the_float64_evaluation_explains_is_no_finding():
    import torch

    inputs = fuzz.make_inputs(_AMPLIFIED_ROUNDING, "cpu")
    assert fuzz.check_case(_AMPLIFIED_ROUNDING, "cpu") is None
    exact = fuzz.apply(_AMPLIFIED_ROUNDING, [t.double() for t in inputs])[0]
    assert exact.item() == 0.0
    assert fuzz._matches_float64(_AMPLIFIED_ROUNDING, inputs, 0, exact.float())
    assert not fuzz._matches_float64(_AMPLIFIED_ROUNDING, inputs, 0, torch.tensor(0.7854))


def test_a_non_finite_value_cast_to_an_integer_skips_the_case():
    case = {
        "seed": 1,
        "inputs": [([4], "float32", "contiguous")],
        "indices": [],
        "ops": [("log", [0], {}), ("cast", [1], {"dtype": "int32"})],
        "outputs": [2],
        "spiced": True,
    }
    with pytest.raises(RuntimeError, match="non-finite value cast"):
        fuzz.apply(case, fuzz.make_inputs(case, "cpu"))
    assert fuzz.check_case(case, "cpu") is None


def test_a_reductions_rounding_magnified_is_explained_and_nothing_else():
    import math

    import torch

    case = _AMPLIFIED_ROUNDING
    inputs = fuzz.make_inputs(case, "cpu")
    assert fuzz._within_nudged_reductions(case, inputs, 0, torch.tensor(math.pi / 4))
    assert fuzz._within_nudged_reductions(case, inputs, 0, torch.tensor(0.0))
    assert not fuzz._within_nudged_reductions(case, inputs, 0, torch.tensor(1.0))
    assert not fuzz._within_nudged_reductions(case, inputs, 0, torch.tensor(float("nan")))


def test_explained_findings_are_counted_apart():
    findings = {1: "output 0: Tensor-likes are not close!", 2: f"{fuzz.EXPLAINED} output 0: x"}
    assert list(fuzz.unexplained(findings)) == [1]
