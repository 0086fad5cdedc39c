"""cute_mla: MLA decode (DeepSeek-style, paged latent cache) over the ``mla_decode`` workload
(:mod:`kernelplan.workloads.mla_decode`: problem, tensors, reference, FLOPs and bytes, the
check and profile problems are defined there once).

``KERNELS`` maps each CLI name (``uv run mla <name>``) to its KernelPlan class.
"""

PACKAGE = "mla"

KERNELS = {
    "torch_reference": "cute_mla.torch_reference.torch_reference:TorchReference",
    "cutlass_mla_decode_fp16": (
        "cute_mla.cutlass_mla_decode_fp16.cutlass_mla_decode_fp16:CutlassMlaDecodeFp16"
    ),
    "cutlass_mla_decode_fp8": (
        "cute_mla.cutlass_mla_decode_fp8.cutlass_mla_decode_fp8:CutlassMlaDecodeFp8"
    ),
    "mla_decode_sm90": "cute_mla.mla_decode_sm90.mla_decode_sm90:MlaDecodeSm90",
    "flashinfer_mla": "cute_mla.flashinfer_mla.flashinfer_mla:FlashInferMla",
    "flashmla": "cute_mla.flashmla.flashmla:FlashMla",
    "tilegym_mla": "cute_mla.tilegym_mla.tilegym_mla:TileGymMla",
}
