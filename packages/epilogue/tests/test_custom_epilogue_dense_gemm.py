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
    flops, nbytes = plan._algorithmic_flops_bytes(problem)
    assert flops >= 0 and nbytes > 0
    try:
        report = plan.run_static(problem, plan.default_config(problem))
    except NotImplementedError as e:
        if "TODO(scaffold)" not in str(e):
            raise
        pytest.skip(str(e))  # a config value the example does not give
    assert report["arch"] == plan.target_sm[0]
    assert report["registers"] and report["cubin_bytes"] > 0
    assert report["mma_mnemonics"], "a tcgen05 GEMM with no UTC*MMA: not the main kernel"


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


@pytest.mark.parametrize("majors", [("k", "k", "n"), ("m", "n", "m")])
def test_reference_in_storage_layout(majors):
    """The reference, on the CPU, in each output's storage layout, against a direct loop over
    one batch; the FLOPs count the GEMM."""
    import torch

    plan = adapter.CustomEpilogueDenseGemm()
    a_major, b_major, cd_major = majors
    problem = {
        **adapter.PROBLEM_DEFAULTS,
        **dict(m=8, n=12, k=4, l=2, beta=0.5, x_factor=-1.0),
        **dict(a_major=a_major, b_major=b_major, cd_major=cd_major),
    }
    specs = plan.tensor_specs(problem)
    gen = torch.Generator().manual_seed(0)
    inputs = {n: s.allocate(gen, "cpu") for n, s in specs.items()}
    ref = plan.reference_fn(problem, inputs)
    view = {n: specs[n].kernel_view(t) for n, t in {**inputs, **ref}.items()}
    a, b, c, x = (view[n][..., 1] for n in "abcx")
    acc = a @ b.T
    assert torch.equal(view["y"][..., 1], acc)
    assert torch.equal(view["d"][..., 1], torch.relu(acc + 0.5 * c) - x)
    assert all(ref[n].shape == specs[n].shape for n in ("d", "y"))
    assert plan._algorithmic_flops_bytes(problem)[0] >= 2 * 8 * 12 * 4 * 2


@pytest.mark.cutlass_sources
def test_config_upstream_rejects_is_a_shape_error():
    from kernelplan import ShapeError

    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    plan = adapter.CustomEpilogueDenseGemm()
    problem = plan.check_problems()[0]
    with pytest.raises(ShapeError, match="MMA tile M"):
        plan.plan(problem, {**plan.default_config(problem), "mma_tiler_mn": [96, 128]})
