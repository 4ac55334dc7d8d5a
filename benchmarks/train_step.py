"""A GPT-2-small-shaped training step on one nova-t1 chip: simulated step time,
MFU, HFU and the memory breakdown, in f32 and in bf16 mixed precision
(``--target nova-t1-act``: the same chip with an activation engine).

Shapes: 12 layers, d_model 768, 12 heads, seq 256, batch 8, vocab padded to
50304 (GPT-2's 50257 rounded up to a multiple of 128), tied LM head, AdamW
with clipping at 1.0, random weights. ``--model`` picks the GPT: Nova's own
(``nova.models.GPT``, the default), ``external`` (nanoGPT's form,
``benchmarks/external_gpt.py``) or ``hf`` (Hugging Face ``GPT2LMHeadModel`` in
its default configuration: sdpa, ``use_cache``, dropout 0.1 as shipped, its own
loss from ``labels=``, vocabulary 50257). Each
configuration is compiled once (``nova.compile_train_step``) and simulated in
timing-only mode (``step.time_step()``: shapes and costs only, the same times
as a functional run, which at this size would take hours in numpy); the
simulator's wall time for that run is printed next to the simulated time.
All figures come from this one run. Usage:

    python benchmarks/train_step.py [--model nova external hf] [--target nova-t1] [--layers 12]
                                    [--dtype f32 bf16] [--seq 256] [--batch 8] [--top 8] [--no-trace]

After the timed run, a second, traced timing-only run (same simulated time)
gives the step's overlap report: each engine's busy time and the part of it
no other engine overlapped, how long 1, 2, 3 engines were busy at once, the
busiest engine's time (the step with full overlap of the same instructions)
and the critical path by engine and by model line (``--no-trace`` skips it).

MFU is printed twice: the step report's (``6 N tokens`` with ``N`` every
trainable parameter, a tied weight once) and issue 39's, whose ``N`` counts
only the parameters that take part in matmuls (the linears' weights and
biases, a tied LM head once; embedding tables and norms excluded).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402

import nova  # noqa: E402
from nova import models  # noqa: E402
from nova.compiler.stage_times import format_times  # noqa: E402


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             labels.reshape(-1))


def _matmul_layers(model: torch.nn.Module) -> list[tuple[torch.nn.Module, int, int]]:
    """Every ``nn.Linear`` and Hugging Face ``Conv1D`` (GPT-2's linears, weight
    stored ``[in, out]``) with its in and out features."""
    layers = []
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            layers.append((m, m.in_features, m.out_features))
        elif type(m).__name__ == "Conv1D" and getattr(m, "weight", None) is not None:
            layers.append((m, m.weight.shape[0], m.weight.shape[1]))
    return layers


def matmul_params(model: torch.nn.Module) -> int:
    """Issue 39's ``N``: the linears' weights and biases, a tied weight once."""
    seen = {id(p): p for m, _, _ in _matmul_layers(model) for p in m.parameters(recurse=False)}
    return sum(p.numel() for p in seen.values())


def linear_compulsory_bytes(model: torch.nn.Module, tokens: int, elem: int) -> int:
    """Compulsory HBM bytes per step of every linear's three matmuls: the
    forward Y = X W^T, dX = dY W and dW = dY^T X each read their two operands once
    and write their result once (3 (T in + T out + in out) elements per linear),
    plus its bias and the bias's gradient; ``elem`` bytes per element (the
    matmuls' operand dtype)."""
    total = 0
    for m, i, o in _matmul_layers(model):
        total += 3 * (tokens * i + tokens * o + i * o) + (2 * o if m.bias is not None else 0)
    return total * elem


#: Source files whose lines are the linears' matmuls (Conv1D's is torch.addmm
#: in transformers' pytorch_utils.py).
LINEAR_FILES = ("torch/nn/modules/linear.py", "transformers/pytorch_utils.py")


def engine_lines(report) -> list[str]:
    """Each engine's busy time (DMA queues summed) and its share of the step."""
    busy: dict[str, float] = {}
    for e in report.engines:
        key = "dma" if e.engine.startswith("dma") else e.engine
        busy[key] = busy.get(key, 0.0) + e.busy_ns
    return [f"  {k:10s} {v / 1e6:10.1f} ms  ({100 * v / report.time_ns:5.1f} % of the step)"
            for k, v in sorted(busy.items(), key=lambda kv: -kv[1])]


def linear_hbm_bytes(report) -> tuple[float, float, float]:
    """HBM bytes, matrix ns and vector ns of the instructions the linears' lines
    (forward and backward) produced."""
    hbm = mx = vec = 0.0
    for s in report.instr_stats:
        innermost = (s.location or "").split(" called from ")[0]
        if any(f in innermost for f in LINEAR_FILES):
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


def build(kind: str, layers: int, seq: int, vocab: int) -> tuple[torch.nn.Module, Callable]:
    """The model and its ``compile_train_step`` call's loss function: the
    model's own loss for ``external`` (``(logits, loss)``) and ``hf`` (``.loss``)."""
    torch.manual_seed(0)
    if kind == "nova":
        cfg = models.GPTConfig(d_model=768, n_heads=12, n_layers=layers, seq_len=seq,
                               vocab_size=vocab)
        return models.GPT(cfg), cross_entropy
    if kind == "external":
        import external_gpt
        cfg = external_gpt.Config(n_layer=layers, vocab_size=vocab)
        return external_gpt.GPT(cfg), lambda out: out[1]
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_layer=layers)), None


def run(kind: str, target: str, dtype: str, layers: int, seq: int, batch: int, vocab: int,
        top: int, trace: bool = True) -> None:
    model, loss_fn = build(kind, layers, seq, vocab)
    vocab = model.config.vocab_size if kind == "hf" else vocab
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ids = torch.randint(0, vocab, (batch, seq))
    autocast = torch.bfloat16 if dtype == "bf16" else None
    start = time.perf_counter()
    if kind == "nova":
        step = nova.compile_train_step(model, loss_fn, optimizer, ids, ids, target=target,
                                       max_grad_norm=1.0, autocast=autocast)
    elif kind == "external":
        step = nova.compile_train_step(model, loss_fn, optimizer, ids, ids, model_inputs=2,
                                       target=target, max_grad_norm=1.0, autocast=autocast)
    else:
        step = nova.compile_train_step(model, None, optimizer, input_ids=ids, labels=ids,
                                       target=target, max_grad_norm=1.0, autocast=autocast)
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    step.time_step()
    wall = time.perf_counter() - start
    stats = step.stats
    print(f"\n== {kind} GPT, {dtype}, {target}: {layers} layers, d 768, seq {seq}, batch {batch}, "
          f"vocab {vocab} ==")
    print(f"compile (trace + torch-mlir + nova-opt)   {compiled:8.1f} s, by stage:")
    print(format_times(list(step.compile_times)))
    print(f"simulator wall time, timing-only step      {wall:8.1f} s")
    print(stats.summary())
    n_mm = matmul_params(model)
    mfu = 6.0 * n_mm * stats.tokens / (stats.time_s * stats.peak_flops)
    print(f"MFU, issue 39's N            {100 * mfu:11.2f} %   (N = {n_mm:,} in matmuls)")
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
    parser.add_argument("--model", nargs="+", choices=["nova", "external", "hf"], default=["nova"])
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
    for kind in args.model:
        for dtype in args.dtype:
            run(kind, args.target, dtype, args.layers, args.seq, args.batch, args.vocab, args.top,
                args.trace)


if __name__ == "__main__":
    main()
