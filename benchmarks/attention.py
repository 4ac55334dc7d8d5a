"""Fused causal attention on nova-t1: simulated time against the bound of the
unmasked causal half, matrix-unit MAC utilisation and HBM traffic.

``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` with q, k, v of
shape [batch, heads, T, 64] (f32) for T = 1024, 2048, 4096: the compiler fuses
it into ``nova.attention`` (flash attention). The bound is computed here from
the work of the unmasked half alone (query i sees keys 0..i: T(T+1)/2 scores
per head), never from the program:

- matrix: QK^T and PV, ``4 * d * T(T+1)/2`` FLOPs per head at the f32 peak;
- vector: the least a softmax does per visible score on this ISA: a row max
  (compare), a subtract and an exp (ISA cost factors 1, 1 and 4 per element
  over ``vector_lanes`` lanes), plus normalising the output (one multiply per
  output element); the row sum is not counted (it can ride on the matrix
  unit, as Nova's kernel does);
- HBM: q, k, v and the output once.

bound = max(matrix, vector, hbm); the ratio printed is bound / simulated.
MAC utilisation = the unmasked half's MACs / (simulated time x the matrix
unit's f32 MACs per second). HBM traffic is the program's own, beside the
compulsory bytes: it grows as T * d when the scores never reach HBM.
The first T is also run functionally and checked against torch.

With ``--backward``: the fused causal attention backward
(``nova.attention_backward``, flash attention's: P recomputed per block from
the forward's log-sum-exp, dQ, dK, dV accumulated on chip) at GPT-2's head
shape (batch 8 x 12 heads, d_head 64), f32 and bf16, against its own
work-derived bound over the unmasked half (T(T+1)/2 scores per head):

- matrix: S = QK^T, dP = dO V^T, dV += P^T dO, dK += dS^T Q, dQ += dS K,
  ``10 * d * T(T+1)/2`` FLOPs per head at the dtype's matrix peak;
- vector: per visible score P = exp(S - lse) (a subtract and an exp) and
  dS = P (dP - delta) (a subtract and a multiply), and per row element of
  dO the row term delta = rowsum(dO * out) (a multiply and an add); ISA
  cost factors (1 per elementwise op, 4 per exp) over ``vector_lanes``;
  the bf16 roundings of P and dS are not counted;
- HBM: q, k, v, out and dO read once at their dtype, lse once (f32), dQ,
  dK and dV written once (f32).

The first T is also run functionally on one batch of 2 heads and checked
against torch's autograd (float64 reference).

python benchmarks/attention.py [--seq 1024 2048 4096] [--heads 4] [--batch 1]
python benchmarks/attention.py --backward [--seq ...] [--heads 12] [--batch 8]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import nova  # noqa: E402
from nova.binary.targets import target_file  # noqa: E402
from nova.sim.target import load_target  # noqa: E402


class CausalAttention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def causal_bound(target, heads: int, t: int, d: int) -> dict[str, float]:
    """The three terms (ns) of the unmasked half's bound on ``target``."""
    tm = target.timing
    visible = heads * t * (t + 1) / 2
    f32_peak = target.peak_flops * tm["matmul_row_cycles"] / tm["matmul_f32_row_cycles"]
    matrix = 4.0 * d * visible / f32_peak * 1e9
    per_score = 2 * tm["vector_elementwise_factor"] + tm["vector_transcendental_factor"]
    vector_cycles = (visible * per_score + heads * t * d * tm["vector_elementwise_factor"]) \
        / target.vector_lanes
    vector = vector_cycles * target.cycle_ns
    compulsory = 4 * heads * t * d * 4
    hbm = compulsory / (target.hbm_gbps * 1e9) * 1e9
    return {"matrix": matrix, "vector": vector, "hbm": hbm, "bytes": compulsory,
            "macs": 2.0 * d * visible, "f32_peak": f32_peak}


def backward_bound(target, heads: int, t: int, d: int, dtype: torch.dtype) -> dict[str, float]:
    """The three terms (ns) of the causal backward's bound on ``target``."""
    tm = target.timing
    visible = heads * t * (t + 1) / 2
    peak = target.peak_flops
    if dtype == torch.float32:
        peak *= tm["matmul_row_cycles"] / tm["matmul_f32_row_cycles"]
    matrix = 10.0 * d * visible / peak * 1e9
    ew, exp = tm["vector_elementwise_factor"], tm["vector_transcendental_factor"]
    vector_cycles = (visible * (3 * ew + exp) + heads * t * d * 2 * ew) / target.vector_lanes
    vector = vector_cycles * target.cycle_ns
    e = 4 if dtype == torch.float32 else 2
    compulsory = heads * t * (5 * d * e + 4 + 3 * d * 4)
    hbm = compulsory / (target.hbm_gbps * 1e9) * 1e9
    return {"matrix": matrix, "vector": vector, "hbm": hbm, "bytes": compulsory}


def run_backward(args: argparse.Namespace, target) -> None:
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from attention_backward_cases import compile_backward, forward_and_grads, inputs

    heads = args.batch * args.heads
    d = args.d_head
    print(f"nova-t1, attention backward, batch {args.batch} x {args.heads} heads, d_head {d}, "
          "causal")
    print("| dtype | T | simulated | bound (limiter) | bound / simulated | matrix busy "
          "| vector busy | HBM moved | compulsory | T x T in HBM | compile | sim wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for dtype in (torch.float32, torch.bfloat16):
        name = "f32" if dtype == torch.float32 else "bf16"
        t0 = time.perf_counter()
        small = compile_backward(1, args.seq[0], d, dtype, causal=True)
        q, k, v, g = inputs(1, args.seq[0], d, dtype)
        out, lse, exact = forward_and_grads(q, k, v, g, causal=True)
        got = small.run(q, k, v, out.to(dtype), g, lse.float())
        errors = [(x.double() - e).abs().max().item() for x, e in zip(got, exact)]
        print(f"({name}, T={args.seq[0]}, one head functional: max |nova - float64| dq "
              f"{errors[0]:.2e}, dk {errors[1]:.2e}, dv {errors[2]:.2e}; "
              f"{time.perf_counter() - t0:.1f} s)", flush=True)
        for t in args.seq:
            t0 = time.perf_counter()
            program = compile_backward(heads, t, d, dtype, causal=True)
            t_compile = time.perf_counter() - t0
            square = re.search(rf"memref<(?:\d+x)*{t}x{t}x\w+(?:, strided<[^>]*>)?, "
                               r"#nova\.memory_space<hbm>>", program.stages["nova"])
            t0 = time.perf_counter()
            program.run(timing_only=True)
            t_sim = time.perf_counter() - t0
            r = program.report
            b = backward_bound(target, heads, t, d, dtype)
            terms = {n: b[n] for n in ("matrix", "vector", "hbm")}
            limiter = max(terms, key=terms.__getitem__)
            simulated = r.time_s * 1e9
            moved = r.bound().hbm_bytes
            print(f"| {name} | {t} | {simulated / 1e3:.1f} us | {terms[limiter] / 1e3:.1f} us "
                  f"({limiter}) | **{terms[limiter] / simulated:.3f}** | "
                  f"{r.busy('matrix') / simulated:.3f} | {r.busy('vector') / simulated:.3f} | "
                  f"{moved / 1e6:.1f} MB | {b['bytes'] / 1e6:.1f} MB | "
                  f"{'YES' if square else 'no'} | {t_compile:.1f} s | {t_sim:.1f} s |",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, nargs="*", default=[1024, 2048, 4096])
    parser.add_argument("--heads", type=int, default=None)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--d-head", type=int, default=64)
    parser.add_argument("--backward", action="store_true")
    args = parser.parse_args()
    target = load_target(target_file("nova-t1"))
    if args.backward:
        args.heads = args.heads or 12
        args.batch = args.batch or 8
        run_backward(args, target)
        return
    args.heads = args.heads or 4
    args.batch = args.batch or 1
    torch.manual_seed(0)
    heads = args.batch * args.heads
    print(f"nova-t1, f32, batch {args.batch} x {args.heads} heads, d_head {args.d_head}, causal")
    print("| T | simulated | bound (limiter) | bound / simulated | MAC utilisation "
          "| HBM moved | compulsory | moved / (T d) | fused | compile | sim wall |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for i, t in enumerate(args.seq):
        shape = (args.batch, args.heads, t, args.d_head)
        q, k, v = (torch.randn(shape) for _ in range(3))
        t0 = time.perf_counter()
        program = nova.compile(CausalAttention(), q, k, v, target="nova-t1")
        t_compile = time.perf_counter() - t0
        fused = "linalg.batch_matmul" not in program.stages.get("nova", "")
        t0 = time.perf_counter()
        if i == 0:
            out = program(q, k, v)
            err = (out - CausalAttention()(q, k, v)).abs().max().item()
            print(f"(T={t}: functional run, max |nova - torch| = {err:.2e})")
        else:
            program.run(q, k, v, timing_only=True)
        t_sim = time.perf_counter() - t0
        r = program.report
        b = causal_bound(target, heads, t, args.d_head)
        terms = {n: b[n] for n in ("matrix", "vector", "hbm")}
        limiter = max(terms, key=terms.__getitem__)
        bound = terms[limiter]
        simulated = r.time_s * 1e9
        util = b["macs"] / (r.time_s * b["f32_peak"] / 2)
        moved = r.bound().hbm_bytes
        print(f"| {t} | {simulated / 1e3:.1f} us | {bound / 1e3:.1f} us ({limiter}) | "
              f"**{bound / simulated:.3f}** | {util:.3f} | {moved / 1e6:.2f} MB | "
              f"{b['bytes'] / 1e6:.2f} MB | {moved / (heads * t * args.d_head):.1f} B | "
              f"{'yes' if fused else 'NO'} | {t_compile:.1f} s | {t_sim:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
