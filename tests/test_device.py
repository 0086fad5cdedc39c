import pytest

from kernelplan.device import ArchMismatch, DeviceInfo, parse_sm, require_runs_on, runs_on
from kernelplan.errors import KernelPlanError


def test_arch_specific_targets_need_that_sm():
    assert runs_on("sm_90a", "sm_90")
    assert not runs_on("sm_100a", "sm_90")
    assert not runs_on("sm_90a", "sm_100")
    assert not runs_on("sm_100a", "sm_120")  # GeForce Blackwell has no tcgen05


def test_plain_targets_run_forward_and_family_targets_within_family():
    assert runs_on("sm_80", "sm_90") and not runs_on("sm_90", "sm_80")
    assert runs_on("sm_100f", "sm_103") and not runs_on("sm_100f", "sm_120")


@pytest.mark.parametrize("bad", ["sm90", "hopper", "sm_9x", ""])
def test_unknown_sm_is_a_clear_error(bad):
    with pytest.raises(KernelPlanError, match="unknown SM"):
        parse_sm(bad)


def _h200():
    return DeviceInfo(name="NVIDIA H200", sm="sm_90", sm_count=132, memory_bytes=1, l2_bytes=1)


def test_blackwell_kernel_on_h200_is_refused_with_one_line_naming_the_sm():
    with pytest.raises(ArchMismatch) as e:
        require_runs_on("dense_gemm", ("sm_100a",), _h200())
    msg = str(e.value)
    assert "\n" not in msg and "sm_100a" in msg and "NVIDIA H200 (sm_90)" in msg
    require_runs_on("hopper_dense_gemm", ("sm_90a",), _h200())  # no raise


def test_no_gpu_is_refused_for_cute_kernels_and_peers():
    with pytest.raises(ArchMismatch, match="no CUDA GPU"):
        require_runs_on("hopper_dense_gemm", ("sm_90a",), None)
    with pytest.raises(ArchMismatch, match="a CUDA GPU"):
        require_runs_on("torch_matmul", (), None)
