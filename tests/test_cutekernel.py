"""The in-house kernel through CuteKernel and the static path, for sm_90a and sm_80 on the CPU."""

import pytest

from kernelplan import CuteKernel, TensorSpec
from kernelplan.kernel import STREAM, Const
from kernelplan.timing import TimingError, benchmark, is_uncompiled_jit

from .inhouse_axpby import AxpbyPlan, axpby


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_inhouse_kernel_compiles_for_arch_on_cpu_through_cutekernel(arch):
    plan = AxpbyPlan()
    prob = {"n": 1000, "dtype": "float32"}
    kernel = plan.plan(prob, {})
    assert isinstance(kernel, CuteKernel)
    st = plan.run_static(prob, {}, arch=arch)
    assert st["arch"] == arch
    assert st["registers"] and st["registers"] > 0
    assert st["categories"].get("ldg_stg", 0) >= 3  # two loads, one store
    assert st["categories"].get("mma", 0) == 0


def test_fake_args_mirror_specs_stream_and_consts():
    spec = TensorSpec((4, 8, 16), "float16", perm=(1, 2, 0), leading_dim=1)
    assert spec.view_shape() == (8, 16, 4)
    assert spec.view_stride() == (16, 1, 128)
    k = CuteKernel("t", axpby, lambda t: (t["a"], Const(7), STREAM), {"a": spec}, key=("t",))
    args = k.fake_args()
    assert len(args) == 3 and args[1] == 7  # Const unwrapped for the compile
    assert type(args[2]).__name__ == "_FakeStream"


def test_uncompiled_jit_function_is_never_timed():
    assert is_uncompiled_jit(axpby)
    assert not is_uncompiled_jit(lambda: None)
    with pytest.raises(TimingError, match="uncompiled"):
        benchmark([axpby])
