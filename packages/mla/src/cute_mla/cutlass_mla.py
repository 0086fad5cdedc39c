"""What the two CUTLASS Blackwell MLA decode adapters share (fp16 and fp8).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/kernel/attention/mla/mla_decode_fp16.py`` (class
``BlackwellMultiHeadLatentAttentionForwardFP16``) and ``mla_decode_fp8.py`` (``...FP8``), with
``mla_helpers.py`` (the split-KV tile scheduler). Reading notes:
``knowledge/reading/blackwell-mla_decode_fp16.md`` and ``-fp8.md``.

The examples take other tensors than the ``mla_decode`` workload, and this implementation says
so here (the workload's one concatenated cache and query become upstream's four):

- ``q_latent`` / ``q_rope``: the query's first 512 and last 64 columns, each stored
  (B, s, H, D) and seen as (H, D, s, B) (``run()``: ``permute_order=(2, 3, 1, 0)``);
- ``c_latent`` / ``c_rope``: the cache's first 512 and last 64 columns, each stored
  (num_pages, page, D) and seen as (page, D, num_pages) (``permute_order=(1, 2, 0)``); V is
  ``c_latent`` again (the kernel loads it a second time through its own TMA);
- ``page_table``: stored (B, pages) and seen as (pages, B) (upstream transposes it);
- ``o`` (H, D, s, B) and ``lse`` (H, s, B) views of (B, s, H, D) and (B, s, H) storage;
- ``workspace``: int8 scratch of ``get_workspace_size(H, s, 512, B, split_kv, fp32)`` bytes for
  the split-KV partial outputs (none when ``split_kv`` is 1);
- ``cache_seqs``: the per-sequence lengths (always passed: ``is_var_seq`` is on, so one
  compile serves fixed and variable lengths).

:meth:`CutlassMlaDecode.prepare_inputs` draws the workload's inputs (same seed, same NaN
pages) and splits them into these; the reference is the workload's, on the workload's inputs.

Constraints (upstream ``can_implement``): latent 512 and rope 64; h_q <= 128, and below 128
only without split-KV; s_q in 1..4; the page size divides the QK tile's N (128) and is not 1;
fp16 in and out (fp16 example) or fp8 e4m3 in and out (fp8 example). Target sm_100a (tcgen05,
TMEM): static analysis here, a real run needs an SM100 GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan.cutlass_src import load_example
from kernelplan.device import max_active_clusters
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem, plain_cache_only

#: Cluster shape of upstream's ``run()`` (a CTA pair: 2-CTA tcgen05 MMA).
CLUSTER_M = 2


@dataclass(frozen=True)
class CutlassMlaConfig(Config):
    """Upstream's tunables and their CLI defaults (``mla_decode_fp16.py`` argparse).

    ``split_kv`` -1 picks upstream's heuristic (``get_split_kv``); ``is_persistent`` uses its
    persistent tile scheduler.
    """

    mma_qk_tiler_mn: tuple[int, int] = (128, 128)
    mma_pv_tiler_mn: tuple[int, int] = (128, 256)
    split_kv: int = -1
    is_persistent: bool = False
    skip_correction_threshold: float = 0.0

    def validate(self) -> None:
        if self.mma_qk_tiler_mn[0] != 128 or self.mma_pv_tiler_mn[0] != 128:
            raise ShapeError("mma_qk_tiler_mn and mma_pv_tiler_mn must have M = 128 (upstream)")
        if self.split_kv == 0 or self.split_kv < -1 or self.split_kv > 32:
            raise ShapeError(f"split_kv must be -1 (heuristic) or 1..32 (got {self.split_kv})")


class CutlassMlaDecode(KernelPlan):
    """Base of the fp16 and fp8 adapters; see the module docstring."""

    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    target_sm: ClassVar[tuple[str, ...]] = ("sm_100a",)
    config_type = CutlassMlaConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = (
        "b", "t", "varlen", "varlen_seed", "seqlens", "num_pages", "softmax_scale", "init",
        "causal",
    )  # fmt: skip
    #: upstream class name and the one dtype it takes for Q, cache and O
    kernel_class: ClassVar[str]
    dtype: ClassVar[str]

    def default_problem(self) -> MlaDecodeProblem:
        """The workload's default decode (B=32, T=4096, h_q=128) in the one dtype the
        example takes."""
        return MlaDecodeProblem(dtype=self.dtype)

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        plain_cache_only(self.name, p)  # the FP8 latent cache: not taken
        if p.d_latent != 512 or p.d_rope != 64:
            raise ShapeError(f"{self.name} takes d_latent 512 and d_rope 64 only")
        if p.dtype != self.dtype:
            raise ShapeError(f"{self.name} takes dtype {self.dtype} only (got {p.dtype})")
        if p.h > 128:
            raise ShapeError(f"{self.name} takes at most 128 query heads (got --h {p.h})")
        if not 1 <= p.s <= 4:
            raise ShapeError(f"{self.name} takes s_q in 1..4 (got --s {p.s})")
        if p.page == 1 or 128 % p.page:
            raise ShapeError(
                f"{self.name} takes a page size that divides 128 and is not 1 (got --page {p.page})"
            )

    def split_kv(self, problem: MlaDecodeProblem, config: CutlassMlaConfig, target: Target) -> int:
        """Upstream's ``get_split_kv`` (its formula, restated: ``mla_decode_fp16.py``
        L1370-L1394) over the longest sequence, unless the config fixes it; 1 below 128 heads
        (``can_implement``)."""
        if config.split_kv > 0:
            return config.split_kv
        if problem.h < 128:
            return 1
        n_clusters, _ = max_active_clusters(CLUSTER_M, target)
        k = max(problem.lengths())
        max_splits = -(-k // config.mma_qk_tiler_mn[1])
        per_batch = max(1, n_clusters * CLUSTER_M // problem.b // (problem.s * 2))
        heur = min(max_splits, per_batch)
        waves = -(-max_splits // heur)
        return min(-(-max_splits // waves), 32)

    def _sizes(self, problem: MlaDecodeProblem, config: CutlassMlaConfig, target: Target):
        split = self.split_kv(problem, config, target)
        ws = 0 if split == 1 else problem.b * problem.h * problem.s * split * (512 + 1) * 4
        return split, ws

    def tensor_specs(self, problem: MlaDecodeProblem, config=None, target=None) -> dict:
        p = problem
        dt = p.dtype
        div = 128 // (8 * (2 if dt in ("float16", "bfloat16") else 1))
        pages = p.table_pages()

        def qo(d: int, role: str = "input") -> TensorSpec:
            init = "empty" if role == "output" else "randn"
            return TensorSpec(
                (p.b, p.s, p.h, d), dt, perm=(2, 3, 1, 0), leading_dim=1, divisibility=div,
                role=role, init=init,
            )  # fmt: skip

        def cache(d: int) -> TensorSpec:
            return TensorSpec(
                (p.pages_total(), p.page, d), dt, perm=(1, 2, 0), leading_dim=1, divisibility=div
            )

        _split, ws = self._sizes(p, config or self.default_config(p), target or self.target())
        specs = {
            "q_latent": qo(512),
            "q_rope": qo(64),
            "c_latent": cache(512),
            "c_rope": cache(64),
            "page_table": TensorSpec((p.b, pages), "int32", perm=(1, 0), leading_dim=0),
            "o": qo(512, "output"),
            "lse": TensorSpec(
                (p.b, p.s, p.h),
                "float32",
                perm=(2, 1, 0),
                leading_dim=0,
                role="output",
                init="empty",
            ),  # fmt: skip
            "cache_seqs": TensorSpec((p.b,), "int32", leading_dim=0),
        }
        if ws:
            specs["workspace"] = TensorSpec((ws,), "int8", init="empty", align=32)
        return specs

    def prepare_inputs(self, problem: MlaDecodeProblem, seed: int, device: str = "cuda") -> dict:
        """The workload's inputs (kept under their own names for the reference) split into
        upstream's tensors."""
        w = self.workload.prepare_inputs(problem, self.workload.tensor_specs(problem), seed, device)
        q, kv = w["q"], w["kv_cache"]
        out = {
            "q": q,
            "kv_cache": kv,
            "page_table": w["page_table"],
            "seqlens": w["seqlens"],
            "q_latent": q[..., :512].contiguous(),
            "q_rope": q[..., 512:].contiguous(),
            "c_latent": kv[..., :512].contiguous(),
            "c_rope": kv[..., 512:].contiguous(),
            "cache_seqs": w["seqlens"],
            "o": w["o"],
            "lse": w["lse"],
        }
        specs = self.tensor_specs(problem)
        if "workspace" in specs:
            out["workspace"] = specs["workspace"].allocate(None, device)
        return out

    def plan(
        self, problem: MlaDecodeProblem, config: CutlassMlaConfig, target: Target
    ) -> CuteKernel:
        import cutlass

        mod = load_example(self.source)
        n_clusters, why = max_active_clusters(CLUSTER_M, target)
        split, _ws = self._sizes(problem, config, target)
        mla = getattr(mod, self.kernel_class)(
            cutlass.Float32,
            cutlass.Float32,
            config.mma_qk_tiler_mn,
            config.mma_pv_tiler_mn,
            n_clusters,
            problem.page,
            config.skip_correction_threshold,
            config.is_persistent,
            True,  # is_var_seq: cache_seqs always passed
            False,  # is_var_split_kv
        )
        scale = problem.scale()
        specs = self.tensor_specs(problem, config, target)

        def args(t: dict[str, Any]) -> tuple:
            return (
                t["q_latent"], t["q_rope"], t["c_latent"], t["c_rope"], t["page_table"],
                t["o"], t["lse"], t.get("workspace"), cutlass.Int32(split), t["cache_seqs"],
                None, cutlass.Float32(scale), cutlass.Float32(1.0), STREAM,
            )  # fmt: skip

        return CuteKernel(
            self.name,
            mla,
            args,
            specs,
            options="--opt-level 2",
            meta={
                "max_active_clusters": n_clusters,
                "max_active_clusters_from": why,
                "split_kv": split,
                "reduction_kernel": split > 1,
            },
        )
