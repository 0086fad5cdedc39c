"""cute_blockscaled: blockscaled microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run blockscaled <name>``) to its KernelPlan class. They
implement the GEMM workload with a block scaling mode (``formats.py``: the problem, formats,
scale-factor layout and reference).
"""

PACKAGE = "blockscaled"

KERNELS = {
    "dense_blockscaled_gemm_persistent": (
        "cute_blockscaled.dense_blockscaled_gemm_persistent.dense_blockscaled_gemm_persistent"
        ":DenseBlockscaledGemmPersistent"
    ),
    "dense_blockscaled_gemm_persistent_prefetch": (
        "cute_blockscaled.dense_blockscaled_gemm_persistent_prefetch."
        "dense_blockscaled_gemm_persistent_prefetch:DenseBlockscaledGemmPersistentPrefetch"
    ),
    "dense_blockscaled_gemm_persistent_amax": (
        "cute_blockscaled.dense_blockscaled_gemm_persistent_amax."
        "dense_blockscaled_gemm_persistent_amax:DenseBlockscaledGemmPersistentAmax"
    ),
}
