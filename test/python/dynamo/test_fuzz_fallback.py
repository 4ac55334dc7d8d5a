"""A short seeded run of the fuzzer of the per-op fallback in training
(fallback_programs.py): random small models with ops Nova cannot lower in
the forward, the backward or both run (Nova's part on Nova, the rest in
eager) and give eager's outputs and gradients. The long run is
scripts/fuzz_fallback.py."""

from __future__ import annotations

import pytest

from fallback_programs import check, make_case

SEED = 1


def _first(placement: set[str]) -> int:
    """The first case of SEED whose ops Nova cannot lower sit exactly at ``placement``."""
    return next(i for i in range(1000) if make_case(SEED, i).placement == placement)


@pytest.mark.parametrize("placement", [{"forward"}, {"backward"}, {"both"},
                                       {"forward", "backward"}])
def test_fallback_fuzz_case_matches_eager(placement: set[str]) -> None:
    index = _first(placement)
    case = make_case(SEED, index)
    assert check(case, index) is None, case.describe()
