"""Crafted binaries (issue 17, finding 3): byte flips, overwrites and truncations of
the test vectors and of a compiled MLP, each with its CRC recomputed. Every mutant
is rejected by the loader with a Nova error, or passes the whole validation and then
simulates to completion or to a Nova fault: never a raw exception, a malformed
instruction reaching the simulator, a hang or a huge allocation. Deterministic
(derandomized hypothesis, bounded examples); the long run is scripts/fuzz_binaries.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing

SEEDS = sorted(fuzzing.VECTORS.glob("*.nova"))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes, dict | None]]:
    programs = fuzzing.seed_programs(tmp_path_factory)
    files = [(p.name, p.read_bytes()) for p in SEEDS]
    files.append(("mlp.nova", programs["mlp.nova"].read_bytes()))
    with fuzzing.sim_limits():
        return [(name, data, fuzzing.reference_outputs(data)) for name, data in files]


def check(seeds, pick: int, mutation: int) -> str:
    name, data, reference = seeds[pick % len(seeds)]
    mutant, what = fuzzing.mutate_binary(data, random.Random(mutation))
    with fuzzing.sim_limits():
        try:
            with fuzzing.time_limit(20):
                outcome, detail = fuzzing.run_binary(mutant, reference)
        except fuzzing.CaseTimeout as error:
            outcome, detail = "hang", str(error)
    assert outcome not in fuzzing.FAILURES, f"{name}, {what}: {outcome}: {detail}"
    return outcome


_FUZZ = settings(max_examples=250, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


@_FUZZ
@given(pick=st.integers(0, 63), mutation=st.integers(0, 2**32 - 1))
def test_crafted_binaries_are_rejected_or_run(seeds, pick: int, mutation: int) -> None:
    check(seeds, pick, mutation)


def test_the_mutants_exercise_every_outcome(seeds) -> None:
    # A fixed sample: the validation rejects most mutants, and the others run or fault.
    outcomes = {check(seeds, k, 1000 + k) for k in range(120)}
    assert {"rejected", "ran"} <= outcomes


def test_truncations_at_every_section_boundary(seeds) -> None:
    for name, data, _ in seeds:
        for size in range(0, len(data) - 8, 64):  # len - 8 is the file itself
            outcome, detail = fuzzing.run_binary(fuzzing.truncate(data, size))
            assert outcome == "rejected", f"{name} cut to {size}: {outcome} {detail}"
