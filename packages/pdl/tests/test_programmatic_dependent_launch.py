"""pdl/programmatic_dependent_launch: registered, and compiled for its target SM on the CPU.

The compile test is skipped, with the reason, while the adapter still has scaffold TODOs or
the CUTLASS sources are absent; once they are filled in it must pass on any machine.
"""

from __future__ import annotations

import pytest

from kernelplan.cutlass_src import have_sources
from kernelplan.scaffold import unfinished
from kernelplan.testing import SOURCES_ABSENT

adapter = pytest.importorskip(
    "cute_pdl.programmatic_dependent_launch.programmatic_dependent_launch",
    reason="cute_pdl is not installed: run `uv sync --all-packages`",
)


def test_registered():
    from cute_pdl import KERNELS

    name = "programmatic_dependent_launch"
    cls_name = "ProgrammaticDependentLaunch"
    assert KERNELS[name] == f"{adapter.__name__}:{cls_name}"


@pytest.mark.cutlass_sources
def test_static_compile_for_target_sm():
    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    todo = unfinished(adapter.ProgrammaticDependentLaunch)
    if todo:
        pytest.skip(f"scaffold TODOs still open in {', '.join(todo)}: fill them in")
    plan = adapter.ProgrammaticDependentLaunch()
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
    # the committed record with 64-bit fake strides (2026-11-29T14-34-39Z-...-ac1f56) reproduces
    assert report["registers"] == 62 and report["instructions"] == 485
    assert [f["registers"] for f in report["functions"]] == [58]
    assert report["meta"] == {
        "use_pdl": True,
        "tvm_ffi": True,
        "kernels_per_launch": 2,
        "cuda_graph": True,
    }


def test_workload_definition():
    """The package's own workload (two dependent adds), its reference, FLOPs/bytes and the
    configs, on the CPU (no DSL needed)."""
    import torch

    from kernelplan import ShapeError
    from kernelplan.workloads.add_chain import ADD_CHAIN, AddChainProblem

    plan = adapter.ProgrammaticDependentLaunch()
    assert plan.workload is ADD_CHAIN
    problem = plan.problem(M=3, N=5)
    assert problem == AddChainProblem(3, 5) and problem.to_dict() == {"M": 3, "N": 5}
    with pytest.raises(ShapeError, match="--M"):
        plan.problem(M=0)
    inputs = plan.prepare_inputs(problem, seed=0, device="cpu")
    ref = plan.reference(problem, inputs)
    assert set(ref) == set(plan.output_names(problem)) == {"w", "y"}
    assert torch.equal(ref["y"], inputs["u"] + inputs["v"] + inputs["x"])
    assert plan.flops_bytes(problem) == (2 * 15, 20 * 15)
    config = plan.default_config(problem)
    assert config == adapter.PdlConfig(use_pdl=True, cuda_graph=True)
    assert plan.config(problem, {"cuda_graph": "false"}).cuda_graph is False
    assert [c.use_pdl for c in plan.autotune_configs(problem)] == [True, False]
    assert any(p.M % 16 and p.N % 128 for p in plan.check_problems())


def test_graph_replay_is_what_the_kernel_says(monkeypatch):
    """The config's cuda_graph reaches the timing (whatever the caller asked) and the kernel's
    meta (so a record can say how the samples were taken)."""
    from kernelplan import KernelPlan

    seen = []
    monkeypatch.setattr(KernelPlan, "run_benchmark", lambda self, p, c, **kw: seen.append(kw))
    plan = adapter.ProgrammaticDependentLaunch()
    problem = plan.check_problems()[0]
    on, off = adapter.PdlConfig(cuda_graph=True), adapter.PdlConfig(cuda_graph=False)
    plan.run_benchmark(problem, on, cuda_graph=False)
    plan.run_benchmark(problem, off)
    plan.run_benchmark(problem, off, cuda_graph=True)
    assert [kw["cuda_graph"] for kw in seen] == [True, False, True]


@pytest.mark.gpu
@pytest.mark.parametrize("use_pdl", [True, False])
def test_check_on_gpu(use_pdl):
    """On an SM 90+ GPU: the sequence is right with and without PDL, and a skipped launch
    fails the check (the poison is caught)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs a CUDA GPU of SM 90 or newer")
    if not have_sources():
        pytest.skip(SOURCES_ABSENT)
    plan = adapter.ProgrammaticDependentLaunch()
    for problem in plan.check_problems():
        config = plan.default_config(problem).replace(use_pdl=use_pdl)
        ok, results, _ = plan.run_check(problem, config)
        assert ok, [r.line() for r in results]
    ok, _, _ = plan.run_check(plan.check_problems()[0], config, fault="skip-launch")
    assert not ok
