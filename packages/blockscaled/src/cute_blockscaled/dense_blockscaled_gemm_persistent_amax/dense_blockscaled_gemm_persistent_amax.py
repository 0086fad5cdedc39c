"""Adapter: class ``Sm100BlockScaledPersistentDenseGemmKernel`` of the CUTLASS CuTe DSL example
``cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_amax.py``: the
persistent block-scaled GEMM (NVFP4 / MXF4 / MXF8) whose epilogue also reduces ``max |C|``
into a one-element fp32 output ``amax``.

The extra output, as upstream computes it (L1330-L1428): each epilogue thread takes the
maximum of ``|acc|`` over its subtiles in fp32 *before* the conversion to C's type
(``math.absf`` then a ``MAX`` reduction, L1346-L1361), a warp reduces with ``redux.sync``
fmax (L1402-L1407), the four epilogue warps meet in SMEM (``sAmax``, L1408-L1422) and one
lane folds the tile's maximum into global memory with ``atomic_fmax`` (L1426-L1428). So
``amax`` is an accumulator: upstream fills it with -inf before the launch (L2198-L2210) and
checks it against ``max |ref|`` of the fp32 reference (``compute_reference_amax``,
L2063-L2084, L2396-L2404). Here :class:`AmaxKernel` sets it to -inf when the kernel is bound
to a set of inputs (once, outside the timed launches; a max over the same C is idempotent,
so repeated launches leave it right), after the check has poisoned it; a kernel that never
runs leaves -inf and fails the check. The reference's ``amax`` is ``max |C|`` of the fp32
reference, unrounded (the kernel reduces the accumulator).

Tensors, problem and format as ``dense_blockscaled_gemm_persistent_prefetch`` (shared base
:class:`~cute_blockscaled.dense_blockscaled_gemm_persistent_prefetch.
dense_blockscaled_gemm_persistent_prefetch.TensorEntryBlockScaledGemm`); ``__call__``
(L369-L380) takes a, b, sfa, sfb, c, amax. Upstream: ``run()`` L2087-L2485 builds the kernel
(L2318) and compiles at L2334 with ``--opt-level 2``. Its tile N is 128 or 256 only
(``is_valid_mma_tiler_and_cluster_shape``, L1882-L1921), refused through its
``can_implement``.

Target SM: sm_100a.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import CuteKernel, TensorSpec

from .. import formats as fm
from ..dense_blockscaled_gemm_persistent.dense_blockscaled_gemm_persistent import (
    BlockScaledConfig,
)
from ..dense_blockscaled_gemm_persistent_prefetch.dense_blockscaled_gemm_persistent_prefetch import (  # noqa: E501
    TensorEntryBlockScaledGemm,
)
from ..formats import BlockScaledGemmProblem


class AmaxKernel(CuteKernel):
    """A :class:`CuteKernel` whose ``amax`` input is set to -inf (upstream's initial value)
    when it is bound to a set of inputs, before any launch."""

    def bind(self, inputs: Mapping[str, Any]):
        inputs["amax"].fill_(float("-inf"))
        return super().bind(inputs)


def amax_spec() -> TensorSpec:
    """(1, 1, 1) fp32, dynamic layout (upstream ``cutlass_torch.matrix(1, 1, 1, False, ...)``
    through ``cute_tensor_like(..., is_dynamic_layout=True, assumed_align=16)``, L2199-L2210;
    its leading dim is 0)."""
    return TensorSpec(
        (1, 1, 1), "float32", perm=(1, 2, 0), leading_dim=0, role="output", init="empty"
    )


class DenseBlockscaledGemmPersistentAmax(TensorEntryBlockScaledGemm):
    """Blackwell persistent block-scaled GEMM with an amax reduction in the epilogue
    (sm_100a), imported from
    ``cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_amax.py``."""

    name: ClassVar[str] = "dense_blockscaled_gemm_persistent_amax"
    source: ClassVar[str] = (
        "cute/blackwell/kernel/blockscaled_gemm/dense_blockscaled_gemm_persistent_amax.py"
    )
    # tcgen05 (L36), blackwell_helpers (L41), tcgen05.CtaGroup.TWO (L195)
    config_type = BlockScaledConfig
    kernel_type = AmaxKernel
    description: ClassVar[str] = (
        "CUTLASS CuTe DSL Blackwell block-scaled GEMM with amax of C (NVFP4/MXF4/MXF8), sm_100a"
    )

    def tensor_specs(self, problem: BlockScaledGemmProblem) -> dict[str, TensorSpec]:
        return super().tensor_specs(problem) | {"amax": amax_spec()}

    def prepare_inputs(self, problem, seed: int, device: str = "cuda") -> dict[str, Any]:
        """The GEMM's inputs and ``amax`` at -inf, as upstream fills it (L2198-L2210)."""
        import torch

        out = super().prepare_inputs(problem, seed, device)
        out["amax"] = torch.full((1, 1, 1), float("-inf"), device=device)
        return out

    def reference(self, problem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        c = super().reference(problem, inputs)["c"]
        return {"c": c, "amax": c.abs().amax().reshape(1, 1, 1)}

    def flops_bytes(self, problem: BlockScaledGemmProblem) -> tuple[float, float]:
        """The GEMM's (the M*N*L abs-max comparisons are not counted), and 4 bytes of
        amax."""
        flops, nbytes = fm.flops_bytes(problem)
        return flops, nbytes + 4.0

    def build(self, mod, problem: BlockScaledGemmProblem, config: BlockScaledConfig) -> Any:
        return mod.Sm100BlockScaledPersistentDenseGemmKernel(
            problem.sf_vec_size, tuple(config.mma_tiler_mn), tuple(config.cluster_shape_mn)
        )

    def entry_tensors(self, t: Mapping[str, Any]) -> tuple:
        return (*super().entry_tensors(t), t["amax"])
