"""cute_mamba2: mamba2 microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run mamba2 <name>``) to its KernelPlan class; they
implement the SSD workload (``kernelplan.workloads.ssd``).
"""

PACKAGE = "mamba2"

KERNELS = {
    "mamba2_ssd": "cute_mamba2.mamba2_ssd.mamba2_ssd:Mamba2Ssd",
}
