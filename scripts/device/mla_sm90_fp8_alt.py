"""mla_decode_sm90 on the 16-bit cache and on the FP8 latent cache, timed in ONE alternated run.

``python -m kernelplan.alternate`` alternates implementations of one problem; the 16-bit and the
FP8 cache are two problems (``kv_dtype`` is a problem field), so this helper names the entries
itself and hands them to the same round-robin (:func:`kernelplan.alternate.prepare_entry` and
:func:`~kernelplan.alternate.time_entries`, which take entries of different problems): per
shape (b, t, h) it times, rotated in every round,

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
        [--peers flashinfer_mla]
        [--formats lockstep|seesaw|step15|step16|step17|step19|step21|step23|step24|step26|
                   step27|step30|varlen|fp8]
        [--reps 30] [--cuda-graph]
        [--no-record] [--dry]

``--dry`` (any machine): every entry's problem, config and ``supports()`` as the device would
build them; nothing is compiled or run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

FP8 = "float8_e4m3fn"
OURS = "mla_decode_sm90"


def _step(step: int, kv_scale: str = "per_token", **config: str):
    """The table entry of ``step`` on the FP8 cache: ("fp8 <kv_scale> step<N>", problem fields,
    config overrides: ``config`` and the step)."""
    fields = (
        {"kv_dtype": FP8} if kv_scale == "per_token" else {"kv_dtype": FP8, "kv_scale": kv_scale}
    )
    return (f"fp8 {kv_scale} step{step}", fields, {**config, "step": str(step)})


def _seesaw(step: int, kv_scale: str = "per_token"):
    """The table entry of seesaw step ``step`` on the FP8 cache (``schedule=seesaw`` named)."""
    return _step(step, kv_scale, schedule="seesaw")


def _against_step22(step: int):
    """The entries of a step timed against step 22, the FP8 default: ours on bf16, then steps
    22 and ``step`` at per_token and at per_block scales."""
    return (
        ("bf16", {}, {}),
        _seesaw(22),
        _seesaw(step),
        _seesaw(22, "per_block"),
        _seesaw(step, "per_block"),
    )


#: the entries of ours timed per shape, by ``--formats``: (label suffix, problem fields,
#: config overrides). ``lockstep``: the FP8 cache on its first build (the lockstep schedule,
#: dequantised through every math thread's registers; session 3); ``seesaw``: step 14 (the
#: seesaw schedule with a dequantising producer warpgroup; session 6's first table) beside the
#: lockstep build; ``step15``-``step17``: each step against the one before it; ``fp8`` (the
#: default of mla-sm90-fp8.sh table14): the FP8 default (seesaw step 22) against lockstep;
#: ``varlen``: each cache at the shape and at its varlen draw, the work list's default cuts
#: against ``cuts=equal`` (the peers on both problems: :data:`PEER_PROBLEMS`)
FORMAT_SETS = {
    "lockstep": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        (
            "fp8 per_block lockstep",
            {"kv_dtype": FP8, "kv_scale": "per_block"},
            {"schedule": "lockstep"},
        ),
    ),
    "seesaw": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        ("fp8 per_token seesaw", {"kv_dtype": FP8}, {"schedule": "seesaw", "step": "14"}),
        (
            "fp8 per_block seesaw",
            {"kv_dtype": FP8, "kv_scale": "per_block"},
            {"schedule": "seesaw", "step": "14"},
        ),
    ),
    # the FP8 default (``auto``: seesaw step 22) against the lockstep build
    "fp8": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        (
            "fp8 per_block lockstep",
            {"kv_dtype": FP8, "kv_scale": "per_block"},
            {"schedule": "lockstep"},
        ),
        ("fp8 per_token step22", {"kv_dtype": FP8}, {}),
        ("fp8 per_block step22", {"kv_dtype": FP8, "kv_scale": "per_block"}, {}),
    ),
    # step 15 (bit-placement dequantisation) against step 14 and the lockstep build
    "step15": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        _seesaw(14),
        _seesaw(15),
        _seesaw(15, "per_block"),
    ),
    # step 17 (one group in flight in the producer) against step 15, ours only
    "step17": (
        ("bf16", {}, {}),
        _seesaw(15),
        _seesaw(17),
    ),
    # steps 18 and 19 (built in session 6, not yet timed) against 17 and lockstep
    "step19": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        _seesaw(17),
        _seesaw(18),
        _seesaw(19),
    ),
    # steps 20 and 21 (the producer's pages prefetched into L2) against 18 and 19, 17 and
    # lockstep: the 2 x 2 of per-chunk publication and L2 prefetch in one run
    "step21": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        _seesaw(17),
        _seesaw(18),
        _seesaw(19),
        _seesaw(20),
        _seesaw(21),
        _seesaw(20, "per_block"),
    ),
    # steps 22 (each prefetch's page index read a page early) and 23 (prefetch 4 pages
    # ahead) against 20 and 18
    "step23": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        _seesaw(18),
        _seesaw(20),
        _seesaw(22),
        _seesaw(23),
        _seesaw(22, "per_block"),
    ),
    # step 24 (the next group reloaded vector by vector while the current one is stored)
    # against step 22, the default, both granularities
    "step24": _against_step22(24),
    # step 26 (the crossover: at h=128 clusters of 2, each producer half of every page)
    # against step 22 and step 24; at h=64 (one m-tile) step 26 is step 22's code, a control
    "step26": (
        ("bf16", {}, {}),
        _seesaw(22),
        _seesaw(24),
        _seesaw(26),
        _seesaw(26, "per_block"),
    ),
    # step 27 (whole-sector producer loads) against step 22, the default, both granularities
    "step27": _against_step22(27),
    # step 30 (the producer's next page index read two pages ahead) against step 22
    "step30": _against_step22(30),
    # session 10: the work list's cuts at varlen (same tokens as the fixed shape: its ratio to
    # the fixed-length entries in the same rounds, free of the clock drift between rounds),
    # the default (costed) against step 11's equal ranges, on both caches
    "varlen": (
        ("bf16", {}, {}),
        ("bf16 varlen", {"varlen": True}, {}),
        ("bf16 varlen cuts=equal", {"varlen": True}, {"cuts": "equal"}),
        ("fp8 per_token step22", {"kv_dtype": FP8}, {}),
        ("fp8 per_token step22 varlen", {"kv_dtype": FP8, "varlen": True}, {}),
        (
            "fp8 per_token step22 varlen cuts=equal",
            {"kv_dtype": FP8, "varlen": True},
            {"cuts": "equal"},
        ),
    ),
    # steps 43 and 44 (s*h = 16: the e4m3 page dequantised into the WGMMA register A operand,
    # 2 CTAs per SM or 4 stages in one) against the FP8 default (step 22) and ours on bf16
    # (step 42 at h=16)
    "step43": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(43),
        _step(44),
        _step(43, "per_block"),
        _step(44, "per_block"),
    ),
    # step 45 (43 with V^T in fp16 by F2FP, the per-token scale folded into P) against 43
    "step45": (
        ("bf16", {}, {}),
        _step(43),
        _step(45),
    ),
    # step 46 (45 with S^T's latent part in fp16 too: K by F2FP, Q scaled per row) against
    # 43, 45 and the 16-bit default
    "step46": (
        ("bf16", {}, {}),
        _step(43),
        _step(45),
        _step(46),
    ),
    # step 47 (46 with the next page's index fetched a page early) against 46, 45 and bf16
    "step47": (
        ("bf16", {}, {}),
        _step(45),
        _step(46),
        _step(47),
    ),
    # step 48 (47 releasing the stage before the last O^T WGMMAs retire) against 47 and bf16
    "step48": (
        ("bf16", {}, {}),
        _step(47),
        _step(48),
    ),
    # session 19 (the H200): the FP8 builds at s*h = 16 side by side, from the old default
    # (step 22) through the register-operand steps 43 and 45-48, against ours on bf16
    "h16": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(43),
        _step(45),
        _step(46),
        _step(47),
        _step(48),
    ),
    # step 49 (s*h = 64: two warpgroups, the e4m3 page in the register A operand) against the
    # FP8 default there (step 22) and ours on bf16
    "h64": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(49),
    ),
    # steps 50 and 51 (49 with the K bytes addressed by offset; and S^T in 2 accumulators)
    # against 49 and ours on bf16
    "h64b": (
        ("bf16", {}, {}),
        _step(49),
        _step(50),
        _step(51),
    ),
    # step 52 (51 with a page's O^T WGMMAs running while the next page's S^T is issued)
    # against 50, the FP8 default (22) and ours on bf16
    "h64c": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(50),
        _step(52),
    ),
    # step 53 (50 with S^T's latent part by FP8 WGMMAs from the page in SMEM, Q in two e4m3
    # terms) against 50, the FP8 default (22) and ours on bf16
    "h64d": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(50),
        _step(53),
    ),
    # session 19's h=64 candidates on one card: step 50 (the best correct two-warpgroup
    # build) against the FP8 default (22) and ours on bf16
    "h64e": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(50),
    ),
    # step 54 (50 with Q read by 16-byte loads) against 50, the FP8 default (22) and bf16
    "h64f": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(50),
        _step(54),
    ),
    # steps 55 (54 with V addressed by offset) and 56 (55 with S^T cut by K's columns, one
    # conversion of each K byte per page) against 54, the FP8 default (22) and bf16
    "h64g": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(54),
        _step(55),
        _step(56),
    ),
    # step 57 (56 without the CTA barrier at each page's end) against 56, 55, the FP8
    # default (22) and bf16
    "h64i": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(55),
        _step(56),
        _step(57),
    ),
    # step 57 (the FP8 default at s*h = 64 from B = 128) against step 22 and bf16 at longer
    # sequences than the runs that chose it
    "h64j": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(57),
    ),
    # step 56 against the FP8 default (22) and ours on bf16 over sizes: where 56's lower cost
    # per page outweighs its fixed cost per part (the FP8 default at h=64)
    "h64h": (
        ("bf16", {}, {}),
        _seesaw(22),
        _step(56),
    ),
    # the defaults as a user gets them (no --config): the 16-bit cache, and the FP8 cache at
    # both granularities (step 22, or 47/43 at s*h = 16, or 57 at s*h = 64 from B = 128 on)
    "defaults": (
        ("bf16", {}, {}),
        ("fp8 per_token default", {"kv_dtype": FP8}, {}),
        ("fp8 per_block default", {"kv_dtype": FP8, "kv_scale": "per_block"}, {}),
    ),
    # step 16 (the producer fills in release order) against step 15
    "step16": (
        ("bf16", {}, {}),
        ("fp8 per_token lockstep", {"kv_dtype": FP8}, {"schedule": "lockstep"}),
        _seesaw(15),
        _seesaw(16),
        _seesaw(16, "per_block"),
    ),
}


#: the peers' problems per format set (label suffix, problem fields): the shape's fixed-length
#: problem, and for ``varlen`` its varlen draw too
PEER_PROBLEMS = {"varlen": (("bf16", {}), ("bf16 varlen", {"varlen": True}))}


def parse_shape(text: str) -> tuple[int, int, int]:
    """``b,t,h`` -> (b, t, h)."""
    parts = text.replace("x", ",").split(",")
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"--shape takes b,t,h (got {text!r})")
    b, t, h = (int(p) for p in parts)
    return b, t, h


def entries(
    shape: tuple[int, int, int], peers: Sequence[str], formats: str = "lockstep"
) -> list[tuple[str, str, dict, dict]]:
    """(label, kernel, problem fields, config overrides) of one shape: ours on each format of
    :data:`FORMAT_SETS` [``formats``], then the peers on the 16-bit cache."""
    b, t, h = shape
    base = {"b": b, "t": t, "h": h}
    out = [(f"{OURS} {lab}", OURS, {**base, **kw}, cfg) for lab, kw, cfg in FORMAT_SETS[formats]]
    for lab, kw in PEER_PROBLEMS.get(formats, (("bf16", {}),)):
        out += [(f"{peer} {lab}", peer, {**base, **kw}, {}) for peer in peers]
    return out


def build(kernel: str, fields: dict, overrides: dict | None = None):
    """(plan, problem, config) as the device builds them; supports() and the config checked."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", kernel)()
    prob = plan.problem(**fields)
    plan.supports(prob)
    cfg = plan.config(prob, dict(overrides or {}))
    return plan, prob, cfg


def run_shape(shape, peers, *, formats="lockstep", log=print, **timing) -> int:
    """One shape's alternated run; ``timing``: :func:`kernelplan.alternate.time_entries`'s
    reps, warmup, cuda_graph, record, results_dir."""
    from kernelplan import device as devmod
    from kernelplan.alternate import prepare_entry, time_entries
    from kernelplan.errors import KernelPlanError
    from kernelplan.tables import markdown

    dev = devmod.current_device()
    built, failed = {}, 0
    for label, kernel, fields, overrides in entries(shape, peers, formats):
        try:
            plan, p, cfg = build(kernel, fields, overrides)
            devmod.require_runs_on(plan.name, plan.target_sm, dev)
            entry = prepare_entry(plan, p, cfg, label=label, log=log)
        except KernelPlanError as e:
            log(f"skip {label}: {e}")
            continue
        if entry is None:
            failed += 1
            continue
        log(f"PASS {label} {p.label()}")
        built[label] = entry
    # entries of different problems (the cache format is a problem field) in one round-robin
    timed = time_entries(built, device_name=dev.name, log=log, **timing)
    if not timed:
        return 1
    best = min(t.stats.median_us for t in timed)
    ours = next((t.stats for t in timed if t.label == f"{OURS} bf16"), None)
    rows = [
        {
            "problem": t.problem.label(),
            "entry": t.label,
            "KV B/token": str(t.problem.kv_bytes_per_token()),
            **t.cells(),
            "x ours bf16": f"{t.stats.median_us / ours.median_us:.2f}" if ours else "-",
            "x fastest": f"{t.stats.median_us / best:.2f}",
            "record": t.record_name,
        }
        for t in timed
    ]
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
    ap.add_argument("--formats", choices=sorted(FORMAT_SETS), default="lockstep")
    ap.add_argument("--dry", action="store_true")
    a = ap.parse_args(argv)
    peers = [x for x in a.peers.split(",") if x]
    if a.dry:
        from kernelplan.errors import KernelPlanError

        for shape in a.shape:
            for label, kernel, fields, overrides in entries(shape, peers, a.formats):
                try:
                    _plan, prob, cfg = build(kernel, fields, overrides)
                except (KernelPlanError, ValueError) as e:
                    print(
                        f"error: {label} at --shape {','.join(map(str, shape))}: {e}",
                        file=sys.stderr,
                    )
                    return 2
                print(f"ok {label}: {prob.label()} {cfg.to_dict()}", flush=True)
        return 0
    from kernelplan import device as devmod
    from kernelplan.records import ensure_writable

    if devmod.current_device() is None:
        print("error: the alternated FP8 timing needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    if not a.no_record:
        ensure_writable(a.results_dir)
    timing = {
        "reps": a.reps,
        "warmup": a.warmup,
        "cuda_graph": a.cuda_graph,
        "record": not a.no_record,
        "results_dir": a.results_dir,
    }
    rc = 0
    for shape in a.shape:
        rc |= run_shape(shape, peers, formats=a.formats, **timing)
    return rc


if __name__ == "__main__":
    sys.exit(main())
