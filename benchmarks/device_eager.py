"""The nova PyTorch device in eager mode: a tiny GPT-2 training step.

Hugging Face ``GPT2LMHeadModel`` in its default config with the sizes made
small (2 layers, d 64, 4 heads, vocab 256, seq 32, batch 4; dropout 0), moved
with ``.to("nova")`` and trained by a plain ``torch.optim.AdamW`` loop in
strict mode (every op a Nova program). One run prints:

- the first step from an empty program cache: wall time, programs compiled,
  compile seconds per distinct program;
- the steady state: wall time per step, launches per step, the host time of
  the device's ops split into the simulator's own work and the device's
  overhead around it (signature, cache lookup, meta shapes, copies), and the
  median overhead per launch;
- a second process on the same cache: its first step's wall time and how many
  programs it compiled (none: all come from the disk cache);
- simulated time per step (torch.nova.Event) in eager and through
  ``torch.compile(backend="nova")`` on the device, with launches per step.

    python benchmarks/device_eager.py [--steps 4]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = "--child"


def build():
    import torch
    import transformers

    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).train()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 256, (4, 32), generator=g)
    return model, {"input_ids": ids, "labels": ids}


def run(steps: int) -> dict:
    import torch

    import nova.device  # noqa: F401
    from nova.device import profile

    torch.nova.set_fallback("error")
    model, batch = build()
    model.to("nova")
    batch = {k: v.to("nova") for k, v in batch.items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(m) -> float:
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        optimizer.zero_grad()
        loss = m(**batch).loss
        loss.backward()
        optimizer.step()
        end.record()
        loss.item()
        return start.elapsed_time(end)

    out: dict = {}
    t = time.perf_counter()
    step(model)
    out["first_step_s"] = time.perf_counter() - t
    stats = torch.nova.op_cache_stats()
    out["compiled"] = stats["compiled"]
    out["compile_s"] = stats["compile_seconds"]
    walls, sims, per_launch = [], [], []
    for _ in range(steps):
        profile.reset()
        t = time.perf_counter()
        sims.append(step(model))
        walls.append(time.perf_counter() - t)
        launches = profile.launches()
        per_launch.append((profile.host["op_s"] - profile.host["simulator_s"]) / launches)
    out.update(step_wall_s=statistics.median(walls), eager_sim_ms=sims[-1], launches=launches,
               op_s=profile.host["op_s"], simulator_s=profile.host["simulator_s"],
               overhead_ms=statistics.median(per_launch) * 1e3)
    compiled = torch.compile(model, backend="nova")
    try:
        step(compiled)
        profile.reset()
        out["compiled_sim_ms"] = step(compiled)
        out["compiled_launches"] = profile.launches()
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        out["compiled_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument(CHILD, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        import torch

        import nova.device  # noqa: F401

        model, batch = build()
        model.to("nova")
        t = time.perf_counter()
        model(**{k: v.to("nova") for k, v in batch.items()}).loss.backward()
        print(time.perf_counter() - t, torch.nova.op_cache_stats()["compiled"])
        return
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NOVA_CACHE_DIR"] = cache
        r = run(args.steps)
        print(f"first step, empty cache : {r['first_step_s']:.1f} s wall, {r['compiled']} programs "
              f"compiled, {r['compile_s'] / max(r['compiled'], 1):.2f} s per program")
        print(f"steady step             : {r['step_wall_s']:.2f} s wall, {r['launches']} launches; "
              f"ops {r['op_s']:.2f} s of which simulator {r['simulator_s']:.2f} s; device overhead "
              f"{r['overhead_ms']:.2f} ms per launch (median of {args.steps} steps)")
        if "compiled_error" in r:
            print(f"simulated step          : eager {r['eager_sim_ms'] * 1e3:.1f} us ({r['launches']} "
                  f"launches); torch.compile on the device failed: {r['compiled_error']}")
        else:
            print(f"simulated step          : eager {r['eager_sim_ms'] * 1e3:.1f} us ({r['launches']} "
                  f"launches), torch.compile {r['compiled_sim_ms'] * 1e3:.1f} us "
                  f"({r['compiled_launches']} launches), {r['eager_sim_ms'] / r['compiled_sim_ms']:.2f}x")
        child = subprocess.run([sys.executable, __file__, CHILD], capture_output=True, text=True,
                               env={**os.environ, "NOVA_CACHE_DIR": cache}, check=True)
        wall, compiled = child.stdout.split()[-2:]
        print(f"second process, same cache: forward+backward {float(wall):.1f} s wall, "
              f"{compiled} programs compiled")


if __name__ == "__main__":
    main()
