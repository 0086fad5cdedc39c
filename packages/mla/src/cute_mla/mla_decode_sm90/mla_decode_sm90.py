"""This project's own MLA decode for Hopper (sm_90a), written in the CuTe DSL (issue 10).

The kernel and its design: :mod:`cute_mla.mla_decode_sm90.kernel` and the devlog
``knowledge/kernels/mla-decode-sm90.md``. It takes the ``mla_decode`` workload's tensors as
they are stored (no other views): q (b, s, h, 576), kv_cache (num_pages, 64, 576),
page_table (b, pages) int32, seqlens (b,) int32, o (b, s, h, 512), lse (b, s, h) fp32.
Each is passed with a dynamic layout (``leading_dim`` = the last mode) so that one compile
serves every batch, length, page-table width and cache size; the kernel rebuilds static
row-major views from the base pointers (s*h and the 576/512 widths are compile-time).

v0 (this step): cp.async loads, no split-KV (one CTA per 64 packed query rows and sequence),
both warpgroups compute the full S. Correctness first; see the kernel module for the list.
"""

from __future__ import annotations

from typing import ClassVar

from kernelplan import STREAM, CuteKernel, KernelPlan, NoConfig, ShapeError, Target, TensorSpec
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem

#: what this kernel takes (supports() refuses the rest with one line)
HEADS = (16, 32, 64, 128)
DTYPES = ("bfloat16", "float16")
#: the cache view's page offsets are 32-bit: num_pages * 64 * 576 must stay below 2**31
MAX_PAGES = (2**31 - 1) // (64 * 576)


class MlaDecodeSm90(KernelPlan):
    """MLA decode on Hopper: WGMMA, two math warpgroups, V as a transposed view of the K
    page in SMEM, online softmax in registers (see the module docstring)."""

    name: ClassVar[str] = "mla_decode_sm90"
    package: ClassVar[str] = "mla"
    workload = MLA_DECODE
    source: ClassVar[str | None] = None  # own code (kernel.py here), no upstream example
    target_sm: ClassVar[tuple[str, ...]] = ("sm_90a",)
    config_type = NoConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = (
        "b", "t", "varlen", "varlen_seed", "seqlens", "num_pages", "softmax_scale",
    )  # fmt: skip
    description: ClassVar[str] = (
        "own CuTe DSL MLA decode for sm_90a (WGMMA, 2 math warpgroups, cp.async pages, "
        "V = transposed K page in SMEM), v0: no split-KV"
    )

    def supports(self, problem: MlaDecodeProblem) -> None:
        p = problem
        if p.page != 64:
            raise ShapeError(f"{self.name} takes page size 64 only (got --page {p.page})")
        if p.d_latent != 512 or p.d_rope != 64:
            raise ShapeError(
                f"{self.name} takes d_latent 512 and d_rope 64 only "
                f"(got --d_latent {p.d_latent} --d_rope {p.d_rope})"
            )
        if p.h not in HEADS:
            raise ShapeError(
                f"{self.name} takes h in {{{', '.join(map(str, HEADS))}}} (got --h {p.h})"
            )
        if not 1 <= p.s <= 4:
            raise ShapeError(f"{self.name} takes s in 1..4 (got --s {p.s})")
        if p.dtype not in DTYPES:
            raise ShapeError(
                f"{self.name} takes dtype {' or '.join(DTYPES)} (got --dtype {p.dtype})"
            )
        if p.b * p.s * p.h * p.d_qk >= 2**31:
            raise ShapeError(f"{self.name} takes b*s*h*576 < 2**31 (32-bit offsets; got --b {p.b})")
        if p.pages_total() > MAX_PAGES:
            raise ShapeError(
                f"{self.name} takes at most {MAX_PAGES} cache pages (32-bit offsets; got "
                f"--num_pages {p.pages_total()})"
            )

    def tensor_specs(self, problem: MlaDecodeProblem) -> dict[str, TensorSpec]:
        """The workload's tensors, each with a dynamic layout (leading_dim = last mode): one
        compile per (s, h, causal, dtype)."""
        specs = dict(self.workload.tensor_specs(problem))
        for n, s in specs.items():
            specs[n] = TensorSpec(
                s.shape, s.dtype, perm=s.perm, role=s.role, init=s.init, scale=s.scale,
                leading_dim=len(s.shape) - 1, align=16,
            )  # fmt: skip
        return specs

    def plan(self, problem: MlaDecodeProblem, config: NoConfig, target: Target) -> CuteKernel:
        import cutlass

        from .kernel import MlaDecodeSm90Kernel

        p = problem
        dt = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[p.dtype]
        k = MlaDecodeSm90Kernel(p.s, p.h, bool(p.causal), dt)
        return CuteKernel(
            self.name,
            k,
            lambda t: (
                t["q"],
                t["kv_cache"],
                t["page_table"],
                t["seqlens"],
                t["o"],
                t["lse"],
                cutlass.Float32(p.scale()),
                STREAM,
            ),  # fmt: skip
            self.tensor_specs(p),
            meta={"split_kv": 1, "kv_load": "cp.async", "math_warpgroups": 2},
        )
