"""Loops on several DMA queues (convert-nova-to-isa's loop-dma-queues, ISA version 4's
queued nop): a training step whose AdamW and tile loops load on queue 0 and store on
queue 1 runs in the simulator (no deadlock), matches torch eager (float32: rtol 1e-4,
atol 1e-5 on the losses and every updated parameter), and its timeline has no two
instructions on different queues that touch the same bytes (one writing) at once or
out of program order — a missing semaphore that the values happen not to show."""

from __future__ import annotations

from unittest import mock

import numpy as np
import torch

import nova
import nova.sim.engines as engines
import nova.sim.sequencer as sequencer
from nova.binary import opcodes as oc
from nova.binary.isa import Engine, Opcode
from nova.sim import Simulator

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


def _unordered_conflicts(binary, monkeypatch) -> list[str]:
    """Runs ``binary`` timing-only on the Python event loop and returns each pair of
    instructions (by pc) where one dispatched later on another queue started before
    the earlier one completed although their byte ranges conflict."""
    monkeypatch.setenv("NOVA_SIM_FAST", "0")
    order: dict[int, int] = {}
    runs: list[tuple] = []
    keep: list = []  # the ops, so that no id() is reused during the run

    def op(*args):
        o = sequencer_op(*args)
        order[id(o)] = len(order)
        keep.append(o)
        return o

    def complete(self, q):
        o, d = q.pending[0], q.pending[0].d
        ranges = [(t.space, reg, reg + t.extent, slot == "td")
                  for slot, reg in (("ta", o.ra), ("tb", o.rb), ("tc", o.rc), ("td", o.rdst))
                  if (t := getattr(d, slot)) is not None and d.op != oc.NOP]
        runs.append((order[id(o)], o.start, self.now, q.key, d.pc, ranges))
        return machine_complete(self, q)

    sequencer_op, machine_complete = sequencer.Op, engines.Machine._complete
    with mock.patch.object(sequencer, "Op", op), mock.patch.object(engines.Machine, "_complete", complete):
        Simulator(binary, functional=False).run({})
    runs.sort()
    ends = np.array([r[2] for r in runs])
    queues = np.array([r[3] for r in runs])
    found = set()
    for j, (_, start, _, queue, pc, ranges) in enumerate(runs):
        for i in np.nonzero((ends[:j] > start) & (queues[:j] != queue))[0]:
            earlier = runs[i]
            if any(s1 == s2 and lo1 < hi2 and lo2 < hi1 and (w1 or w2)
                   for s1, lo1, hi1, w1 in earlier[5] for s2, lo2, hi2, w2 in ranges):
                found.add(f"pc {earlier[4]} (queue {earlier[3]}) and pc {pc} (queue {queue})")
    return sorted(found)


def test_adamw_step_with_loops_on_two_queues_matches_torch(monkeypatch):
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
    # Version 4 for the queued nops, 5 when AdamW's chains are VFUSED pairs.
    fused = any(ins.opcode == Opcode.VFUSED for ins in binary.code(0))
    assert binary.header.isa_version == (5 if fused else 4)
    assert _unordered_conflicts(binary, monkeypatch) == []
    monkeypatch.delenv("NOVA_SIM_FAST")

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


def test_gpt_step_timeline_has_no_unordered_conflicts(monkeypatch):
    """Attention, the embedding's scatter-add, layer norms and AdamW: every loop's
    queues, the straight-line queues and the engines stay ordered."""
    from nova.models import GPT
    from nova.models.gpt import GPTConfig

    # A vocabulary of 1024: the LM head's matmul is a loop over 8 column tiles
    # (nova-tile gives smaller ops one tile, no loop).
    cfg = GPTConfig(d_model=32, n_heads=2, n_layers=1, seq_len=8, vocab_size=1024)
    torch.manual_seed(0)
    model = GPT(cfg)
    ids = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab_size), labels.reshape(-1))

    step = nova.compile_train_step(model, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-3), ids, ids)
    binary = step.program.binary
    assert 1 in _loop_queues(binary.code(0))[0]
    assert _unordered_conflicts(binary, monkeypatch) == []
