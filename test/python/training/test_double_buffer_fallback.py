"""A program too large to double-buffer whole still compiles, and keeps
double buffering where it fits: nova-double-buffer gives a loop second slots
only while its on-chip footprint fits the target (an MLP training step at
1024 rows needed 3x the SRAM with every loop double-buffered, and the driver
then compiled the whole program single-buffered). Should the pass's bound
still miss, the driver retries single-buffered."""

from __future__ import annotations

import re

import pytest
import torch

import nova
import nova.compiler.build as build
from nova.compiler.compile import compile_linalg


def _mlp_step(compiled: list):
    def spy(*args, **kwargs):
        result = compile_linalg(*args, **kwargs)
        compiled.append(result)
        return result

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(768, 2304), torch.nn.GELU(),
                                torch.nn.Linear(2304, 768))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(1024, 768), torch.randn(1024, 768)
    original = build.compile_linalg  # the compile driver's (nova.compiler.build)
    build.compile_linalg = spy
    try:
        step = nova.compile_train_step(model, torch.nn.functional.mse_loss, optimizer, x, y)
    finally:
        build.compile_linalg = original
    return model, optimizer, step, x, y


@pytest.fixture(scope="module")
def mlp():
    compiled: list = []
    return (*_mlp_step(compiled), compiled)


def test_a_step_too_large_to_double_buffer_whole_keeps_double_buffering_where_it_fits(mlp):
    model, optimizer, step, x, y, compiled = mlp
    assert compiled and compiled[-1].double_buffered is True
    isa = compiled[-1].stages["nova_isa"]
    assert "nova.hbm_peak" in isa
    sram_peak = int(re.search(r"nova.sram_peak = (\d+)", isa).group(1))
    assert sram_peak <= 25165824  # nova-t1's SRAM
    ours = [step(x, y) for _ in range(2)]
    theirs = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        theirs.append(loss.detach())
    torch.testing.assert_close(torch.stack(ours), torch.stack(theirs), rtol=1e-4, atol=1e-6)


def test_the_driver_retries_single_buffered_when_double_buffers_overflow(mlp, monkeypatch):
    """The driver's safety net: an SRAM overflow of the double-buffered
    pipeline makes it compile the tiles again without double buffering."""
    import nova.compiler.compile as compile_module
    from nova.compiler.errors import NovaCompileError

    calls: list = []
    real = compile_module.run_opt
    tiles = mlp[-1][-1].stages["nova"]

    def overflow_once(text, flags, **options):
        calls.append(flags)
        if flags == ["--nova-tiles-to-isa=double-buffer=true"]:
            raise NovaCompileError(["nova-opt"], 1, "error: function 'forward' needs 99 bytes of "
                                   "sram but target 'nova-t1' has 98")
        return real(text, flags, **options)

    monkeypatch.setattr(compile_module, "run_opt", overflow_once)
    isa, double_buffered = compile_module.tiles_to_isa(tiles, True)
    assert double_buffered is False and "nova_isa" in real(isa)
    assert calls == [["--nova-tiles-to-isa=double-buffer=true"],
                     ["--nova-tiles-to-isa=double-buffer=false"]]


def test_what_does_not_fit_single_buffered_either_names_the_largest_buffers(mlp):
    """The SRAM error lists what is live at the peak, with its source line."""
    from nova.compiler.driver import run_opt
    from nova.compiler.errors import NovaCompileError

    tiles = mlp[-1][-1].stages["nova"]
    # The tiles planned for nova-t1, on a chip with an eighth of its SRAM.
    small = tiles.replace("sram_bytes = 25165824", "sram_bytes = 3145728")
    assert small != tiles
    with pytest.raises(NovaCompileError) as raised:
        run_opt(small, ["--nova-tiles-to-isa=double-buffer=false"])
    stderr = raised.value.stderr
    assert "bytes of sram but target" in stderr
    assert "bytes of sram live together in" in stderr
    assert "bytes: memref.alloc" in stderr and "linear.py" in stderr
