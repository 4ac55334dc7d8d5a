"""torch.compile(model, backend="nova"): Dynamo's graphs compiled by Nova's
frontend and pipeline and run on the simulator, compared to torch eager;
graph breaks, eager fallback with a warning, strict mode, the compile cache,
the entry point and the parallel options."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import warnings

import pytest
import torch

import nova.dynamo
from nova.compiler.errors import NovaModelCompileError, NovaUnsupportedOpError
from nova.dynamo import NovaFallbackWarning, backend, cache_info
from nova.dynamo.cache import program_cache

RTOL, ATOL = 1e-4, 1e-5


class MLP(torch.nn.Module):
    def __init__(self, d_in: int = 16, hidden: int = 32, d_out: int = 8) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, hidden)
        self.fc2 = torch.nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Breaks(torch.nn.Module):
    """A print (a graph break) and a branch on the data (another)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        print("nova dynamo test: graph break")
        if x.sum() > 0:
            h = h * 2.0
        else:
            h = h - 1.0
        return self.fc2(h)


class Atan(torch.nn.Module):
    """erfinv has no Nova lowering (torch-mlir does not lower it to linalg)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.erfinv(self.fc(x) * 0.01) * 2.0


def _compiled(model: torch.nn.Module, **options):
    return torch.compile(model, backend=backend, options=options or None)


def _check(compiled, model, *args) -> None:
    with torch.no_grad():
        expected = model(*args)
        got = compiled(*args)
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)


def test_mlp_matches_eager_and_binds_current_parameters() -> None:
    torch.manual_seed(0)
    model = MLP().eval()
    compiled = _compiled(model)
    x = torch.randn(4, 16)
    _check(compiled, model, x)
    assert cache_info().compiles == 1
    # Parameters are graph inputs: an in-place update is seen without recompiling.
    with torch.no_grad():
        model.fc2.weight.mul_(-0.5)
    _check(compiled, model, x)
    assert cache_info().compiles == 1 and cache_info().hits == 1


def test_gpt_from_token_ids_matches_eager() -> None:
    from nova.models import GPT, GPTConfig

    torch.manual_seed(1)
    model = GPT(GPTConfig(d_model=64, n_heads=4, n_layers=2, seq_len=16, vocab_size=128)).eval()
    ids = torch.randint(0, 128, (2, 16))
    _check(_compiled(model), model, ids)
    assert cache_info().fallbacks == 0


def test_hf_gpt2_lm_head_matches_eager_in_one_graph() -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(2)
    config = transformers.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4,
                                     n_positions=64, use_cache=False)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 128, (2, 16))
    compiled = torch.compile(model, backend=backend, fullgraph=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", NovaFallbackWarning)
        expected = model(input_ids=ids).logits
        got = compiled(input_ids=ids).logits
    torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL)
    assert cache_info().compiles == 1 and cache_info().fallbacks == 0


def test_graph_breaks_compile_every_graph(capsys) -> None:
    torch.manual_seed(3)
    model = Breaks().eval()
    compiled = _compiled(model)
    x = torch.randn(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NovaFallbackWarning)
        _check(compiled, model, x)
        # The other side of the branch: another graph.
        _check(compiled, model, -x)
    explained = torch._dynamo.explain(model)(x)
    # One path: before the print, the branch's condition, the side taken;
    # the call with -x added the other side.
    assert explained.graph_count >= 3
    assert cache_info().compiles == explained.graph_count + 1
    assert cache_info().fallbacks == 0
    assert "graph break" in capsys.readouterr().out


def test_unsupported_op_runs_alone_in_eager_with_one_warning() -> None:
    """erfinv has no Nova lowering: it, and only it, runs in eager; the linear
    before it and the multiplication after it run on Nova (per-op fallback)."""
    torch.manual_seed(4)
    model = Atan().eval()
    compiled = _compiled(model)
    x = torch.randn(4, 16)
    with pytest.warns(NovaFallbackWarning) as caught:
        _check(compiled, model, x)
    _check(compiled, model, x)  # no second try, no second warning
    assert len([w for w in caught if issubclass(w.category, NovaFallbackWarning)]) == 1
    message = str(caught[0].message)
    assert "1 op runs in eager" in message and "torch.erfinv" in message
    assert "torch.aten.erfinv" in message and "2 partitions" in message
    assert "return torch.erfinv(self.fc(x) * 0.01) * 2.0" in message  # the model's line
    (graph,) = nova.dynamo.report()
    assert graph.partitions == 2 and [op for op, _ in graph.eager_ops] == ["torch.erfinv"]
    assert graph.eager_reason is None and graph.calls == 2 and graph.memory_hits == 2
    assert cache_info().fallbacks == 0 and cache_info().compiles == 2


def test_strict_mode_raises_the_compiler_error() -> None:
    model = Atan().eval()
    compiled = _compiled(model, fallback=False)
    with pytest.raises((NovaModelCompileError, NovaUnsupportedOpError), match="erfinv"):
        with torch.no_grad():
            compiled(torch.randn(4, 16))


def test_unknown_option_is_an_error() -> None:
    compiled = _compiled(MLP(), chip=2)
    with pytest.raises(Exception, match="unknown option"):
        compiled(torch.randn(4, 16))


def test_cache_per_shape_and_no_recompile_of_the_same_graph() -> None:
    torch.manual_seed(5)
    model = MLP().eval()
    compiled = _compiled(model)
    shapes = [(2, 16), (3, 16), (5, 16), (3, 16), (2, 16)]
    for shape in shapes:
        _check(compiled, model, torch.randn(*shape))
    # Three shapes, three nova-opt compilations. Dynamo's dynamic graph (from
    # the second shape on) is specialised per concrete shape: (3, 16) again is
    # a hit; (2, 16) again goes to the dynamic graph, whose import at that
    # shape is the static graph's linalg, so nova-opt does not run again.
    assert cache_info().compiles == 3
    assert cache_info().hits == 1 and cache_info().imports == 4
    # A second torch.compile of the same model hands Nova the same graphs again.
    _check(_compiled(model), model, torch.randn(2, 16))
    assert cache_info().compiles == 3


def test_get_attr_parameters_are_bound_per_call() -> None:
    """A graph that reads its parameters through get_attr (not as Dynamo's
    lifted placeholders): they become inputs, read at each call."""
    torch.manual_seed(6)
    model = MLP().eval()
    gm = torch.fx.symbolic_trace(_Functional(model))
    assert sum(node.op == "get_attr" for node in gm.graph.nodes) == 4
    x = torch.randn(4, 16)
    run = backend(gm, [x])
    with torch.no_grad():
        torch.testing.assert_close(run(x), model(x), rtol=RTOL, atol=ATOL)
        model.fc1.bias.add_(1.0)
        torch.testing.assert_close(run(x), model(x), rtol=RTOL, atol=ATOL)
    assert cache_info().compiles == 1 and cache_info().hits == 1


class _Functional(torch.nn.Module):
    """The MLP through torch.nn.functional, so symbolic_trace reads its weights by get_attr."""

    def __init__(self, mlp: MLP) -> None:
        super().__init__()
        self.mlp = mlp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fc1, fc2 = self.mlp.fc1, self.mlp.fc2
        h = torch.nn.functional.linear(x, fc1.weight, fc1.bias)
        return torch.nn.functional.linear(torch.nn.functional.gelu(h), fc2.weight, fc2.bias)


def test_data_parallel_options() -> None:
    from nova.parallel import Mesh, data_parallel_plan

    torch.manual_seed(7)
    model = MLP().eval()
    compiled = _compiled(model, mesh=Mesh((2,), ("dp",)), plan=data_parallel_plan("dp"))
    _check(compiled, model, torch.randn(4, 16))
    assert cache_info().compiles == 1
    (program,) = program_cache().programs.values()
    assert program.mesh == Mesh((2,), ("dp",)) and len(program.chip_params) == 2


def test_training_loop_runs_forward_and_backward_on_nova(train_beside_eager) -> None:
    """10 AdamW steps: the compiled model's forward and backward graphs (aot_autograd)
    run on Nova and give eager's losses; the optimizer steps on the host."""
    import copy

    torch.manual_seed(8)
    model = MLP()
    reference = copy.deepcopy(model)
    compiled = _compiled(model)
    losses, expected = train_beside_eager(compiled, model, reference, 10, "error")
    torch.testing.assert_close(losses, expected, rtol=1e-4, atol=1e-5)
    assert expected[-1] < expected[0]
    assert cache_info().by_kind == {"forward": 1, "backward": 1}
    assert cache_info().hits == 18  # 9 more steps, each a forward and a backward
    # The report: both graphs ran on Nova, at every step, with nothing in eager.
    forward, backward = nova.dynamo.report()
    assert (forward.kind, backward.kind) == ("forward", "backward")
    for graph in (forward, backward):
        assert graph.on_nova and graph.eager_ops == [] and graph.partitions == 1
        assert graph.calls == 10 and graph.compiles == 1 and graph.memory_hits == 9
        assert graph.sim_ns > 0
    table = str(nova.dynamo.report())
    assert "(forward)" in table and "(backward)" in table


_ENTRY_POINT_CHECK = """
import sys, torch
assert "nova" in torch._dynamo.list_backends(), torch._dynamo.list_backends()
assert "nova" not in sys.modules
m = torch.nn.Linear(4, 4)
x = torch.randn(2, 4)
with torch.no_grad():
    torch.testing.assert_close(torch.compile(m, backend="nova")(x), m(x), rtol=1e-4, atol=1e-5)
assert "nova.dynamo" in sys.modules
"""


@pytest.mark.skipif(
    "nova" not in importlib.metadata.entry_points(group="torch_dynamo_backends").names,
    reason="the installed nova has no torch_dynamo_backends entry point yet "
           "(scripts/setup installs it)")
def test_entry_point_registers_the_backend_without_importing_nova() -> None:
    # The nova *device* autoloads with torch (and so imports nova); the Dynamo
    # backend's own entry point must not need that: checked with the autoload off.
    subprocess.run([sys.executable, "-c", _ENTRY_POINT_CHECK], check=True,
                   env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, timeout=120)


@pytest.mark.skipif(
    "nova" not in importlib.metadata.entry_points(group="torch.backends").names,
    reason="the installed nova has no torch.backends entry point yet (scripts/setup installs it)")
def test_import_torch_registers_the_nova_device() -> None:
    check = ("import torch\n"
             "x = torch.arange(4.0, device='nova')\n"
             "assert torch.equal((x * 2).cpu(), torch.arange(4.0) * 2)\n")
    subprocess.run([sys.executable, "-c", check], check=True, env=dict(os.environ), timeout=300)


def test_pyproject_entry_point_is_found_by_torch(tmp_path, repo_root) -> None:
    """pyproject.toml's entry point, as an installed distribution would carry
    it, makes torch find the backend (without the package being reinstalled)."""
    import tomllib

    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    backends = project["entry-points"]["torch_dynamo_backends"]
    assert backends == {"nova": "nova.dynamo:backend"}
    info = tmp_path / "nova_entry_point_check-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nova-entry-point-check\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(
        "[torch_dynamo_backends]\n" + "".join(f"{k} = {v}\n" for k, v in backends.items()))
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path), str(repo_root / "python"), env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", _ENTRY_POINT_CHECK], check=True, env=env,
                   timeout=120)
