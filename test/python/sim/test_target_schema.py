"""The target schema: every key typed and ranged, timing constants included; target
files and the target embedded in a binary both go through it."""

import json
import sys
from pathlib import Path

import pytest

from asm import ROOT, target
from nova.binary.format import load_binary
from nova.runtime.errors import BinaryFormatError
from nova.sim import TargetError, load_target, target_from_dict
from nova.binary.target_schema import ACTIVATION, FIELDS, NODE_KEYS, TIMING, schema_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
import novabin  # noqa: E402


def tiny() -> dict:
    return load_target(ROOT / "targets" / "tiny.json").as_dict()


@pytest.mark.parametrize("path", sorted((ROOT / "targets").glob("*.json")), ids=lambda p: p.stem)
def test_every_shipped_target_states_every_key(path):
    d = json.loads(path.read_text())
    # Every key, but an optional one may rely on its default (tiny, the test
    # target whose binaries in test/vectors predate launch_cycles, leaves it out);
    # the keys of several nodes all four on a multi-node target, else none.
    # The activation block (docs/isa.md 2.7), on a target with that engine, states
    # all its keys.
    nodes = set(NODE_KEYS)
    assert set(d) - nodes - {"activation"} == set(FIELDS) - nodes
    assert set(d) & nodes in (set(), nodes)
    if "activation" in d:
        assert set(d["activation"]) == set(ACTIVATION)
    assert set(d["timing"]) <= set(TIMING)
    assert set(TIMING) - set(d["timing"]) <= {k for k, s in TIMING.items() if s.optional}
    loaded = dict(load_target(path).timing)
    # 64 == 64.0: ints normalised to floats; an absent optional key holds its default.
    assert loaded == {**{k: s.default for k, s in TIMING.items() if k not in d["timing"]}, **d["timing"]}


@pytest.mark.parametrize("change,msg", [
    ({"colour": "red"}, r"unknown key\(s\) 'colour'"),
    ({"timing": {"warp_factor": 9}}, r"timing has unknown key\(s\) 'warp_factor'"),
    ({"clock_mhz": "1400"}, r"key 'clock_mhz' must be an integer, got '1400'"),
    ({"clock_mhz": 1400.5}, r"key 'clock_mhz' must be an integer, got 1400.5"),
    ({"chips": True}, r"key 'chips' must be an integer, got True"),
    ({"timing": {"queue_depth": 2.5}}, r"timing key 'queue_depth' must be an integer, got 2.5"),
    ({"timing": {"dma_setup_cycles": "64"}}, r"timing key 'dma_setup_cycles' must be a number, got '64'"),
    ({"timing": {"matmul_weight_overlap": 1}}, r"timing key 'matmul_weight_overlap' must be a bool"),
    ({"chips": 0}, r"key 'chips' must be in \[1, 65536\], got 0"),
    ({"dma_engines": 300}, r"key 'dma_engines' must be in \[1, 256\], got 300"),
    ({"link_latency_ns": -1}, r"key 'link_latency_ns' must be in \[0, "),
    ({"timing": {"vector_overhead_cycles": -3}}, r"timing key 'vector_overhead_cycles' must be in \[0, "),
    ({"topology": "mesh"}, r"key 'topology' must be one of switch, ring, torus2d, pcie, got 'mesh'"),
    ({"timing": {"collective_algorithm": "fast"}}, r"timing key 'collective_algorithm' must be one of auto"),
    ({"timing": 3}, r"key 'timing' must be an object"),
    ({"acc_bytes": 1 << 20}, r"key 'acc_bytes' must be <= sram_bytes"),
])
def test_bad_key_is_an_error_naming_it(change, msg):
    d = tiny()
    for k, v in change.items():
        if k == "timing" and isinstance(v, dict):
            d["timing"].update(v)
        else:
            d[k] = v
    with pytest.raises(TargetError, match=msg):
        target_from_dict(d)


def test_missing_keys_are_errors():
    d = tiny()
    del d["hbm_gbps"]
    with pytest.raises(TargetError, match=r"missing key\(s\) 'hbm_gbps'"):
        target_from_dict(d)
    d = tiny()
    del d["timing"]["dma_setup_cycles"]
    with pytest.raises(TargetError, match=r"timing is missing key\(s\) 'dma_setup_cycles'"):
        target_from_dict(d)
    d = tiny()
    del d["timing"]
    with pytest.raises(TargetError, match=r"missing key\(s\) 'timing'"):
        target_from_dict(d)


def test_target_file_errors_name_the_file(tmp_path):
    d = tiny()
    d["timing"]["bogus"] = 1
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d))
    with pytest.raises(TargetError, match=r"target file '.*bad.json' timing has unknown key\(s\) 'bogus'"):
        load_target(p)


def test_timing_is_read_only_and_with_changes_merges():
    t = target("tiny")
    with pytest.raises(TypeError):
        t.timing["dma_setup_cycles"] = 1  # type: ignore[index]
    u = t.with_changes(timing={"dma_setup_cycles": 10, "matmul_weight_overlap": False}, chips=1)
    assert u.timing["dma_setup_cycles"] == 10.0 and u.timing["matmul_weight_overlap"] is False
    assert u.timing["queue_depth"] == t.timing["queue_depth"] and u.chips == 1
    assert t.timing["dma_setup_cycles"] == 64.0  # the original is unchanged
    with pytest.raises(TargetError, match=r"timing key 'queue_depth' must be in \[1, 4096\], got 0"):
        t.with_changes(timing={"queue_depth": 0})
    with pytest.raises(TargetError, match=r"timing has unknown key\(s\) 'nope'"):
        t.with_changes(timing={"nope": 1})
    assert hash(u) != hash(t) and u == t.with_changes(timing={"dma_setup_cycles": 10,
                                                             "matmul_weight_overlap": False}, chips=1)


def test_int_accepted_where_a_float_belongs():
    d = tiny()
    d["timing"]["matmul_row_cycles"] = 2
    assert target_from_dict(d).timing["matmul_row_cycles"] == 2.0


def test_binary_with_bad_embedded_target_is_rejected():
    words = [novabin.word(opcode=0x01, engine=2)]  # halt on the sequencer
    good = novabin.target(chips=1)
    load_binary(novabin.build(words, [], good))  # the shipped timing is accepted
    bad = novabin.target(chips=1)
    bad["timing"] = {**bad["timing"], "dma_setup_cycles": "fast"}
    with pytest.raises(BinaryFormatError, match=r"timing key 'dma_setup_cycles' must be a number"):
        load_binary(novabin.build(words, [], bad))
    bad = novabin.target(chips=1, flux_capacitor=1)
    with pytest.raises(BinaryFormatError, match=r"unknown key\(s\) 'flux_capacitor'"):
        load_binary(novabin.build(words, [], bad))
    bad = novabin.target(chips=1)
    del bad["timing"]
    with pytest.raises(BinaryFormatError, match=r"missing key\(s\) 'timing'"):
        load_binary(novabin.build(words, [], bad))


def test_schema_table_lists_every_key():
    table = schema_table()
    for k in FIELDS:
        assert f"`{k}`" in table
    for k in TIMING:
        assert f"`timing.{k}`" in table
