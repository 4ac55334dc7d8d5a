import pytest

from nova.compiler import pipeline
from nova.compiler.errors import NovaOptionError
from nova.compiler.options import TargetOptions


def test_attach_target_flag() -> None:
    assert pipeline.attach_target(TargetOptions()) == "--nova-attach-target=target=nova-t1"
    assert (
        pipeline.attach_target(TargetOptions(name="targets/x.json", chips=4))
        == "--nova-attach-target=target=targets/x.json chips=4"
    )


@pytest.mark.parametrize("name", ["", "two words", 'quo"te', "a}b"])
def test_target_name_validated(name: str) -> None:
    with pytest.raises(NovaOptionError, match="target name"):
        TargetOptions(name=name)


@pytest.mark.parametrize("chips", [-1, 1.5, True])
def test_chips_validated(chips: object) -> None:
    with pytest.raises(NovaOptionError, match="chips must be a non-negative integer"):
        TargetOptions(chips=chips)  # type: ignore[arg-type]
