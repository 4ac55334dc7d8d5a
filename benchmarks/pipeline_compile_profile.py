"""Where the compile time of ``train_scaling.py``'s 3-D row goes: the same
``compile_pipeline_train_step`` call (GPT-2-small shapes, bf16 autocast,
PP2 x DP2 x TP2, ZeRO-1, batch 8 x 256 per data-parallel replica in
--microbatches micro-batches), each nova-opt / nova-translate run timed as
it returns (per stage body: ``--nova-partition``, ``--nova-lower-to-tiles``;
then the 8-chip module through ``--nova-tiles-to-isa`` and
``--nova-to-binary``), the rest being Python (tracing, the stitched text).
Then the step's simulated time (timing-only) and its efficiency against
--one-chip-ms (tokens/s per chip, as ``train_scaling.py --weak``).

    python benchmarks/pipeline_compile_profile.py --layers 12 --vocab-parallel \\
        [--pp-split 8] [--dump tiles.mlir]

``--dump`` writes the stitched tiles module (the input of
``--nova-tiles-to-isa``) to reproduce or profile that step alone
(``nova-opt --nova-tiles-to-isa --mlir-timing``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402

import nova.compiler.driver as driver  # noqa: E402
import train_scaling  # noqa: E402
from nova.models import GPT  # noqa: E402
from nova.models.gpt import GPTConfig  # noqa: E402
from nova.parallel import Mesh  # noqa: E402
from nova.training import compile_pipeline_train_step  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--vocab-parallel", action="store_true")
    parser.add_argument("--pp-split", type=int, nargs="*", default=None)
    parser.add_argument("--one-chip-ms", type=float, default=None,
                        help="the one-chip step of batch 8 x 256 (78.103 at 12 layers, "
                             "33.214 at 2)")
    parser.add_argument("--dump", default=None, help="write the tiles module here")
    args = parser.parse_args()
    one = args.one_chip_ms or {12: 78.103, 2: 33.214}.get(args.layers)

    calls = []
    run = driver._run

    def timed(command, source, budget):
        if args.dump and any("tiles-to-isa" in c for c in command):
            Path(args.dump).write_bytes(source if isinstance(source, bytes) else source.encode())
        t0 = time.perf_counter()
        out = run(command, source, budget)
        seconds = time.perf_counter() - t0
        flags = " ".join(c for c in command[1:] if c.startswith("--nova"))
        calls.append(seconds)
        print(f"  {seconds:8.1f} s  in {len(source or b'') / 1e6:7.1f} MB  out "
              f"{len(out) / 1e6:7.1f} MB  {flags[:90]}", flush=True)
        return out

    driver._run = timed
    plan_args = argparse.Namespace(vocab_parallel=args.vocab_parallel, sequence_parallel=False)
    cfg = GPTConfig(vocab_size=50304, seq_len=256, d_model=768, n_heads=12,
                    n_layers=args.layers)
    torch.manual_seed(0)  # as train_scaling.three_d_row
    model = GPT(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    ids = torch.randint(0, cfg.vocab_size, (16, cfg.seq_len))
    labels = torch.randint(0, cfg.vocab_size, (16, cfg.seq_len))
    cuts = dict(split_points=args.pp_split) if args.pp_split else dict(stages=2)
    t0 = time.perf_counter()
    step = compile_pipeline_train_step(
        model, train_scaling.loss_fn, optimizer, ids, labels,
        microbatches=args.microbatches, target="nova-t1", mesh=Mesh((2, 2), ("dp", "tp")),
        plan=train_scaling.tp_plan(model, plan_args, "dp"), zero=1, autocast=torch.bfloat16,
        **cuts)
    total = time.perf_counter() - t0
    print(f"compile {total:.1f} s, of which tools {sum(calls):.1f} s", flush=True)
    report = step.time_step()
    ms = report.time_s * 1e3
    eff = f", efficiency {2 * one / (8 * ms):.1%}" if one else ""
    print(f"step {ms:.3f} ms{eff}, {len(report.collectives)} collectives", flush=True)


if __name__ == "__main__":
    main()
