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
    "dense_gemm": "cute_gemm.dense_gemm.dense_gemm:BlackwellDenseGemm",
    "dense_gemm_software_pipeline": (
        "cute_gemm.dense_gemm_software_pipeline.dense_gemm_software_pipeline"
        ":BlackwellDenseGemmSoftwarePipeline"
    ),
    "dense_gemm_persistent": (
        "cute_gemm.dense_gemm_persistent.dense_gemm_persistent:BlackwellDenseGemmPersistent"
    ),
    "dense_gemm_persistent_prefetch": (
        "cute_gemm.dense_gemm_persistent_prefetch.dense_gemm_persistent_prefetch"
        ":BlackwellDenseGemmPersistentPrefetch"
    ),
    "dense_gemm_persistent_dynamic": (
        "cute_gemm.dense_gemm_persistent_dynamic.dense_gemm_persistent_dynamic"
        ":BlackwellDenseGemmPersistentDynamic"
    ),
    "torch_matmul": "cute_gemm.torch_matmul.torch_matmul:TorchMatmul",
    "hopper_dense_gemm_fp8_2xacc": (
        "cute_gemm.hopper_dense_gemm_fp8_2xacc.hopper_dense_gemm_fp8_2xacc:HopperDenseGemmFp82xAcc"
    ),
    "torch_scaled_mm": "cute_gemm.torch_scaled_mm.torch_scaled_mm:TorchScaledMm",
}
