from pathlib import Path

import pytest

from nova.knobs import Knobs, knobs


def test_tools_dir_unset_means_package_tools() -> None:
    assert knobs({}).tools_dir is None
    assert knobs({"NOVA_TOOLS_DIR": ""}).tools_dir is None


def test_tools_dir_from_environment() -> None:
    assert knobs({"NOVA_TOOLS_DIR": "/opt/nova/bin"}).tools_dir == Path("/opt/nova/bin")


def test_process_environment_is_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOVA_TOOLS_DIR", "/somewhere/bin")
    assert knobs().tools_dir == Path("/somewhere/bin")


def test_knobs_reject_untyped_values() -> None:
    with pytest.raises(TypeError, match="tools_dir must be a Path"):
        Knobs(tools_dir="/not/a/path/object")  # type: ignore[arg-type]


def test_sim_fast_switch() -> None:
    from nova.knobs import KnobError

    assert knobs({}).sim_fast and knobs({"NOVA_SIM_FAST": "1"}).sim_fast
    assert not knobs({"NOVA_SIM_FAST": "0"}).sim_fast
    with pytest.raises(KnobError, match="NOVA_SIM_FAST='yes': expected 0 or 1"):
        knobs({"NOVA_SIM_FAST": "yes"})


def test_sim_fuse_switch() -> None:
    from nova.knobs import KnobError

    assert knobs({}).sim_fuse and not knobs({"NOVA_SIM_FUSE": "0"}).sim_fuse
    with pytest.raises(KnobError, match="NOVA_SIM_FUSE='no': expected 0 or 1"):
        knobs({"NOVA_SIM_FUSE": "no"})
