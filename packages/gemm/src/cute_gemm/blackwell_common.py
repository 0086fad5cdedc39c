"""What the five CUTLASS Blackwell (sm_100a, tcgen05 + TMEM) dense GEMMs share.

Upstream, ``cute/blackwell/kernel/dense_gemm/``: ``dense_gemm.py`` and
``dense_gemm_software_pipeline.py`` (class ``DenseGemmKernel``, one CTA per output tile),
``dense_gemm_persistent.py`` and ``dense_gemm_persistent_prefetch.py``
(``PersistentDenseGemmKernel``, a static persistent tile scheduler over a compile-time
``max_active_clusters``), ``dense_gemm_persistent_dynamic.py`` (``PersistentDenseGemmKernel``,
a CLC dynamic scheduler: no cluster count compiled in). Every constructor starts with
``(acc_dtype, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn, use_tma_store)``; every
``__call__`` takes the (M, K, L), (N, K, L), (M, N, L) tensors that :class:`GemmPlan`
describes, then (for the static-persistent ones) ``max_active_clusters``, then the stream.

The workload is fp16 (or bf16) A/B, fp32 accumulate, C in the A/B dtype: the examples' CLI
defaults are tf32 in / fp32 out, but fp16 is the workload the Hopper rows and the tutorial
GEMMs run, so the rows compare like with like. The default config is the one the examples'
``run()`` functions default to (MMA tile 256x256, cluster 2x1, 2-CTA MMA, TMA-store epilogue);
their CLI defaults (128x128, 1x1, 1-CTA, no TMA store) are in the autotune space.

Config constraints are the ones upstream states and checks before it compiles
(``DenseGemmKernel.is_valid_mma_tiler_and_cluster_shape`` and ``is_valid_epilog_store_option``,
``cute/blackwell/kernel/dense_gemm/dense_gemm.py`` lines 1348-1454; the persistent files
raise the same as ``check_mma_tiler_and_cluster_shape``); checking them here turns a
trace-time error into one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel, ShapeError
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.kernel import Const

from .common import GemmPlan


def _pow2(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0


class BlackwellDenseGemmPlan(GemmPlan):
    """Base of the Blackwell dense GEMM adapters. A subclass sets ``name``, ``source``,
    ``upstream_class``, whether it compiles ``max_active_clusters`` in
    (``static_persistent``), and its extra constructor arguments (``extra_defaults``, passed
    positionally after the common five, in that order)."""

    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16")
    upstream_class: ClassVar[str]
    static_persistent: ClassVar[bool] = False
    extra_defaults: ClassVar[dict[str, Any]] = {}

    # -- configs ---------------------------------------------------------------------------
    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "mma_tiler_mn": [256, 256],
            "cluster_mn": [2, 1],
            "use_2cta": True,
            "use_tma_store": True,
            **self.extra_defaults,
        }

    def _autotune_configs(self, problem: Mapping[str, Any]) -> list[dict[str, Any]]:
        space = [
            ([256, 256], [2, 1], True),
            ([256, 128], [2, 1], True),
            ([256, 256], [2, 2], True),
            ([256, 256], [4, 1], True),
            ([128, 256], [1, 1], False),
            ([128, 128], [1, 1], False),  # the examples' CLI default
        ]
        return [
            {
                "mma_tiler_mn": t,
                "cluster_mn": c,
                "use_2cta": two,
                "use_tma_store": True,
                **self.extra_defaults,
            }
            for t, c, two in space
        ]

    def full_config(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` over the defaults, normalised (tuples, bools); no checks."""
        cfg = {**self.default_config(problem), **config}
        return {
            **cfg,
            "mma_tiler_mn": tuple(int(x) for x in cfg["mma_tiler_mn"]),
            "cluster_mn": tuple(int(x) for x in cfg["cluster_mn"]),
            "use_2cta": bool(cfg["use_2cta"]),
            "use_tma_store": bool(cfg["use_tma_store"]),
        }

    def validate_config(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> None:
        """Upstream's own constraints, checked before anything is loaded or compiled.

        Raises:
            ShapeError: a tile/cluster shape upstream rejects, or a problem the chosen
                epilogue cannot cover (no TMA store: M and N must be CTA-tile multiples).
        """
        cfg = self.full_config(problem, config)
        tile, cluster = cfg["mma_tiler_mn"], cfg["cluster_mn"]
        two, name = cfg["use_2cta"], self.name
        if len(tile) != 2 or len(cluster) != 2:
            raise ShapeError(f"{name}: mma_tiler_mn and cluster_mn take two values (MxN)")
        allowed_m = (128, 256) if two else (64, 128)
        if tile[0] not in allowed_m:
            raise ShapeError(
                f"{name}: mma_tiler_mn M={tile[0]} unsupported with use_2cta="
                f"{two}; M in {allowed_m}"
            )
        if tile[1] not in range(32, 257, 32):
            raise ShapeError(
                f"{name}: mma_tiler_mn N={tile[1]} unsupported; a multiple of 32 in 32..256"
            )
        if two and cluster[0] % 2:
            raise ShapeError(f"{name}: use_2cta needs an even cluster M (got {cluster[0]})")
        split_k = int(cfg.get("split_k", 1))
        if (not all(_pow2(c) for c in cluster)) or cluster[0] * cluster[1] * split_k > 16:
            raise ShapeError(
                f"{name}: cluster_mn {cluster} unsupported; powers of two, "
                "at most 16 CTAs (times split_k)"
            )
        if not cfg["use_tma_store"]:
            cta_m = tile[0] // (2 if two else 1)
            if problem["m"] % cta_m or problem["n"] % tile[1]:
                raise ShapeError(
                    f"{name}: without use_tma_store the epilogue has no bounds check: M and N "
                    f"must be multiples of the CTA tile {cta_m}x{tile[1]} (got "
                    f"{problem['m']}x{problem['n']}); use use_tma_store=true"
                )

    def extra_args(self, cfg: Mapping[str, Any]) -> tuple:
        """Constructor arguments after the common five (``extra_defaults`` order)."""
        return tuple(cfg[k] for k in self.extra_defaults)

    # -- the kernel ------------------------------------------------------------------------
    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:
        import cutlass

        self.validate_config(problem, config)
        cfg = self.full_config(problem, config)
        tile, cluster = cfg["mma_tiler_mn"], cfg["cluster_mn"]
        mod = load_example(self.source)
        gemm = getattr(mod, self.upstream_class)(
            cutlass.Float32,
            cfg["use_2cta"],
            tile,
            cluster,
            cfg["use_tma_store"],
            *self.extra_args(cfg),
        )
        specs = self.tensor_specs(problem)
        key = (
            self.name,
            tuple(sorted((k, str(v)) for k, v in cfg.items())),
            problem["dtype"],
            problem["c_dtype"],
        )
        if not self.static_persistent:
            return CuteKernel(
                self.name, gemm, lambda t: (t["a"], t["b"], t["c"], STREAM), specs, key=key
            )
        n, sms, why = max_active_clusters(cluster[0] * cluster[1], cfg, target_sm=self.target_sm[0])
        meta = {"max_active_clusters": n, "sm_count": sms, "max_active_clusters_from": why}
        return CuteKernel(
            self.name,
            gemm,
            lambda t: (t["a"], t["b"], t["c"], Const(n), STREAM),
            specs,
            key=(*key, n),
            meta=meta,
        )
