"""Adapter: class ``GroupedMixedInputGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm.py`` (int4 A with scales, or
int8 / uint8 A, converted to B's bf16/fp16 on the way to the tcgen05 MMA; groups laid along
N: one A (and scale) slice per group, B's and C's columns of all groups one after the other,
a ``cumsum`` tensor of the group offsets searched by a scheduler warp for each tile).

An implementation of the GEMM workload on :class:`~cute_mixed_input.formats.
GroupedMixedInputGemmProblem`: the group sizes are a stated part of the problem (a vector, or
a count and a seed that draw it), where upstream draws them from torch's global generator
(``create_cumsum_tensor``); a vector that does not sum to N is refused in one line.

No tensors of pointers: the example takes CuTe tensors (A, its scales, B, ``cumsum``, C;
``__call__`` L423-L432), so every argument is an ordinary :class:`~kernelplan.TensorSpec`.

Upstream: ``run()`` L2217-L2430 builds the kernel (L2291, ``group_count`` = L and
``shuffle_a`` from ``is_shuffle_a`` and CUDA 13.1+, L2269-L2289) and compiles at L2340 with
no options except, on CUDA 13.1 exactly, a ptxas control file
(``get_advanced_compiler_control_path``, L2190-L2214; this DSL is CUDA 13.4, and the file is
not in the pinned tree's sparse checkout). Not carried: upstream's default M-major A
(``--a_major m``, L2472; this is the workload's TN, K-major A, as in ``mixed_input_gemm``),
N-major B, M-major C.

Target SM: sm_100a (tcgen05, TMEM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from cute_gemm.blackwell_common import Format, Sm100FormatGemmPlan

from kernelplan import Config, CuteKernel, ShapeError, Target, dtypes
from kernelplan.cutlass_src import load_example

from .. import formats as fm
from ..formats import GroupedMixedInputGemmProblem
from ..mixed_input_gemm.mixed_input_gemm import MixedInputGemm

#: upstream's CLI defaults (L2446-L2490): --mnkl 128,128,128,1 (one group of 128 columns),
#: Int4 A, BFloat16 B and C, scale granularity (1, 128)
UPSTREAM_DEFAULT = GroupedMixedInputGemmProblem(groups=1)


@dataclass(frozen=True)
class GroupedMixedInputGemmConfig(Config):
    """What GroupedMixedInputGemmKernel is built with; the defaults are the example's."""

    # --acc_dtype default (L2471)
    acc_dtype: str = "Float32"
    # --use_2cta_instrs default (L2453-L2457)
    use_2cta_instrs: bool = False
    # --mma_tiler_mnk default (L2447-L2449)
    mma_tiler_mnk: tuple[int, ...] = (128, 128, 128)
    # --cluster_shape_mn default (L2450-L2452)
    cluster_shape_mn: tuple[int, ...] = (1, 1)


class GroupedMixedInputGemm(Sm100FormatGemmPlan):
    """GroupedMixedInputGemmKernel (sm_100a), imported from
    ``cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm.py``."""

    name: ClassVar[str] = "grouped_mixed_input_gemm"
    package: ClassVar[str] = "mixed-input"
    problem_type = GroupedMixedInputGemmProblem
    source: ClassVar[str] = "cute/blackwell/kernel/mixed_input_gemm/grouped_mixed_input_gemm.py"
    # sm_100a: blackwell_helpers (L42), tcgen05 (L46), tcgen05.CtaGroup.TWO (L214)
    config_type = GroupedMixedInputGemmConfig
    fmt = Format.of(fm, "grouped_")
    #: dynamic layouts and run-time cumsum values: M, N, K and the group sizes are not
    #: compiled in; the group count is (``group_count`` and cumsum's static layout)
    runtime_problem_fields: ClassVar[tuple[str, ...]] = (
        "m",
        "n",
        "k",
        "l",
        "init",
        "group_sizes",
        "group_seed",
    )
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL mixed-input grouped GEMM (int4/int8 A, groups along N), sm_100a"
    )

    def supports(self, problem: GroupedMixedInputGemmProblem) -> None:
        """Upstream's alignment rule, as for ``mixed_input_gemm`` (16 bytes of each contiguous
        extent, the scales' M included), one line."""
        MixedInputGemm.supports(self, problem)

    def supports_config(
        self, problem: GroupedMixedInputGemmProblem, config: GroupedMixedInputGemmConfig
    ) -> None:
        """Upstream's ``can_implement`` (L2142-L2187) on the pair, one line."""
        import cutlass

        p = problem
        ok = load_example(self.source).GroupedMixedInputGemmKernel.can_implement(
            (p.m, p.n, p.k, p.groups),
            *(cutlass.dtype(fm.CUTE[d]) for d in (p.a_dtype, p.dtype, p.c_dtype)),
            "k",
            "k",
            "n",
            1 if p.scaled else 0,
            p.scale_granularity_k,
            tuple(config.mma_tiler_mnk),
            tuple(config.cluster_shape_mn),
            config.use_2cta_instrs,
        )
        if not ok:
            raise ShapeError(
                f"{self.name}: upstream can_implement refuses {config.label()} for "
                f"{p.label()} (scale group a multiple of the MMA tile K, tile and cluster)"
            )

    def default_problem(self) -> GroupedMixedInputGemmProblem:
        return UPSTREAM_DEFAULT

    def check_problems(self) -> list[GroupedMixedInputGemmProblem]:
        """Upstream's default; int4, four drawn groups, two scale groups; a stated vector
        with an empty group; int8 convert-only."""
        return [
            UPSTREAM_DEFAULT,
            UPSTREAM_DEFAULT.replace(m=192, n=512, k=512, groups=4, scale_granularity_k=256),
            UPSTREAM_DEFAULT.replace(m=256, n=392, k=256, groups=None, group_sizes=(136, 0, 256)),
            UPSTREAM_DEFAULT.replace(
                m=256, n=512, k=256, groups=3, a_dtype="int8", scale_granularity_k=0
            ),
        ]

    def profile_problems(self) -> list[GroupedMixedInputGemmProblem]:
        """Upstream's convert-scale usage line --mnkl 1024,8192,6144,16 (16 groups of about
        8192 columns: N 131072 here, drawn with seed 0), groups of 256 along K."""
        return [
            UPSTREAM_DEFAULT.replace(
                m=1024, n=8192 * 16, k=6144, groups=16, scale_granularity_k=256
            )
        ]

    def plan(
        self,
        problem: GroupedMixedInputGemmProblem,
        config: GroupedMixedInputGemmConfig,
        target: Target,
    ) -> CuteKernel:
        p = problem
        shuffle_a = fm.shuffled(p)  # upstream L2269-L2289
        mod = load_example(self.source)
        kernel = mod.GroupedMixedInputGemmKernel(
            1 if p.scaled else 0,
            p.scale_granularity_k,
            dtypes.cute_type(config.acc_dtype),
            config.use_2cta_instrs,
            tuple(config.mma_tiler_mnk),
            tuple(config.cluster_shape_mn),
            p.groups,
            shuffle_a,
        )
        control = mod.get_advanced_compiler_control_path()
        options = f"--ptxas-options '--apply-controls={control}'" if control else None
        return self.persistent(
            p,
            kernel,
            lambda t: (t["a"], t.get("a_scale"), t["b"], t["cumsum"], t["c"]),
            config.cluster_shape_mn,
            target,
            options=options,
            meta={
                "shuffle_a": shuffle_a,
                "group_sizes": list(p.group_sizes),
                "advanced_compiler_control": control,
            },
        )
