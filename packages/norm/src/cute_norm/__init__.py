"""cute_norm: RMSNorm over the ``rmsnorm`` workload (:mod:`kernelplan.workloads.rmsnorm`:
problem, tensors, reference, FLOPs and bytes, the check and profile problems are defined
there once).

``KERNELS`` maps each CLI name (``uv run norm <name>``) to its KernelPlan class: the CUTLASS
CuTe DSL examples (``blackwell/kernel/rmsnorm/rmsnorm.py``, whose row reduction is
``blackwell/kernel/reduce/reduce.py``, sm_90a or sm_80; ``hopper/kernel/cta_norm/cta_norm.py``
in its RMS mode) and the peers that run on the H200 (quack's RMSNorm,
``torch.nn.functional.rms_norm``, the eager PyTorch formula).
"""

PACKAGE = "norm"

KERNELS = {
    "rmsnorm": "cute_norm.rmsnorm.rmsnorm:CutlassRMSNorm",
    "hopper_cta_norm": "cute_norm.hopper_cta_norm.hopper_cta_norm:HopperCtaNorm",
    "quack_rmsnorm": "cute_norm.quack_rmsnorm.quack_rmsnorm:QuackRMSNorm",
    "torch_rms_norm": "cute_norm.torch_rms_norm.torch_rms_norm:TorchRmsNorm",
    "torch_eager": "cute_norm.torch_eager.torch_eager:TorchEagerRMSNorm",
}
