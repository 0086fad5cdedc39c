"""The in-house kernel through CuteKernel and the static path, for sm_90a and sm_80 on the CPU."""

import pytest

from kernelplan import CuteKernel, TensorSpec
from kernelplan.kernel import STREAM, Const
from kernelplan.timing import TimingError, benchmark, is_uncompiled_jit

from .inhouse_axpby import AxpbyPlan, axpby


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_inhouse_kernel_compiles_for_arch_on_cpu_through_cutekernel(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))  # a real compile
    plan = AxpbyPlan()
    prob = plan.problem(n=1000)
    cfg = plan.default_config(prob)
    target = plan.target(arch)
    kernel = plan.kernel(prob, cfg, target)
    assert isinstance(kernel, CuteKernel)
    st = plan.run_static(prob, cfg, target)
    assert st["arch"] == arch and st["cache"]["hit"] is False
    assert st["registers"] and st["registers"] > 0
    assert st["categories"].get("ldg_stg", 0) >= 3  # two loads, one store
    assert st["categories"].get("mma", 0) == 0


def test_fake_args_mirror_specs_stream_and_consts():
    spec = TensorSpec((4, 8, 16), "float16", perm=(1, 2, 0), leading_dim=1)
    assert spec.view_shape() == (8, 16, 4)
    assert spec.view_stride() == (16, 1, 128)
    k = CuteKernel("t", axpby, lambda t: (t["a"], Const(7), STREAM), {"a": spec})
    args = k.fake_args()
    assert len(args) == 3 and args[1] == 7  # Const unwrapped for the compile
    assert type(args[2]).__name__ == "_FakeStream"


def test_uncompiled_jit_function_is_never_timed():
    assert is_uncompiled_jit(axpby)
    assert not is_uncompiled_jit(lambda: None)
    with pytest.raises(TimingError, match="uncompiled"):
        benchmark([axpby])


def _key(plan, problem, config=None, arch="sm_80"):
    config = config or plan.default_config(problem)
    return plan.kernel(problem, config, plan.target(arch)).key


def test_compile_key_is_derived_from_config_problem_target_and_specs():
    plan = AxpbyPlan()
    prob = plan.problem(n=1000)
    base = _key(plan, prob)
    assert base == _key(plan, plan.problem(n=1000)), "the key must be deterministic"
    # two configs -> two keys
    assert _key(plan, prob, plan.config(prob, {"tile_mn": "128,128"})) != base
    assert _key(plan, prob, plan.config(prob, {"fast": "true"})) != base
    # same problem differing only in a runtime problem field (n: a dynamic extent) -> one key
    assert "n" in AxpbyPlan.runtime_problem_fields
    assert _key(plan, plan.problem(n=1 << 20)) == base
    # a field the compiled code specialises on (alpha: not a runtime field) -> another key
    assert _key(plan, plan.problem(n=1000, alpha=2.0)) != base
    # the target SM
    assert _key(plan, prob, arch="sm_90a") != base

    # every tensor's signature: another layout is another key
    class Static(AxpbyPlan):
        def tensor_specs(self, problem):
            return {
                n: TensorSpec(s.shape, s.dtype, role=s.role)
                for n, s in super().tensor_specs(problem).items()
            }

    assert _key(Static(), prob) != base
    assert _key(Static(), plan.problem(n=2000)) != _key(Static(), prob)  # static shapes differ

    # and the implementation: the same kernel under another class name
    class Other(AxpbyPlan):
        pass

    assert _key(Other(), prob) != base


def test_a_runtime_field_shares_the_compiled_function(monkeypatch, tmp_path):
    """Two problems differing only in n reach cute.compile once (the DSL's compile is
    replaced: this is the key's effect, not the DSL's own caching)."""
    import cutlass.cute as cute

    calls = []
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))  # the on-disk caches too
    monkeypatch.setattr(CuteKernel, "_cache", {})
    monkeypatch.setattr(cute, "compile", lambda fn, *a, **k: calls.append(a) or "compiled")
    plan = AxpbyPlan()
    for n in (1000, 4096):
        prob = plan.problem(n=n)
        k = plan.kernel(prob, plan.default_config(prob), plan.target())
        assert k.compile(k.fake_args()) == "compiled"
    assert len(calls) == 1


def test_a_build_chosen_from_a_runtime_field_is_its_own_compile(monkeypatch, tmp_path):
    """A plan may pick what to build from a field the code does not specialise on (session 29:
    mla_decode_sm90's automatic step was 62 at h=128 (32, 4096) and 61 at (128, 4096), b and t
    being runtime fields). The plan's ``build_label`` says what is built and is part of the
    key, so the second problem reaches cute.compile again instead of launching the first's
    function; a problem with the same build still shares it."""
    import cutlass.cute as cute

    calls = []
    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(CuteKernel, "_cache", {})
    monkeypatch.setattr(
        cute, "compile", lambda fn, *a, **k: calls.append(a) or f"build {len(calls)}"
    )

    class Chooser(AxpbyPlan):
        def build_label(self, problem, config, target=None):
            return "wide" if problem.n > 2048 else "narrow"

    plan = Chooser()
    got = []
    for n in (1000, 4096, 1500):
        prob = plan.problem(n=n)
        k = plan.kernel(prob, plan.default_config(prob), plan.target())
        got.append(k.compile(k.fake_args()))
    assert got == ["build 1", "build 2", "build 1"] and len(calls) == 2


def test_setup_fills_inputs_before_bind_converts_them(monkeypatch):
    """``setup`` runs once per bind, on the inputs, before the CuTe arguments are made: what
    it writes (a host-planned work list) is what the kernel receives."""
    seen = []
    spec = TensorSpec((4,), "int32", init="zeros")

    def setup(inputs):
        inputs["w"][:] = 3
        seen.append("setup")

    k = CuteKernel("t", axpby, lambda t: (t["w"], STREAM), {"w": spec}, setup=setup)
    monkeypatch.setattr(k, "cute_args", lambda inputs: (seen.append(int(inputs["w"].sum())), ())[1])
    monkeypatch.setattr(k, "compile", lambda args: None)
    monkeypatch.setattr(k, "current_stream", lambda: None)  # no GPU here
    import torch

    k.bind({"w": torch.zeros(4, dtype=torch.int32)})
    assert seen == ["setup", 12]
