"""mla_decode_sm90 on the 16-bit cache and on the FP8 latent cache, timed in ONE alternated run.

``kernelplan.alternate`` alternates implementations of one problem; the 16-bit and the FP8 cache
are two problems (``kv_dtype`` is a problem field), so this helper builds the entries itself and
hands them to the same round-robin (:func:`kernelplan.alternate.alternate`): per shape (b, t, h)
it times, rotated in every round,

* ``mla_decode_sm90`` with the bf16 cache,
* ``mla_decode_sm90`` with the FP8 cache, ``per_token`` and ``per_block`` (kv_block 128),
* each peer (default ``flashinfer_mla``) with the bf16 cache: FlashInfer 0.7.2.post1's FP8 MLA
  path does not take this problem (its rope cache must be FP8 too, with a per-tensor
  ``kpe_scale``: ``flashinfer/mla/_batch_mla/_backends/_fa_common.py`` L660-L663, L692-L698
  in the wheel), so it is timed on the 16-bit problem only,

each checked first (a failing entry is reported and left out), with cold-L2 workspaces, and
writes one ``benchmark`` record per entry (``alternated_with`` names the other entries,
``round_id`` ties them), then a markdown table with the ratio of each entry to ours on bf16 and
to the fastest, and the KV bytes per token read (the roofline's GB/s counts the FP8 problem's
own bytes: 644 or 656 B per token against 1152).

    python scripts/device/mla_sm90_fp8_alt.py --shape 128,4096,128 --shape 128,4096,64 \\
        [--peers flashinfer_mla] [--reps 30] [--cuda-graph] [--no-record] [--dry]

``--dry`` (any machine): every entry's problem, config and ``supports()`` as the device would
build them; nothing is compiled or run.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from collections.abc import Sequence

FP8 = "float8_e4m3fn"
OURS = "mla_decode_sm90"
#: the FP8 formats timed beside the 16-bit cache: (label suffix, problem fields)
FORMATS = (
    ("bf16", {}),
    ("fp8 per_token", {"kv_dtype": FP8}),
    ("fp8 per_block", {"kv_dtype": FP8, "kv_scale": "per_block"}),
)


def parse_shape(text: str) -> tuple[int, int, int]:
    """``b,t,h`` -> (b, t, h)."""
    parts = text.replace("x", ",").split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--shape takes b,t,h (got {text!r})")
    b, t, h = (int(p) for p in parts)
    return b, t, h


def entries(shape: tuple[int, int, int], peers: Sequence[str]) -> list[tuple[str, str, dict]]:
    """(label, kernel, problem fields) of one shape: ours on each format, then the peers on
    the 16-bit cache."""
    b, t, h = shape
    base = {"b": b, "t": t, "h": h}
    out = [(f"{OURS} {lab}", OURS, {**base, **kw}) for lab, kw in FORMATS]
    out += [(f"{peer} bf16", peer, dict(base)) for peer in peers]
    return out


def build(kernel: str, fields: dict):
    """(plan, problem, config) as the device builds them; supports() and the config checked."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", kernel)()
    prob = plan.problem(**fields)
    plan.supports(prob)
    cfg = plan.config(prob, {})
    return plan, prob, cfg


def run_shape(shape, peers, *, reps, warmup, cuda_graph, record, results_dir, log=print) -> int:
    from kernelplan import device as devmod
    from kernelplan.alternate import alternate
    from kernelplan.errors import KernelPlanError
    from kernelplan.records import write_record

    dev = devmod.current_device()
    built, failed = {}, 0
    for label, kernel, fields in entries(shape, peers):
        try:
            plan, p, cfg = build(kernel, fields)
            devmod.require_runs_on(plan.name, plan.target_sm, dev)
            tgt = plan.target()
            ok, results, _info = plan.run_check(p, cfg, target=tgt)
            if not ok:
                failed += 1
                log(f"FAIL {label} {p.label()}: " + "; ".join(r.line() for r in results))
                continue
            log(f"PASS {label} {p.label()}")
            kernel_obj = plan.kernel(p, cfg, tgt)
            n_ws = plan.cold_l2_workspaces(p, memory_share=0.3)
            launchers = [kernel_obj.bind(plan.prepare_inputs(p, seed=i)) for i in range(n_ws)]
        except KernelPlanError as e:
            log(f"skip {label}: {e}")
            continue
        built[label] = (plan, p, cfg, tgt, kernel_obj, launchers)
    if not built:
        return 1
    before = devmod.clocks_now()
    stats = alternate(
        {lab: e[5] for lab, e in built.items()}, warmup=warmup, reps=reps, cuda_graph=cuda_graph
    )
    after = devmod.clocks_now()
    for lab, st in list(stats.items()):
        if isinstance(st, KernelPlanError):
            log(f"skip {lab}: {st}")
            del stats[lab], built[lab]
    if not stats:
        return 1
    best = min(st.median_us for st in stats.values())
    ours = stats.get(f"{OURS} bf16")
    round_id = secrets.token_hex(4)
    rows = []
    for lab, (plan, p, cfg, tgt, kernel_obj, _l) in built.items():
        st = stats[lab]
        roof = plan.roofline_for(p, st.median_us, dev.name)
        rec = plan.record_base("benchmark", p, cfg, tgt)
        rec.update(
            timing=st.to_dict(),
            roofline=roof.to_dict(),
            clocks={"before": before, "after": after},
            kernel_meta=getattr(kernel_obj, "meta", None) or None,
            alternated_with=[f"{x} ({built[x][1].label()})" for x in built if x != lab],
            host_launch_hidden=cuda_graph,
            round_id=round_id,
            check={"passed": True},
        )
        path = write_record(rec, results_dir) if record else None
        rows.append(
            {
                "problem": p.label(),
                "entry": lab,
                "KV B/token": str(p.kv_bytes_per_token()),
                "median_us": f"{st.median_us:.1f}",
                "p10-p90_us": f"{st.p10_us:.1f}-{st.p90_us:.1f}",
                "TFLOP/s": f"{roof.tflops:.1f}",
                "GB/s": f"{roof.gbps:.0f}",
                "x ours bf16": f"{st.median_us / ours.median_us:.2f}" if ours else "-",
                "x fastest": f"{st.median_us / best:.2f}",
                "record": path.name if path else "-",
            }
        )
    from kernelplan.tables import markdown

    log(markdown(rows))
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mla_sm90_fp8_alt.py")
    ap.add_argument("--shape", type=parse_shape, action="append", required=True)
    ap.add_argument("--peers", default="flashinfer_mla", help="comma-separated; '' for none")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--cuda-graph", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--results-dir", default=None)
    ap.add_argument("--dry", action="store_true")
    a = ap.parse_args(argv)
    peers = [x for x in a.peers.split(",") if x]
    if a.dry:
        for shape in a.shape:
            for label, kernel, fields in entries(shape, peers):
                _plan, prob, cfg = build(kernel, fields)
                print(f"ok {label}: {prob.label()} {cfg.to_dict()}", flush=True)
        return 0
    from kernelplan import device as devmod
    from kernelplan.records import ensure_writable

    if devmod.current_device() is None:
        print("error: the alternated FP8 timing needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    if not a.no_record:
        ensure_writable(a.results_dir)
    rc = 0
    for shape in a.shape:
        rc |= run_shape(
            shape,
            peers,
            reps=a.reps,
            warmup=a.warmup,
            cuda_graph=a.cuda_graph,
            record=not a.no_record,
            results_dir=a.results_dir,
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
