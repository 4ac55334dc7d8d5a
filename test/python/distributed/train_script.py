"""Trains a small model for 3 AdamW steps under torchrun on nova chips, the way a
torch.distributed user writes it; rank 0 writes the losses and every rank its step
times to ``$OUT/rank<R>.json`` and its Chrome trace to ``$OUT/trace<R>.json``. Usage: torchrun ... train_script.py MODE OUT
(MODE: ddp, fsdp, tp, dp_tp, pp)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

STEPS, BATCH, LR = 3, 16, 1e-2


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 16, generator=g), torch.randn(BATCH, 8, generator=g)


def full(t: torch.Tensor) -> list:
    """A tensor's whole value on the host (a DTensor's gathered from its mesh)."""
    from torch.distributed.tensor import DTensor
    return (t.full_tensor() if isinstance(t, DTensor) else t).detach().cpu().tolist()


def grads(model: nn.Module) -> dict[str, list]:
    """Every parameter's gradient (after the first backward), by its name in Net."""
    return {n.removeprefix("module."): full(p.grad) for n, p in model.named_parameters() if p.grad is not None}


def reference(with_grads: bool = False):
    """One process, the whole batch, on the CPU: the losses (and the first step's
    gradients of every parameter)."""
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    x, y = data()
    losses, first = [], {}
    for _ in range(STEPS):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        first = first or grads(model)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return (losses, first) if with_grads else losses


def main(mode: str, out: Path) -> None:
    dist.init_process_group("nova")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.nova.set_device(local)
    device = torch.device("nova", local)
    torch.manual_seed(0)
    model = Net().to(device)
    x, y = data()
    dp = world
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model)
    elif mode == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("nova", (world,))
        for layer in (model.fc1, model.fc2, model.head):
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    elif mode in ("tp", "dp_tp"):
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                       parallelize_module)
        tp = 2
        dp = world // tp
        mesh = init_device_mesh("nova", (dp, tp), mesh_dim_names=("dp", "tp"))
        from torch.distributed.tensor import Replicate
        # Every linear is parallel, so that every parameter is a DTensor (torch's foreach
        # optimizers refuse a mix of DTensors and plain tensors).
        parallelize_module(model, mesh["tp"], {"fc1": ColwiseParallel(), "fc2": RowwiseParallel(),
                                               "head": ColwiseParallel(output_layouts=Replicate())})
        if dp > 1:
            from torch.distributed.fsdp import fully_shard
            fully_shard(model, mesh=mesh["dp"])
    elif mode == "pp":
        return pipeline(model, device, x, y, rank, out)
    else:
        raise SystemExit(f"unknown mode {mode}")
    dp_rank = rank if mode in ("ddp", "fsdp") else rank // 2
    share = BATCH // dp
    xs = x[dp_rank * share:(dp_rank + 1) * share].to(device)
    ys = y[dp_rank * share:(dp_rank + 1) * share].to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    losses, times, first = [], [], {}
    for _ in range(STEPS):
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        loss = F.mse_loss(model(xs), ys)
        loss.backward()
        first = first or grads(model)  # (the first step's time includes gathering them)
        opt.step()
        opt.zero_grad()
        end.record()
        times.append(start.elapsed_time(end))
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())
    (out / f"rank{rank}.json").write_text(json.dumps({"losses": losses, "step_ms": times, "grads": first}))
    torch.nova.write_trace(out / f"trace{rank}.json")
    dist.destroy_process_group()


def pipeline(model: Net, device: torch.device, x: torch.Tensor, y: torch.Tensor, rank: int,
             out: Path) -> None:
    """Two stages (fc1, fc2 | head), 4 micro-batches, torch's 1F1B schedule."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    part = (nn.Sequential(model.fc1, nn.ReLU(), model.fc2, nn.ReLU()) if rank == 0
            else nn.Sequential(model.head))
    stage = PipelineStage(part, rank, 2, device)
    schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=F.mse_loss)
    opt = torch.optim.AdamW(part.parameters(), lr=LR)
    losses, times, first = [], [], {}
    for _ in range(STEPS):
        start, end = torch.nova.Event(enable_timing=True), torch.nova.Event(enable_timing=True)
        start.record()
        micro: list[torch.Tensor] = []
        if rank == 0:
            schedule.step(x.to(device))
        else:
            schedule.step(target=y.to(device), losses=micro)
        first = first or grads(model)  # this stage's parameters
        opt.step()
        opt.zero_grad()
        end.record()
        times.append(start.elapsed_time(end))
        loss = torch.stack(micro).mean() if rank == 1 else torch.zeros((), device=device)
        dist.broadcast(loss, src=1)
        losses.append(loss.item())
    (out / f"rank{rank}.json").write_text(json.dumps({"losses": losses, "step_ms": times, "grads": first}))
    torch.nova.write_trace(out / f"trace{rank}.json")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
