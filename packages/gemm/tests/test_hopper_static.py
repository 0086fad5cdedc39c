"""The Hopper GEMM adapters compile for sm_90a on the CPU against the pinned sources (each
compile with a fresh compile cache), and refuse configs upstream rejects with one line."""

import pytest

from kernelplan.testing import needs_sources

pytestmark = needs_sources


@pytest.mark.parametrize("kernel", ["hopper_dense_gemm", "hopper_dense_gemm_persistent"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hopper_gemm_compiles_for_sm90a_with_wgmma_and_tma(kernel, dtype, tmp_path, monkeypatch):
    from kernelplan.registry import load_plan_class

    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))  # a real compile

    plan = load_plan_class("gemm", kernel)()
    prob = plan.problem(m=1000, n=1112, k=1024, dtype=dtype)
    st = plan.run_static(prob, plan.default_config(prob))
    assert st["arch"] == "sm_90a" and st["cache"]["hit"] is False
    assert 100 < st["registers"] <= 255
    assert st["categories"]["mma"] > 0 and any(m.startswith("HGMMA") for m in st["opcodes"])
    assert st["categories"]["tma"] > 0
    assert st["dynamic_smem_bytes"] and st["dynamic_smem_bytes"] > 100_000


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"tile_mn": "256x128"}, "tile_mn 256x128 unsupported"),
        ({"cluster_mn": "4x2"}, "cluster_mn 4x2 unsupported"),
        ({"swizzle_size": "0"}, "swizzle_size must be a positive integer"),
    ],
)
def test_hopper_configs_upstream_rejects_are_one_line(overrides, needle):
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("gemm", "hopper_dense_gemm_persistent")()
    prob = plan.problem(m=1000, n=1112, k=1024)
    with pytest.raises(ShapeError, match=needle) as e:
        plan.config(prob, overrides)
    assert "\n" not in str(e.value)
