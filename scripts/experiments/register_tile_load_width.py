"""Experiment: how wide are the global loads a thread issues into a register tensor's row, by
that tensor's layout? (The devlog of mla_decode_sm90, "Session 21": the combine kernel's
batched split loads compiled to 4-byte loads.)

It compiles on this CPU host, through the CuTe DSL (its own ptxas), for sm_90a:

* the KB snippet ``knowledge/snippets/column-major-register-tile-splits-vector-loads.py``
  both ways: a column-major ``(NB, 4)`` register tensor, and one with each row's 4 columns
  contiguous;
* two variants of that kernel, both ways: 16-byte runs of bf16 (8 elements) into an
  ``(N, 8)`` tile, and the fp32 tile stored back to global memory row by row;
* ``mla_decode_sm90`` at h=128 (32, 4096), seesaw steps 33 (the combine's column-major
  ``(splits, k, 4)`` tensor) and 36 (its columns contiguous);

and counts the global loads and stores by width in each cubin's SASS (``LDG.E`` 4 bytes,
``LDG.E.U16`` 2 bytes, ``LDG.E.64``, ``LDG.E.128``; the same for ``STG``).

    uv run python scripts/experiments/register_tile_load_width.py [--record]

``--record`` writes one result record (package "experiments", kernel
"register-tile-load-width") with the counts per build.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "knowledge/snippets/column-major-register-tile-splits-vector-loads.py"
WIDTHS = ("", ".U16", ".64", ".128")
NB, THREADS = 4, 32


def widths(sass: str, op: str = "LDG") -> dict[str, int]:
    """``<op>.E<w>`` count per width suffix in ``sass`` (``""`` is the 4-byte access), the
    widths that occur."""
    got = {
        f"{op}.E{w}": len(re.findall(rf"\b{op}\.E{re.escape(w)}(?![.\w])", sass)) for w in WIDTHS
    }
    return {k: v for k, v in got.items() if v}


def variant_counts() -> dict[str, dict[str, int]]:
    """The snippet's kernel in two variants (bf16 loads; fp32 stores), each both ways."""
    import tempfile

    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    from kernelplan import static

    @cute.kernel
    def kern(src: cute.Tensor, out: cute.Tensor, contiguous: cutlass.Constexpr,
             store: cutlass.Constexpr):  # fmt: skip
        tidx, _, _ = cute.arch.thread_idx()
        v = cute.size(src, mode=[2])  # elements per 16-byte run
        if cutlass.const_expr(contiguous):
            layout = cute.make_layout((NB, v), stride=(v, 1))
        else:
            layout = cute.make_layout((NB, v))
        parts = cute.make_rmem_tensor(layout, src.element_type)
        for u in cutlass.range_constexpr(NB):
            cute.autovec_copy(src[u, tidx, None], parts[u, None])
        if cutlass.const_expr(store):
            for u in cutlass.range_constexpr(NB):
                cute.autovec_copy(parts[u, None], out[u, tidx, None])
        else:
            acc = cute.make_rmem_tensor(cute.make_layout((v,)), src.element_type)
            for e in cutlass.range_constexpr(v):
                acc[e] = parts[0, e]
            for u in cutlass.range_constexpr(1, NB):
                for e in cutlass.range_constexpr(v):
                    acc[e] = acc[e] + parts[u, e]
            cute.autovec_copy(acc, out[0, tidx, None])

    @cute.jit
    def launch(src: cute.Tensor, out: cute.Tensor, contiguous: cutlass.Constexpr,
               store: cutlass.Constexpr, stream):  # fmt: skip
        kern(src, out, contiguous, store).launch(
            grid=[1, 1, 1], block=[THREADS, 1, 1], stream=stream
        )

    out = {}
    for name, dtype, v, store in (
        ("bf16 loads", cutlass.BFloat16, 8, False),
        ("fp32 stores", cutlass.Float32, 4, True),
    ):
        for way, contiguous in (("column-major", False), ("rows contiguous", True)):
            src = make_fake_tensor(dtype, (NB, THREADS, v), (THREADS * v, v, 1), assumed_align=16)
            dst = make_fake_tensor(dtype, (NB, THREADS, v), (THREADS * v, v, 1), assumed_align=16)
            with tempfile.TemporaryDirectory() as tmp:
                art = static.compile_to_cubin(
                    launch, (src, dst, contiguous, store, make_fake_stream()), arch="sm_90a",
                    dump_dir=tmp, ptxas_info=False,
                )  # fmt: skip
                sass = static._run_tool("cuobjdump", "-sass", art.cubin_path)
            out[f"{name}, {way}"] = {**widths(sass), **(widths(sass, "STG") if store else {})}
    return out


def snippet_counts() -> dict[str, dict[str, int]]:
    from kernelplan.kb.snippets import load_module

    mod = load_module(SNIPPET)
    out = {}
    for name, contiguous in (("snippet column-major", False), ("snippet rows contiguous", True)):
        got = mod.load_widths(contiguous)
        out[name] = {"LDG.E": got[""], "LDG.E.128": got[".128"]}
    return out


def mla_counts() -> dict[str, dict[str, int]]:
    from kernelplan import static
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096)
    out = {}
    for step in (33, 36):
        st = plan.run_static(prob, plan.config(prob, {"step": str(step)}))
        cubin = Path(st["cubin_path"])
        cubin = cubin if cubin.is_absolute() else ROOT / cubin
        counts = widths(static._run_tool("cuobjdump", "-sass", cubin))
        counts["combine instructions"] = st["functions"][0]["instructions"]
        out[f"mla_decode_sm90 step {step} (both kernels)"] = counts
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write a result record")
    args = ap.parse_args()
    rows = {**snippet_counts(), **variant_counts(), **mla_counts()}
    for name, c in rows.items():
        print(f"{name:40s} " + "  ".join(f"{k} {v}" for k, v in c.items()))
    if args.record:
        from kernelplan.records import write_experiment

        path = write_experiment(
            "register-tile-load-width",
            "scripts/experiments/register_tile_load_width.py",
            {"arch": "sm_90a", "snippet": str(SNIPPET.relative_to(ROOT)), "mla": "b=32 t=4096"},
            {"builds": rows},
        )
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
