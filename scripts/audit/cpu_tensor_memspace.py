"""Audit experiment for knowledge/languages/cute-dsl/anti-patterns/cpu-tensors-generic-memspace.md:
what compiling from CPU tensors does, on a CPU, with nvidia-cutlass-dsl 4.8.1 and
CUTE_DSL_ARCH=sm_90a (set here before cutlass is imported).

    uv run python scripts/audit/cpu_tensor_memspace.py \
        > knowledge/audit/checks/cpu-tensor-memspace.log

Cases, each printed as `case: outcome` (an exception's type and first line when it fails):
  1. the address space and the argument type of from_dlpack(CPU tensor) vs make_fake_tensor;
  2. the TMA-only pipelined GEMM of knowledge/snippets/tma-multistage-mbarrier-pipeline.py
     compiled from CPU tensors, and from fake gmem tensors;
  3. a kernel whose global->SMEM copy is cp.async (CopyG2SOp), from CPU tensors and from fake
     gmem tensors;
  4. the same kernel with a plain SIMT copy (CopyUniversalOp) global->register, from CPU tensors.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "knowledge" / "snippets"))

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
import torch  # noqa: E402
from cutlass.cute.nvgpu import cpasync  # noqa: E402
from cutlass.cute.runtime import from_dlpack, make_fake_stream, make_fake_tensor  # noqa: E402


def outcome(fn) -> str:
    try:
        fn()
        return "compiled"
    except BaseException as exc:  # noqa: BLE001 - the DSL raises several kinds
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
        text = " ".join(text.split())  # the DSL wraps its message over several lines
        return f"FAILED {type(exc).__name__}: {text[:400]}"


@cute.kernel
def copy_kernel(src: cute.Tensor, dst: cute.Tensor, use_cp_async: cutlass.Constexpr):
    smem = cutlass.memory.SmemAllocator()
    s = smem.allocate_tensor(cutlass.Float16, cute.make_layout((8,)), byte_alignment=16)
    tidx, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(use_cp_async):
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=128)
        cute.copy(atom, src[(None,)], s)
        cute.arch.cp_async_commit_group()
        cute.arch.cp_async_wait_group(0)
    else:
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16)
        r = cute.make_rmem_tensor(cute.make_layout((8,)), cutlass.Float16)
        cute.copy(atom, src[(None,)], r)
        cute.copy(atom, r, s)
    cute.arch.sync_threads()
    if tidx == 0:
        dst[0] = s[0]


@cute.jit
def copy_host(src: cute.Tensor, dst: cute.Tensor, use_cp_async: cutlass.Constexpr, stream):
    copy_kernel(src, dst, use_cp_async).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)


def main() -> int:
    import importlib

    print(
        f"nvidia-cutlass-dsl {cutlass.__version__ if hasattr(cutlass, '__version__') else '?'}, "
        f"CUTE_DSL_ARCH={os.environ['CUTE_DSL_ARCH']}, cuda available: {torch.cuda.is_available()}"
    )
    a_cpu = torch.empty(4096, 4096, dtype=torch.float16)
    c_cpu = torch.empty(4096, 4096, dtype=torch.float32)
    t = from_dlpack(a_cpu)
    f = make_fake_tensor(cutlass.Float16, (4096, 4096), (4096, 1), assumed_align=16)
    print(
        f"1. from_dlpack(CPU tensor).memspace: {t.memspace}; "
        f"make_fake_tensor(...).memspace: {f.memspace}"
    )

    gemm = importlib.import_module("tma-multistage-mbarrier-pipeline").PipelinedGemm()
    print(
        "2. TMA GEMM from CPU tensors: "
        + outcome(
            lambda: cute.compile(
                gemm, from_dlpack(a_cpu), from_dlpack(a_cpu), from_dlpack(c_cpu), make_fake_stream()
            )
        )
    )
    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    print(
        "   TMA GEMM from fake gmem tensors: "
        + outcome(
            lambda: cute.compile(
                gemm,
                make_fake_tensor(cutlass.Float16, (m, k), (k, 1), assumed_align=16),
                make_fake_tensor(cutlass.Float16, (n, k), (k, 1), assumed_align=16),
                make_fake_tensor(cutlass.Float32, (m, n), (n, 1), assumed_align=16),
                make_fake_stream(),
            )
        )
    )

    src_cpu = from_dlpack(torch.empty(8, dtype=torch.float16), assumed_align=16)
    dst_cpu = from_dlpack(torch.empty(8, dtype=torch.float16), assumed_align=16)
    src_fake = make_fake_tensor(cutlass.Float16, (8,), (1,), assumed_align=16)
    dst_fake = make_fake_tensor(cutlass.Float16, (8,), (1,), assumed_align=16)
    print(
        "3. cp.async G2S from CPU tensors: "
        + outcome(lambda: cute.compile(copy_host, src_cpu, dst_cpu, True, make_fake_stream()))
    )
    print(
        "   cp.async G2S from fake gmem tensors: "
        + outcome(lambda: cute.compile(copy_host, src_fake, dst_fake, True, make_fake_stream()))
    )
    print(
        "4. SIMT copy from CPU tensors: "
        + outcome(lambda: cute.compile(copy_host, src_cpu, dst_cpu, False, make_fake_stream()))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
