"""Loops on several DMA queues (convert-nova-to-isa's loop-dma-queues, ISA version 4's
queued nop): a training step whose AdamW and tile loops load on queue 0 and store on
queue 1 runs in the simulator (no deadlock) and matches torch eager (float32: rtol
1e-4, atol 1e-5 on the losses and every updated parameter)."""

from __future__ import annotations

import torch

import nova
from nova.binary.isa import Engine, Opcode

RTOL, ATOL = 1e-4, 1e-5


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.GELU(), torch.nn.Linear(512, 128))


def _loop_queues(code) -> tuple[set[int], set[int]]:
    """The queues of DMA_COPYs inside loops and of NOPs on dma."""
    depth, copies, nops = 0, set(), set()
    for ins in code:
        if ins.opcode == Opcode.LOOP:
            depth += 1
        elif ins.opcode == Opcode.ENDLOOP:
            depth -= 1
        elif depth and ins.opcode == Opcode.DMA_COPY:
            copies.add(ins.queue)
        elif ins.opcode == Opcode.NOP and ins.engine == Engine.DMA:
            nops.add(ins.queue)
    return copies, nops


def test_adamw_step_with_loops_on_two_queues_matches_torch():
    # eps large enough that an element's update does not hang on a tiny gradient's
    # last bits (the comparison is of the program, not of AdamW's conditioning).
    options = dict(lr=1e-3, eps=1e-3, weight_decay=0.05)
    model, reference = _mlp(), _mlp()
    optimizer = torch.optim.AdamW(model.parameters(), **options)
    ref_optimizer = torch.optim.AdamW(reference.parameters(), **options)
    generator = torch.Generator().manual_seed(1)
    batches = [(torch.randn(64, 128, generator=generator), torch.randn(64, 128, generator=generator))
               for _ in range(2)]
    loss_fn = torch.nn.functional.mse_loss
    step = nova.compile_train_step(model, loss_fn, optimizer, *batches[0])

    binary = step.program.binary
    copies, nops = _loop_queues(binary.code(0))
    assert copies == {0, 1}, "the loops' loads and stores should use queues 0 and 1"
    assert 1 in nops, "queue 1 is synchronised in loops by `nop queue 1 on dma`"
    assert binary.header.isa_version == 4

    for batch in batches:
        loss = step(*batch)
        ref_optimizer.zero_grad()
        expected = loss_fn(reference(batch[0]), batch[1])
        expected.backward()
        ref_optimizer.step()
        torch.testing.assert_close(loss, expected.detach(), rtol=RTOL, atol=ATOL)
        ours = step.parameters()
        for name, value in reference.named_parameters():
            torch.testing.assert_close(ours[name], value.detach(), rtol=RTOL, atol=ATOL,
                                       msg=lambda m: f"{name}: {m}")
