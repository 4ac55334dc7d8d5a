"""Data-parallel weak scaling of a GPT-2-small-shaped training step on nova-t1.

Nova's GPT with GPT-2 small's shapes (12 layers, d 768, 12 heads, vocab 50304
as Megatron pads it, tied LM head), seq --seq, a fixed per-chip batch of
--per-chip sequences, AdamW with clipping at 1.0 (--no-clip: none), compiled
with ``compile_train_step(mesh=Mesh((n,), ("dp",)))`` for 1, 2, 4 and 8 chips
on the switch (nova-t1) and the ring (nova-t1-ring8) and simulated in
timing-only mode. Prints per configuration: step time, weak-scaling
efficiency T1 / TN, MFU (6 N tokens / (step time x chips x peak)), per-chip
HBM peak, all-reduce count and the fraction of collective
time hidden behind the chip's other work (matrix, vector, DMA; and behind
matrix/vector alone). One run of this script gives every row.

With ``--pp 2 4`` a pipeline-parallel section follows: the same model (the
tied LM head held by the first and the last stage, its gradients swapped)
cut into p stages (``compile_pipeline_train_step``, 1F1B, no clipping),
``--pp-microbatches`` micro-batches of --per-chip sequences per step; per
row the step time, the throughput against the 1-chip DP row (m sequences in
m 1-chip steps; give --no-clip for a like-for-like 1-chip row: the PP step
does not clip), and the measured bubble next to (p - 1) / (m + p - 1)
(``PipelineTrainStep.bubble()``).

With ``--tp 2 4 8`` a tensor-parallel section follows (strong scaling): the
model with --tp-heads heads (16: divisible by 8), a fixed batch of
--tp-batch sequences, ``megatron_transformer_plan`` over a 1-D "tp" mesh;
per row step time, efficiency T1 / (N x TN) against the same model and batch
on one chip, MFU, per-chip HBM peak and optimizer state. With ``--dp-tp
2x2`` (DP x TP shapes) the same batch on a 2-D mesh, the batch split over
dp, ZeRO-1 over dp (``zero=1``; ``--zero 0``: none). With ``--three-d 2x2x2`` (PPxDPxTP) a
3-D row: ``compile_pipeline_train_step(mesh=, plan=)``, the same batch in
--pp-microbatches micro-batches, 1F1B (``--pp-virtual 2``: interleaved, two model
chunks per chip, --pp-split cutting PP x 2 chunks), no clipping.

``--dtype bf16`` compiles every row under bf16 autocast (as
``benchmarks/train_step.py --dtype bf16`` does: ``autocast=torch.bfloat16``;
master weights, gradients and optimizer state float32); MFU is then against
the bf16 matrix peak. ``--weak`` makes the DP x TP and 3-D rows weak scaling
too: each data-parallel replica keeps --tp-batch sequences (a DPxTP row runs
a global batch of dp x --tp-batch, a 3-D row the same in --pp-microbatches
micro-batches), and efficiency is tokens per second per chip against the
one-chip step of --tp-batch sequences. Issue 39's 8-chip rows (GPT-2 small's
12 heads, batch 8 x seq 256 per replica, bf16, no clipping so that every row
does the same work per token; the 1-chip row is shared by both sections):

    python benchmarks/train_scaling.py --targets nova-t1 --dtype bf16 --seq 256 --no-clip \
        --chips 1 8 --per-chip 8 --dp-tp 2x4 --three-d 2x2x2 --weak --tp-heads 12 --tp-batch 8

    python benchmarks/train_scaling.py [--chips 1 2 4 8] [--seq 128] [--per-chip 1]
    python benchmarks/train_scaling.py --chips 1 --targets nova-t1 --pp 2 4 [--pp-microbatches 8]
    python benchmarks/train_scaling.py --chips 1 --targets nova-t1 --pp 2 --pp-split 8 --no-clip
    python benchmarks/train_scaling.py --chips --tp 2 4 8 --dp-tp 2x2 2x4 --three-d 2x2x2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import nova  # noqa: E402
from nova.models import GPT  # noqa: E402
from nova.models.gpt import GPTConfig  # noqa: E402
from nova.parallel import Mesh  # noqa: E402
from nova.sim import load_target  # noqa: E402

TARGETS = ROOT / "targets"


def loss_fn(logits, labels):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


#: ``--dtype`` -> ``compile_train_step``'s ``autocast``.
AUTOCAST = {"f32": None, "bf16": torch.bfloat16}

#: One-chip step times already measured: (target, heads, batch, clip) -> ns.
_ONE_CHIP: dict[tuple, float] = {}


def peak_flops(target: str, dtype: str) -> float:
    """The matrix peak of ``dtype`` on ``target`` (f32 rows take
    matmul_f32_row_cycles, as the bound counts them)."""
    tg = load_target(TARGETS / f"{target}.json")
    if dtype == "bf16":
        return tg.peak_flops
    return tg.peak_flops * tg.timing["matmul_row_cycles"] / tg.timing["matmul_f32_row_cycles"]


def run(cfg: GPTConfig, chips: int, target: str, per_chip: int, clip: bool, bucket_mb: float,
        dtype: str = "f32"):
    torch.manual_seed(0)
    model = GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    batch = chips * per_chip
    ids = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    labels = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    t0 = time.perf_counter()
    step = nova.compile_train_step(model, loss_fn, optimizer, ids, labels, target=target,
                                   max_grad_norm=1.0 if clip else None,
                                   mesh=Mesh((chips,), ("dp",)) if chips > 1 else None,
                                   bucket_mb=bucket_mb, autocast=AUTOCAST[dtype])
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = step.time_step()
    t_sim = time.perf_counter() - t0
    n_params = sum(p.numel() for p in model.parameters())
    return step, report, n_params, batch * cfg.seq_len, t_compile, t_sim


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", type=int, nargs="*", default=[1, 2, 4, 8],
                        help="DP chip counts (none: no DP rows)")
    parser.add_argument("--targets", nargs="+", default=["nova-t1", "nova-t1-ring8"])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--per-chip", type=int, default=1)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--bucket-mb", type=float, default=25.0)
    parser.add_argument("--no-clip", action="store_true")
    parser.add_argument("--pp", type=int, nargs="*", default=[],
                        help="pipeline stages for the PP section (none: no PP rows)")
    parser.add_argument("--pp-microbatches", type=int, default=8)
    parser.add_argument("--pp-split", type=int, nargs="*", default=None,
                        help="block indices where the PP and 3-D rows' stages are cut "
                             "(balancing the embedding and LM-head stages; default: even cuts)")
    parser.add_argument("--pp-virtual", type=int, default=1, metavar="V",
                        help="3-D rows: interleaved 1F1B with V model chunks per chip "
                             "(virtual_stages; --pp-split then cuts PP x V chunks)")
    parser.add_argument("--tp", type=int, nargs="*", default=[],
                        help="tensor-parallel sizes for the TP section (none: no TP rows)")
    parser.add_argument("--dp-tp", nargs="*", default=[],
                        help="DP x TP mesh shapes such as 2x2, with ZeRO-1 over dp")
    parser.add_argument("--three-d", nargs="*", default=[],
                        help="PP x DP x TP shapes such as 2x2x2 (1F1B, --pp-microbatches, "
                             "no clipping) for the TP section")
    parser.add_argument("--vocab-parallel", action="store_true",
                        help="TP, DP x TP and 3-D rows: split the tied embedding / LM head "
                             "over tp too "
                             "(vocab-parallel head, parallel cross-entropy)")
    parser.add_argument("--zero", type=int, choices=[0, 1], default=1,
                        help="ZeRO stage over dp of the DP x TP and 3-D rows")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="TP, DP x TP and 3-D rows: Megatron's sequence parallelism "
                             "(megatron_transformer_plan(sequence_parallel=True))")
    parser.add_argument("--trace", type=int, default=0, metavar="N",
                        help="TP, DP x TP and 3-D rows: a traced run, then the critical "
                             "path's N largest entries by model line and by op (3-D rows: "
                             "a stage's backward bodies carry the location of its last "
                             "forward line, so their time shows under that line)")
    parser.add_argument("--dump-dir", default=None,
                        help="TP and DP x TP rows: compile_train_step's dump_dir (the IR of "
                             "each stage)")
    parser.add_argument("--tp-heads", type=int, default=16)
    parser.add_argument("--tp-batch", type=int, default=8)
    parser.add_argument("--dtype", choices=sorted(AUTOCAST), default="f32",
                        help="bf16: every row under bf16 autocast (MFU against the bf16 peak)")
    parser.add_argument("--weak", action="store_true",
                        help="DP x TP and 3-D rows: weak scaling, --tp-batch sequences per "
                             "data-parallel replica (efficiency in tokens/s/chip)")
    parser.add_argument("--one-chip-ms", type=float, default=None,
                        help="the one-chip step's time measured by an earlier run of the same "
                             "tools and options (the 1-chip rows are then not run again)")
    parser.add_argument("--one-chip-target", default="nova-t1",
                        help="the 1-chip row of a ring target (a ring needs 2+ chips)")
    args = parser.parse_args()
    cfg = GPTConfig(vocab_size=50304, seq_len=args.seq, d_model=768, n_heads=12, n_layers=args.layers)
    print(f"GPT-2-small-shaped step: {args.layers} layers, d 768, 12 heads, vocab 50304, seq {args.seq}, "
          f"{args.per_chip} sequence(s) per chip, AdamW{'' if args.no_clip else ' + clipping'}, "
          f"buckets {args.bucket_mb:g} MiB, {args.dtype}; timing-only")
    print(f"{'target':14s} {'chips':>5s} {'step ms':>9s} {'eff':>6s} {'MFU':>6s} {'HBM peak MB':>13s} "
          f"{'all-reduces':>11s} {'hidden':>7s} {'(mx/vec)':>8s} {'compile s':>9s} {'sim s':>6s}")
    base: dict[str, float] = {}
    if args.one_chip_ms is not None:
        for target in args.targets:
            base[target] = args.one_chip_ms * 1e6
        _ONE_CHIP[(args.one_chip_target, args.tp_heads, args.tp_batch, not args.no_clip)] = \
            args.one_chip_ms * 1e6
    for target in args.targets:
        tg = load_target(TARGETS / f"{target}.json")
        peak = peak_flops(target, args.dtype)
        for chips in args.chips:
            if chips == 1 and args.one_chip_ms is not None:
                continue
            # A ring needs 2+ chips: its 1-chip row is the same chip on the switch target.
            single = args.one_chip_target if chips == 1 and tg.topology == "ring" else target
            step, r, n_params, tokens, t_compile, t_sim = run(cfg, chips, single, args.per_chip,
                                                              not args.no_clip, args.bucket_mb,
                                                              args.dtype)
            if chips == 1:
                base[target] = r.time_ns
                _ONE_CHIP[(single, cfg.n_heads, args.per_chip, not args.no_clip)] = r.time_ns
            eff = base[target] / r.time_ns if target in base else float("nan")
            mfu = 6 * n_params * tokens / (r.time_s * chips * peak)
            memory = step.memory()
            hbm = memory.total or 0
            hidden = r.collective_hidden_fraction
            total = sum(o.collective_ns for o in r.overlap)
            compute = sum(o.hidden_compute_ns for o in r.overlap) / total if total else 0.0
            print(f"{target:14s} {chips:5d} {r.time_s * 1e3:9.3f} {eff:6.1%} {mfu:6.1%} {hbm / 1e6:13.1f} "
                  f"{len(r.collectives):11d} {hidden:7.1%} {compute:8.1%} "
                  f"{t_compile:9.1f} {t_sim:6.1f}", flush=True)
    if args.pp:
        pipeline_rows(cfg, args, base)
    if args.tp or args.dp_tp or args.three_d:
        tensor_parallel_rows(args)


def tensor_parallel_rows(args) -> None:
    """The TP and DP x TP sections (see the module docstring)."""
    cfg = GPTConfig(vocab_size=50304, seq_len=args.seq, d_model=768, n_heads=args.tp_heads,
                    n_layers=args.layers)
    clip = not args.no_clip
    scaling = ("weak scaling: " if args.weak else "strong scaling: ")
    print(f"\ntensor parallel ({scaling}{args.tp_heads} heads, {args.tp_batch} sequences per "
          f"{'data-parallel replica' if args.weak else 'step'}, AdamW{' + clipping' if clip else ''}"
          f"{', vocab-parallel head' if args.vocab_parallel else ''}, {args.dtype}); timing-only")
    print(f"{'target':14s} {'mesh':>8s} {'step ms':>9s} {'eff':>6s} {'MFU':>6s} "
          f"{'HBM peak MB':>12s} {'opt state MB':>12s} {'collectives':>11s} {'compile s':>9s}")
    shapes = [(1, n) for n in args.tp] + [tuple(int(v) for v in s.split("x"))
                                          for s in args.dp_tp]
    for target in args.targets:
        peak = peak_flops(target, args.dtype)
        key = (args.one_chip_target, args.tp_heads, args.tp_batch, clip)
        for dp, tp in [(1, 1)] + shapes:
            chips = dp * tp
            if chips == 1 and key in _ONE_CHIP:
                continue  # measured by the DP section: the same model, batch and dtype
            single = args.one_chip_target if chips == 1 else target
            batch = args.tp_batch * (dp if args.weak else 1)
            torch.manual_seed(0)
            model = GPT(cfg)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
            ids = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
            labels = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
            options = {}
            if chips > 1 and dp == 1:
                options = dict(mesh=Mesh((tp,), ("tp",)), plan=tp_plan(model, args, None))
            elif chips > 1:
                options = dict(mesh=Mesh((dp, tp), ("dp", "tp")), zero=args.zero,
                               plan=tp_plan(model, args, "dp"))
            t0 = time.perf_counter()
            if args.dump_dir and chips > 1:
                options["dump_dir"] = args.dump_dir
            step = nova.compile_train_step(model, loss_fn, optimizer, ids, labels,
                                           target=single, max_grad_norm=1.0 if clip else None,
                                           autocast=AUTOCAST[args.dtype], **options)
            t_compile = time.perf_counter() - t0
            r = step.time_step(trace=bool(args.trace) and chips > 1)
            if args.trace and chips > 1:
                print_critical_path(step.program, args.trace)
            if chips == 1:
                _ONE_CHIP[key] = r.time_ns
            n_params = sum(p.numel() for p in model.parameters())
            mfu = 6 * n_params * batch * cfg.seq_len / (r.time_s * chips * peak)
            memory = step.memory()
            mesh = "1" if chips == 1 else (f"tp{tp}" if dp == 1 else f"dp{dp}xtp{tp}")
            print(f"{target:14s} {mesh:>8s} {r.time_s * 1e3:9.3f} "
                  f"{efficiency(args, _ONE_CHIP[key], r.time_ns, batch, chips):6.1%} {mfu:6.1%} "
                  f"{(memory.total or 0) / 1e6:12.1f} {memory.optimizer_state / 1e6:12.1f} "
                  f"{len(r.collectives):11d} {t_compile:9.1f}", flush=True)
        for shape in args.three_d:
            three_d_row(cfg, args, target, shape, _ONE_CHIP[key], peak)


def print_critical_path(program, top: int, simulator=None) -> None:
    """The traced run's critical path by engine, by model line, and by model
    line and instruction (``simulator``: a traced ``nova.sim.Simulator``
    instead of ``program``'s last run)."""
    from nova.sim.critical_path import WAITING, format_critical_path
    from nova.sim.report_profile import source_line

    simulator = simulator or program._simulator
    path = simulator.critical_path()
    for by in ("engine", "line"):
        print(format_critical_path(path, by=by, top=top))
    chips: dict[int, float] = {}
    for seg in path:
        chips[seg.chip] = chips.get(seg.chip, 0.0) + seg.duration_ns
    print("critical path by chip (ms): "
          + ", ".join(f"chip {c} {ns / 1e6:.3f}" for c, ns in sorted(chips.items())))
    totals: dict[str, float] = {}
    for seg in path:
        key = (WAITING if seg.engine == WAITING
               else f"{source_line(seg.location)}  {seg.engine.rstrip('0123456789')} {seg.name}")
        totals[key] = totals.get(key, 0.0) + seg.duration_ns
    print("critical path by line, engine and instruction (ms):")
    for key, ns in sorted(totals.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {ns / 1e6:8.3f}  {key}")
    print(flush=True)


def tp_plan(model, args, batch_axis: str | None):
    """Megatron's plan over "tp" (the batch over ``batch_axis``); with
    --vocab-parallel the tied embedding / LM head split over tp too."""
    from nova.parallel.placements import Shard
    from nova.parallel.plan import ParallelPlan, megatron_transformer_plan

    plan = megatron_transformer_plan(model, batch_axis=batch_axis,
                                     sequence_parallel=args.sequence_parallel)
    if not args.vocab_parallel:
        return plan
    return ParallelPlan({**plan.placements, "tok_emb.weight": {"tp": Shard(0)}},
                        batch_axis=batch_axis)


def efficiency(args, one_ns: float, time_ns: float, batch: int, chips: int) -> float:
    """Tokens per second per chip against the one-chip step of --tp-batch
    sequences: T1 / (N x TN) at a fixed batch (strong), scaled by the batch
    ratio under --weak."""
    return (batch / args.tp_batch) * one_ns / (chips * time_ns)


def three_d_row(cfg: GPTConfig, args, target: str, shape: str, one: float, peak: float) -> None:
    """A PP x DP x TP row: ``shape`` is PPxDPxTP; --tp-batch sequences (per
    data-parallel replica under --weak) in --pp-microbatches micro-batches,
    1F1B (interleaved with --pp-virtual V > 1: PP x V chunks), ZeRO --zero
    over dp, no clipping, the stages (chunks) cut at --pp-split (efficiency
    against the section's 1-chip row)."""
    from nova.training import compile_pipeline_train_step

    pp, dp, tp = (int(v) for v in shape.split("x"))
    if args.pp_split and len(args.pp_split) + 1 != pp * args.pp_virtual:
        raise SystemExit(f"--three-d {shape} with --pp-virtual {args.pp_virtual} needs "
                         f"{pp * args.pp_virtual} chunks, --pp-split {args.pp_split} cuts "
                         f"{len(args.pp_split) + 1}")
    batch = args.tp_batch * (dp if args.weak else 1)
    torch.manual_seed(0)
    model = GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    ids = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    labels = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    t0 = time.perf_counter()
    step = compile_pipeline_train_step(
        model, loss_fn, optimizer, ids, labels, microbatches=args.pp_microbatches,
        **(dict(split_points=args.pp_split) if args.pp_split else dict(stages=pp)),
        virtual_stages=args.pp_virtual, target=target, mesh=Mesh((dp, tp), ("dp", "tp")),
        plan=tp_plan(model, args, "dp"), zero=args.zero, autocast=AUTOCAST[args.dtype])
    t_compile = time.perf_counter() - t0
    if args.trace:
        from nova.sim import Simulator

        simulator = Simulator(step.binary, functional=False, trace=True)
        _, r = simulator.run({})
        print_critical_path(None, args.trace, simulator)
    else:
        r = step.time_step()
    chips = pp * dp * tp
    schedule = "1F1B" if args.pp_virtual == 1 else f"interleaved 1F1B, v={args.pp_virtual}"
    n_params = sum(p.numel() for p in model.parameters())
    mfu = 6 * n_params * batch * cfg.seq_len / (r.time_s * chips * peak)
    peaks = step.hbm_peaks()
    print(f"{target:14s} {f'pp{pp}dp{dp}tp{tp}':>8s} {r.time_s * 1e3:9.3f} "
          f"{efficiency(args, one, r.time_ns, batch, chips):6.1%} {mfu:6.1%} "
          f"{max(peaks) / 1e6:12.1f} {'':>12s} "
          f"{len(r.collectives):11d} {t_compile:9.1f}   ({schedule}, m={args.pp_microbatches}, "
          f"no clipping)", flush=True)


def pipeline_rows(cfg: GPTConfig, args, base: dict[str, float]) -> None:
    """The PP section (see the module docstring); ``base``: the 1-chip DP rows."""
    from nova.training import compile_pipeline_train_step

    m = args.pp_microbatches
    print(f"\npipeline parallel (1F1B, no clipping): {m} micro-batches of "
          f"{args.per_chip} sequence(s); timing-only")
    print(f"{'target':14s} {'stages':>6s} {'step ms':>9s} {'speedup':>8s} {'bubble':>7s} "
          f"{'(p-1)/(m+p-1)':>13s} {'compile s':>9s}")
    for target in args.targets:
        for p in args.pp:
            torch.manual_seed(0)
            model = GPT(cfg)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
            ids = torch.randint(0, cfg.vocab_size, (m * args.per_chip, cfg.seq_len))
            labels = torch.randint(0, cfg.vocab_size, (m * args.per_chip, cfg.seq_len))
            t0 = time.perf_counter()
            cuts = dict(split_points=args.pp_split) if args.pp_split else dict(stages=p)
            step = compile_pipeline_train_step(model, loss_fn, optimizer, ids, labels,
                                               microbatches=m, target=target, **cuts)
            t_compile = time.perf_counter() - t0
            bubble = step.bubble()
            one = base.get(target, base.get(args.one_chip_target))
            speedup = m * one / bubble["step_ns"] if one else float("nan")
            p = step.schedule.stages
            print(f"{target:14s} {p:6d} {bubble['step_ns'] / 1e6:9.3f} {speedup:7.2f}x "
                  f"{bubble['measured']:7.1%} {bubble['ideal']:13.1%} {t_compile:9.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
