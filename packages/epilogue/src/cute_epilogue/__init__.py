"""cute_epilogue: epilogue microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run epilogue <name>``) to its KernelPlan class.
"""

PACKAGE = "epilogue"

KERNELS = {
    "custom_epilogue_dense_gemm": (
        "cute_epilogue.custom_epilogue_dense_gemm.custom_epilogue_dense_gemm"
        ":CustomEpilogueDenseGemm"
    ),
    "activation_custom_epilogue_dense_gemm": (
        "cute_epilogue.activation_custom_epilogue_dense_gemm.activation_custom_epilogue_dense_gemm"
        ":ActivationCustomEpilogueDenseGemm"
    ),
}
