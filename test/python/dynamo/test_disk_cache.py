"""The disk cache of torch.compile(backend="nova"): a second process
compiling the same model reads its programs (and its per-op fallback
decisions) instead of compiling; the key, the folder, clearing it, and a
damaged entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

import nova.dynamo
from nova.cli.main import main as nova_main
from nova.dynamo import backend, cache_info
from nova.dynamo.disk_cache import cache_root, entry_key
from nova.knobs import knobs

RTOL, ATOL = 1e-4, 1e-5

_SCRIPT = """
import json, warnings, torch, nova.dynamo
from nova.dynamo import backend

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

class Atan(MLP):
    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(torch.erfinv(torch.tanh(h) * 0.5))

warnings.simplefilter("ignore")
torch.manual_seed(0)
x = torch.randn(4, 16)
with torch.no_grad():
    for model in (MLP().eval(), Atan().eval()):
        got = torch.compile(model, backend=backend)(x)
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)
info = nova.dynamo.cache_info()
print(json.dumps({"compiles": info.compiles, "imports": info.imports, "probes": info.probes,
                  "disk_hits": info.disk_hits, "eager_ops": info.eager_ops,
                  "rows": [[g.label, g.disk_hits, g.partitions] for g in nova.dynamo.report()]}))
"""


def _run_process(cache: Path) -> dict:
    env = dict(os.environ, NOVA_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_every_program_from_disk(tmp_path) -> None:
    cache = tmp_path / "cache"
    first = _run_process(cache)
    # The MLP compiles whole; Atan's graph is split: 2 partitions, erfinv in eager.
    assert first["compiles"] == 3 and first["disk_hits"] == 0 and first["eager_ops"] == 1
    second = _run_process(cache)
    assert second["disk_hits"] == 3, second
    assert second["compiles"] == 0 and second["imports"] == 0 and second["probes"] == 0
    assert second["eager_ops"] == 1  # the decision came from the disk too
    assert [row[1] for row in second["rows"]] == [1, 2]


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _compile_once(x: torch.Tensor, model: torch.nn.Module, **options) -> None:
    with torch.no_grad():
        got = torch.compile(model, backend=backend, options=options or None)(x)
        torch.testing.assert_close(got, model(x), rtol=RTOL, atol=ATOL)


def test_in_process_reuse_and_what_the_key_holds(tmp_path) -> None:
    torch.manual_seed(1)
    model, x = _MLP().eval(), torch.randn(2, 8)
    _compile_once(x, model)
    entries = list(cache_root().rglob("*.nova"))
    assert len(entries) == 1 and cache_root() == tmp_path / "nova-cache" / "dynamo"
    # A fresh Dynamo and in-memory cache: the program comes from the disk.
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    _compile_once(x, model)
    assert cache_info().disk_hits == 1 and cache_info().compiles == 0
    # Other options make another entry.
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    _compile_once(x, model, double_buffer=False)
    assert cache_info().disk_hits == 0 and cache_info().compiles == 1
    assert len(list(cache_root().rglob("*.nova"))) == 2
    # The key: the graph, the call's dtypes/shapes/strides, the options, the
    # target file's contents (and the versions, fixed in one process).
    key = entry_key("graph", (("tensor", (2, 8), "torch.float32", (8, 1)),), "opts", "nova-t1")
    assert key != entry_key("graph", (("tensor", (2, 8), "torch.float32", (1, 2)),), "opts",
                            "nova-t1")
    assert key != entry_key("graph", (("tensor", (2, 8), "torch.float32", (8, 1)),), "other",
                            "nova-t1")
    assert key != entry_key("other", (("tensor", (2, 8), "torch.float32", (8, 1)),), "opts",
                            "nova-t1")
    target = tmp_path / "t.json"
    target.write_text('{"name": "a"}')
    before = entry_key("graph", (), "opts", str(target))
    target.write_text('{"name": "b"}')
    assert before != entry_key("graph", (), "opts", str(target))


def test_a_damaged_entry_is_recompiled(tmp_path) -> None:
    torch.manual_seed(2)
    model, x = _MLP().eval(), torch.randn(3, 8)
    _compile_once(x, model)
    (entry,) = cache_root().rglob("*.nova")
    entry.write_bytes(b"not a program")
    torch._dynamo.reset()
    nova.dynamo.clear_cache()
    _compile_once(x, model)
    assert cache_info().disk_hits == 0 and cache_info().compiles == 1
    (entry,) = cache_root().rglob("*.nova")
    assert entry.read_bytes() != b"not a program"  # written again


def test_disk_cache_off_writes_nothing() -> None:
    torch.manual_seed(3)
    _compile_once(torch.randn(2, 8), _MLP().eval(), disk_cache=False)
    assert not cache_root().exists()


def test_clear_and_the_cli(capsys) -> None:
    torch.manual_seed(4)
    _compile_once(torch.randn(2, 8), _MLP().eval())
    assert nova_main(["cache", "dir"]) == 0
    assert str(cache_root()) in capsys.readouterr().out
    assert nova_main(["cache", "clear"]) == 0
    assert "removed 1 cached file" in capsys.readouterr().out
    assert not cache_root().exists()
    assert nova.dynamo.clear_disk_cache() == 0


def test_the_cache_folder_follows_xdg_and_nova_cache_dir(tmp_path) -> None:
    home = Path("~").expanduser()
    assert knobs({}).cache_dir == home / ".cache" / "nova"
    assert knobs({"XDG_CACHE_HOME": str(tmp_path)}).cache_dir == tmp_path / "nova"
    assert knobs({"XDG_CACHE_HOME": "relative/dir"}).cache_dir == home / ".cache" / "nova"
    assert knobs({"XDG_CACHE_HOME": str(tmp_path),
                  "NOVA_CACHE_DIR": str(tmp_path / "mine")}).cache_dir == tmp_path / "mine"


def test_torch_logs_nova_shows_the_backend_s_log(tmp_path) -> None:
    """TORCH_LOGS=+nova (torch's switch) turns on the backend's log lines."""
    script = ("import torch\nfrom nova.dynamo import backend\nm = torch.nn.Linear(4, 4)\n"
              "with torch.no_grad():\n    torch.compile(m, backend=backend)(torch.randn(2, 4))\n")
    env = dict(os.environ, NOVA_CACHE_DIR=str(tmp_path), TORCH_LOGS="+nova")
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=300,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "nova: compiling Dynamo graph 0/0" in done.stderr
