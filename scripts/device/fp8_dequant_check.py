"""Every e4m3 value through seesaw step 15's bit-placement dequantisation on the GPU.

:func:`cute_mla.mla_decode_sm90.seesaw.e4m3x4_to_16bit` places the e4m3 bits into a bf16 or
fp16 value and multiplies twice (2^bias, then the scale) with ``mul.rn.{bf16x2,f16x2}``. The
kernel's checks cannot see whether those multiplies keep the 16-bit subnormals that e4m3's own
subnormals become (an error below 2^-6 of the scale hides under the output's tolerance), so
this runs all 256 byte values (the two NaN codes excluded) at a few power-of-two scales and
compares each bit pattern with torch's e4m3 -> fp32 -> dtype conversion: exact or not.

    python scripts/device/fp8_dequant_check.py      # on an sm_90 GPU; exit 1 on any mismatch
"""

from __future__ import annotations

import sys


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("error: fp8_dequant_check needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    import cutlass
    from cute_mla.mla_decode_sm90.seesaw import dequant_words
    from cutlass.cute.runtime import from_dlpack

    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    ref8 = codes.view(torch.float8_e4m3fn).float()
    finite = ~torch.isnan(ref8)
    src = codes.cuda().contiguous().view(torch.int32)
    bad = 0
    for dtype, half16 in ((torch.bfloat16, False), (torch.float16, True)):
        for scale in (1.0, 2.0**-7, 2.0**-3, 2.0**5):
            dst = torch.zeros(128, dtype=torch.int32, device="cuda")
            dequant_words(from_dlpack(src), from_dlpack(dst), cutlass.Float32(scale), half16)
            torch.cuda.synchronize()
            got = dst.cpu().view(dtype).float()
            want = (ref8 * scale).to(dtype).float()
            n = int((got[finite] != want[finite]).sum())
            sub = int(((codes & 0x78) == 0).sum())  # e4m3 exponent 0: zero and subnormals
            print(
                f"{dtype} scale {scale}: {n} of {int(finite.sum())} differ "
                f"({sub} codes are e4m3 zeros or subnormals)",
                flush=True,
            )
            bad += n
    print("PASS" if bad == 0 else f"FAIL: {bad} values differ", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
