"""What the CUTLASS FMHA adapters (Hopper forward, Blackwell forward and backward) share.

- :func:`check_head_dims`: one head dim for Q/K and V, from the example's list, and a dtype
  from its list (each adapter's ``supports`` starts with these three refusals).
- :func:`select_mask`: upstream's ``run()`` choice of ``MaskEnum`` member, the same rule in the
  three examples (Hopper ``fmha.py`` L2130-L2137, Blackwell ``fmha.py`` L3692-L3701 and
  ``fmha_bwd.py``'s ``_BWD`` members): a window (causal is a right window of 0) takes
  ``WINDOW_MASK``, or ``WINDOW_MASK_INFERENCE`` (the end of q aligned with the end of k) when
  ``sq != sk``, since the workload is bottom-right aligned (for ``sq == sk`` both are the same
  and upstream's default is kept); no window and a ragged last tile take ``RESIDUAL_MASK``.
- :func:`window_args`: the window bounds as the kernels' runtime ``Int32`` (None: unbounded).
- :func:`fixed_hardware_info` / :func:`persistent_meta`: persistent mode sizes its grid from
  ``HardwareInfo`` at trace time (``helpers/fmha_helpers.py`` L190); the adapters substitute
  the target's SM count, so it compiles without a GPU, and record it.
- :class:`WorkloadViews`: an adapter whose tensors are views of the workload's memory maps the
  workload's references to its own shapes (``_to_mine``); :class:`ForwardViews` is the forward
  case (O reshaped, the LSE (b, h_q, s_q) transposed to upstream's (b, s_q, h_kv, group, ...)).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelplan import KernelPlan, ShapeError, Target
from kernelplan.workloads.attention import AttentionProblem

LOG2_E = 1.4426950408889634074


def check_head_dims(
    name: str, problem: AttentionProblem, head_dims: tuple[int, ...], dtypes: tuple[str, ...]
) -> None:
    """Refuse (one line) a problem with two head dims, a head dim not in ``head_dims`` or a
    dtype not in ``dtypes``."""
    p = problem
    if p.d_qk != p.d_v:
        raise ShapeError(
            f"{name} takes one head dim for Q/K and V (got --d_qk {p.d_qk}, --d_v {p.d_v})"
        )
    if p.d_qk not in head_dims:
        raise ShapeError(
            f"{name} takes head dim {', '.join(map(str, head_dims))} (got --d_qk {p.d_qk})"
        )
    if p.dtype not in dtypes:
        raise ShapeError(f"{name} takes dtype {' or '.join(dtypes)} (got {p.dtype})")


def select_mask(masks: Any, problem: AttentionProblem, ragged: bool, bwd: bool = False) -> Any:
    """Upstream's ``MaskEnum`` member for ``problem`` (see the module docstring); ``ragged``:
    the unmasked problem's last tile is partial (the forward: ``sk`` not a multiple of the
    tile's N; the backward: ``sq`` not a multiple of its M); ``bwd``: the ``_BWD`` members."""
    sfx = "_BWD" if bwd else ""
    if problem.masked():
        inference = "_INFERENCE" if problem.sq != problem.sk else ""
        return getattr(masks, f"WINDOW_MASK{sfx}{inference}")
    if ragged:
        return getattr(masks, f"RESIDUAL_MASK{sfx}")
    return getattr(masks, f"WINDOW_MASK{sfx}")  # no window: nothing masked


def window_args(problem: AttentionProblem) -> tuple[Any, Any]:
    """``(window_size_left, window_size_right)`` as ``cutlass.Int32``, None where unbounded."""
    import cutlass

    left, right = problem.left(), problem.right()
    return (
        None if left is None else cutlass.Int32(left),
        None if right is None else cutlass.Int32(right),
    )


def fixed_hardware_info(sm_count: int):
    """A stand-in for ``cutlass.utils.HardwareInfo`` that reports ``sm_count`` SMs."""

    class _HardwareInfo:
        def get_device_multiprocessor_count(self) -> int:
            return sm_count

    return _HardwareInfo


def persistent_meta(mod: Any, target: Target, meta: dict[str, Any]) -> None:
    """Persistent mode: the example's ``HardwareInfo`` reports the target's SM count, and
    ``meta`` records it."""
    mod.fmha_utils.HardwareInfo = fixed_hardware_info(target.sm_count)
    meta.update(sm_count=target.sm_count, sm_count_from=target.sm_count_from)


class WorkloadViews(KernelPlan):
    """An adapter whose references are the workload's, mapped by ``_to_mine``."""

    def _to_mine(self, problem: AttentionProblem, ref: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def reference(self, problem: AttentionProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The workload's reference, in this adapter's tensor shapes."""
        return self._to_mine(problem, self.workload.reference(problem, inputs))

    def reference_lowp(self, problem: AttentionProblem, inputs: Mapping[str, Any]):
        return self._to_mine(problem, self.workload.reference_lowp(problem, inputs))


class ForwardViews(WorkloadViews):
    """A forward adapter: Q/K/V/O are views of the workload's BSHD memory in the adapter's
    ``tensor_specs`` shapes, the LSE a fresh (b, s_q, h_kv, group, ...) tensor."""

    def prepare_inputs(self, problem: AttentionProblem, seed: int, device: str = "cuda"):
        """The workload's tensors (same seed, same numbers as every implementation), Q/K/V/O
        as views of the same memory and the LSE zeroed in upstream's shape."""
        p = problem
        x = self.workload.prepare_inputs(p, self.workload.tensor_specs(p), seed, device)
        specs = self.tensor_specs(p)
        out = {n: x[n].view(specs[n].shape) for n in ("q", "k", "v", "o")}
        out["lse"] = x["lse"].new_zeros(specs["lse"].shape)
        return out

    def _to_mine(self, problem: AttentionProblem, ref: Mapping[str, Any]) -> dict[str, Any]:
        """O reshaped, the LSE (b, h_q, s_q) transposed to upstream's storage."""
        specs = self.tensor_specs(problem)
        return {
            "o": ref["o"].reshape(specs["o"].shape),
            "lse": ref["lse"].transpose(1, 2).reshape(specs["lse"].shape),
        }
