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


def test_a_peer_library_names_the_sm_it_runs_on_without_a_static_hint():
    """A peer that runs on one SM only (FlashMLA's dense decode: sm_90) says which, with and
    without a GPU, and offers no static analysis (nothing of ours is compiled)."""
    with pytest.raises(ArchMismatch) as e:
        require_runs_on("flashmla", (), None, ("sm_90a",))
    msg = str(e.value)
    assert "sm_90a (Hopper" in msg and "--prof_type=static" not in msg
    b200 = DeviceInfo(name="NVIDIA B200", sm="sm_100", sm_count=148, memory_bytes=1, l2_bytes=1)
    with pytest.raises(ArchMismatch) as e:
        require_runs_on("flashmla", (), b200, ("sm_90a",))
    msg = str(e.value)
    assert "NVIDIA B200 (sm_100)" in msg and "sm_90a" in msg and "static" not in msg
    require_runs_on("flashmla", (), _h200(), ("sm_90a",))  # no raise


def test_require_plan_runs_on_reads_a_peers_sm():
    from kernelplan.device import require_plan_runs_on

    class Peer:
        name, target_sm, peer_sm = "flashmla", (), ("sm_90a",)

    with pytest.raises(ArchMismatch, match="sm_90a"):
        require_plan_runs_on(Peer, None)
    require_plan_runs_on(Peer, _h200())


def test_the_static_hint_can_be_left_out_where_the_caller_analyses_statically():
    with pytest.raises(ArchMismatch) as e:
        require_runs_on("hopper_dense_gemm", ("sm_90a",), None, static_hint=False)
    assert "sm_90a" in str(e.value) and "--prof_type=static" not in str(e.value)
    b200 = DeviceInfo(name="NVIDIA B200", sm="sm_100", sm_count=148, memory_bytes=1, l2_bytes=1)
    with pytest.raises(ArchMismatch) as e:
        require_runs_on("hopper_dense_gemm", ("sm_90a",), b200, static_hint=False)
    assert "not run" in str(e.value) and "static" not in str(e.value)
