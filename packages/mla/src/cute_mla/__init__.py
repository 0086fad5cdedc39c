"""cute_mla: MLA decode (DeepSeek-style, paged latent cache) over the ``mla_decode`` workload
(:mod:`kernelplan.workloads.mla_decode`: problem, tensors, reference, FLOPs and bytes, the
check and profile problems are defined there once).

``KERNELS`` maps each CLI name (``uv run mla <name>``) to its KernelPlan class.
"""

PACKAGE = "mla"

KERNELS = {
    "torch_reference": "cute_mla.torch_reference.torch_reference:TorchReference",
}
