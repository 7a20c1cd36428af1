"""The differential fuzzer (tools/fuzz.py): a fixed-seed batch of random
fusions against torch on the CPU path (and, marked, on the GPU), and its
crash and shrink machinery."""

import pytest

from tools import fuzz


def test_fixed_seed_batch_matches_torch_on_the_cpu_path():
    findings = fuzz.run_cases([fuzz.random_case(seed) for seed in range(400)], "cpu")
    assert not findings, findings


@pytest.mark.gpu
def test_fixed_seed_batch_matches_torch_on_the_gpu():
    findings = fuzz.run_cases([fuzz.random_case(seed) for seed in range(400)], "cuda")
    assert not findings, findings


def test_a_case_that_kills_its_worker_is_a_crash_finding_and_the_run_goes_on():
    cases = [fuzz.random_case(1), dict(fuzz.random_case(2), abort=True), fuzz.random_case(3)]
    findings = fuzz.run_cases(cases, "cpu")
    assert list(findings) == [2] and findings[2].startswith("CRASH")


def test_cases_are_reproducible_and_shrink_to_what_an_output_needs():
    case = fuzz.random_case(65)
    assert case == fuzz.random_case(65)
    last = case["outputs"][-1]
    smaller = fuzz.only_outputs(case, [last])
    assert len(smaller["ops"]) <= len(case["ops"])
    assert smaller["outputs"] == [len(smaller["inputs"]) + sum(fuzz.value_counts(smaller)) - 1]
    assert fuzz.check_case(smaller, "cpu") is None
