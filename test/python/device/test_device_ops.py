"""Eager ATen ops on nova tensors run as Nova programs (strict mode: none on the
CPU) and give torch's CPU results; in-place and out= ops write the tensors
they name; a changing scalar does not compile a new program."""
from __future__ import annotations

from typing import Callable

import pytest
import torch
import torch.nn.functional as F
import torch.utils._pytree as pytree

import nova.device  # noqa: F401


@pytest.fixture(autouse=True)
def _strict():
    torch.nova.set_fallback("error")
    yield
    torch.nova.set_fallback("warn")


def _inputs():
    g = torch.Generator().manual_seed(0)
    return {
        "a": torch.randn(4, 6, generator=g),
        "b": torch.randn(4, 6, generator=g),
        "m": torch.randn(6, 5, generator=g),
        "p": torch.rand(4, 6, generator=g) + 0.1,
        "i": torch.randint(0, 6, (4, 3), generator=g),
        "k": torch.randint(-5, 5, (4, 6), generator=g),
        "t": torch.randn(2, 4, 6, generator=g),
    }


CASES: dict[str, Callable] = {
    "add_alpha": lambda x: torch.add(x["a"], x["b"], alpha=0.5),
    "sub_scalar": lambda x: x["a"] - 1.5,
    "mul_div": lambda x: x["a"] * x["b"] / x["p"],
    "exp_log_tanh": lambda x: torch.exp(x["a"]) + torch.log(x["p"]) + torch.tanh(x["b"]),
    "sigmoid_gelu_relu": lambda x: torch.sigmoid(x["a"]) + F.gelu(x["b"]) + F.relu(x["a"]),
    "pow_clamp": lambda x: torch.clamp(x["a"] ** 2, max=1.0),
    "where_compare": lambda x: torch.where(x["a"] > x["b"], x["a"], x["b"]),
    "sum_mean": lambda x: (x["a"].sum(1), x["b"].mean(0)),
    "amax_argmax": lambda x: (x["a"].amax(1), x["a"].argmax(1)),
    "var": lambda x: x["a"].var(1),
    "mm_bmm": lambda x: (x["a"] @ x["m"], torch.bmm(x["t"], x["t"].transpose(1, 2))),
    "linear": lambda x: F.linear(x["a"], x["m"].t(), x["m"][0]),
    "softmax_logsoftmax": lambda x: (x["a"].softmax(-1), x["a"].log_softmax(0)),
    "layer_norm": lambda x: F.layer_norm(x["t"], (6,)),
    "cross_entropy": lambda x: F.cross_entropy(x["a"], x["i"][:, 0]),
    "cat_stack": lambda x: (torch.cat([x["a"], x["b"]], 0), torch.stack([x["a"], x["b"]], 2)),
    "gather_index_select": lambda x: (x["a"].gather(1, x["i"]), x["a"].index_select(1, x["i"][0])),
    "embedding": lambda x: F.embedding(x["i"], x["m"]),
    "transposed_input": lambda x: x["t"].transpose(1, 2).contiguous() * 2,
    "expanded_input": lambda x: x["a"][:, :1].expand(4, 6) + x["b"],
    "int_ops": lambda x: (x["k"] * 3 - 1, x["k"] // 2, x["k"].abs()),
    # Narrow integers on the chip, with torch's wrap-around (uint8 / int16 in
    # int32 carriers, int8 ops computed in int32: nova.frontend.narrow_ints).
    "narrow_int_ops": lambda x: tuple(
        (k * 100 - 7, k // 3, k % 3, k.max(1), (k * 61).to(torch.float32))
        for k in (x["k"].to(torch.int8), x["k"].to(torch.uint8), x["k"].to(torch.int16))),
    "bool_ops": lambda x: (x["a"] > 0) & (x["b"] < 0),
    "cumsum": lambda x: x["a"].cumsum(1),
    "to_dtype": lambda x: (x["a"].to(torch.bfloat16), x["k"].to(torch.float32)),
}


def _on(device: str, value):
    return {k: v.to(device) for k, v in value.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_cpu(name: str) -> None:
    case = CASES[name]
    expected = case(_inputs())
    got = case(_on("nova", _inputs()))
    for e, g in zip(pytree.tree_leaves(expected), pytree.tree_leaves(got), strict=True):
        assert g.device.type == "nova"
        assert g.dtype == e.dtype and g.shape == e.shape
        torch.testing.assert_close(g.cpu(), e, rtol=1e-5, atol=1e-5)


def test_in_place_and_out_variants():
    x, d = _inputs(), _on("nova", _inputs())
    x["a"].add_(x["b"], alpha=2.0)
    d["a"].add_(d["b"], alpha=2.0)
    x["a"][x["a"] > 1] = 0.0  # masked index_put_
    d["a"][d["a"] > 1] = 0.0
    out = torch.empty(4, 6, device="nova")
    torch.mul(d["a"], d["b"], out=out)
    torch.testing.assert_close(d["a"].cpu(), x["a"])
    torch.testing.assert_close(out.cpu(), x["a"] * x["b"])
    wrong = torch.empty(1, device="nova")
    torch.add(d["a"], 1, out=wrong)  # out= is resized, as on the CPU
    assert wrong.shape == (4, 6)


def test_foreach_ops():
    x, d = _inputs(), _on("nova", _inputs())
    torch._foreach_mul_([x["a"], x["b"]], [0.5, 0.25])
    torch._foreach_mul_([d["a"], d["b"]], [0.5, 0.25])
    torch.testing.assert_close(d["a"].cpu(), x["a"])
    torch.testing.assert_close(d["b"].cpu(), x["b"])


def test_a_changing_scalar_does_not_compile_again():
    from nova.device.programs import cache

    d = _on("nova", _inputs())
    d["a"].mul_(0.5).addcdiv_(d["b"], d["p"], value=0.1)
    before = cache.compiles
    for step in range(3):
        expected = (d["a"].cpu() * (0.9 + step)).addcdiv(d["b"].cpu(), d["p"].cpu(), value=-0.01 * step)
        d["a"].mul_(0.9 + step).addcdiv_(d["b"], d["p"], value=-0.01 * step)
        torch.testing.assert_close(d["a"].cpu(), expected)
    assert cache.compiles == before


def test_programs_come_from_the_disk_cache_in_another_process(tmp_path):
    import os
    import subprocess
    import sys

    script = ("import torch, nova.device\n"
              "x = torch.arange(8.0).to('nova')\n"
              "assert torch.equal((x * 7 + 1).cpu(), torch.arange(8.0) * 7 + 1)\n"
              "print(torch.nova.op_cache_stats()['compiled'], torch.nova.op_cache_stats()['disk_hits'])\n")
    env = {**os.environ, "NOVA_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stderr
    compiled, hits = (int(v) for v in second.stdout.split()[-2:])
    assert compiled == 0 and hits >= 2


def test_processes_writing_the_disk_cache_at_once(tmp_path):
    """Three processes fill an empty cache with the same programs at the same time
    (entries are renamed into place): each gets correct numbers, and a fourth
    finds every program there."""
    import os
    import subprocess
    import sys

    script = ("import torch, nova.device\n"
              "x = torch.arange(12.0).reshape(3, 4).to('nova')\n"
              "y = (x.t() @ x).softmax(-1) + 1\n"
              "e = torch.arange(12.0).reshape(3, 4)\n"
              "torch.testing.assert_close(y.cpu(), (e.t() @ e).softmax(-1) + 1)\n"
              "print(torch.nova.op_cache_stats()['compiled'])\n")
    env = {**os.environ, "NOVA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for run in runs:
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, err
    assert not list(tmp_path.rglob("*.tmp"))  # no half-written entry left behind
    last = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=600)
    assert last.returncode == 0, last.stderr
    assert last.stdout.split()[-1] == "0"
