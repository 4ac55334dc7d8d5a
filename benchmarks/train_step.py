"""A GPT-2-small-shaped training step on one nova-t1 chip: simulated step time,
MFU, HFU and the memory breakdown, in f32 and in bf16 mixed precision
(``--target nova-t1-act``: the same chip with an activation engine).

Shapes: 12 layers, d_model 768, 12 heads, seq 256, batch 8, vocab padded to
50304 (GPT-2's 50257 rounded up to a multiple of 128), tied LM head, AdamW
with clipping at 1.0 (Nova's GPT, ``nova.models.GPT``, random weights). Each
configuration is compiled once (``nova.compile_train_step``) and simulated in
timing-only mode (``step.time_step()``: shapes and costs only, the same times
as a functional run, which at this size would take hours in numpy); the
simulator's wall time for that run is printed next to the simulated time.
All figures come from this one run. Usage:

    python benchmarks/train_step.py [--layers 12] [--dtype f32 bf16] [--seq 256] [--batch 8] [--top 8]
                                    [--no-trace] [--target nova-t1]

After the timed run, a second, traced timing-only run (same simulated time)
gives the step's overlap report: each engine's busy time and the part of it
no other engine overlapped, how long 1, 2, 3 engines were busy at once, the
busiest engine's time (the step with full overlap of the same instructions)
and the critical path by engine and by model line (``--no-trace`` skips it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402

import nova  # noqa: E402
from nova import models  # noqa: E402


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


def linear_compulsory_bytes(model: torch.nn.Module, tokens: int, elem: int) -> int:
    """Compulsory HBM bytes per step of every ``nn.Linear``'s three matmuls: the
    forward Y = X W^T, dX = dY W and dW = dY^T X each read their two operands once
    and write their result once (3 (T in + T out + in out) elements per linear),
    plus its bias and the bias's gradient; ``elem`` bytes per element (the
    matmuls' operand dtype)."""
    total = 0
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            i, o = m.in_features, m.out_features
            total += 3 * (tokens * i + tokens * o + i * o) + (2 * o if m.bias is not None else 0)
    return total * elem


def engine_lines(report) -> list[str]:
    """Each engine's busy time (DMA queues summed) and its share of the step."""
    busy: dict[str, float] = {}
    for e in report.engines:
        key = "dma" if e.engine.startswith("dma") else e.engine
        busy[key] = busy.get(key, 0.0) + e.busy_ns
    return [f"  {k:10s} {v / 1e6:10.1f} ms  ({100 * v / report.time_ns:5.1f} % of the step)"
            for k, v in sorted(busy.items(), key=lambda kv: -kv[1])]


def linear_hbm_bytes(report) -> tuple[float, float, float]:
    """HBM bytes, matrix ns and vector ns of the instructions ``nn.Linear``'s line
    (forward and backward) produced."""
    hbm = mx = vec = 0.0
    for s in report.instr_stats:
        if "torch/nn/modules/linear.py" in (s.location or "").split(" called from ")[0]:
            hbm += s.hbm_bytes
            mx += s.matrix_ns
            vec += s.vector_ns
    return hbm, mx, vec


def overlap_report(step, top: int) -> None:
    """The traced run's engine concurrency and critical path."""
    start = time.perf_counter()
    step.time_step(trace=True)
    wall = time.perf_counter() - start
    print(f"\noverlap (traced timing-only run, {wall:.1f} s wall):")
    print(step.program.concurrency())
    print(step.program.critical_path(by="engine"))
    if top:
        print(step.program.critical_path(by="line", top=top))


def run(dtype: str, layers: int, seq: int, batch: int, vocab: int, top: int,
        trace: bool = True, target: str = "nova-t1") -> None:
    torch.manual_seed(0)
    cfg = models.GPTConfig(d_model=768, n_heads=12, n_layers=layers, seq_len=seq,
                           vocab_size=vocab)
    model = models.GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ids = torch.randint(0, vocab, (batch, seq))
    start = time.perf_counter()
    step = nova.compile_train_step(model, cross_entropy, optimizer, ids, ids,
                                   max_grad_norm=1.0, target=target,
                                   autocast=torch.bfloat16 if dtype == "bf16" else None)
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    step.time_step()
    wall = time.perf_counter() - start
    stats = step.stats
    print(f"\n== {dtype} on {target}: {layers} layers, d 768, seq {seq}, batch {batch}, vocab {vocab} ==")
    print(f"compile (trace + torch-mlir + nova-opt)   {compiled:8.1f} s")
    print(f"simulator wall time, timing-only step      {wall:8.1f} s")
    print(stats.summary())
    report = step.report
    print("engines busy (timing-only run):")
    print("\n".join(engine_lines(report)))
    compulsory = linear_compulsory_bytes(model, batch * seq, 2 if dtype == "bf16" else 4)
    hbm, mx, vec = linear_hbm_bytes(report)
    print(f"linears: HBM {hbm:.4g} B moved vs {compulsory:.4g} B compulsory ({hbm / compulsory:.2f}x); "
          f"matrix {mx / 1e6:.1f} ms, vector {vec / 1e6:.1f} ms of work")
    if top:
        # By torch op's source line: the joint graph's backward ops carry no
        # module path (make_fx records none), the forward's carry their line.
        print(f"\nwhere the time goes (engine busy time by op, top {top}):")
        print(step.report.profile(by="op", top=top))
    if trace:
        overlap_report(step, top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=50304)
    parser.add_argument("--dtype", nargs="+", choices=["f32", "bf16"], default=["f32", "bf16"])
    parser.add_argument("--top", type=int, default=8, help="rows of the per-module profile (0: none)")
    parser.add_argument("--no-trace", dest="trace", action="store_false",
                        help="skip the traced run (engine overlap and critical path)")
    parser.add_argument("--target", default="nova-t1",
                        help="one-chip target: a name in targets/ or a .json path (nova-t1-act: with an "
                             "activation engine)")
    args = parser.parse_args()
    for dtype in args.dtype:
        run(dtype, args.layers, args.seq, args.batch, args.vocab, args.top, args.trace, args.target)


if __name__ == "__main__":
    main()
