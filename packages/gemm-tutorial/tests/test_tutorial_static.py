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

from kernelplan import NoConfig, ShapeError
from kernelplan.registry import kernel_names, load_plan_class
from kernelplan.testing import compile_params, needs_sources
from kernelplan.workloads.gemm import GEMM, GemmProblem

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
    assert p.workload is GEMM
    prob = p.check_problems()[0]
    assert isinstance(prob, GemmProblem) and prob.init == "randint" and prob.l == 1
    p.supports(prob)
    specs = p.tensor_specs(prob)
    m, n, k = prob.m, prob.n, prob.k
    assert specs["a"].shape == (m, k) and specs["c"].shape == (m, n)  # 2-D views, L = 1
    assert specs["c"].role == "output" and specs["a"].dtype == "float16"
    assert specs["a"].leading_dim == 1 and specs["a"].perm is None
    flops, nbytes = p.flops_bytes(prob)
    assert flops >= 2.0 * m * n * k and nbytes >= 2 * (m * k + m * n)
    if name in ("fp16_gemm_0", "fp16_gemm_1"):  # K and N divisibility marks, 32 B aligned
        assert specs["a"].divisibility == k and specs["c"].divisibility == n
        assert specs["a"].align == 32
        assert specs["a"].signature()[2] == ("dynamic", 2, 1, k)  # in the compile key
    else:
        assert specs["a"].divisibility == 1


@pytest.mark.parametrize(
    ("name", "kw", "needle"),
    [
        ("fp16_gemm_0", dict(m=100, n=256, k=64), "multiples of its tile 128x256"),
        ("fp16_gemm_2", dict(m=256, n=128, k=64), "multiples of its tile 256x256"),
        ("fp16_gemm_5", dict(m=256, n=96, k=64), "multiples of its tile 256x64"),
        ("fp16_gemm_3", dict(m=256, n=256, k=12), "multiple of 8"),
        ("fp16_gemm_6", dict(m=256, n=256, k=64), "K a multiple of 128"),
        ("fp16_gemm_2", dict(m=256, n=256, k=64, l=2), "L = 1 only"),
        ("fp16_gemm_2", dict(m=256, n=256, k=64, dtype="bfloat16"), "--dtype float16 only"),
        ("fp16_gemm_2", dict(m=256, n=256, k=64, c_dtype="float32"), "--c_dtype float16 only"),
    ],
)
def test_problems_the_tutorial_cannot_take_are_refused(name, kw, needle):
    p = _plan(name)
    with pytest.raises(ShapeError, match=needle):
        p.problem(**kw)
    assert not p.takes(GemmProblem(**kw))


def test_the_workload_check_problems_it_takes():
    p = _plan("fp16_gemm_2")
    taken = [q for q in GEMM.check_problems() if p.takes(q)]
    assert all(q.l == 1 and q.m % 256 == 0 and q.n % 256 == 0 for q in taken)


def test_tile_cluster_and_stages_are_not_configs():
    p = _plan("fp16_gemm_2")
    prob = p.check_problems()[0]
    assert p.config_type is NoConfig and p.config(prob) == NoConfig()
    with pytest.raises(ShapeError, match="module constants"):
        p.config(prob, {"ab_stages": "3"})
    with pytest.raises(ShapeError, match="module constants"):
        p.config(prob, {"sm_count": "132"})  # the SM count is --sm_count (the target)


def test_references_on_the_cpu():
    import torch

    p = _plan("fp16_gemm_6")
    prob = p.problem(m=256, n=256, k=128, init="randint")
    inputs = p.prepare_inputs(prob, seed=1, device="cpu")
    assert inputs["b_quantized"].dtype == torch.int8
    assert inputs["b_quantized"].min() >= 0 and inputs["b_quantized"].max() <= 2
    ref = p.reference(prob, inputs)
    b_deq = (inputs["b_quantized"].float() * 2.33).half().float()
    torch.testing.assert_close(ref["b_dequantized"], b_deq)
    torch.testing.assert_close(ref["c"], inputs["a"].float() @ b_deq.t())
    assert set(ref) == set(p.output_names(prob)) == {"b_dequantized", "c"}
    p0 = _plan("fp16_gemm_0")
    prob0 = p0.problem(m=128, n=256, k=64, init="randint")
    inp = p0.prepare_inputs(prob0, seed=2, device="cpu")
    assert inp["a"].abs().max() <= 2 and inp["a"].dtype == torch.float16
    c = p0.reference(prob0, inp)["c"]
    assert c.shape == (128, 256)  # the workload's reference, on 2-D operands
    torch.testing.assert_close(c, inp["a"].float() @ inp["b"].float().t())


def _compile_params():
    return compile_params(KERNELS, DEFAULT_COMPILED)


@needs_sources
@pytest.mark.parametrize("name", _compile_params())
def test_compiles_for_sm100a_on_the_cpu(name, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    p = _plan(name)
    prob = p.check_problems()[0]
    config = p.config(prob)
    kernel = p.kernel(prob, config, p.target())
    from kernelplan.cutlass_src import load_example

    assert kernel.fn is load_example(p.source).host_function  # compiled, never called
    st = p.run_static(prob, config)
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
