"""Peer: FlashInfer's MLA decode (``flashinfer.mla.BatchMLAPagedAttentionWrapper``).

FlashInfer ``flashinfer-python==0.7.2.post1`` (with ``apache-tvm-ffi==0.1.15.post2``); how it
is called on the H200 and what it measured there: ``/work/notes/mla-peers.md`` and the probe
``scripts/device/mla_peers_probe.py`` (class ``FlashInferFa3``), logs under
``results/logs/2026-12-01-h200-mla-peers/``.

What the adapter does with the workload's tensors (no copies in a launch):

* **bind** (once per input set, outside every timed launch): reads ``page_table`` and
  ``seqlens`` to the host and builds FlashInfer's CSR page list (:func:`csr_metadata`:
  ``qo_indptr = arange(b + 1) * s``, ``kv_indptr`` = prefix sums of ``ceil(len / page)``,
  ``kv_indices`` = each sequence's own pages in order, ``kv_len_arr = seqlens``), then
  ``plan()``\\ s a wrapper with ``lse_mode="basee"`` (natural-log LSE) and ``causal = causal
  and s > 1``. ``plan()`` is host-synchronous and JIT-builds the CUDA module the first time
  on a machine (about 17 s on the H200, then cached): that is why it is here and never in a
  launch. The page table's spare entries are never named (only ``ceil(len / page)`` pages per
  sequence enter ``kv_indices``).
* **launch**: one ``run(query=q.view(b*s, h, 576), kv_cache=kv_cache, out=o.view(b*s, h, 512),
  lse=lse.view(b*s, h), return_lse=True, return_lse_base_on_e=True)``: the packed query and
  cache as stored, O and LSE written straight into the workload's outputs (row ``i*s + r`` is
  query ``r`` of sequence ``i``: FlashInfer's batch-major packing is the workload's layout).
  One kernel per call (``BatchMLAPageAttentionHopperKernel`` for fa3; no separate merge
  kernel, mla-peers.md "Kernels"); no host synchronisation and no allocation, so the launch
  can be captured in a CUDA graph (``--cuda-graph``): see :data:`CUDA_GRAPH`.

LSE: natural log by plan (``lse_mode="basee"``) and run (``return_lse_base_on_e=True``); the two
must agree or run() refuses ("planned run mismatch"). A query that sees no key (an empty
sequence; with causal s > 1 a query of a sequence shorter than s) gets ``o = 0`` and ``lse =
-inf`` from FlashInfer itself (read in the 0.7.2.post1 wheel, under
``flashinfer/data/include/flashinfer/attention/``): ``MLAPlan`` gives a zero-length request a
work item (``scheduler.cuh`` L1745-L1766, ``zero_kv_len``); the fa3 kernel scales O by 0 while
the running max is still -inf (``mla_hopper.cuh`` L648, ``normalize_d_``) and writes ``-inf``
as the LSE there (L752-L756, ``write_o``); fa2 does the same (``mla.cuh`` L839-L854, L903,
L941). That is the workload's convention, so the adapter maps nothing (a mapping would be an
extra kernel in every launch and would hide a deviation of the peer); the varlen check
problems (one empty sequence in eight) verify it on the device.

Backends (``--config backend=``): ``fa3`` (Hopper WGMMA; what ``"auto"`` picks on sm_90) and
``fa2`` (SM80+). The default is fa3 on an sm_90 GPU and fa2 elsewhere.

Environment: ``plan()`` compiles with nvcc found through ``CUDA_HOME``. cuTile's env script
(``.device/c2/cutile-env.sh``) unsets it; set ``KERNELPLAN_FLASHINFER_CUDA_HOME`` (e.g.
``/usr/local/cuda``) and the adapter puts it in ``CUDA_HOME`` around ``plan()`` only.
``FLASHINFER_WORKSPACE_BASE`` moves FlashInfer's JIT cache (FlashInfer's own variable).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from kernelplan import Config, KernelPlan, KernelPlanError, ShapeError, Target, TorchKernel
from kernelplan.errors import NotInstalled, first_line
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem, plain_cache_only

#: the versions the adapter was written and measured against (mla-peers.md section 1)
FLASHINFER_VERSION = "0.7.2.post1"
INSTALL = f"pip install flashinfer-python=={FLASHINFER_VERSION} apache-tvm-ffi==0.1.15.post2"
#: Q / cache / O dtypes it takes: FlashInfer's FA MLA wants a 16-bit query and KV of the same
#: type (fp8 KV needs a bf16 query: one workload dtype cannot say that)
DTYPES = ("bfloat16", "float16")
#: fa3's PV WGMMA widths (``_validate_generated_fa_plan``,
#: ``flashinfer/mla/_batch_mla/_backends/_fa_common.py`` L196 in the 0.7.2.post1 wheel)
FA3_LATENT = (128, 256, 512)
#: the native planner's work-item capacity (``_FA_MAX_WORK_ITEMS``, same file L253)
MAX_WORK_ITEMS = 16384
#: the KV tile of the causal bound (fa3: always 64; fa2: 64 with >= 221696 B SMEM per SM, the
#: H200's case)
CAUSAL_TILE_KV = 64
#: float workspace (partial O and LSE of the KV splits), one per planned kernel, shared by
#: its bindings (their launches are serialised on one stream). The probe used 128 MiB.
WORKSPACE_BYTES = 128 << 20
#: environment variable whose value becomes CUDA_HOME around plan() (see the module text)
CUDA_HOME_ENV = "KERNELPLAN_FLASHINFER_CUDA_HOME"
#: whether a launch can be captured in a CUDA graph: yes by its code path (run() with out=
#: and lse= given allocates nothing and never synchronises; the metadata lives in buffers the
#: plan filled once); not yet seen on the H200: scripts/device/mla-table.sh runs it
CUDA_GRAPH = "expected (no allocation or host sync in run()); to be confirmed on the H200"


def load_flashinfer() -> tuple[Any, Any, str]:
    """``(BatchMLAPagedAttentionWrapper, MLAPlanMetadata, version)``.

    Raises:
        KernelPlanError: FlashInfer is not importable (one line: what to install).
    """
    try:
        import flashinfer
        from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata
    except Exception as e:  # ImportError, or an install that fails while importing
        first = first_line(e)
        raise NotInstalled(
            f"flashinfer_mla needs FlashInfer: {INSTALL} "
            f"(import flashinfer failed: {type(e).__name__}: {first})"
        ) from None
    version = str(getattr(flashinfer, "__version__", "?"))
    if version != FLASHINFER_VERSION:
        print(
            f"flashinfer_mla: FlashInfer {version} found; the adapter was written against "
            f"{FLASHINFER_VERSION}",
            file=sys.stderr,
        )
    return BatchMLAPagedAttentionWrapper, MLAPlanMetadata, version


def csr_metadata(page_table, seqlens, page: int, s: int) -> tuple[Any, Any, Any, Any]:
    """FlashInfer's CSR page metadata (int32, on the CPU) from the workload's page table.

    Returns ``(qo_indptr (b+1,), kv_indptr (b+1,), kv_indices (sum of pages,), kv_len_arr
    (b,))``: sequence ``i``'s queries are rows ``qo_indptr[i]:qo_indptr[i+1]`` of the packed
    query (``s`` each), its pages ``kv_indices[kv_indptr[i]:kv_indptr[i+1]]`` =
    ``page_table[i, :ceil(len_i / page)]`` in order, its length ``kv_len_arr[i]``. Entries of
    the table past a sequence's own pages (spare pages) are left out.
    """
    import torch

    table = page_table.to("cpu", torch.int64)
    lens = seqlens.to("cpu", torch.int64)
    b = lens.numel()
    npages = (lens + page - 1) // page
    own = torch.arange(table.shape[1]).view(1, -1) < npages.view(-1, 1)  # (b, width)
    kv_indices = table[own]  # row-major: sequence 0's pages, then sequence 1's, ...
    kv_indptr = torch.zeros(b + 1, dtype=torch.int64)
    kv_indptr[1:] = torch.cumsum(npages, 0)
    qo_indptr = torch.arange(b + 1, dtype=torch.int64) * s
    i32 = torch.int32
    return qo_indptr.to(i32), kv_indptr.to(i32), kv_indices.to(i32), lens.to(i32)


def causal_tile_refusal(problem: MlaDecodeProblem) -> str | None:
    """Why FlashInfer's FA planner refuses this causal problem, or None.

    FlashInfer's scheduler rounds a query tile's causal KV end up while its kernels round it
    down, so a tile boundary that splits a query's heads loses that query's last key when the
    key starts a KV tile; its planner refuses exactly those plans. Restated here from
    ``_validate_fa_causal_tile_bound`` (``flashinfer/mla/_batch_mla/_backends/_fa_common.py``
    L325-L357 in the 0.7.2.post1 wheel): query tile 128 rows of (s*h) when ``s*h > 64``,
    else 64; nothing is refused when the tile is a multiple of h.
    """
    p = problem
    if not (p.causal and p.s > 1):
        return None
    rows = p.s * p.h
    tile_q = 128 if rows > 64 else 64
    if tile_q % p.h == 0:
        return None
    for i, n in enumerate(p.lengths()):
        for end in range(tile_q, rows, tile_q):
            query, rem = divmod(end, p.h)
            key = n - p.s + query
            if rem and query < p.s and 0 <= key < n and key % CAUSAL_TILE_KV == 0:
                return (
                    f"FlashInfer refuses this causal plan: its {tile_q}-row query tile splits "
                    f"the heads of query {query} of sequence {i} where that query's last key "
                    f"({key}) starts a {CAUSAL_TILE_KV}-key tile (its scheduler and kernel "
                    "round that bound differently); --h dividing the tile avoids it"
                )
    return None


@dataclass(frozen=True)
class FlashInferMlaConfig(Config):
    """``backend``: FlashInfer's FA MLA backend, ``fa3`` (Hopper) or ``fa2`` (SM80+)."""

    backend: Literal["fa3", "fa2"] = "fa3"


@contextlib.contextmanager
def _cuda_home():
    """CUDA_HOME = $KERNELPLAN_FLASHINFER_CUDA_HOME for the block, when that is set."""
    want = os.environ.get(CUDA_HOME_ENV)
    if not want:
        yield
        return
    old = os.environ.get("CUDA_HOME")
    os.environ["CUDA_HOME"] = want
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CUDA_HOME", None)
        else:
            os.environ["CUDA_HOME"] = old


class FlashInferKernel(TorchKernel):
    """A TorchKernel whose :meth:`bind` plans a FlashInfer wrapper for one input set and
    returns the launch (see the module docstring)."""

    def __init__(self, name: str, problem: MlaDecodeProblem, config: FlashInferMlaConfig):
        super().__init__(name, self._unbound)
        self.problem, self.config = problem, config
        self.wrapper_cls, self.metadata_cls, self.version = load_flashinfer()
        self._workspace = None

    @staticmethod
    def _unbound(_inputs: Mapping[str, Any]) -> None:  # pragma: no cover - bind() replaces it
        raise KernelPlanError("flashinfer_mla: launch through bind()")

    def workspace(self, device):
        import torch

        if self._workspace is None or self._workspace.device != device:
            self._workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.int8, device=device)
        return self._workspace

    def bind(self, inputs: Mapping[str, Any]):
        import torch

        p, t = self.problem, inputs
        q, cache = t["q"], t["kv_cache"]
        dt = getattr(torch, p.dtype)
        meta = csr_metadata(t["page_table"], t["seqlens"], p.page, p.s)
        w = self.wrapper_cls(self.workspace(q.device), backend=self.config.backend)
        try:
            with _cuda_home():
                w.plan(
                    metadata=self.metadata_cls.csr(*meta),
                    num_heads=p.h,
                    head_dim_ckv=p.d_latent,
                    head_dim_kpe=p.d_rope,
                    page_size=p.page,
                    causal=bool(p.causal and p.s > 1),
                    sm_scale=p.scale(),
                    q_data_type=dt,
                    kv_data_type=dt,
                    lse_mode="basee",
                )
        except Exception as e:  # FlashInfer's refusal or a JIT failure: one line
            first = first_line(e)
            raise KernelPlanError(
                f"{self.name}: FlashInfer {self.version} plan() failed "
                f"(backend {self.config.backend}): {type(e).__name__}: {first}"
            ) from e
        rows = p.b * p.s
        query = q.view(rows, p.h, p.d_qk)
        out = t["o"].view(rows, p.h, p.d_latent)
        lse = t["lse"].view(rows, p.h)

        def launch() -> None:
            w.run(
                query=query,
                kv_cache=cache,
                out=out,
                lse=lse,
                return_lse=True,
                return_lse_base_on_e=True,
            )

        launch.wrapper = w  # type: ignore[attr-defined]  # kept alive with the launch
        return launch


class FlashInferMla(KernelPlan):
    """FlashInfer's paged MLA decode (fa3 on Hopper, fa2 elsewhere): see the module
    docstring."""

    name: ClassVar[str] = "flashinfer_mla"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    source: ClassVar[str | None] = None  # a peer library, not a CUTLASS example
    target_sm: ClassVar[tuple[str, ...]] = ()  # a peer: runs on any GPU FlashInfer supports
    config_type = FlashInferMlaConfig
    description: ClassVar[str] = (
        f"FlashInfer {FLASHINFER_VERSION} BatchMLAPagedAttentionWrapper (fa3 on sm_90, fa2): "
        "planned at bind, natural-log LSE"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        plain_cache_only(self.name, p)  # the FP8 latent cache: not taken
        if p.dtype not in DTYPES:
            raise ShapeError(
                f"{self.name} takes dtype bfloat16 or float16 (got --dtype {p.dtype}): "
                "FlashInfer's FA MLA wants a 16-bit query and a KV cache of the same type"
            )
        if p.d_latent % 128:
            raise ShapeError(
                f"{self.name} takes d_latent a multiple of 128 (got --d_latent {p.d_latent})"
            )
        if p.d_rope < 64 or p.d_rope % 64:
            raise ShapeError(
                f"{self.name} takes d_rope a positive multiple of 64 (got --d_rope {p.d_rope})"
            )
        tile_q = 128 if p.s * p.h > 64 else 64
        items = p.b * -(-(p.s * p.h) // tile_q)
        if items > MAX_WORK_ITEMS:
            raise ShapeError(
                f"{self.name}: {items} query tiles exceed FlashInfer's {MAX_WORK_ITEMS} work "
                f"items (b * ceil(s*h / {tile_q})); use a smaller --b"
            )
        why = causal_tile_refusal(p)
        if why:
            raise ShapeError(f"{self.name}: {why}")

    def supports_config(self, problem: MlaDecodeProblem, config: FlashInferMlaConfig) -> None:
        if config.backend == "fa3" and problem.d_latent not in FA3_LATENT:
            raise ShapeError(
                f"{self.name} backend fa3 takes d_latent in {{128, 256, 512}} (got "
                f"--d_latent {problem.d_latent}); --config backend=fa2 takes any multiple of 128"
            )

    def default_config(self, problem: MlaDecodeProblem) -> FlashInferMlaConfig:
        """fa3 on an sm_90 GPU (or with no GPU: the project's H200), fa2 on other GPUs."""
        from kernelplan import device as devmod

        dev = devmod.current_device()
        if dev is None or dev.sm.startswith("sm_90"):
            return FlashInferMlaConfig(backend="fa3")
        return FlashInferMlaConfig(backend="fa2")

    def autotune_configs(self, problem: MlaDecodeProblem) -> list[FlashInferMlaConfig]:
        """Both backends (fa2 where fa3 cannot take the problem is still a valid row)."""
        out = [self.default_config(problem)]
        other = "fa2" if out[0].backend == "fa3" else "fa3"
        alt = FlashInferMlaConfig(backend=other)
        try:
            self.supports_config(problem, alt)
            out.append(alt)
        except ShapeError:
            pass
        return out

    def plan(
        self, problem: MlaDecodeProblem, config: FlashInferMlaConfig, target: Target
    ) -> TorchKernel:
        return FlashInferKernel(self.name, problem, config)
