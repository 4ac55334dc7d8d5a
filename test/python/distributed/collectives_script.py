"""Every c10d collective on nova tensors against the values PyTorch defines, on
``WORLD`` ranks (torchrun). Prints ``CHECKED <n>`` on success; an assertion names
the first wrong collective."""
from __future__ import annotations

import sys

import torch
import torch.distributed as dist

R = dist.ReduceOp


def main() -> None:
    dist.init_process_group(sys.argv[1] if len(sys.argv) > 1 else "nova")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.nova.set_device(rank)
    dev = torch.device("nova", rank)
    checked = 0

    def same(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
        nonlocal checked
        assert got.device.type == "nova", what
        assert torch.equal(got.cpu(), want), f"{what}: rank {rank} got {got.cpu()} want {want}"
        checked += 1

    values = [torch.tensor([r + 1.0, 2.0 * (r + 1), -(r + 1.0)]) for r in range(world)]
    mine = values[rank]
    stacked = torch.stack(values)
    for op, want in [(R.SUM, stacked.sum(0)), (R.AVG, stacked.mean(0)), (R.PRODUCT, stacked.prod(0)),
                     (R.MIN, stacked.min(0).values), (R.MAX, stacked.max(0).values)]:
        x = mine.to(dev)
        dist.all_reduce(x, op=op)
        same(x, want, f"all_reduce {op}")
    x = mine.to(dev)
    dist.all_reduce(x, op=dist._make_nccl_premul_sum(0.5))
    same(x, stacked.sum(0) * 0.5, "all_reduce PREMUL_SUM(0.5)")
    bits = [torch.tensor([r + 1, 6, 1 << r], dtype=torch.int64) for r in range(world)]
    for op, fold in [(R.BAND, lambda a, b: a & b), (R.BOR, lambda a, b: a | b), (R.BXOR, lambda a, b: a ^ b)]:
        want = bits[0]
        for b in bits[1:]:
            want = fold(want, b)
        x = bits[rank].to(dev)
        dist.all_reduce(x, op=op)
        same(x, want, f"all_reduce {op}")
    # async: wait() before use
    x = mine.to(dev)
    work = dist.all_reduce(x, async_op=True)
    work.wait()
    same(x, stacked.sum(0), "all_reduce async")
    # bf16
    x = mine.to(torch.bfloat16).to(dev)
    dist.all_reduce(x)
    same(x, stacked.to(torch.bfloat16).float().sum(0).to(torch.bfloat16), "all_reduce bf16")
    # broadcast, reduce
    x = mine.to(dev)
    dist.broadcast(x, src=world - 1)
    same(x, values[-1], "broadcast")
    x = mine.to(dev)
    dist.reduce(x, dst=0, op=R.SUM)
    if rank == 0:
        same(x, stacked.sum(0), "reduce")
    # all_gather (list and tensor), reduce_scatter (tensor), all_to_all_single
    outs = [torch.empty(3, device=dev) for _ in range(world)]
    dist.all_gather(outs, mine.to(dev))
    for r in range(world):
        same(outs[r], values[r], "all_gather")
    out = torch.empty(world * 3, device=dev)
    dist.all_gather_into_tensor(out, mine.to(dev))
    same(out, torch.cat(values), "all_gather_into_tensor")
    big = torch.arange(world * 2, dtype=torch.float32) + rank
    out = torch.empty(2, device=dev)
    dist.reduce_scatter_tensor(out, big.to(dev))
    want = sum(torch.arange(world * 2, dtype=torch.float32) + r for r in range(world))[rank * 2:rank * 2 + 2]
    same(out, want, "reduce_scatter_tensor")
    send = torch.arange(world, dtype=torch.float32) + 10 * rank
    got = torch.empty(world, device=dev)
    dist.all_to_all_single(got, send.to(dev))
    same(got, torch.tensor([10.0 * r + rank for r in range(world)]), "all_to_all_single")
    # gather / scatter
    gathered = [torch.empty(3, device=dev) for _ in range(world)] if rank == 0 else None
    dist.gather(mine.to(dev), gathered, dst=0)
    if rank == 0:
        for r in range(world):
            same(gathered[r], values[r], "gather")
    piece = torch.empty(3, device=dev)
    dist.scatter(piece, [v.to(dev) for v in values] if rank == 0 else None, src=0)
    same(piece, values[rank], "scatter")
    # point to point: a ring of send/recv, isend/irecv, batch_isend_irecv
    right, left = (rank + 1) % world, (rank - 1) % world
    box = torch.empty(3, device=dev)
    if rank % 2 == 0:
        dist.send(mine.to(dev), right)
        dist.recv(box, left)
    else:
        dist.recv(box, left)
        dist.send(mine.to(dev), right)
    same(box, values[left], "send/recv")
    box = torch.empty(3, device=dev)
    works = [dist.isend(mine.to(dev), right), dist.irecv(box, left)]
    for w in works:
        w.wait()
    same(box, values[left], "isend/irecv")
    box = torch.empty(3, device=dev)
    ops = [dist.P2POp(dist.isend, mine.to(dev), right), dist.P2POp(dist.irecv, box, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same(box, values[left], "batch_isend_irecv")
    # a subgroup
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    if rank % 2 == 0:
        x = mine.to(dev)
        dist.all_reduce(x, group=evens)
        same(x, stacked[0::2].sum(0), "all_reduce on a subgroup")
    dist.barrier()
    print(f"CHECKED {checked}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
