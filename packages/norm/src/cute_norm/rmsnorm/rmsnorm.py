"""Adapter: the CUTLASS CuTe DSL RMSNorm (cp.async to SMEM, 128-bit vectors, a row
reduction across warps and, for large N, across the CTAs of a cluster).

Upstream: ``examples/python/CuTeDSL/cute/blackwell/kernel/rmsnorm/rmsnorm.py``, class
``RMSNormKernel(dtype, N, has_weight, config)`` (L286-L303), called as ``(x_ptr, w_ptr,
o_ptr, M, eps, stream)`` (L305-L314): raw global-memory pointers and a runtime row count, so
one compile serves every M and eps (the example compiles once per ``(dtype, N,
has_weight)``, ``get_compiled_kernel`` L561-L601, with dummy 16-byte-aligned pointers, M = 1
and eps = 1e-6). This adapter does the same: the compile key leaves out ``m`` and ``eps``
(``runtime_problem_fields``), the pointers are 16-byte-aligned global pointers made from the
tensors' addresses (``make_ptr(..., AddressSpace.gmem, assumed_align=16)``, as L589-L593),
and the record's ``meta`` states the entry's kind and the configuration the kernel derived.

Its row reduction is ``blackwell/kernel/reduce/reduce.py``'s ``row_reduce`` (imported by the
example at L53; the loader puts ``cute/`` on ``sys.path``): warp shuffles, then SMEM across
the warps of a row (``block_reduce``), or, when ``cluster_n > 1``, ``st.async`` stores into
every peer CTA's SMEM with an mbarrier counting the bytes (``cluster_reduce``). That file is
a library with no entry of its own; it is imported and analysed through this user, and the
static analysis's cache key covers it (the example's import closure).

Configuration (``RMSNormConfig``, L148-L264) is derived, not tuned: the cluster size from N
and the SM (1 up to 16K 16-bit elements, then 2, 4, 8, 16; always 1 below sm_90, L192-L218),
threads per row from N per CTA (8 to 256, L220-L234), 128 or 256 threads per CTA. The SM is
the target's here (the example asks the current GPU, L108-L119), so a static compile for
sm_90a and a run on the H200 derive the same configuration.

Targets: sm_90a, and sm_80. The code has no tcgen05 and no WGMMA: cp.async, vector loads and
stores, warp shuffles; for ``cluster_n > 1`` it uses clusters, mbarriers and
``mapa``/``st.async.shared::cluster`` (SM90 and newer). Below sm_90 the example itself picks
``cluster_n = 1``, so ``--arch sm_80`` compiles the single-CTA variant (the Ampere path the
example documents, L71-L74).

What it takes: bfloat16 or float16 (the example also takes float32; the workload does not);
N a multiple of 8 (its bounds predicate tests the first column of each 128-bit vector,
``predicate_k`` L127-L140, so a partial vector would be read and written whole; its rows are
``N`` elements apart, so N also keeps every row's start 16-byte aligned); a configuration
whose CTAs cover N and whose SMEM fits the target.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kernelplan import STREAM, CuteKernel, KernelPlan, NoConfig, ShapeError, Target, dtypes
from kernelplan.cutlass_src import load_example
from kernelplan.device import parse_sm
from kernelplan.workloads.rmsnorm import RMSNORM, RMSNormProblem

#: elements per 128-bit vector of a 16-bit dtype (RMSNormConfig.COPY_BITS / width, L156, L171)
VEC = 8
#: usable SMEM per CTA by SM major (bytes): sm_90 227 KB, sm_80 163 KB (CUDA programming guide,
#: compute capabilities table)
SMEM_LIMIT = {9: 227 * 1024, 8: 163 * 1024}


def gmem_pointer(t: Any, element: Any) -> Any:
    """A 16-byte-aligned global pointer to the data of ``t``: a CuTe tensor from ``from_dlpack``
    (its address), a fake tensor (a dummy address 16, as the example compiles with), or a
    placeholder string (what ``CuteKernel.const_values`` passes: returned as is)."""
    if isinstance(t, str):
        return t
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    try:
        addr = int(t.data_ptr)
    except AttributeError:  # a fake tensor has no memory
        addr = 16
    return make_ptr(element, addr, cute.AddressSpace.gmem, assumed_align=16)


class CutlassRMSNorm(KernelPlan):
    """The CUTLASS CuTe DSL RMSNorm (see the module docstring)."""

    name: ClassVar[str] = "rmsnorm"
    package: ClassVar[str] = "norm"
    workload = RMSNORM
    source: ClassVar[str] = "cute/blackwell/kernel/rmsnorm/rmsnorm.py"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a", "sm_80")
    config_type = NoConfig
    #: pointers and a runtime M and eps: one compile per (dtype, N)
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("m", "eps")
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL RMSNorm (cp.async, row reduction across warps and cluster CTAs), "
        "sm_90a/sm_80"
    )

    def supports(self, problem: RMSNormProblem) -> None:
        if problem.n % VEC:
            raise ShapeError(
                f"{self.name} needs --n to be a multiple of {VEC} (whole 128-bit vectors of "
                f"16-bit elements: its bounds predicate covers a vector by its first "
                f"column); got {problem.n}"
            )

    def upstream_config(self, problem: RMSNormProblem, target: Target):
        """The example's ``RMSNormConfig`` for this problem on the target's SM."""
        mod = load_example(self.source)
        num, _ = parse_sm(target.sm)
        return mod.RMSNormConfig(dtypes.cute_type(problem.dtype), problem.n, True, num)

    def plan(self, problem: RMSNormProblem, config: NoConfig, target: Target) -> CuteKernel:
        from cutlass import Float32, Int32

        mod = load_example(self.source)
        cfg = self.upstream_config(problem, target)
        n = problem.n
        if cfg.cols_per_tile * cfg.cluster_n < n:
            raise ShapeError(
                f"{self.name}: N={n} is not covered by {cfg.cluster_n} CTA(s) of "
                f"{cfg.cols_per_tile} columns (the example's configuration); use a multiple of "
                f"{VEC * cfg.cluster_n}"
            )
        smem = cfg.smem_size_in_bytes()
        major = parse_sm(target.sm)[0] // 10
        limit = SMEM_LIMIT.get(major)
        if limit is not None and smem > limit:
            raise ShapeError(
                f"{self.name}: N={n} needs {smem} B of SMEM per CTA on {target.sm} "
                f"(cluster_n={cfg.cluster_n}); the limit is {limit} B"
            )
        kernel = mod.RMSNormKernel(cfg.dtype, n, True, cfg)
        element = cfg.dtype
        m, eps = problem.m, problem.eps
        meta = {
            "entry": "pointers (x, w, y) + Int32 M + Float32 eps: one compile per (dtype, N)",
            "sm_version": cfg.sm_version,
            "cluster_n": cfg.cluster_n,
            "threads_per_row": cfg.threads_per_row,
            "num_threads": cfg.num_threads,
            "rows_per_block": cfg.rows_per_block,
            "cols_per_tile": cfg.cols_per_tile,
            "smem_bytes": smem,
        }

        def args(t):
            return (
                gmem_pointer(t["x"], element),
                gmem_pointer(t["w"], element),
                gmem_pointer(t["y"], element),
                Int32(m),
                Float32(eps),
                STREAM,
            )

        return CuteKernel(self.name, kernel, args, self.tensor_specs(problem), meta=meta)
