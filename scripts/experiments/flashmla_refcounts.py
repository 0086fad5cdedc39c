"""Whether calling FlashMLA's decode op keeps references to its inputs, on a GPU: through the
ops bridge (``torch.ops.lcd_flashmla``, packages/mla/src/cute_mla/flashmla/torch_ops_bridge.cpp)
and through sgl-kernel's own op wrapper (``torch.ops.sgl_kernel``: torch 2.9.1 inline code
under torch 2.11), each in a process of its own, the second with the library loaded alone as
the adapter loaded it before the bridge.

    KERNELPLAN_FLASHMLA_OPS=.device/fm/libflashmla_ops_bridge.so \\
        python scripts/experiments/flashmla_refcounts.py [calls]

Prints, per namespace, each input's ``sys.getrefcount`` before and after ``calls`` calls (5 by
default) and whether the KV cache tensor was freed once the script dropped its own names (a
weak reference to it). A reviewer's read of the library predicts: unchanged and freed through
the bridge; one more reference per call and not freed through ``sgl_kernel`` (its wrapper
releases its stack arguments with 2.9.1's 32-bit decrement, which never gives a Python
object's reference back). Exit 1 where the bridge keeps a reference or fails, 2 on bad input.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path

from cute_mla.flashmla.flashmla import LIBRARY, OPS_ENV

from kernelplan.errors import first_line


def measure(namespace: str, calls: int) -> bool:
    """One namespace's line; True where its op kept a reference or the cache."""
    import torch

    if namespace == "lcd_flashmla":
        from cute_mla.flashmla.flashmla import load_flashmla

        ops = load_flashmla()
    else:  # the library alone, beside the bridge named by KERNELPLAN_FLASHMLA_OPS
        bridge = Path(os.environ[OPS_ENV])
        torch.ops.load_library(str(bridge.resolve().parent / LIBRARY))
        ops = torch.ops.sgl_kernel
    b, h, pages = 4, 128, 8
    q = torch.randn(b, 1, h, 576, device="cuda", dtype=torch.bfloat16)
    cache = torch.randn(pages * b, 64, 1, 576, device="cuda", dtype=torch.bfloat16)
    seqlens = torch.full((b,), pages * 64, device="cuda", dtype=torch.int32)
    table = torch.arange(pages * b, device="cuda", dtype=torch.int32).view(b, pages)
    meta, splits = ops.get_mla_decoding_metadata(seqlens, h, 1, None, False, None)
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
    print(f"{namespace}: {calls} calls; refcount before {before}, after {after}; cache freed: "
          f"{freed}", flush=True)  # fmt: skip
    return after != before or not freed


def main(argv: list[str]) -> int:
    usage = "usage: python scripts/experiments/flashmla_refcounts.py [calls (a positive integer)]"
    if len(argv) > 1 and argv[1] in ("--one", "--one-library"):  # a child process
        name = "lcd_flashmla" if argv[1] == "--one" else "sgl_kernel"
        try:
            return int(measure(name, int(argv[2])))
        except Exception as e:  # not loadable, no GPU, the op failed: one line
            print(f"{name}: {type(e).__name__}: {first_line(e)}", flush=True)
            return 3
    if len(argv) > 2 or (len(argv) == 2 and not (argv[1].isdigit() and int(argv[1]) > 0)):
        print(usage, file=sys.stderr)
        return 2
    if not os.environ.get(OPS_ENV):
        print(f"set {OPS_ENV} to the bundle's libflashmla_ops_bridge.so "
              "(scripts/device/pack-flashmla.sh)", file=sys.stderr)  # fmt: skip
        return 2
    calls = argv[1] if len(argv) == 2 else "5"
    rc = {}
    for flag in ("--one", "--one-library"):
        rc[flag] = subprocess.run([sys.executable, __file__, flag, calls], check=False).returncode
        if rc[flag] not in (0, 1, 3):
            print(f"{flag}: the process ended with {rc[flag]}", flush=True)
    return 1 if rc["--one"] != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
