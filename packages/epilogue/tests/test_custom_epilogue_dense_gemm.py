"""epilogue/custom_epilogue_dense_gemm: registered, and compiled for its target SM on the CPU.

The compile test is skipped, with the reason, while the adapter still has scaffold TODOs or
the CUTLASS sources are absent; once they are filled in it must pass on any machine.
"""

from __future__ import annotations

import ast

import pytest

from kernelplan.cutlass_src import have_sources
from kernelplan.scaffold import unfinished
from kernelplan.testing import SOURCES_ABSENT

adapter = pytest.importorskip(
    "cute_epilogue.custom_epilogue_dense_gemm.custom_epilogue_dense_gemm",
    reason="cute_epilogue is not installed: run `uv sync --all-packages`",
)


def test_registered():
    from cute_epilogue import KERNELS

    name = "custom_epilogue_dense_gemm"
    cls_name = "CustomEpilogueDenseGemm"
    assert KERNELS[name] == f"{adapter.__name__}:{cls_name}"


@pytest.mark.cutlass_sources
def test_static_compile_for_target_sm():
    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    todo = unfinished(adapter.CustomEpilogueDenseGemm)
    if todo:
        pytest.skip(f"scaffold TODOs still open in {', '.join(todo)}: fill them in")
    plan = adapter.CustomEpilogueDenseGemm()
    problem = plan.check_problems()[0]
    flops, nbytes = plan.flops_bytes(problem)
    assert flops >= 0 and nbytes > 0
    try:
        report = plan.run_static(problem, plan.default_config(problem), use_cache=False)
    except NotImplementedError as e:
        if "TODO(scaffold)" not in str(e):
            raise
        pytest.skip(str(e))  # a config value the example does not give
    assert report["arch"] == plan.target_sm[0]
    assert report["registers"] and report["cubin_bytes"] > 0
    assert report["mma_mnemonics"], "a tcgen05 GEMM with no UTC*MMA: not the main kernel"
    # the committed static record of the defaults (tf32, 1-CTA, 148 SMs assumed) reproduces
    assert report["registers"] == 70 and report["dynamic_smem_bytes"] == 230400
    assert report["max_active_clusters"] == 148 and report["sm_count"] == 148


def _body(fn: ast.FunctionDef) -> list[str]:
    """The statements of a function, docstring left out, as ast dumps."""

    stmts = fn.body
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant):
        stmts = stmts[1:]
    return [ast.dump(s) for s in stmts]


@pytest.mark.cutlass_sources
def test_epilogue_is_upstreams():
    """The adapter restates the epilogue local to upstream's run(): same parameters, same
    statements (read with ast; nothing is imported)."""
    import inspect
    import textwrap

    from kernelplan.cutlass_src import example_path

    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    tree = ast.parse(example_path(adapter.CustomEpilogueDenseGemm.source).read_text())
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    up = next(n for n in ast.walk(run) if isinstance(n, ast.FunctionDef) and n.name == "epilogue")
    mine = ast.parse(textwrap.dedent(inspect.getsource(adapter.epilogue))).body[0]
    assert [a.arg for a in mine.args.args] == [a.arg for a in up.args.args]
    assert _body(mine) == _body(up)
    assert [a.arg for a in up.args.args][1:] == [s.upper() if len(s) == 1 else s
                                                  for s in adapter.SUPPLEMENTAL]  # fmt: skip


def test_an_implementation_of_the_gemm_workload():
    """The GEMM workload's problem plus the epilogue's scalars; what it does not take is one
    ShapeError line; a workload problem it takes gets upstream's scalars."""
    from kernelplan import ShapeError
    from kernelplan.workloads.gemm import GEMM, GemmProblem

    plan = adapter.CustomEpilogueDenseGemm()
    assert plan.workload is GEMM
    p = plan.check_problems()[0]
    assert isinstance(p, adapter.EpilogueGemmProblem) and isinstance(p, GemmProblem)
    assert (p.m, p.n, p.k, p.l, p.dtype, p.c_dtype) == (256, 256, 512, 1, "tfloat32", "float32")
    assert (p.alpha, p.beta, p.x_factor, p.init) == (1.0, 0.0, 3.0, "randint")
    odd = plan.check_problems()[1]
    assert odd.beta and odd.x_factor and odd.l == 2 and odd.m % 128 and odd.n % 128
    q = plan.problem(GemmProblem(64, 64, 64, dtype="float16"))
    assert q.alpha == 1.0 and q.c_dtype == "float16"
    assert plan.problem({"m": 8, "n": 8, "k": 8, "beta": 2}).beta == 2.0
    with pytest.raises(ShapeError, match="--dtype"):
        plan.problem(m=8, n=8, k=8, dtype="float32")
    with pytest.raises(ShapeError, match="--c_dtype"):
        plan.problem(m=8, n=8, k=8, c_dtype="float8_e4m3fn")
    with pytest.raises(ShapeError, match="unknown problem key"):
        plan.problem(m=8, n=8, k=8, a_major="m")
    legacy = dict(m=256, n=256, k=512, l=1, alpha=1.0, beta=0.0, x_factor=3.0, a_major="k",
                  b_major="k", cd_major="n", ab_dtype="TFloat32")  # fmt: skip
    legacy.update({f"{t}_dtype": "Float32" for t in "cdxy"})
    assert plan.problem(legacy) == p  # a record written before the port
    with pytest.raises(ShapeError, match="TN only"):
        plan.problem({**legacy, "a_major": "m"})
    cfg = plan.config(p, {"mma_tiler_mn": "256x128", "cluster_shape_mn": "2,1",
                          "use_2cta_instrs": "true"})  # fmt: skip
    assert cfg == adapter.EpilogueGemmConfig((256, 128), (2, 1), True)
    assert [c.use_2cta_instrs for c in plan.autotune_configs(p)] == [False, False, True, True]


def test_tensors_reference_and_flops_on_the_cpu():
    """TN operands as the workload lays them out (A, B K-major; C, D, X, Y N-major, (L, M, N)
    storage), TFloat32 as the element type of float32 storage; the reference against a direct
    loop over one batch, in the storage layout; the FLOPs count the GEMM."""
    import torch

    plan = adapter.CustomEpilogueDenseGemm()
    problem = plan.problem(m=8, n=12, k=4, l=2, beta=0.5, x_factor=-1.0, dtype="tfloat32",
                           c_dtype="float32", init="randint")  # fmt: skip
    specs = plan.tensor_specs(problem)
    assert set(specs) == {"a", "b", "c", "d", "x", "y"}
    assert plan.output_names(problem) == ["d", "y"]
    assert specs["a"].shape == (2, 8, 4) and specs["a"].perm == (1, 2, 0)
    assert specs["a"].dtype == "float32" and specs["a"].element == "TFloat32"
    assert specs["c"].shape == (2, 8, 12) and specs["c"].element is None
    inputs = plan.prepare_inputs(problem, seed=0, device="cpu")
    assert inputs["a"].abs().max() <= 2
    ref = plan.reference(problem, inputs)
    assert all(ref[n].shape == specs[n].shape for n in ("d", "y"))
    a, b, c, x = (inputs[n][1] for n in "abcx")
    acc = a @ b.T
    assert torch.equal(ref["y"][1], acc)
    assert torch.equal(ref["d"][1], torch.relu(acc + 0.5 * c) - x)
    low = plan.reference_lowp(problem.replace(c_dtype="float16"), inputs)
    assert torch.equal(low["y"], ref["y"].half().float())
    assert plan.flops_bytes(problem)[0] >= 2 * 8 * 12 * 4 * 2


@pytest.mark.cutlass_sources
def test_config_upstream_rejects_is_a_shape_error():
    from kernelplan import ShapeError

    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    plan = adapter.CustomEpilogueDenseGemm()
    problem = plan.check_problems()[0]
    config = plan.default_config(problem).replace(mma_tiler_mn=(96, 128))
    with pytest.raises(ShapeError, match="MMA tile M"):
        plan.plan(problem, config, plan.target())
