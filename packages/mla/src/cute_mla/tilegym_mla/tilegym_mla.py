"""Peer: TileGym's cuTile MLA decode, ``tilegym.ops.mla_decoding_split_kv`` (backend "cutile").

TileGym ``tilegym==1.5.1`` on cuTile (``cuda-tile`` 1.7.0, ``tileiras`` 13.4); how it is called
on the H200 and what it measured there: ``/work/notes/mla-peers.md`` section 2 and the probe
``scripts/device/mla_peers_probe.py`` (class ``TileGymCutile``). Two launches per call: the
split-KV attention kernel and its split reduction; intermediates and O are allocated by the
op on every call (``tilegym/ops/cutile/mla_decoding_split_kv.py``).

**What the op takes is not the workload.** It takes dense per-sequence KV with one length for
the whole batch: ``q_nope (B, Hq, 512)``, ``q_pe (B, Hq, 64)``, ``kv (B, T, 512)``, ``kpe (B,
T, 64)`` (each contiguous) and a scale; no page table, no per-sequence lengths, no query
length, no causal mask, and it returns O only (its per-split base-2 LSE stays internal). So:

* **The gather is inside the timed launch** (``gather=in_launch``, the default and the only
  configuration ``check``/``profile`` use): every launch copies each sequence's T rows out of
  the paged cache into the dense ``kv``/``kpe`` buffers (:func:`gather_dense`: two
  ``index_select``\\ s through a row index, one read and one write of the KV bytes) and splits
  the query into contiguous ``q_nope``/``q_pe``, then calls the op and copies its O into the
  workload's ``o``. That is what a paged caller of this op must do each step, so the time is
  like for like with the paged peers. The row index (:func:`dense_row_index`: token ``k`` of
  sequence ``i`` -> cache row ``page_table[i, k // page] * page + k % page``) is computed from
  the page table at bind, as FlashInfer's ``plan()`` digests the page table at bind.
* ``--config gather=at_bind`` gathers once at bind: the launch is the op (and the O copy)
  alone. Its benchmark record is the gather-excluded kernel time (the probe's figure); the
  gathered buffers are a copy made outside the timing, so it is not a paged result.
  ``scripts/device/mla-table.sh`` records both.
* ``supports()`` refuses unequal lengths (``--varlen``, unequal ``--seqlens``: the op has one
  T) and ``s > 1`` with ``causal`` (no mask). With ``--causal false`` the s queries of a
  sequence are folded into its heads (Hq = s*h), which is exactly non-causal attention.
* **No LSE.** The op does not return one and the adapter does not compute one (that would be
  the adapter's math, not the peer's): :meth:`TileGymMla.output_names` declares ``o`` as the
  only output this implementation produces, so a check poisons and compares ``o`` alone and
  its record lists ``o`` alone; ``lse`` is left as prepared.

cuTile compiles on the first call of a shape (1.2-1.6 s, tileiras); the adapter makes that
call at bind (into scratch, never into the workload's outputs) with ``CUDA_HOME`` and
``CUDA_PATH`` unset, as tileiras needs (mla-peers.md section 2). A CUDA-graph capture of the
launch is not known to work (the op allocates and launches through cuTile's own launcher).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from kernelplan import Config, KernelPlan, KernelPlanError, ShapeError, Target, TorchKernel
from kernelplan.errors import NotInstalled, first_line
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem, plain_cache_only

TILEGYM_VERSION = "1.5.1"
INSTALL = (
    f"pip install tilegym=={TILEGYM_VERSION} cuda-tile==1.7.0 nvidia-cuda-tileiras==13.4.92 "
    "(offline GPU host: bash ../shared/gpu/prepare-cutile.sh tilegym==1.5.1)"
)
DTYPES = ("bfloat16", "float16")
#: the op tiles the query heads by 16 (TILE_H) and the keys by 128 (TILE_N)
TILE_H, TILE_N = 16, 128


def load_tilegym() -> tuple[Any, str]:
    """``(mla_decoding_split_kv, version)``.

    Raises:
        KernelPlanError: TileGym or cuTile is not importable (one line: what to install).
    """
    try:
        import tilegym
        from tilegym.ops import mla_decoding_split_kv
    except Exception as e:  # ImportError, or cuTile failing while importing
        first = first_line(e)
        raise NotInstalled(
            f"tilegym_mla needs TileGym on cuTile: {INSTALL} "
            f"(import tilegym failed: {type(e).__name__}: {first})"
        ) from None
    return mla_decoding_split_kv, str(getattr(tilegym, "__version__", "?"))


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def default_split(t: int, b: int, sm_count: int) -> int:
    """The op's own ``kv_len_per_split`` when given none (restated from
    ``tilegym/ops/cutile/mla_decoding_split_kv.py`` L200-L205 in the 1.5.1 wheel):
    ``next_pow2(T // max(1, SMs // B))``, at least 128. Resolved at plan time so that a
    launch does not query the device."""
    return max(TILE_N, _next_pow2(t // max(1, sm_count // b)))


def dense_row_index(page_table, t: int, page: int):
    """(b * t,) int64 on the page table's device: the cache row of token ``k`` of sequence
    ``i`` at position ``i * t + k``, i.e. ``page_table[i, k // page] * page + k % page`` over
    the cache seen as (num_pages * page, d) rows. Reads only the first ``ceil(t / page)``
    columns (a sequence's own pages when every length is ``t``)."""
    import torch

    b = page_table.shape[0]
    npg = -(-t // page)
    pages = page_table[:, :npg].long()  # (b, npg)
    offs = torch.arange(page, device=page_table.device)
    rows = pages.unsqueeze(-1) * page + offs.view(1, 1, page)  # (b, npg, page)
    return rows.reshape(b, npg * page)[:, :t].reshape(-1)


def gather_dense(kv_cache, rows, latent, rope) -> None:
    """Copy the cache rows ``rows`` (from :func:`dense_row_index`) into the dense buffers:
    ``latent`` (b, t, d_latent) gets their first d_latent columns, ``rope`` (b, t, d_rope) the
    rest. Two ``index_select`` calls (one read and one write of the rows' bytes)."""
    import torch

    d_latent = latent.shape[-1]
    flat = kv_cache.view(-1, kv_cache.shape[-1])
    torch.index_select(flat[:, :d_latent], 0, rows, out=latent.view(-1, d_latent))
    torch.index_select(flat[:, d_latent:], 0, rows, out=rope.view(-1, rope.shape[-1]))


@contextlib.contextmanager
def _no_cuda_home():
    """CUDA_HOME and CUDA_PATH unset for the block (tileiras must not see the host's older
    CUDA; mla-peers.md section 2)."""
    old = {k: os.environ.pop(k, None) for k in ("CUDA_HOME", "CUDA_PATH")}
    try:
        yield
    finally:
        for k, v in old.items():
            if v is not None:
                os.environ[k] = v


@dataclass(frozen=True)
class TileGymMlaConfig(Config):
    """``kv_len_per_split``: keys per split (a power of two >= 128); 0 = the op's own default
    (:func:`default_split`, resolved at plan time). ``gather``: ``in_launch`` (every launch
    gathers the pages: the like-for-like paged time) or ``at_bind`` (once at bind: the op's
    own kernels alone)."""

    kv_len_per_split: int = 0
    gather: Literal["in_launch", "at_bind"] = "in_launch"

    def validate(self) -> None:
        k = self.kv_len_per_split
        if (
            isinstance(k, bool)
            or not isinstance(k, int)
            or (k != 0 and not (_pow2(k) and k >= TILE_N))
        ):
            raise ShapeError(
                f"kv_len_per_split must be 0 (the op's default) or a power of two >= {TILE_N} "
                f"(got {k!r})"
            )


class TileGymKernel(TorchKernel):
    """A TorchKernel whose :meth:`bind` builds the dense buffers and the row index for one
    input set, compiles the op on a scratch call, and returns the launch."""

    def __init__(self, name: str, problem: MlaDecodeProblem, config: TileGymMlaConfig, split: int):
        super().__init__(name, self._unbound)
        self.problem, self.config, self.split = problem, config, split
        self.op, self.version = load_tilegym()

    @staticmethod
    def _unbound(_inputs: Mapping[str, Any]) -> None:  # pragma: no cover - bind() replaces it
        raise KernelPlanError("tilegym_mla: launch through bind()")

    def bind(self, inputs: Mapping[str, Any]):
        import torch

        p, t = self.problem, inputs
        b, hq, t_len = p.b, p.s * p.h, p.lengths()[0]
        dev, dt = t["q"].device, t["q"].dtype
        rows = dense_row_index(t["page_table"], t_len, p.page)
        kv = torch.empty((b, t_len, p.d_latent), dtype=dt, device=dev)
        kpe = torch.empty((b, t_len, p.d_rope), dtype=dt, device=dev)
        q_nope = torch.empty((b, hq, p.d_latent), dtype=dt, device=dev)
        q_pe = torch.empty((b, hq, p.d_rope), dtype=dt, device=dev)
        q = t["q"].view(b, hq, p.d_qk)  # s folded into the heads (non-causal; see supports())
        out = t["o"].view(b, hq, p.d_latent)
        op, scale, split = self.op, p.scale(), self.split

        def gather() -> None:
            gather_dense(t["kv_cache"], rows, kv, kpe)
            q_nope.copy_(q[..., : p.d_latent])
            q_pe.copy_(q[..., p.d_latent :])

        def attend() -> None:
            o = op(q_nope, q_pe, kv, kpe, scale, kv_len_per_split=split, backend="cutile")
            out.copy_(o)

        gather()
        try:  # the first call of a shape compiles (tileiras): here, into scratch only
            with _no_cuda_home():
                op(q_nope, q_pe, kv, kpe, scale, kv_len_per_split=split, backend="cutile")
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
        except Exception as e:
            first = first_line(e)
            raise KernelPlanError(
                f"{self.name}: TileGym {self.version} mla_decoding_split_kv failed: "
                f"{type(e).__name__}: {first}"
            ) from e
        if self.config.gather == "at_bind":
            return attend

        def launch() -> None:
            gather()
            attend()

        return launch


class TileGymMla(KernelPlan):
    """TileGym's cuTile split-KV MLA decode over dense KV gathered from the pages (see the
    module docstring: the gather is timed; O only, no LSE)."""

    name: ClassVar[str] = "tilegym_mla"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    source: ClassVar[str | None] = None  # a peer library, not a CUTLASS example
    target_sm: ClassVar[tuple[str, ...]] = ()  # a peer: cuTile runs on the H200 (sm_90)
    config_type = TileGymMlaConfig
    description: ClassVar[str] = (
        f"TileGym {TILEGYM_VERSION} cuTile mla_decoding_split_kv on dense KV gathered from the "
        "pages in the timed launch; O only (no LSE)"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        plain_cache_only(self.name, p)  # the FP8 latent cache: not taken
        if p.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype bfloat16 or float16 (got --dtype {p.dtype})")
        if not _pow2(p.d_latent) or not _pow2(p.d_rope):
            raise ShapeError(
                f"{self.name} takes d_latent and d_rope powers of two (got --d_latent "
                f"{p.d_latent} --d_rope {p.d_rope}; the op asserts it)"
            )
        lens = p.lengths()
        if any(n != lens[0] for n in lens):
            raise ShapeError(
                f"{self.name} takes one KV length for the whole batch (dense (B, T, D) KV, no "
                "per-sequence lengths): --varlen and unequal --seqlens are refused"
            )
        if p.s > 1 and p.causal:
            raise ShapeError(
                f"{self.name} has no causal mask: s > 1 needs --causal false (the s queries of "
                "a sequence are then folded into its heads)"
            )
        if (p.s * p.h) % TILE_H:
            raise ShapeError(
                f"{self.name} takes s*h a multiple of {TILE_H} (the op's head tile; got "
                f"{p.s * p.h})"
            )

    def output_names(self, problem: MlaDecodeProblem) -> list[str]:
        """``o`` only: the op returns no LSE, so ``lse`` is neither poisoned nor compared (a
        check of this implementation says nothing about LSE; its record lists ``o`` alone)."""
        return ["o"]

    def autotune_configs(self, problem: MlaDecodeProblem) -> list[TileGymMlaConfig]:
        """The op's default split and TileGym's own interface's 512, gather in the launch
        (``gather=at_bind`` is a different measurement, never a candidate)."""
        return [TileGymMlaConfig(), TileGymMlaConfig(kv_len_per_split=512)]

    def plan(
        self, problem: MlaDecodeProblem, config: TileGymMlaConfig, target: Target
    ) -> TorchKernel:
        split = config.kv_len_per_split or default_split(
            problem.lengths()[0], problem.b, target.sm_count
        )
        return TileGymKernel(self.name, problem, config, split)
