"""cute_fmha: attention forward and backward over the ``attention_fwd`` and ``attention_bwd``
workloads (:mod:`kernelplan.workloads.attention`: problem, tensors, reference, FLOPs and bytes, the
check and profile problems are defined there once).

``KERNELS`` maps each CLI name (``uv run fmha <name>``) to its KernelPlan class: the CUTLASS
CuTe DSL examples (Hopper ``fmha.py``, sm_90a; Ampere ``flash_attention_v2.py``, sm_80;
Blackwell ``fmha.py``, ``fmha_bwd.py`` and the mixed-input prefill and decode examples,
sm_100a, static here) and
the peers that run on the H200 (PyTorch SDPA, one implementation per backend; flash-attn-4),
forward and, as ``*_bwd``, backward (``attention_bwd``).
"""

PACKAGE = "fmha"

KERNELS = {
    "hopper_fmha": "cute_fmha.hopper_fmha.hopper_fmha:HopperFmha",
    "ampere_flash_attention_v2": (
        "cute_fmha.ampere_flash_attention_v2.ampere_flash_attention_v2:AmpereFlashAttentionV2"
    ),
    "sdpa_flash": "cute_fmha.sdpa_flash.sdpa_flash:SdpaFlash",
    "sdpa_cudnn": "cute_fmha.sdpa_cudnn.sdpa_cudnn:SdpaCudnn",
    "sdpa_efficient": "cute_fmha.sdpa_efficient.sdpa_efficient:SdpaEfficient",
    "sdpa_math": "cute_fmha.sdpa_math.sdpa_math:SdpaMath",
    "flash_attn4": "cute_fmha.flash_attn4.flash_attn4:FlashAttn4",
    "sdpa_flash_bwd": "cute_fmha.sdpa_flash_bwd.sdpa_flash_bwd:SdpaFlashBwd",
    "sdpa_cudnn_bwd": "cute_fmha.sdpa_cudnn_bwd.sdpa_cudnn_bwd:SdpaCudnnBwd",
    "sdpa_efficient_bwd": "cute_fmha.sdpa_efficient_bwd.sdpa_efficient_bwd:SdpaEfficientBwd",
    "sdpa_math_bwd": "cute_fmha.sdpa_math_bwd.sdpa_math_bwd:SdpaMathBwd",
    "flash_attn4_bwd": "cute_fmha.flash_attn4_bwd.flash_attn4_bwd:FlashAttn4Bwd",
    "blackwell_fmha": "cute_fmha.blackwell_fmha.blackwell_fmha:BlackwellFmha",
    "blackwell_fmha_bwd": "cute_fmha.blackwell_fmha_bwd.blackwell_fmha_bwd:BlackwellFmhaBwd",
    "mixed_input_fmha_prefill_d256": (
        "cute_fmha.mixed_input_fmha_prefill_d256.mixed_input_fmha_prefill_d256:"
        "MixedInputFmhaPrefillD256"
    ),
    "mixed_input_fmha_prefill_d512": (
        "cute_fmha.mixed_input_fmha_prefill_d512.mixed_input_fmha_prefill_d512:"
        "MixedInputFmhaPrefillD512"
    ),
    "mixed_input_fmha_decode": (
        "cute_fmha.mixed_input_fmha_decode.mixed_input_fmha_decode:MixedInputFmhaDecode"
    ),
}
