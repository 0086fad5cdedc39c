"""cute_gemm: GEMM microbenchmarks over the CUTLASS CuTe DSL GEMM examples.

``KERNELS`` maps each CLI name (``uv run gemm <name>``) to its KernelPlan class.
"""

PACKAGE = "gemm"

KERNELS = {
    "hopper_dense_gemm": "cute_gemm.hopper_dense_gemm.hopper_dense_gemm:HopperDenseGemm",
    "hopper_dense_gemm_persistent": (
        "cute_gemm.hopper_dense_gemm_persistent.hopper_dense_gemm_persistent"
        ":HopperDenseGemmPersistent"
    ),
    "torch_matmul": "cute_gemm.torch_matmul.torch_matmul:TorchMatmul",
}
