"""Whether calling FlashMLA's decode op keeps references to its inputs, through the ops
bridge (``torch.ops.lcd_flashmla``, packages/mla/src/cute_mla/flashmla/torch_ops_bridge.cpp)
and through sgl-kernel's own op wrapper (``torch.ops.sgl_kernel``, torch 2.9.1 inline code
under torch 2.11), on a GPU.

    KERNELPLAN_FLASHMLA_OPS=.device/fm/libflashmla_ops_bridge.so \\
        python scripts/experiments/flashmla_refcounts.py [calls]

Prints, per namespace, each input's ``sys.getrefcount`` before and after ``calls`` calls (5 by
default) and whether the KV cache's storage was freed once the script dropped its own names
(a weak reference to the cache tensor). A reviewer's read of the library
predicts: unchanged and freed through the bridge; one more reference per call, and not freed,
through ``sgl_kernel``. Exit 1 where the bridge keeps a reference (the fix does not hold).
"""

from __future__ import annotations

import gc
import sys
import weakref


def main() -> int:
    import torch
    from cute_mla.flashmla.flashmla import load_flashmla

    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    bridge = load_flashmla()  # loads the library too: its sgl_kernel ops are registered
    leaked = False
    for name, ops in (("lcd_flashmla", bridge), ("sgl_kernel", torch.ops.sgl_kernel)):
        b, h, pages = 4, 128, 8
        q = torch.randn(b, 1, h, 576, device="cuda", dtype=torch.bfloat16)
        cache = torch.randn(pages * b, 64, 1, 576, device="cuda", dtype=torch.bfloat16)
        seqlens = torch.full((b,), pages * 64, device="cuda", dtype=torch.int32)
        table = torch.arange(pages * b, device="cuda", dtype=torch.int32).view(b, pages)
        meta, splits = bridge.get_mla_decoding_metadata(seqlens, h, 1, None, False, None)
        inputs = {"q": q, "cache": cache, "seqlens": seqlens, "table": table}
        before = {k: sys.getrefcount(v) for k, v in inputs.items()}
        for _ in range(calls):
            ops.fwd_kvcache_mla(q, cache, 512, seqlens, table, 576**-0.5, False, meta, splits,
                                False, None)  # fmt: skip
        torch.cuda.synchronize()
        after = {k: sys.getrefcount(v) for k, v in inputs.items()}
        probe = weakref.ref(cache)
        del q, cache, seqlens, table, inputs, meta, splits
        gc.collect()
        freed = probe() is None
        print(f"{name}: {calls} calls; refcount before {before}, after {after}; cache freed: "
              f"{freed}", flush=True)  # fmt: skip
        if name == "lcd_flashmla" and (after != before or not freed):
            leaked = True
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
