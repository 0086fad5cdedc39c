"""cute_mixed_input: mixed-input microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run mixed-input <name>``) to its KernelPlan class; they
implement the GEMM workload with a narrow A (``formats.py``: the problem, storage and
reference).
"""

PACKAGE = "mixed-input"

KERNELS = {
    "mixed_input_gemm": "cute_mixed_input.mixed_input_gemm.mixed_input_gemm:MixedInputGemm",
    "grouped_mixed_input_gemm": (
        "cute_mixed_input.grouped_mixed_input_gemm.grouped_mixed_input_gemm:GroupedMixedInputGemm"
    ),
}
