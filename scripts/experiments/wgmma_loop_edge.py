"""Experiment: does ptxas serialize a kernel's WGMMAs when a WGMMA group is left in flight
across a loop's back edge? (The devlog of mla_decode_sm90, "Session 19": step 52's first
build did, C7514.)

It compiles three versions of one small sm_90a kernel on this CPU host, through the CuTe DSL
(its own ptxas), and counts in each cubin's SASS the WGMMAs (HGMMA) and the waits behind them
(WARPGROUP.DEPBAR): a wait behind every HGMMA is serialization.

* ``turned``: the KB snippet ``knowledge/snippets/wgmma-in-flight-across-loop-edge.py`` as it
  is: per page, O's GEMM, then the next page's S issued behind it, one ``wait_group(0)``
  inside the iteration (nothing in flight across the back edge).
* ``edge``: O's GEMM left in flight across the back edge; the next iteration issues S and
  waits with ``wait_group(0)`` before it reads O.
* ``edge_partial``: as ``edge``, with O's GEMM and S each issued as two commit groups and
  ``wait_group(1)`` between them (the register A buffers' discipline of step 52).

    uv run python scripts/experiments/wgmma_loop_edge.py [--record]

``--record`` writes one result record (package "experiments", kernel "wgmma-loop-edge")
with, per version, the HGMMA and WARPGROUP counts. Needs nvdisasm: the one shipped with the
triton wheel of this workspace is found, or set NVDISASM.
"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "knowledge/snippets/wgmma-in-flight-across-loop-edge.py"

#: the snippet's turned loop body, from the rescale's setup to the end of its loop
TURNED = "    acc_o.fill(0.0)\n    mma1 = issue_s(mma1, acc_s, tSrQ, tSrK, 0)\n"

EDGE = """    acc_o.fill(0.0)
    mma2.set(warpgroup.Field.ACCUMULATE, True)
    for i in cutlass.range(ITERS, unroll=1):
{issue_s}
        p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, n1 // 16)), dtype)
        cute.make_tensor(p.iterator, cute.make_layout(acc_s.shape)).store(
            acc_s.load().to(dtype)
        )
        for e in cutlass.range_constexpr(cute.size(acc_o)):
            acc_o[e] = acc_o[e] * 0.5
{issue_o}
    warpgroup.wait_group(0)


"""
S_ONE = """        mma1 = issue_s(mma1, acc_s, tSrQ, tSrK, i)
        warpgroup.wait_group(0)  # S_i, and in order O's GEMM of page i - 1"""
S_TWO = """        mma1.set(warpgroup.Field.ACCUMULATE, False)
        for h in cutlass.range_constexpr(2):
            warpgroup.wait_group(1)
            warpgroup.fence()
            for kk in cutlass.range_constexpr(cute.size(tSrQ, mode=[2]) // 2):
                k = h * (cute.size(tSrQ, mode=[2]) // 2) + kk
                cute.gemm(mma1, acc_s, tSrQ[None, None, k], tSrK[None, None, k, i], acc_s)
                mma1.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
        warpgroup.wait_group(0)"""
O_ONE = """        warpgroup.fence()
        for k in cutlass.range_constexpr(cute.size(p, mode=[2])):
            cute.gemm(mma2, acc_o, p[None, None, k], tOrV[None, None, k, i], acc_o)
        warpgroup.commit_group()  # left in flight across the back edge"""
O_TWO = """        for h in cutlass.range_constexpr(2):
            if cutlass.const_expr(h == 1):
                warpgroup.wait_group(1)
            warpgroup.fence()
            for kk in cutlass.range_constexpr(cute.size(p, mode=[2]) // 2):
                k = h * (cute.size(p, mode=[2]) // 2) + kk
                cute.gemm(mma2, acc_o, p[None, None, k], tOrV[None, None, k, i], acc_o)
            warpgroup.commit_group()  # left in flight across the back edge"""


def version_source(name: str) -> str:
    """The snippet's source with its turned loop replaced by version ``name``'s."""
    src = SNIPPET.read_text()
    if name == "turned":
        return src
    start = src.index(TURNED)
    end = src.index("# snippet:end")
    body = {
        "edge": EDGE.format(issue_s=S_ONE, issue_o=O_ONE),
        "edge_partial": EDGE.format(issue_s=S_TWO, issue_o=O_TWO),
    }[name]
    return src[:start] + body + src[end:]


def nvdisasm() -> str:
    """The nvdisasm to read cubins with: NVDISASM, else the triton wheel's."""
    if os.environ.get("NVDISASM"):
        return os.environ["NVDISASM"]
    import triton

    return str(Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm")


def count(name: str, work: Path) -> dict:
    """Compile version ``name`` for sm_90a and count its SASS's HGMMA and WARPGROUP ops."""
    sys.path.insert(0, str(ROOT / "shared/kernelplan/src"))
    from kernelplan import static

    mod_path = work / f"{name}.py"
    # the snippet finds its helper module next to itself
    mod_path.write_text(
        version_source(name).replace("sibling(__file__,", f"sibling({str(SNIPPET)!r},")
    )
    spec = importlib.util.spec_from_file_location(f"wgmma_loop_edge_{name}", mod_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dump = work / name
    dump.mkdir()
    with static._dsl_settings("sm_90a", dump, frozenset({"cubin"})):
        mod.compile_snippet()
    cubin = sorted(dump.glob("*.cubin"))[-1]
    sass = subprocess.run([nvdisasm(), "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    return {
        "hgmma": sass.count("HGMMA."),
        "warpgroup_depbar": sass.count("WARPGROUP.DEPBAR"),
        "warpgroup_arrive": sass.count("WARPGROUP.ARRIVE"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--record", action="store_true", help="write a result record")
    args = ap.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("turned", "edge", "edge_partial"):
            rows[name] = count(name, Path(tmp))
            c = rows[name]
            serial = c["warpgroup_depbar"] >= c["hgmma"]
            print(f"{name:13s} HGMMA {c['hgmma']:3d}  WARPGROUP.DEPBAR {c['warpgroup_depbar']:3d}"
                  f"  {'serialized' if serial else 'pipelined'}")  # fmt: skip
    if args.record:
        from kernelplan.records import write_experiment

        path = write_experiment(
            "wgmma-loop-edge",
            "scripts/experiments/wgmma_loop_edge.py",
            {"arch": "sm_90a", "snippet": str(SNIPPET.relative_to(ROOT))},
            {"versions": rows},
        )
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
