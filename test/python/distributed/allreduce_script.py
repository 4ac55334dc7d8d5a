"""Times all_reduce of the sizes given (MiB) across the torchrun ranks with
torch.nova Events; each rank writes ``{"MiB": ms}`` to ``$OUT/rank<R>.json``, plus
its Chrome trace to ``$OUT/trace<R>.json``. A size written ``splitM`` is an
all-reduce of M MiB in two groups at once, the even ranks and the odd ones."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def main(out: Path, sizes: list[str]) -> None:
    dist.init_process_group("nova")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.nova.set_device(rank % torch.nova.device_count())
    halves = [dist.new_group(list(range(parity, world, 2))) for parity in (0, 1)]
    times = {}
    for size in sizes:
        split = size.startswith("split")
        mib = float(size.removeprefix("split"))
        x = torch.empty(int(mib * 2**20) // 4, device="nova")
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        dist.barrier()
        torch.nova.synchronize()
        start.record()
        dist.all_reduce(x, group=halves[rank % 2] if split else None)
        end.record()
        times[f"split{mib}" if split else str(mib)] = start.elapsed_time(end)
    (out / f"rank{rank}.json").write_text(json.dumps(times))
    torch.nova.write_trace(out / f"trace{rank}.json")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
