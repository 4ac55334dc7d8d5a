"""Faults under torch.distributed on nova: ``exit`` (rank 1 dies before a
collective), ``hang`` (rank 1 sleeps past the timeout), ``shape`` (rank 1 calls
all_reduce on a different shape). Every surviving rank prints the error it got
as ``ERROR <type>: <message>`` and exits 3."""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def main(mode: str) -> None:
    dist.init_process_group("nova", timeout=timedelta(seconds=float(os.environ.get("PG_TIMEOUT", "30"))))
    rank = dist.get_rank()
    torch.nova.set_device(rank)
    x = torch.ones(4, device="nova")
    dist.all_reduce(x)  # a first collective everyone makes
    if rank == 1 and mode == "exit":
        os._exit(1)
    if rank == 1 and mode == "hang":
        time.sleep(3600)
    if rank == 1 and mode == "shape":
        x = torch.ones(8, device="nova")
    try:
        dist.all_reduce(x)
        x.cpu()
    except Exception as e:  # noqa: BLE001 - the test reads what the user would see
        print(f"ERROR {type(e).__name__}: {e}", flush=True)
        os._exit(3)
    print("OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
