"""A program that fits the chip's SRAM only single-buffered is compiled
single-buffered instead of failing: nova-double-buffer gives a loop's tiles
two slots without knowing what else is live (an MLP training step at 1024
rows needs 3x the SRAM with it), and the driver retries without."""

from __future__ import annotations

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


def test_a_step_too_large_to_double_buffer_compiles_single_buffered():
    compiled: list = []
    model, optimizer, step, x, y = _mlp_step(compiled)
    assert compiled and compiled[-1].double_buffered is False
    # The same step, compiled without double buffering, is what runs.
    assert "nova.hbm_peak" in compiled[-1].stages["nova_isa"]
    ours = [step(x, y) for _ in range(2)]
    theirs = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        theirs.append(loss.detach())
    torch.testing.assert_close(torch.stack(ours), torch.stack(theirs), rtol=1e-4, atol=1e-6)


def test_what_does_not_fit_single_buffered_either_names_the_largest_buffers():
    """The SRAM error lists what is live at the peak, with its source line."""
    from nova.compiler.driver import run_opt
    from nova.compiler.errors import NovaCompileError

    compiled: list = []
    _mlp_step(compiled)
    tiles = compiled[-1].stages["nova"]
    # The tiles planned for nova-t1, on a chip with an eighth of its SRAM.
    small = tiles.replace("sram_bytes = 25165824", "sram_bytes = 3145728")
    assert small != tiles
    with pytest.raises(NovaCompileError) as raised:
        run_opt(small, ["--nova-tiles-to-isa=double-buffer=false"])
    stderr = raised.value.stderr
    assert "bytes of sram but target" in stderr
    assert "bytes of sram live together in" in stderr
    assert "bytes: memref.alloc" in stderr and "linear.py" in stderr
