"""Times all_reduce of the sizes given (MiB) across the torchrun ranks with
torch.nova Events; each rank writes ``{"MiB": ms}`` to ``$OUT/rank<R>.json``, plus
its Chrome trace to ``$OUT/trace<R>.json``."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist


def main(out: Path, sizes: list[float]) -> None:
    dist.init_process_group("nova")
    rank = dist.get_rank()
    torch.nova.set_device(rank % torch.nova.device_count())
    times = {}
    for mib in sizes:
        x = torch.empty(int(mib * 2**20) // 4, device="nova")
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        dist.barrier()
        torch.nova.synchronize()
        start.record()
        dist.all_reduce(x)
        end.record()
        times[str(mib)] = start.elapsed_time(end)
    (out / f"rank{rank}.json").write_text(json.dumps(times))
    torch.nova.write_trace(out / f"trace{rank}.json")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(Path(sys.argv[1]), [float(s) for s in sys.argv[2:]])
