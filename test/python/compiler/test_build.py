"""The one compile driver (nova.compiler.build): imported IR, or IR annotated for
a mesh, to a program that holds its metadata from construction on."""

from __future__ import annotations

import numpy as np
import pytest

import nova.compiler.build as build
from nova.compiler.build import Sharded, build_program
from nova.compiler.options import TargetOptions
from nova.parallel.annotate import annotate
from nova.parallel.mesh import Mesh
from nova.parallel.placements import Shard
from nova.runtime.program import CompiledProgram

from ir_cases import ADD


def _arrays():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((8, 16)).astype(np.float32),
            rng.standard_normal((8, 16)).astype(np.float32))


def test_a_program_binds_its_parameters_and_a_cache_hit_compiles_nothing(monkeypatch):
    w, x = _arrays()
    cache: dict = {}
    program = build_program(ADD, TargetOptions(name="nova-t1", chips=1), params=[w],
                            cache=cache, cache_key="add")
    assert isinstance(program, CompiledProgram) and list(cache) == ["add"]
    np.testing.assert_allclose(program.run(x)[0].numpy(), w + x, rtol=1e-6)
    assert program.zero == 0 and program.grad_shards == ()

    def no_compile(*args, **kwargs):
        raise AssertionError("a cached binary was compiled again")

    monkeypatch.setattr(build, "compile_linalg", no_compile)
    again = build_program(ADD, TargetOptions(name="nova-t1", chips=1), params=[w],
                          cache=cache, cache_key="add", zero=1, grad_shards=["w"])
    assert again.binary_bytes == program.binary_bytes
    assert again.zero == 1 and again.grad_shards == ("w",)


def test_a_sharded_program_is_partitioned_checked_dumped_and_made_by_its_factory(tmp_path):
    w, x = _arrays()
    mesh = Mesh((2,), ("dp",))
    split = {0: Shard(0)}
    annotated = annotate(ADD, mesh, [split, split], result_placements=[split])
    checked = []
    made = build_program(Sharded(annotated, check=lambda a, s: checked.append((a, s))),
                         TargetOptions(name="nova-t1", chips=2), dump_dir=tmp_path,
                         program=lambda result: ("made", result))
    kind, result = made
    assert kind == "made" and result.stages["sharded"] == annotated
    assert checked and checked[0][0] == annotated and "shard.shard" not in checked[0][1]
    assert (tmp_path / "0-sharded.mlir").read_text() == annotated
    assert (tmp_path / "3-binary.nova").read_bytes() == result.binary
    # The default program: the split inputs given whole, each chip its rows.
    program = build_program(Sharded(annotated), TargetOptions(name="nova-t1", chips=2),
                            splits={0: 0, 1: 0})
    assert program.binary.chips == 2
    out = program.run(w, x)[0].numpy()
    np.testing.assert_allclose(out, (w + x)[:4], rtol=1e-6)  # chip 0's rows


def test_tiles_compile_from_the_tiles_on_to_the_same_binary():
    """A pipeline's stitched tiles (build.Tiles) go through the same tail of the
    chain as linalg: the tiles of a compiled program give back its binary."""
    full = build.build_binary(ADD, TargetOptions(name="nova-t1", chips=1))
    made = build_program(build.Tiles(full.stages["nova"]), None,
                         program=lambda result: result)
    assert made.binary == full.binary and made.stages["nova_isa"] == full.stages["nova_isa"]
