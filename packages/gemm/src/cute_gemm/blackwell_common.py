"""What the five CUTLASS Blackwell (sm_100a, tcgen05 + TMEM) dense GEMMs share: their typed
configs (one per distinct upstream constructor) and the adapter base.

Upstream, ``cute/blackwell/kernel/dense_gemm/``: ``dense_gemm.py`` and
``dense_gemm_software_pipeline.py`` (class ``DenseGemmKernel``, one CTA per output tile),
``dense_gemm_persistent.py`` and ``dense_gemm_persistent_prefetch.py``
(``PersistentDenseGemmKernel``, a static persistent tile scheduler over a compile-time
``max_active_clusters``), ``dense_gemm_persistent_dynamic.py`` (``PersistentDenseGemmKernel``,
a CLC dynamic scheduler: no cluster count compiled in). Every constructor starts with
``(acc_dtype, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn, use_tma_store)``; the prefetch
one adds ``prefetch_dist``, the dynamic one ``swizzle_size, raster_along, split_k``. Every
``__call__`` takes the (M, K, L), (N, K, L), (M, N, L) tensors of the GEMM workload
(:data:`kernelplan.workloads.gemm.GEMM`), then (for the static-persistent ones)
``max_active_clusters``, then the stream.

The workload is fp16 (or bf16) A/B, fp32 accumulate, C in the A/B dtype: the examples' CLI
defaults are tf32 in / fp32 out, but fp16 is the workload the Hopper rows and the tutorial
GEMMs run, so the rows compare like with like. The default config is the one the examples'
``run()`` functions default to (MMA tile 256x256, cluster 2x1, 2-CTA MMA, TMA-store epilogue);
their CLI defaults (128x128, 1x1, 1-CTA) are in the autotune space.

Config constraints are the ones upstream states and checks before it compiles
(``DenseGemmKernel.is_valid_mma_tiler_and_cluster_shape``, ``dense_gemm.py`` L1348, and
``is_valid_epilog_store_option``, L1432; the persistent files raise the same from
``check_mma_tiler_and_cluster_shape`` and ``check_epilog_store_option``, the dynamic one with
its split-K rules at ``dense_gemm_persistent_dynamic.py`` L1575-L1626 and L1684-L1714, all
under ``examples/python/CuTeDSL`` at the pinned commit). Checking them here turns a trace-time
error into one line. What depends on the config alone is checked once, in ``validate()``;
what depends on the problem too (the epilogue without TMA store has no bounds check) is
checked by :meth:`BlackwellDenseGemmPlan.fits`, from :meth:`~BlackwellDenseGemmPlan.config`
and again from :meth:`~BlackwellDenseGemmPlan.plan`.

The other sm_100a GEMM-family packages (blockwise, mixed-input, blockscaled, epilogue) build
their adapters on :class:`Sm100GemmPlan` (the persistent launch with the
``max_active_clusters`` the target allows; :class:`Sm100FormatGemmPlan`: on a problem format
of their own) and share :func:`check_16_byte_extents`
and, for the grouped GEMMs, :func:`resolve_group_sizes`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple

from kernelplan import STREAM, Config, Const, CuteKernel, KernelPlan, ShapeError, Target
from kernelplan import dtypes as _dtypes
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.workloads.gemm import GEMM, GemmProblem

from .common import GemmPlan


def _pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


def _x(v) -> str:
    return "x".join(str(i) for i in v)


@dataclass(frozen=True)
class BlackwellGemmConfig(Config):
    """The common five constructor arguments (the accumulator is always fp32, so four):
    ``DenseGemmKernel`` (``dense_gemm``, ``dense_gemm_software_pipeline``) and
    ``dense_gemm_persistent``'s ``PersistentDenseGemmKernel``.

    Args:
        mma_tiler_mn: MMA tile (M, N); M in 128/256 with ``use_2cta``, 64/128 without; N a
            multiple of 32 in 32..256.
        cluster_mn: cluster shape (M, N): powers of two, at most 16 CTAs; M even with
            ``use_2cta``.
        use_2cta: the 2-CTA tcgen05 MMA (a CTA pair shares one MMA tile).
        use_tma_store: TMA-store epilogue (bounds-checked); without it M and N must be
            multiples of the CTA tile.

    Raises:
        ShapeError: a shape upstream rejects (one line naming the flag).
    """

    mma_tiler_mn: tuple[int, int] = (256, 256)
    cluster_mn: tuple[int, int] = (2, 1)
    use_2cta: bool = True
    use_tma_store: bool = True

    def validate(self) -> None:
        t, c, two = self.mma_tiler_mn, self.cluster_mn, self.use_2cta
        if len(t) != 2 or len(c) != 2:
            raise ShapeError("--config mma_tiler_mn and cluster_mn take two values (MxN)")
        allowed_m = (128, 256) if two else (64, 128)
        if t[0] not in allowed_m:
            raise ShapeError(
                f"--config mma_tiler_mn M={t[0]} unsupported with use_2cta={two}; M in {allowed_m}"
            )
        if t[1] not in range(32, 257, 32):
            raise ShapeError(
                f"--config mma_tiler_mn N={t[1]} unsupported; a multiple of 32 in 32..256"
            )
        if two and c[0] % 2:
            raise ShapeError(f"--config cluster_mn: use_2cta needs an even cluster M (got {c[0]})")
        if not all(_pow2(v) for v in c) or self.ctas_per_cluster() > 16:
            raise ShapeError(
                f"--config cluster_mn {_x(c)} unsupported; powers of two, at most 16 CTAs"
                + self._cluster_note()
            )

    def _cluster_note(self) -> str:
        return ""

    def ctas_per_cluster(self) -> int:
        """CTAs of one launched cluster (what may not exceed 16)."""
        return self.cluster_mn[0] * self.cluster_mn[1]

    def cta_tile_mn(self) -> tuple[int, int]:
        """The output tile one CTA writes (a 2-CTA MMA tile is split along M)."""
        return self.mma_tiler_mn[0] // (2 if self.use_2cta else 1), self.mma_tiler_mn[1]

    def upstream_args(self) -> tuple:
        """The constructor's arguments after ``acc_dtype``, in upstream's order."""
        return (self.use_2cta, self.mma_tiler_mn, self.cluster_mn, self.use_tma_store)


@dataclass(frozen=True)
class BlackwellPrefetchGemmConfig(BlackwellGemmConfig):
    """:class:`BlackwellGemmConfig` plus ``prefetch_dist`` of ``dense_gemm_persistent_prefetch``:
    TMA prefetch into L2 this many k-tiles ahead of the loads; None = as many as there are A/B
    stages (upstream's default), 0 = off."""

    prefetch_dist: int | None = None

    def validate(self) -> None:
        super().validate()
        d = self.prefetch_dist
        if d is not None and (isinstance(d, bool) or not isinstance(d, int) or d < 0):
            raise ShapeError(f"--config prefetch_dist must be none or an integer >= 0 (got {d!r})")

    def upstream_args(self) -> tuple:
        return (*super().upstream_args(), self.prefetch_dist)


@dataclass(frozen=True)
class BlackwellDynamicGemmConfig(BlackwellGemmConfig):
    """:class:`BlackwellGemmConfig` plus the CLC scheduler's tile swizzle and raster order and
    the cluster split-K of ``dense_gemm_persistent_dynamic`` (the split-K slices of one tile
    run as the cluster's Z extent and reduce through distributed shared memory).

    Raises:
        ShapeError: besides the common rules, split_k > 1 with a TMA-store epilogue, a
            swizzle, raster along N, or a per-thread accumulator share it does not divide
            (upstream's ``check_mma_tiler_and_cluster_shape``).
    """

    swizzle_size: int = 1
    raster_along: Literal["m", "n"] = "m"
    split_k: int = 1

    def validate(self) -> None:
        for key in ("swizzle_size", "split_k"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ShapeError(f"--config {key} must be a positive integer (got {v!r})")
        if self.raster_along not in ("m", "n"):
            raise ShapeError(f"--config raster_along must be m or n (got {self.raster_along!r})")
        super().validate()
        if self.split_k > 1:
            if self.use_tma_store:
                raise ShapeError("--config split_k > 1 needs use_tma_store=false")
            if self.swizzle_size != 1 or self.raster_along != "m":
                raise ShapeError("--config split_k > 1 needs swizzle_size=1 and raster_along=m")
            cta_m, cta_n = self.cta_tile_mn()
            per_thread = cta_m * cta_n // 128  # the 128 epilogue threads' accumulator share
            if per_thread % self.split_k:
                raise ShapeError(
                    f"--config split_k={self.split_k} must divide the {per_thread} accumulator "
                    f"elements per epilogue thread of a {cta_m}x{cta_n} CTA tile"
                )

    def ctas_per_cluster(self) -> int:
        return super().ctas_per_cluster() * self.split_k

    def _cluster_note(self) -> str:
        return f" (times split_k={self.split_k})" if self.split_k > 1 else ""

    def upstream_args(self) -> tuple:
        return (*super().upstream_args(), self.swizzle_size, self.raster_along, self.split_k)


#: (mma_tiler_mn, cluster_mn, use_2cta) worth timing on a B200; all accepted upstream
AUTOTUNE_SPACE = (
    ((256, 256), (2, 1), True),
    ((256, 128), (2, 1), True),
    ((256, 256), (2, 2), True),
    ((256, 256), (4, 1), True),
    ((128, 256), (1, 1), False),
    ((128, 128), (1, 1), False),  # the examples' CLI default tile and cluster
)


class BlackwellDenseGemmPlan(GemmPlan):
    """Base of the Blackwell dense GEMM adapters. A subclass sets ``name``, ``source``,
    ``upstream_class``, ``config_type`` (when its constructor takes more than the common
    arguments) and whether it compiles ``max_active_clusters`` in (``static_persistent``)."""

    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16")
    config_type: ClassVar[type[BlackwellGemmConfig]] = BlackwellGemmConfig
    upstream_class: ClassVar[str]
    static_persistent: ClassVar[bool] = False

    # -- configs ---------------------------------------------------------------------------
    def autotune_configs(self, problem: GemmProblem) -> list[BlackwellGemmConfig]:
        out = [
            self.config_type(mma_tiler_mn=t, cluster_mn=c, use_2cta=two)
            for t, c, two in AUTOTUNE_SPACE
        ]
        return [c for c in out if self._fit_error(problem, c) is None]

    def config(self, problem: GemmProblem, overrides=None) -> BlackwellGemmConfig:
        """The default config with ``--config`` items applied, and checked against the
        problem (:meth:`fits`) before anything is loaded or compiled."""
        cfg = super().config(problem, overrides)
        self.fits(problem, cfg)
        return cfg

    def fits(self, problem: GemmProblem, config: BlackwellGemmConfig) -> None:
        """Raises ShapeError (one line) for a config the problem rules out: without
        ``use_tma_store`` the epilogue stores unpredicated, so M and N must be multiples of
        the CTA tile (and, for the dynamic scheduler, the tile counts per cluster multiples of
        ``swizzle_size``)."""
        err = self._fit_error(problem, config)
        if err:
            raise ShapeError(f"{self.name}: {err}")

    @staticmethod
    def _fit_error(problem: GemmProblem, config: BlackwellGemmConfig) -> str | None:
        if config.use_tma_store:
            return None
        cta_m, cta_n = config.cta_tile_mn()
        m, n = problem.m, problem.n
        if m % cta_m or n % cta_n:
            return (
                "without use_tma_store the epilogue has no bounds check: M and N must be "
                f"multiples of the CTA tile {cta_m}x{cta_n} (got {m}x{n}); use "
                "--config use_tma_store=true"
            )
        swizzle = getattr(config, "swizzle_size", 1)
        if swizzle > 1:
            per_m = (m // cta_m) // config.cluster_mn[0]
            per_n = (n // cta_n) // config.cluster_mn[1]
            if per_m % swizzle or per_n % swizzle:
                return (
                    f"without use_tma_store the tiles per cluster ({per_m}x{per_n}) must be "
                    f"multiples of swizzle_size {swizzle}; use --config use_tma_store=true"
                )
        return None

    # -- the kernel ------------------------------------------------------------------------
    def plan(self, problem: GemmProblem, config: BlackwellGemmConfig, target: Target) -> CuteKernel:
        import cutlass

        self.fits(problem, config)
        mod = load_example(self.source)
        gemm = getattr(mod, self.upstream_class)(cutlass.Float32, *config.upstream_args())
        specs = self.tensor_specs(problem)
        if not self.static_persistent:
            return CuteKernel(self.name, gemm, lambda t: (t["a"], t["b"], t["c"], STREAM), specs)
        return persistent_kernel(
            self.name,
            gemm,
            lambda t: (t["a"], t["b"], t["c"]),
            config.ctas_per_cluster(),
            target,
            specs,
        )


# -- shared by the sm_100a GEMM-family adapters of the other packages --------------------------
def persistent_kernel(
    name: str,
    gemm: Any,
    lead: Callable[[Mapping[str, Any]], tuple],
    cluster_size: int,
    target: Target,
    specs: Mapping[str, Any],
    *,
    trail: Callable[[Mapping[str, Any]], tuple] | None = None,
    options: str | None = None,
    meta: Mapping[str, Any] | None = None,
    kernel_type: type[CuteKernel] = CuteKernel,
) -> CuteKernel:
    """The kernel of a static-persistent upstream GEMM: its ``__call__`` takes ``lead(t)``,
    then the compile-time ``max_active_clusters`` (what the target allows for clusters of
    ``cluster_size`` CTAs, :func:`kernelplan.device.max_active_clusters`), the stream, then
    ``trail(t)``. The record's meta says the number and where it came from, then ``meta``."""
    n, why = max_active_clusters(cluster_size, target)

    def args(t: Mapping[str, Any]) -> tuple:
        return (*lead(t), Const(n), STREAM, *(trail(t) if trail else ()))

    return kernel_type(
        name,
        gemm,
        args,
        specs,
        options=options,
        meta={"max_active_clusters": n, "max_active_clusters_from": why, **(meta or {})},
    )


def check_16_byte_extents(
    name: str,
    extents: Iterable[tuple[str, int, str]],
    bits: Callable[[str], float] = lambda d: _dtypes.dtype(d).bits,
) -> None:
    """Upstream's ``is_valid_tensor_alignment``: each contiguous extent (flag, extent, dtype)
    is 16 bytes of its type (TMA); ``bits`` gives a type's width where kernelplan's table has
    no torch name for it (int4, fp4).

    Raises:
        ShapeError: the first extent that is not, one line.
    """
    for key, extent, dt in extents:
        if extent * bits(dt) % 128:
            raise ShapeError(
                f"{name}: --{key} {extent} is not a multiple of 16 bytes of {dt} (TMA)"
            )


def draw_group_sizes(total: int, groups: int, seed: int, align: int) -> tuple[int, ...]:
    """``groups`` sizes, each a multiple of ``align`` (zero allowed), summing to ``total``; a
    function of its arguments only: each of the ``total / align`` units goes to a group drawn
    uniformly by ``random.Random(seed)`` (a multinomial draw, as upstream's mixed-input grouped
    example draws its N groups, ``mixed_input_host_utils.py`` ``create_cumsum_tensor``
    L57-L60, there from torch's global generator seeded once per run)."""
    import random

    rng = random.Random(seed)
    counts = [0] * groups
    for _ in range(total // align):
        counts[rng.randrange(groups)] += 1
    return tuple(c * align for c in counts)


def resolve_group_sizes(problem: Any, axis: str, align: int, unit: str, note: str = "") -> None:
    """Sets a grouped problem's ``group_sizes`` (drawn by :func:`draw_group_sizes` from
    ``groups`` and ``group_seed`` when not given) and ``groups`` (their count), the groups
    laid along ``axis`` ("m" or "n") in multiples of ``align`` ``unit`` (why: ``note``).
    Called from the problem's ``validate()``.

    Raises:
        ShapeError: a count, vector or total that does not fit, one line naming the flag.
    """
    total, why = getattr(problem, axis), f" ({note})" if note else ""
    sizes, groups = problem.group_sizes, problem.groups
    if sizes is None:
        g = 1 if groups is None else groups
        if not isinstance(g, int) or g <= 0:
            raise ShapeError(f"--groups must be a positive integer (got {g})")
        if total % align:
            raise ShapeError(
                f"--{axis} {total}: groups are multiples of {align} {unit}{why}, so "
                f"{axis.upper()} is too"
            )
        sizes = draw_group_sizes(total, g, problem.group_seed, align)
    else:
        sizes = tuple(sizes)
        if groups is not None and groups != len(sizes):
            raise ShapeError(f"--groups {groups} but --group_sizes has {len(sizes)} entries")
    if not sizes or any(not isinstance(s, int) or s < 0 or s % align for s in sizes):
        zero = f" ({note}; zero allowed)" if note else " (zero allowed)"
        raise ShapeError(
            f"--group_sizes {list(sizes)}: each a multiple of {align} {unit}{zero}, at least "
            "one group"
        )
    if sum(sizes) != total:
        raise ShapeError(f"--group_sizes {list(sizes)} sums to {sum(sizes)}, not --{axis} {total}")
    object.__setattr__(problem, "group_sizes", sizes)
    object.__setattr__(problem, "groups", len(sizes))


class Format(NamedTuple):
    """Where an adapter's tensors, inputs, reference and counts come from: a package's
    format functions (``prepare_inputs(problem, specs, seed, device)``)."""

    tensor_specs: Callable
    prepare_inputs: Callable
    reference: Callable
    flops_bytes: Callable

    @classmethod
    def of(cls, module: Any, prefix: str = "") -> Format:
        """The four functions ``<prefix>tensor_specs`` ... of a formats module."""
        return cls(*(getattr(module, prefix + f) for f in cls._fields))


class Sm100GemmPlan(KernelPlan):
    """Base of the adapters of CUTLASS's sm_100a (tcgen05, TMEM) GEMM-family examples in the
    packages beside this one: the GEMM workload on sm_100a, M, N, K, L run-time extents (a
    subclass adds what else its compile leaves out) and the static-persistent launch
    (:meth:`persistent`)."""

    workload = GEMM
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "l", "init")
    kernel_type: ClassVar[type[CuteKernel]] = CuteKernel

    def persistent(
        self,
        problem,
        gemm: Any,
        lead: Callable[[Mapping[str, Any]], tuple],
        cluster_shape_mn: Iterable[int],
        target: Target,
        **kw: Any,
    ) -> CuteKernel:
        """:func:`persistent_kernel` for clusters of ``cluster_shape_mn`` on this plan's
        tensors (``specs=`` to give them), ``kernel_type`` and name."""
        specs = kw.pop("specs", None) or self.tensor_specs(problem)
        return persistent_kernel(
            self.name,
            gemm,
            lead,
            math.prod(cluster_shape_mn),
            target,
            specs,
            kernel_type=self.kernel_type,
            **kw,
        )


class Sm100FormatGemmPlan(Sm100GemmPlan):
    """:class:`Sm100GemmPlan` on a problem format of its own: the tensors, inputs, reference
    and counts of ``fmt``, and the low-precision reference (C rounded once to its type)."""

    fmt: ClassVar[Format]

    def tensor_specs(self, problem):
        return self.fmt.tensor_specs(problem)

    def prepare_inputs(self, problem, seed: int, device: str = "cuda") -> dict[str, Any]:
        return self.fmt.prepare_inputs(problem, self.tensor_specs(problem), seed, device)

    def reference(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return self.fmt.reference(problem, inputs)

    def reference_lowp(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The reference with C rounded once to ``c_dtype`` (other outputs as they are)."""
        import torch

        ref = self.reference(problem, inputs)
        return ref | {"c": ref["c"].to(getattr(torch, problem.c_dtype)).float()}

    def flops_bytes(self, problem) -> tuple[float, float]:
        return self.fmt.flops_bytes(problem)
