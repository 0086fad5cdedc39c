"""cute_blockwise: blockwise microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run blockwise <name>``) to its KernelPlan class; they
implement the GEMM workload with blockwise fp32 scales (``formats.py``).
"""

PACKAGE = "blockwise"

KERNELS = {
    "blockwise_gemm": "cute_blockwise.blockwise_gemm.blockwise_gemm:BlockwiseGemm",
    "contiguous_grouped_gemm": (
        "cute_blockwise.contiguous_grouped_gemm.contiguous_grouped_gemm:ContiguousGroupedGemm"
    ),
}
