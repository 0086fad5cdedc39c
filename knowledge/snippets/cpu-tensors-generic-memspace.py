"""Compile a TMA kernel on a machine without a GPU: fake global tensors, not CPU tensors.

The kernel is the pipelined GEMM of tma-multistage-mbarrier-pipeline.py (sm_90a, TMA loads).
Shown in knowledge/languages/cute-dsl/anti-patterns/cpu-tensors-generic-memspace.md.
"""

from kernelplan.kb.snippets import sibling

SM = "sm_90a"

gemm = sibling(__file__, "tma-multistage-mbarrier-pipeline").PipelinedGemm()


def wrong_and_right():
    # snippet:begin
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack, make_fake_stream, make_fake_tensor

    # WRONG: CPU tensors are not global memory (DSL 4.8.1, CUTE_DSL_ARCH=sm_90a, this GEMM:
    # the compile was seen to go through, so nothing stops a cubin built for the wrong memory)
    a_cpu = torch.empty(4096, 4096, dtype=torch.float16)
    c_cpu = torch.empty(4096, 4096, dtype=torch.float32)
    wrong = "compiled"
    try:
        cpu_args = (from_dlpack(a_cpu), from_dlpack(a_cpu), from_dlpack(c_cpu))
        cute.compile(gemm, *cpu_args, make_fake_stream())
    except Exception as exc:
        wrong = f"refused: {type(exc).__name__}"

    # RIGHT: fake global tensors with the same static facts as the real ones
    m, n, k = cute.sym_int(), cute.sym_int(), cute.sym_int()
    a_fake = make_fake_tensor(cutlass.Float16, (m, k), (k, 1), assumed_align=16)  # K contiguous
    b_fake = make_fake_tensor(cutlass.Float16, (n, k), (k, 1), assumed_align=16)
    c_fake = make_fake_tensor(cutlass.Float32, (m, n), (n, 1), assumed_align=16)
    compiled = cute.compile(gemm, a_fake, b_fake, c_fake, make_fake_stream())
    # with CUTE_DSL_ARCH=sm_90a (or sm_100a) set before cutlass is imported, and
    # CUTE_DSL_KEEP=ptx,cubin plus CUTE_DSL_DUMP_DIR to keep the artefacts for analysis
    # snippet:end
    return wrong, compiled


def compile_snippet():
    wrong, compiled = wrong_and_right()
    assert compiled is not None
    return f"CPU tensors: {wrong}; fake tensors: compiled"


def check():
    return compile_snippet()
