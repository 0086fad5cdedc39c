"""The tutorial GEMM adapters: problems, tensors, references, and the sm_100a compile on a CPU.

Compiles go through ``cute.compile`` of the tutorial's ``host_function`` with fake tensors
(:meth:`KernelPlan.run_static`): no GPU, no memory, and nothing can launch (upstream's direct
call of ``host_function`` would compile and launch in one step; the adapters never make it).

Cost: each compile is 1-4 s after a one-off DSL import of about 5 s. The default run compiles
two steps (fp16_gemm_0, the simplest, and fp16_gemm_6, two kernels with PDL); set
``KERNELPLAN_TEST_ALL_KERNELS=1`` to compile all eight. Each test uses a fresh compile cache,
so it really compiles. Skipped, with the reason, when the CUTLASS sources are absent.
"""

from __future__ import annotations

import pytest

from kernelplan import ShapeError
from kernelplan.registry import kernel_names, load_plan_class
from kernelplan.testing import compile_params, needs_sources

KERNELS = [
    "fp16_gemm_0",
    "fp16_gemm_1",
    "fp16_gemm_2",
    "fp16_gemm_3",
    "fp16_gemm_3_1",
    "fp16_gemm_4",
    "fp16_gemm_5",
    "fp16_gemm_6",
]
DEFAULT_COMPILED = ("fp16_gemm_0", "fp16_gemm_6")
#: Registers per thread of the main kernel at the default problem (the example catalog's
#: cuobjdump figures for the same compile, nvidia-cutlass-dsl 4.8.1, CUTLASS 7107b0553).
CATALOG_REGISTERS = {
    "fp16_gemm_0": 72,
    "fp16_gemm_1": 74,
    "fp16_gemm_2": 39,
    "fp16_gemm_3": 40,
    "fp16_gemm_3_1": 41,
    "fp16_gemm_4": 41,
    "fp16_gemm_5": 41,
    "fp16_gemm_6": 41,
}


def _plan(name):
    return load_plan_class("gemm-tutorial", name)()


def test_the_package_lists_the_eight_steps():
    assert kernel_names("gemm-tutorial") == KERNELS
    for name in KERNELS:
        p = _plan(name)
        assert p.name == name and p.package == "gemm-tutorial"
        assert p.source == f"cute/blackwell/tutorial/tutorial_gemm/{name}.py"
        assert p.target_sm == ("sm_100a",)


@pytest.mark.parametrize("name", KERNELS)
def test_problems_tensors_and_flops(name):
    p = _plan(name)
    prob = p.check_problems()[0]
    p.validate(prob)
    specs = p.tensor_specs(prob)
    m, n, k = prob["m"], prob["n"], prob["k"]
    assert specs["a"].shape == (m, k) and specs["c"].shape == (m, n)
    assert specs["c"].role == "output" and specs["a"].dtype == "float16"
    flops, nbytes = p._algorithmic_flops_bytes(prob)
    assert flops >= 2.0 * m * n * k and nbytes >= 2 * (m * k + m * n)
    if name in ("fp16_gemm_0", "fp16_gemm_1"):  # K and N divisibility marks, 32 B aligned
        assert specs["a"].divisibility == k and specs["c"].divisibility == n
        assert specs["a"].align == 32
    else:
        assert specs["a"].divisibility == 1


@pytest.mark.parametrize(
    ("name", "mnk", "needle"),
    [
        ("fp16_gemm_0", (100, 256, 64), "multiples of its tile 128x256"),
        ("fp16_gemm_2", (256, 128, 64), "multiples of its tile 256x256"),
        ("fp16_gemm_5", (256, 96, 64), "multiples of its tile 256x64"),
        ("fp16_gemm_3", (256, 256, 12), "multiple of 8"),
        ("fp16_gemm_6", (256, 256, 64), "K a multiple of 128"),
    ],
)
def test_problems_the_tutorial_cannot_take_are_refused(name, mnk, needle):
    p = _plan(name)
    with pytest.raises(ShapeError, match=needle):
        p.validate(p.problem(*mnk))


def test_tile_cluster_and_stages_are_not_configs():
    p = _plan("fp16_gemm_2")
    with pytest.raises(ShapeError, match="module constants"):
        p.validate_config(p.check_problems()[0], {"ab_stages": 3})
    with pytest.raises(ShapeError, match="module constants"):
        p.plan(p.check_problems()[0], {"ab_stages": 3})
    p.validate_config(p.check_problems()[0], {"sm_count": 132})


def test_references_on_the_cpu():
    import torch

    p = _plan("fp16_gemm_6")
    prob = p.problem(256, 256, 128)
    inputs = p.prepare_inputs(prob, seed=1, device="cpu")
    assert inputs["b_quantized"].dtype == torch.int8
    assert inputs["b_quantized"].abs().max() <= 2
    ref = p.reference_fn(prob, inputs)
    b_deq = (inputs["b_quantized"].float() * 2.33).half().float()
    torch.testing.assert_close(ref["b_dequantized"], b_deq)
    torch.testing.assert_close(ref["c"], inputs["a"].float() @ b_deq.t())
    p0 = _plan("fp16_gemm_0")
    prob0 = p0.problem(128, 256, 64)
    inp = p0.prepare_inputs(prob0, seed=2, device="cpu")
    torch.testing.assert_close(
        p0.reference_fn(prob0, inp)["c"], inp["a"].float() @ inp["b"].float().t()
    )


def _compile_params():
    return compile_params(KERNELS, DEFAULT_COMPILED)


@needs_sources
@pytest.mark.parametrize("name", _compile_params())
def test_compiles_for_sm100a_on_the_cpu(name, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    p = _plan(name)
    prob = p.check_problems()[0]
    kernel = p.plan(prob, {})
    from kernelplan.cutlass_src import load_example

    assert kernel.fn is load_example(p.source).host_function  # compiled, never called
    st = p.run_static(prob, {})
    assert st["arch"] == "sm_100a" and st["cache"]["hit"] is False
    assert st["registers"] == CATALOG_REGISTERS[name]
    assert st["res_usage_check"] == {
        "tool": "cuobjdump -res-usage",
        "registers": st["registers"],
        "match": True,
    }
    assert st["categories"]["mma"] > 0 and any(o.startswith("UTC") for o in st["opcodes"])
    assert st["categories"]["tmem"] > 0 and st["categories"]["tma"] > 0
    assert st["dynamic_smem_bytes"] > 150_000
    consts = st["meta"]["module_constants"]
    assert tuple(consts["mma_tiler_mnk"][:2]) == p.tile_mn
    if p.cluster_constants:
        assert st["max_active_clusters"] == st["meta"]["max_active_clusters"] > 0
        assert st["sm_count"] == 148
    else:
        assert st["max_active_clusters"] is None
    if name == "fp16_gemm_6":  # the dequantize kernel rides along, the GEMM is the main one
        assert [f["kernel"] for f in st["functions"]][0].startswith("kernel_cutlass_dequantize")
        assert "gemm" in st["kernel"]
