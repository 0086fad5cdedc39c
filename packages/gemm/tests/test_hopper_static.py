"""The Hopper GEMM adapters compile for sm_90a on the CPU against the pinned sources."""

import pytest

from kernelplan.testing import needs_sources

pytestmark = needs_sources


@pytest.mark.parametrize("kernel", ["hopper_dense_gemm", "hopper_dense_gemm_persistent"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hopper_gemm_compiles_for_sm90a_with_wgmma_and_tma(kernel, dtype):
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("gemm", kernel)()
    prob = plan.problem(1000, 1112, 1024, dtype=dtype)
    st = plan.run_static(prob, plan.default_config(prob))
    assert st["arch"] == "sm_90a"
    assert 100 < st["registers"] <= 255
    assert st["categories"]["mma"] > 0 and any(m.startswith("HGMMA") for m in st["opcodes"])
    assert st["categories"]["tma"] > 0
    assert st["dynamic_smem_bytes"] and st["dynamic_smem_bytes"] > 100_000
