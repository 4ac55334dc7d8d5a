"""Corrupt saved programs (issue 17, finding 4): raw damage, truncation, dropped,
recompressed and mutated members of a 1-chip and a 2-chip ``.novaprog``. ``nova.load``
gives one of Nova's errors naming the file, ``nova inspect`` one line and exit 1,
or the program loads and runs (or faults with a Nova error). Deterministic; the long
run is scripts/fuzz_binaries.py --kind archive."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzing


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes]]:
    programs = fuzzing.seed_programs(tmp_path_factory)
    return [(n, programs[n].read_bytes()) for n in ("mlp.novaprog", "mlp_tp2.novaprog")]


def check(archives, tmp_path, pick: int, mutation: int) -> str:
    name, data = archives[pick % len(archives)]
    mutant, what = fuzzing.mutate_archive(data, random.Random(mutation))
    with fuzzing.sim_limits():
        try:
            with fuzzing.time_limit(30):
                outcome, detail = fuzzing.run_archive(mutant, tmp_path)
        except fuzzing.CaseTimeout as error:
            outcome, detail = "hang", str(error)
    assert outcome not in fuzzing.FAILURES, f"{name}, {what}: {outcome}: {detail}"
    return outcome


@settings(max_examples=80, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(pick=st.integers(0, 63), mutation=st.integers(0, 2**32 - 1))
def test_corrupt_archives_are_rejected_or_run(archives, tmp_path, pick: int,
                                              mutation: int) -> None:
    check(archives, tmp_path, pick, mutation)


def test_the_unmutated_archives_load_and_run(archives, tmp_path) -> None:
    with fuzzing.sim_limits():
        for name, data in archives:
            assert fuzzing.run_archive(data, tmp_path) == ("ran", ""), name
