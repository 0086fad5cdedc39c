#!/usr/bin/env python3
"""Probe the MLA decode peers on the GPU host: how each is called, whether it is right, how fast.

Workload (DeepSeek-style absorbed MLA decode): batch B, query length s_q, h_q query heads, one
latent KV head, QK head dim 576 (512 latent + 64 rope), V = the first 512 columns of the cache,
a paged latent cache (num_pages, 64, 576) bf16 with a page table (B, max_pages) int32 (a random
permutation of the page pool, so the table is not the identity) and lengths (B,) int32. Every
page row past a sequence's end is NaN (the partial last page's tail and the table's spare
columns), so a kernel that reads past the end shows up as NaN in O. Softmax scale 1/sqrt(192).

Peers (each optional; a peer that cannot be imported or run is reported with its error):
  torch-fp32       this file's own reference: gather the pages, fp32 matmuls (TF32 off), masked
                   softmax. The floor, and the truth every peer is checked against.
  flashinfer-fa3   flashinfer.mla.BatchMLAPagedAttentionWrapper(backend="fa3"), plan() then run().
  tilegym-cutile   tilegym.ops.mla_decoding_split_kv(..., backend="cutile") on dense per-sequence
                   KV gathered from the pages outside the timed region (it takes no page table).
  flash-mla        flash_mla.get_mla_metadata + flash_mla_with_kvcache, if it imports.

For each (setting, peer) it prints one line: gpu_us (median of per-call CUDA-event times with
the launch overhead hidden behind a preceding torch.cuda._sleep), eager_us (the same without the
sleep: what an eager caller sees, host overhead included), host_us (the Python call's CPU time),
KV GB/s and TFLOP/s from gpu_us, and the errors of O and LSE against the fp32 reference (LSE
compared in natural log after converting each peer's base). Peers alternate inside each rep.
Everything also goes to <out>/mla_peers.jsonl.

Usage (on the GPU host):  python3 scripts/device/mla_peers_probe.py --out $OUT/logs \
    [--peers torch-fp32,flashinfer-fa3,tilegym-cutile,flash-mla] [--reps 50]
Here, without a GPU: python3 scripts/device/mla_peers_probe.py --selftest   (checks the
reference against a per-sequence loop on the CPU).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
import traceback

import torch

D_QK, D_V, D_ROPE, PAGE = 576, 512, 64, 64
SM_SCALE = 192**-0.5  # DeepSeek's (128 + 64) ** -0.5
LN2 = math.log(2.0)

# (B, T, h_q, s_q, timed): the timed settings of the brief, then correctness-only extras.
SETTINGS = [
    (32, 4096, 128, 1, True),
    (128, 4096, 128, 1, True),
    (32, 16384, 128, 1, True),
    (128, 4096, 64, 1, True),
    (32, 4096, 128, 2, True),
    (32, 4096, 16, 1, True),
    (32, "var", 128, 1, False),  # lengths drawn in [1, 4096]: partial pages, uneven batch
    (32, "var", 128, 2, False),
]


def log(msg: str) -> None:
    print(msg, flush=True)


@contextlib.contextmanager
def env(**kv):
    """Set (value) or unset (None) environment variables for a block."""
    old = {k: os.environ.get(k) for k in kv}
    try:
        for k, v in kv.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------- inputs


class Inputs:
    """Paged MLA decode inputs built from a seed."""

    def __init__(self, B, T, H, s_q, seed, device):
        g = torch.Generator(device="cpu").manual_seed(seed)
        self.B, self.H, self.s_q = B, H, s_q
        if T == "var":
            lens = torch.randint(max(1, s_q), 4097, (B,), generator=g)
        else:
            lens = torch.full((B,), int(T))
        self.lens_cpu = lens.to(torch.int32)
        self.T_max = int(lens.max())
        self.uniform = bool((lens == lens[0]).all())
        npages = (lens + PAGE - 1) // PAGE
        self.npages_cpu = npages.to(torch.int32)
        self.max_pages = int(npages.max()) + 1  # one spare column, pointing at a NaN page
        num_pages = B * self.max_pages + 7  # a few pool pages nobody owns
        perm = torch.randperm(num_pages, generator=g).to(torch.int32)
        self.page_table_cpu = perm[: B * self.max_pages].view(B, self.max_pages).contiguous()
        # Values: N(0,1) from a generator on the target device (the GPU on the host).
        gd = torch.Generator(device=device).manual_seed(seed)
        cache = torch.randn(num_pages, PAGE, D_QK, generator=gd, device=device).to(torch.bfloat16)
        pos = (
            torch.arange(self.max_pages)[:, None] * PAGE + torch.arange(PAGE)[None, :]
        )  # (maxp, 64)
        valid_rows = pos[None] < lens[:, None, None]  # (B, maxp, 64)
        valid = torch.zeros(num_pages, PAGE, dtype=torch.bool)
        valid[self.page_table_cpu.flatten().long()] = valid_rows.reshape(-1, PAGE)
        cache[~valid.to(device)] = float("nan")  # past each end, spare columns, unowned pages
        self.q = torch.randn(B, s_q, H, D_QK, generator=gd, device=device).to(torch.bfloat16)
        self.cache = cache
        self.page_table = self.page_table_cpu.to(device)
        self.lens = self.lens_cpu.to(device)
        self.kv_bytes = int(lens.sum()) * D_QK * 2
        # 2 flops per MAC, QK (576) + PV (512), causal ignored (s_q <= 2)
        self.flops = 2 * s_q * H * int(lens.sum()) * (D_QK + D_V)

    def csr(self):
        """FlashInfer's CSR page metadata (on the device)."""
        dev = self.q.device
        qo_indptr = torch.arange(0, self.B + 1, dtype=torch.int32) * self.s_q
        kv_indptr = torch.zeros(self.B + 1, dtype=torch.int32)
        kv_indptr[1:] = torch.cumsum(self.npages_cpu, 0)
        kv_indices = torch.cat(
            [self.page_table_cpu[b, : int(self.npages_cpu[b])] for b in range(self.B)]
        )
        return (qo_indptr.to(dev), kv_indptr.to(dev), kv_indices.to(dev), self.lens_cpu.to(dev))

    def dense(self, T):
        """(B, T, 576) bf16: the first T rows of every sequence, gathered through the page table."""
        npg = (T + PAGE - 1) // PAGE
        g = self.cache[self.page_table[:, :npg].long()]  # (B, npg, 64, 576)
        return g.reshape(self.B, npg * PAGE, D_QK)[:, :T]


# --------------------------------------------------------------------------- reference


def reference(inp: Inputs, causal: bool = True):
    """fp32 reference: O (B, s_q, H, 512) fp32 and LSE (B, s_q, H) natural log.

    Query i of s_q sees keys t <= len - s_q + i when causal (decode with s_q draft tokens),
    all len keys otherwise.
    """
    B, s_q, H, T = inp.B, inp.s_q, inp.H, inp.T_max
    kv = inp.dense(T).float()  # (B, T, 576)
    t = torch.arange(T, device=kv.device)
    in_seq = t[None, :] < inp.lens[:, None].long()  # (B, T)
    kv = torch.where(in_seq[:, :, None], kv, torch.zeros((), device=kv.device))  # NaN rows -> 0
    q = inp.q.float().reshape(B, s_q * H, D_QK)
    s = torch.bmm(q, kv.transpose(1, 2)).view(B, s_q, H, T) * SM_SCALE
    limit = (
        inp.lens[:, None].long() - (s_q - 1 - torch.arange(s_q, device=kv.device))[None, :]
        if causal
        else inp.lens[:, None].long().expand(B, s_q)
    )
    vis = t[None, None, :] < limit[:, :, None]  # (B, s_q, T)
    s = s.masked_fill(~vis[:, :, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)  # (B, s_q, H)
    p = torch.exp(s - lse[..., None])
    o = torch.bmm(p.view(B, s_q * H, T), kv[:, :, :D_V]).view(B, s_q, H, D_V)
    return o, lse


def reference_loop(inp: Inputs, causal: bool = True):
    """Slow per-sequence fp64 reference (self-test only)."""
    outs, lses = [], []
    for b in range(inp.B):
        n = int(inp.lens_cpu[b])
        pages = inp.page_table_cpu[b, : int(inp.npages_cpu[b])].long()
        kv = inp.cache.cpu()[pages].reshape(-1, D_QK)[:n].double()
        o_b, l_b = [], []
        for i in range(inp.s_q):
            vis = n - (inp.s_q - 1 - i) if causal else n
            q = inp.q.cpu()[b, i].double()  # (H, 576)
            s = q @ kv[:vis].T * SM_SCALE
            l_b.append(torch.logsumexp(s, -1))
            o_b.append(torch.softmax(s, -1) @ kv[:vis, :D_V])
        outs.append(torch.stack(o_b))
        lses.append(torch.stack(l_b))
    return torch.stack(outs), torch.stack(lses)


def selftest() -> int:
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    ok = True
    for B, T, H, s_q in [(3, 200, 4, 1), (4, "var", 8, 2), (2, 64, 2, 2)]:
        inp = Inputs(B, T, H, s_q, seed=1, device="cpu")
        o, lse = reference(inp)
        o2, lse2 = reference_loop(inp)
        e_o = (o.double() - o2).abs().max().item()
        e_l = (lse.double() - lse2).abs().max().item()
        nan = bool(torch.isnan(o).any() or torch.isnan(lse).any())
        pt_identity = bool(
            (inp.page_table_cpu.flatten() == torch.arange(inp.page_table_cpu.numel())).all()
        )
        log(
            f"selftest B={B} T={T} H={H} s_q={s_q} lens={inp.lens_cpu.tolist()} "
            f"max_abs_O={e_o:.2e} max_abs_LSE={e_l:.2e} nan={nan} "
            f"page_table_identity={pt_identity} "
            f"nan_rows={int(torch.isnan(inp.cache[..., 0]).sum())}"
        )
        ok &= e_o < 1e-4 and e_l < 1e-4 and not nan and not pt_identity
    log("selftest " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


# --------------------------------------------------------------------------- peers


class Peer:
    name = "?"
    lse_base = None  # "e", "2" or None (no LSE)

    def prepare(self, inp: Inputs) -> dict:
        """Per-setting setup outside the timed region; returns info to log."""
        return {}

    def __call__(self):
        raise NotImplementedError

    def outputs(self, result):
        """-> (O as (B, s_q, H, 512), LSE natural log as (B, s_q, H) or None)."""
        raise NotImplementedError


class TorchRef(Peer):
    name = "torch-fp32"
    lse_base = "e"

    def prepare(self, inp):
        self.inp = inp
        return {}

    def __call__(self):
        return reference(self.inp)

    def outputs(self, r):
        return r


class FlashInferFa3(Peer):
    name = "flashinfer-fa3"
    lse_base = "2"

    def __init__(self, cuda_home, backend="fa3"):
        self.backend = backend
        self.name = f"flashinfer-{backend}"
        t0 = time.perf_counter()
        import flashinfer  # noqa: F401
        from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata

        self.import_s = time.perf_counter() - t0
        self.version = flashinfer.__version__
        self.Wrapper, self.Meta = BatchMLAPagedAttentionWrapper, MLAPlanMetadata
        self.cuda_home = cuda_home
        self.ws = torch.empty(128 << 20, dtype=torch.int8, device="cuda")
        self.first_plan = True

    def _plan(self, inp, backend, lse_mode):
        w = self.Wrapper(self.ws, backend=backend)
        qo, kvp, kvi, kvl = inp.csr()
        with env(CUDA_HOME=self.cuda_home):
            w.plan(
                metadata=self.Meta.csr(qo, kvp, kvi, kvl),
                num_heads=inp.H,
                head_dim_ckv=D_V,
                head_dim_kpe=D_ROPE,
                page_size=PAGE,
                causal=inp.s_q > 1,
                sm_scale=SM_SCALE,
                q_data_type=torch.bfloat16,
                kv_data_type=torch.bfloat16,
                lse_mode=lse_mode,
            )
        return w

    def prepare(self, inp):
        info = {}
        t0 = time.perf_counter()
        self.w = self._plan(inp, self.backend, "base2")
        torch.cuda.synchronize()
        key = "first_plan_s_incl_jit" if self.first_plan else "plan_s"
        info[key] = round(time.perf_counter() - t0, 3)
        self.first_plan = False
        t0 = time.perf_counter()
        self.w = self._plan(inp, self.backend, "base2")
        info["replan_ms"] = round((time.perf_counter() - t0) * 1e3, 2)
        info["backend_planned"] = self.w._backend
        # which backend does "auto" pick here?
        try:
            info["auto_picks"] = self._plan(inp, "auto", "base2")._backend
        except Exception as e:  # noqa: BLE001
            info["auto_picks"] = f"error: {type(e).__name__}: {e}"[:300]
        self.q = inp.q.reshape(inp.B * inp.s_q, inp.H, D_QK)  # packed query, a view
        self.cache = inp.cache  # packed (num_pages, 64, 576)
        self.shape = (inp.B, inp.s_q, inp.H)
        # natural-log LSE mode, checked once per setting against the reference by run_setting
        try:
            self.w_e = self._plan(inp, self.backend, "basee")
        except Exception as e:  # noqa: BLE001
            self.w_e = None
            info["basee_plan_error"] = f"{type(e).__name__}: {e}"[:300]
        return info

    def __call__(self):
        return self.w.run(query=self.q, kv_cache=self.cache, return_lse=True)

    def run_basee(self):
        return self.w_e.run(
            query=self.q, kv_cache=self.cache, return_lse=True, return_lse_base_on_e=True
        )

    def outputs(self, r):
        o, lse = r
        B, s_q, H = self.shape
        return o.view(B, s_q, H, D_V), lse.view(B, s_q, H) * LN2  # base 2 -> natural


class TileGymCutile(Peer):
    name = "tilegym-cutile"
    lse_base = None

    def __init__(self, kv_len_per_split):
        t0 = time.perf_counter()
        import tilegym  # noqa: F401
        from tilegym.ops import mla_decoding_split_kv

        self.import_s = time.perf_counter() - t0
        import importlib.metadata as md

        self.version = f"tilegym {md.version('tilegym')}, cuda-tile {md.version('cuda-tile')}"
        self.fn = mla_decoding_split_kv
        self.kv_len_per_split = kv_len_per_split
        self.seen = set()

    def prepare(self, inp):
        if not inp.uniform:
            raise RuntimeError(
                "needs one KV length for the whole batch (dense [B, S, D] inputs, no lengths)"
            )
        T = inp.T_max
        g = inp.dense(T)
        self.kv = g[:, :, :D_V].contiguous()  # (B, T, 512)
        self.kpe = g[:, :, D_V:].contiguous()  # (B, T, 64)
        q = inp.q.reshape(inp.B, inp.s_q * inp.H, D_QK)  # s_q folded into heads: NOT causal
        self.qn = q[:, :, :D_V].contiguous()
        self.qpe = q[:, :, D_V:].contiguous()
        self.shape = (inp.B, inp.s_q, inp.H)
        key = (T, inp.s_q * inp.H)
        info = {"folded_heads": inp.s_q * inp.H, "causal": False}
        if key not in self.seen:  # first call compiles (tileiras)
            t0 = time.perf_counter()
            self()
            torch.cuda.synchronize()
            info["first_call_s_incl_compile"] = round(time.perf_counter() - t0, 3)
            self.seen.add(key)
        return info

    def __call__(self):
        with env(CUDA_HOME=None, CUDA_PATH=None):
            return self.fn(
                self.qn,
                self.qpe,
                self.kv,
                self.kpe,
                SM_SCALE,
                kv_len_per_split=self.kv_len_per_split or None,
                backend="cutile",
            )

    def outputs(self, o):
        B, s_q, H = self.shape
        return o.view(B, s_q, H, D_V), None


class FlashMLA(Peer):
    name = "flash-mla"
    lse_base = "e"

    def __init__(self):
        import flash_mla

        self.fm = flash_mla

    def prepare(self, inp):
        self.md, self.ns = self.fm.get_mla_metadata(inp.lens, inp.s_q * inp.H // 1, 1)
        self.q = inp.q
        self.cache = inp.cache.view(-1, PAGE, 1, D_QK)
        self.inp = inp
        return {}

    def __call__(self):
        i = self.inp
        return self.fm.flash_mla_with_kvcache(
            self.q,
            self.cache,
            i.page_table,
            i.lens,
            D_V,
            self.md,
            self.ns,
            softmax_scale=SM_SCALE,
            causal=i.s_q > 1,
        )

    def outputs(self, r):
        o, lse = r  # lse (B, H, s_q)
        return o, lse.transpose(1, 2)


# --------------------------------------------------------------------------- measuring


def errors(o, lse, ref_o, ref_lse):
    o = o.float()
    d = o - ref_o
    res = {
        "o_nan": int(torch.isnan(o).sum()),
        "o_max_abs": float(d.abs().max()),
        "o_rel_norm": float(d.norm() / ref_o.norm()),
        "o_ref_max_abs": float(ref_o.abs().max()),
    }
    if lse is not None:
        dl = lse.float() - ref_lse
        res["lse_nan"] = int(torch.isnan(lse).sum())
        res["lse_max_abs_nat"] = float(dl.abs().max())
    return res


def time_peers(peers, reps, warmup, sleep_cycles):
    """Alternate the peers inside every rep.

    Per call: GPU time with the launch hidden behind a sleep, eager time, host time.
    """
    for p in peers:
        for _ in range(warmup):
            p()
    torch.cuda.synchronize()
    rec = {p.name: {"gpu": [], "eager": [], "host": []} for p in peers}
    for _ in range(reps):
        for p in peers:
            r = rec[p.name]
            # (a) launch overhead hidden: the GPU is busy sleeping while the CPU enqueues
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(sleep_cycles)
            s.record()
            t0 = time.perf_counter()
            p()
            r["host"].append((time.perf_counter() - t0) * 1e6)
            e.record()
            r.setdefault("ev", []).append(("gpu", s, e))
            # (b) eager: GPU idle when the call starts
            torch.cuda.synchronize()
            s2, e2 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s2.record()
            p()
            e2.record()
            r["ev"].append(("eager", s2, e2))
    torch.cuda.synchronize()
    out = {}
    for name, r in rec.items():
        for kind, s, e in r.pop("ev"):
            r[kind].append(s.elapsed_time(e) * 1e3)
        out[name] = {
            "gpu_us": statistics.median(r["gpu"]),
            "gpu_us_min": min(r["gpu"]),
            "gpu_us_p90": sorted(r["gpu"])[int(0.9 * (len(r["gpu"]) - 1))],
            "eager_us": statistics.median(r["eager"]),
            "host_us": statistics.median(r["host"]),
            "host_us_gt_gpu": statistics.median(r["host"]) > statistics.median(r["gpu"]),
        }
    return out


def kernels(peer, calls=3):
    """Kernel names and per-call device time from torch.profiler (CUPTI)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            peer()
        torch.cuda.synchronize()
    ks = {}
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            k = ks.setdefault(ev.name, [0, 0.0])
            k[0] += 1
            k[1] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
    return {
        n[:110]: {"per_call": c / calls, "us_per_call": round(t / calls, 1)}
        for n, (c, t) in sorted(ks.items(), key=lambda kv: -kv[1][1])
    }


def nvsmi():
    import subprocess

    q = "clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,utilization.gpu"
    try:
        return subprocess.run(
            ["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"nvidia-smi: {e}"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", default="mla-peers-out")
    ap.add_argument("--peers", default="torch-fp32,flashinfer-fa3,tilegym-cutile,flash-mla")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sleep-cycles", type=int, default=2_000_000, help="~1 ms at 1.98 GHz")
    ap.add_argument("--only", default="", help="comma list of setting indices to run")
    ap.add_argument("--cuda-home", default="/usr/local/cuda", help="CUDA_HOME for FlashInfer's JIT")
    ap.add_argument(
        "--tilegym-split",
        type=int,
        default=512,
        help="kv_len_per_split (TileGym's own interface uses 512; 0: the op's own default)",
    )
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()

    os.makedirs(a.out, exist_ok=True)
    jl = open(os.path.join(a.out, "mla_peers.jsonl"), "a")  # noqa: SIM115 (open for the run)

    def emit(rec):
        jl.write(json.dumps(rec) + "\n")
        jl.flush()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.cuda.get_device_properties(0)
    hdr = {
        "kind": "env",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": dev.name,
        "sms": dev.multi_processor_count,
        "python": sys.version.split()[0],
        "dlpack_c_exchange_api": hasattr(torch.Tensor, "__dlpack_c_exchange_api__"),
        "nvidia_smi_before": nvsmi(),
        "sm_scale": SM_SCALE,
        "page_size": PAGE,
        "CUDA_HOME": os.environ.get("CUDA_HOME"),
        "argv": sys.argv[1:],
    }
    log("ENV " + json.dumps(hdr))
    emit(hdr)

    names = [n for n in a.peers.split(",") if n]
    peers, broken = [], {}
    for n in names:
        t0 = time.perf_counter()
        try:
            if n == "torch-fp32":
                p = TorchRef()
            elif n == "flashinfer-fa3":
                p = FlashInferFa3(a.cuda_home if os.path.isdir(a.cuda_home) else None)
            elif n == "flashinfer-fa2":
                p = FlashInferFa3(
                    a.cuda_home if os.path.isdir(a.cuda_home) else None, backend="fa2"
                )
            elif n == "tilegym-cutile":
                p = TileGymCutile(a.tilegym_split)
            elif n == "flash-mla":
                p = FlashMLA()
            else:
                raise ValueError(f"unknown peer {n}")
            peers.append(p)
            rec = {
                "kind": "peer",
                "peer": n,
                "status": "imported",
                "import_s": round(time.perf_counter() - t0, 2),
                "version": getattr(p, "version", None),
            }
        except Exception as e:  # noqa: BLE001
            broken[n] = f"{type(e).__name__}: {e}"
            rec = {
                "kind": "peer",
                "peer": n,
                "status": "import-failed",
                "error": broken[n],
                "traceback": traceback.format_exc()[-2000:],
            }
        log("PEER " + json.dumps(rec))
        emit(rec)

    only = {int(i) for i in a.only.split(",") if i}
    for idx, (B, T, H, s_q, timed) in enumerate(SETTINGS):
        if only and idx not in only:
            continue
        tag = f"B{B}_T{T}_H{H}_sq{s_q}"
        inp = Inputs(B, T, H, s_q, a.seed + idx, "cuda")
        ref_o, ref_lse = reference(inp, causal=True)
        ref_nc = reference(inp, causal=False) if s_q > 1 else (ref_o, ref_lse)
        base = {
            "kind": "result",
            "setting": tag,
            "B": B,
            "T": T,
            "T_max": inp.T_max,
            "H": H,
            "s_q": s_q,
            "lens_sum": int(inp.lens_cpu.sum()),
            "kv_bytes": inp.kv_bytes,
            "flops": inp.flops,
            "max_pages": inp.max_pages,
            "num_pages": int(inp.cache.shape[0]),
        }
        ready = []
        for p in peers:
            rec = dict(base, peer=p.name, lse_base=p.lse_base)
            try:
                rec["prepare"] = p.prepare(inp)
                o, lse = p.outputs(p())
                torch.cuda.synchronize()
                noncausal = isinstance(p, TileGymCutile) and s_q > 1
                ro, rl = ref_nc if noncausal else (ref_o, ref_lse)
                rec["checked_against"] = (
                    "fp32 reference, non-causal (s_q folded into heads)"
                    if noncausal
                    else "fp32 reference" + (", causal" if s_q > 1 else "")
                )
                rec.update(errors(o, lse, ro, rl))
                if isinstance(p, FlashInferFa3) and p.w_e is not None:
                    oe, le = p.run_basee()
                    torch.cuda.synchronize()
                    rec["basee_lse_max_abs_nat"] = float(
                        (le.view(B, s_q, H).float() - ref_lse).abs().max()
                    )
                    rec["basee_o_equal_base2_o"] = bool(torch.equal(oe, p()[0]))
                if not a.no_profile:
                    try:
                        rec["kernels"] = kernels(p)
                    except Exception as e:  # noqa: BLE001
                        rec["kernels"] = f"profiler error: {type(e).__name__}: {e}"[:300]
                rec["status"] = "ok"
                ready.append((p, rec))
            except Exception as e:  # noqa: BLE001
                rec["status"] = "error"
                rec["error"] = f"{type(e).__name__}: {e}"[:1500]
                rec["traceback"] = traceback.format_exc()[-3000:]
                log(f"{tag} peer={p.name} status=error {rec['error'][:400]}")
                emit(rec)
        if timed and ready:
            tm = time_peers([p for p, _ in ready], a.reps, a.warmup, a.sleep_cycles)
        else:
            tm = {}
        for p, rec in ready:
            t = tm.get(p.name)
            if t:
                rec.update(t)
                rec["kv_GBps"] = inp.kv_bytes / (t["gpu_us"] * 1e-6) / 1e9
                rec["TFLOPs"] = inp.flops / (t["gpu_us"] * 1e-6) / 1e12
            rec["reps"] = a.reps if t else 0
            emit(rec)
            line = f"{tag} peer={p.name} status=ok"
            if t:
                line += (
                    f" gpu_us={t['gpu_us']:.1f} eager_us={t['eager_us']:.1f}"
                    f" host_us={t['host_us']:.1f}"
                    f" kv_GBps={rec['kv_GBps']:.0f} TFLOPs={rec['TFLOPs']:.1f}"
                )
            line += f" o_max_abs={rec['o_max_abs']:.2e} o_rel={rec['o_rel_norm']:.2e}"
            line += f" o_nan={rec['o_nan']}"
            if "lse_max_abs_nat" in rec:
                line += (
                    f" lse_max_abs={rec['lse_max_abs_nat']:.2e} (base {p.lse_base}, compared as ln)"
                )
            if "basee_lse_max_abs_nat" in rec:
                line += f" basee_lse_max_abs={rec['basee_lse_max_abs_nat']:.2e}"
            line += f" prepare={json.dumps(rec['prepare'])}"
            log(line)
            if isinstance(rec.get("kernels"), dict):
                log(f"{tag} peer={p.name} kernels=" + json.dumps(rec["kernels"]))
        for n, err in broken.items():
            rec = dict(base, peer=n, status="unavailable", error=err)
            emit(rec)
            log(f"{tag} peer={n} status=unavailable {err[:300]}")
        del inp, ref_o, ref_lse, ref_nc
        for p in peers:
            for attr in ("kv", "kpe", "qn", "qpe", "q", "cache", "inp", "w", "w_e"):
                if hasattr(p, attr):
                    setattr(p, attr, None)
        torch.cuda.empty_cache()
    tail = {"kind": "env-after", "nvidia_smi_after": nvsmi()}
    log("ENV " + json.dumps(tail))
    emit(tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
