"""Peer: FlashMLA's Hopper dense decode (deepseek-ai/FlashMLA), as sgl-kernel 0.3.21 ships it.

FlashMLA is the issue's reference point (the fastest published Hopper MLA decode) and has no
wheel of its own on PyPI (``flash-mla`` there is a 6 kB placeholder sdist). sgl-kernel
``0.3.21`` carries it prebuilt: ``sgl_kernel/flashmla_ops.abi3.so`` registers the torch ops
``sgl_kernel::get_mla_decoding_metadata`` (FlashMLA's ``get_mla_metadata``) and
``sgl_kernel::fwd_kvcache_mla`` (its ``flash_mla_with_kvcache``; its dense sm_90 path runs the
split-KV kernel and, where a sequence is split, the combine kernel). The op names, argument
order and shapes are those of the wheel's ``sgl_kernel/flash_mla.py`` wrapper.

**Where it comes from.** That library is built against torch 2.9.1 and CUDA 12; the H200 host
has torch 2.11 with CUDA 13 and no registry. ``scripts/device/pack-flashmla.sh`` (run where
PyPI is reachable) takes the library out of the registry's wheel, points three of its
references at a small ABI shim of ours (``torch_abi_shim.cpp`` beside this file: the device
properties in CUDA 12's struct layout, and two torch functions whose signatures changed), and
puts CUDA 12.9's runtime beside it, in ``.device/fm``, with an ops bridge of ours
(``torch_ops_bridge.cpp``, compiled against torch 2.11's headers): the torch ops
``lcd_flashmla::get_mla_decoding_metadata`` and ``lcd_flashmla::fwd_kvcache_mla``, which call
the library's two C++ entry points directly, so the library's own ``sgl_kernel`` op wrappers
(torch 2.9.1 code) never run. Nothing of FlashMLA is built here. Where torch and sgl-kernel
match (torch 2.9.1 with ``pip install sgl-kernel==0.3.21``), the wheel's own module and its
``sgl_kernel`` ops are used instead.

What the adapter does with the workload's tensors:

* **bind** (once per input set, outside the timed launch): FlashMLA's scheduler metadata from
  ``seqlens`` (``get_mla_decoding_metadata(seqlens, s*h, 1)``: one KV head, ``s*h`` query rows
  per sequence), as a caller computes it once per decode step for all layers. It is a small
  kernel on the GPU that reads the lengths; it writes no output of the workload.
* **launch**: ``fwd_kvcache_mla(q (b, s, h, 576), kv_cache viewed (pages, 64, 1, 576), 512,
  seqlens, page_table, scale, causal and s > 1, metadata, num_splits)``. The op allocates and
  returns ``out (b, s, h, 512)`` and ``lse (b, h, s)`` (natural log) on every call; a caller
  uses what it returns, so the timed launch is the op alone.
* **check**: the op cannot write into the workload's ``o`` and ``lse``, so
  :meth:`FlashMla.run_check` checks ``--config outputs=copied``, whose launch is the same op
  followed by copying its two results into ``o`` and ``lse`` (transposing LSE to ``(b, s,
  h)``). Timing defaults to ``outputs=returned``; ``outputs=copied`` can be timed to see the
  copies' cost.
* **A query that sees no key** (an empty sequence; with causal s > 1 a query of a sequence
  shorter than s): FlashMLA returns ``o = 0`` and ``lse = +inf`` (upstream's reference says so:
  ``tests/test_flash_mla_dense_decoding.py`` L114-L118 in deepseek-ai/FlashMLA at 9241ae3;
  sgl-kernel builds from its own FlashMLA pin, so the device check is what confirms it); the
  workload's convention is ``-inf`` (the log of an empty sum), so the copy maps exactly
  ``+inf`` to ``-inf`` (a finite problem has no other infinite LSE). ``o`` is not touched.

The page table's spare entries are never read (FlashMLA reads ``ceil(len / 64)`` pages of a
sequence). FlashMLA takes page 64 only, one KV head, d_qk 576 and d_latent 512, bf16 or fp16.
A launch allocates only through torch's caching allocator and never synchronises, so it can
be captured in a CUDA graph (``--cuda-graph``); compare it with ``--cuda-graph``, since an
eager launch also times the op's host work (its views, ``torch::empty`` calls and
``cudaFuncSetAttribute``), which FlashInfer's launch does not have.

**Limits of the bundle.** The library was built against torch 2.9.1's headers, so it carries
inline copies of torch code, whose ``TensorImpl`` virtual-call slots are 0x18 below torch
2.11's (three virtual methods were added before them). Two of those calls run on plain
tensors: ``has_storage()`` in every ``data_ptr()``, and ``shallow_copy_and_detach()`` when
``torch::empty``'s result is shared; the first device run failed at the first ("Cannot access
data pointer of Tensor that doesn't have storage", 2026-12-07), and ``pack-flashmla.sh``
now moves both to torch 2.11's slots (found by their bytes inside their functions; the 2.11
slots read from its headers; both calls compared by hand with the same functions compiled
from those headers). The others are made only for
tensors with custom sizes, strides or device policies (subclasses, fake tensors under
tracing); the field offsets of plain tensors match, and plain CUDA tensors are all this
adapter passes. A reviewer's read of the library against the 2.11 headers found one more
difference on the plain path: torch 2.11 counts a Python-owned tensor's references in one
64-bit word and gives the Python object back when the count falls from 2 to 1, which 2.9.1's
inline decrement never does. The library's op wrappers release their stack arguments that
way, so each call through ``sgl_kernel::fwd_kvcache_mla`` would keep every input (the KV cache
among them) alive for good. The ops bridge is the fix, not yet run on a GPU: torch 2.11's
code owns the stack, and the bridge holds its own reference to every tensor for the call, so
no count the library changes crosses 1 and 2 (``scripts/experiments/flashmla_refcounts.py``
measures both ways). These reads covered ``TensorImpl``, its reference count and the code
the two ops reach; another class's inline code differs too (``VirtualGuardImpl``'s
``recordDataPtrOnStream`` slot, 0x98 against 2.11's 0xa8) but is not on the decode path. The
loader refuses the bundle under any torch but 2.11. Errors: the library's ``TORCH_CHECK`` calls
and torch's CUDA checks (through the ABI shim) raise, and the adapter turns them into one
line; a CUDA error that FlashMLA's own launchers check is not an exception: they print it and
``exit(1)`` (its ``CHECK_CUDA``), which ends the process and any run it was part of.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from kernelplan import Config, KernelPlan, KernelPlanError, ShapeError, Target, TorchKernel
from kernelplan.errors import NotInstalled, first_line
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem, plain_cache_only

#: the sgl-kernel release whose FlashMLA library the adapter was written and measured against
SGL_KERNEL_VERSION = "0.3.21"
#: the environment variable naming the ops bridge of the bundle (scripts/device/pack-flashmla.sh)
OPS_ENV = "KERNELPLAN_FLASHMLA_OPS"
#: where pack-flashmla.sh puts it: .device/fm under the project's root (this file is
#: packages/mla/src/cute_mla/flashmla/flashmla.py in it)
DEFAULT_OPS = Path(__file__).resolve().parents[5] / ".device" / "fm" / "libflashmla_ops_bridge.so"
INSTALL = (
    f"bash scripts/device/pack-flashmla.sh, then {OPS_ENV}=.device/fm/libflashmla_ops_bridge.so "
    f"(or, with torch 2.9.1: pip install sgl-kernel=={SGL_KERNEL_VERSION})"
)
#: sgl-kernel's FlashMLA library, beside the ops bridge in the bundle
LIBRARY = "flashmla_ops.abi3.so"
#: the torch the bundle is built for (the H200 host's); see the module text
BRIDGE_TORCH = "2.11"
DTYPES = ("bfloat16", "float16")
#: the only page size, head dims and KV head count FlashMLA's dense decode takes
PAGE, D_QK, D_LATENT = 64, 576, 512

_OPS: Any = None  # the torch.ops namespace once the library is loaded (one load per process)
_SOURCE: dict[str, str] = {}  # what was loaded: recorded with every run (FlashMlaKernel.meta)


def _load_library(path: Path) -> None:
    """Load the ops bridge (which loads sgl-kernel's library, its DT_NEEDED, beside it); its
    static initialisers register the ``lcd_flashmla`` torch ops."""
    import torch

    torch.ops.load_library(str(path))


def load_flashmla() -> Any:
    """The torch ops namespace with FlashMLA's two ops: ``torch.ops.lcd_flashmla`` from the
    bundle's ops bridge, or ``torch.ops.sgl_kernel`` from an installed sgl-kernel.

    The ops bridge named by ``$KERNELPLAN_FLASHMLA_OPS`` (refused unless torch is 2.11), or
    ``.device/fm/libflashmla_ops_bridge.so`` under the project's root when that exists and
    torch is 2.11, else the installed ``sgl_kernel.flashmla_ops`` (under its own torch, 2.9.1).

    Raises:
        NotInstalled: neither loads (one line: how to get it, and why the load failed).
    """
    global _OPS
    if _OPS is not None:
        return _OPS
    version = "none"  # torch's, once imported
    try:
        import torch

        version = torch.__version__
        named = os.environ.get(OPS_ENV)
        bridged_torch = version.startswith(BRIDGE_TORCH + ".")
        # the bundle under the project's root only under the torch it is bridged to; under
        # another torch, the installed sgl-kernel (whose own torch it must be)
        path = None
        if named:
            path = Path(named)
        elif bridged_torch and DEFAULT_OPS.exists():
            path = DEFAULT_OPS
        if path is not None:
            where = f"{OPS_ENV}={named}" if named else str(path)
            if not bridged_torch:  # the torch first: no file can fix another torch
                raise NotInstalled(
                    f"flashmla: {where} needs torch {BRIDGE_TORCH} (the bundle of "
                    f"scripts/device/pack-flashmla.sh is bridged to it), or unset {OPS_ENV} and "
                    f"use torch 2.9.1 with sgl-kernel=={SGL_KERNEL_VERSION} installed; this is "
                    f"torch {version}"
                )
            if not path.is_file():
                what = "is not a file" if path.exists() else "no such file"
                raise FileNotFoundError(f"{where}: {what}")
            if path.name == LIBRARY:  # the library itself, not the bridge
                raise FileNotFoundError(
                    f"{where} is sgl-kernel's library; name the bundle's ops bridge, "
                    f"{path.parent / DEFAULT_OPS.name}"
                )
            library = path.resolve().parent / LIBRARY
            _load_library(path)
            ops = torch.ops.lcd_flashmla
            ops.fwd_kvcache_mla, ops.get_mla_decoding_metadata  # noqa: B018  (present?)
            source = {
                "library": str(library),
                "library_sha256": hashlib.sha256(library.read_bytes()).hexdigest(),
                "ops_bridge": str(path.resolve()),
                "ops_bridge_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "sgl_kernel": f"{SGL_KERNEL_VERSION} (bridged by scripts/device/pack-flashmla.sh)",
            }
        else:
            import sgl_kernel
            import sgl_kernel.flashmla_ops  # noqa: F401  (registers the ops)

            ops = torch.ops.sgl_kernel
            ops.fwd_kvcache_mla, ops.get_mla_decoding_metadata  # noqa: B018  (present?)
            source = {"sgl_kernel": str(getattr(sgl_kernel, "__version__", "?"))}
    except NotInstalled:
        raise
    except Exception as e:  # ImportError, OSError (dlopen), AttributeError (no such op)
        first = first_line(e)
        cause = e.__cause__ or e.__context__  # torch.ops.load_library wraps dlopen's reason
        if cause is not None and first_line(cause) not in first:
            first = f"{first}: {first_line(cause)}"
        if isinstance(e, ModuleNotFoundError) and DEFAULT_OPS.exists():
            first += (
                f" (the bundle at {DEFAULT_OPS} was not used: it is bridged to torch "
                f"{BRIDGE_TORCH}, this is torch {version})"
            )
        raise NotInstalled(
            f"flashmla needs FlashMLA's ops from sgl-kernel {SGL_KERNEL_VERSION}: {INSTALL} "
            f"(load failed: {type(e).__name__}: {first})"
        ) from None
    _SOURCE.update(source)  # what was loaded, once it has the two ops
    _OPS = ops
    return ops


@dataclass(frozen=True)
class FlashMlaConfig(Config):
    """``outputs``: ``returned`` (the launch is the op; its results are what a caller uses)
    or ``copied`` (the op, then its O and LSE copied into the workload's ``o`` and ``lse``:
    what a check runs)."""

    outputs: Literal["returned", "copied"] = "returned"


class FlashMlaKernel(TorchKernel):
    """A TorchKernel whose :meth:`bind` computes FlashMLA's scheduler metadata for one input
    set and returns the launch (see the module docstring)."""

    def __init__(self, name: str, problem: MlaDecodeProblem, config: FlashMlaConfig):
        super().__init__(name, self._unbound)
        self.problem, self.config = problem, config
        self.ops = load_flashmla()
        self.meta.update(peer="FlashMLA dense decode (sgl-kernel flashmla_ops)", **_SOURCE)
        self.meta["outputs"] = config.outputs

    @staticmethod
    def _unbound(_inputs: Mapping[str, Any]) -> None:  # pragma: no cover - bind() replaces it
        raise KernelPlanError("flashmla: launch through bind()")

    def bind(self, inputs: Mapping[str, Any]):
        p, t, ops = self.problem, inputs, self.ops
        q, seqlens, table = t["q"], t["seqlens"], t["page_table"]
        if q.is_cuda:
            import torch

            cc = torch.cuda.get_device_capability(q.device)
            if cc != (9, 0):
                raise KernelPlanError(
                    f"{self.name}: FlashMLA's dense decode runs on sm_90 only (this GPU is "
                    f"sm_{cc[0]}{cc[1]})"
                )
        cache = t["kv_cache"].view(-1, p.page, 1, p.d_qk)
        try:
            meta, splits = ops.get_mla_decoding_metadata(seqlens, p.s * p.h, 1, None, False, None)
        except Exception as e:  # FlashMLA's TORCH_CHECK (its CUDA errors exit the process)
            first = first_line(e)
            raise KernelPlanError(
                f"{self.name}: FlashMLA get_mla_decoding_metadata failed: "
                f"{type(e).__name__}: {first}"
            ) from e
        scale, causal = p.scale(), bool(p.causal and p.s > 1)
        o, lse = t["o"], t["lse"]

        def attend():
            try:
                return ops.fwd_kvcache_mla(
                    q, cache, p.d_latent, seqlens, table, scale, causal, meta, splits, False, None
                )
            except Exception as e:  # its TORCH_CHECKs (its CUDA errors exit the process)
                raise KernelPlanError(
                    f"{self.name}: FlashMLA fwd_kvcache_mla failed: {type(e).__name__}: "
                    f"{first_line(e)}"
                ) from e

        if self.config.outputs == "returned":
            launch = attend
        else:

            def launch() -> None:
                out, out_lse = attend()
                o.copy_(out)
                lse.copy_(out_lse.transpose(1, 2))
                # FlashMLA's LSE of a query that sees no key is +inf, the workload's -inf
                lse.masked_fill_(lse == math.inf, -math.inf)

        return launch


class FlashMla(KernelPlan):
    """FlashMLA's Hopper dense MLA decode from sgl-kernel 0.3.21 (see the module docstring:
    the check copies its returned O and LSE; the timed launch is the op alone)."""

    name: ClassVar[str] = "flashmla"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    source: ClassVar[str | None] = None  # a peer library, not a CUTLASS example
    target_sm: ClassVar[tuple[str, ...]] = ()  # a peer: nothing of ours is compiled
    peer_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)  # its dense decode's only build
    config_type = FlashMlaConfig
    description: ClassVar[str] = (
        f"FlashMLA dense decode (sgl-kernel {SGL_KERNEL_VERSION} flashmla_ops): metadata at "
        "bind; the op returns O and LSE (the check copies them)"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        plain_cache_only(self.name, p)  # the FP8 latent cache: not this layout
        if p.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype bfloat16 or float16 (got --dtype {p.dtype})")
        if p.page != PAGE:
            raise ShapeError(f"{self.name} takes --page {PAGE} only (FlashMLA's page block)")
        if p.d_qk != D_QK or p.d_latent != D_LATENT:
            raise ShapeError(
                f"{self.name} takes d_latent {D_LATENT} and d_rope {D_QK - D_LATENT} only (got "
                f"--d_latent {p.d_latent} --d_rope {p.d_rope})"
            )

    def autotune_configs(self, problem: MlaDecodeProblem) -> list[FlashMlaConfig]:
        """The op alone (``outputs=copied`` times copies FlashMLA's callers do not make)."""
        return [FlashMlaConfig()]

    def run_check(self, problem, config, **kw):
        """:meth:`KernelPlan.run_check` with ``outputs=copied``: the op is the one the timed
        launch runs, and its results reach the workload's ``o`` and ``lse`` to be compared."""
        return super().run_check(problem, dataclasses.replace(config, outputs="copied"), **kw)

    def plan(
        self, problem: MlaDecodeProblem, config: FlashMlaConfig, target: Target
    ) -> TorchKernel:
        return FlashMlaKernel(self.name, problem, config)
