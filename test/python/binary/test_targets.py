"""nova.binary.targets finds, reads and validates target files for every layer above."""

from __future__ import annotations

import json

import pytest

from nova.binary import TargetError
from nova.binary.targets import available_targets, load_target_dict, target_file
from nova.parallel.target_chips import target_chips
from nova.sim.target import load_target, target_from_dict


def test_shipped_targets_are_found_by_name_and_by_path():
    path = target_file("nova-t1")
    assert path is not None and path.name == "nova-t1.json"
    assert target_file(str(path)) == path
    assert target_file("no-such-target") is None
    assert {"nova-t1", "tiny"} <= set(available_targets())


def test_the_simulator_and_the_chip_check_read_the_same_file():
    path = target_file("nova-t1")
    d = load_target_dict(path)
    assert load_target(path) == target_from_dict(d)
    assert target_chips("nova-t1") == d["chips"] == load_target(path).chips


def test_a_bad_file_is_a_target_error_naming_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TargetError, match=r"cannot read target '.*bad.json'"):
        load_target_dict(bad)
    bad.write_text(json.dumps({"name": "x"}))
    with pytest.raises(TargetError, match=r"target file '.*bad.json' is missing key"):
        load_target_dict(bad)
    assert target_chips(str(bad)) is None  # left to the compiler, which reports it
