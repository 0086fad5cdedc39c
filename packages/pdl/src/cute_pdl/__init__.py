"""cute_pdl: pdl microbenchmarks over CUTLASS CuTe DSL examples.

``KERNELS`` maps each CLI name (``uv run pdl <name>``) to its KernelPlan class.
"""

PACKAGE = "pdl"

KERNELS = {
    "programmatic_dependent_launch": (
        "cute_pdl.programmatic_dependent_launch.programmatic_dependent_launch"
        ":ProgrammaticDependentLaunch"
    ),
}
