"""The MLA decode peers' adapters on the CPU, without the peers: a missing peer is one line
naming what to install; supports() refusals; the layouts the adapters build from the
workload's own page table (FlashInfer's CSR page list, TileGym's dense gather); and each
adapter's wiring end to end against the workload's reference, with the peer replaced by a
small PyTorch stand-in that follows the peer's documented contract."""

from __future__ import annotations

import dataclasses
import math
import sys

import pytest
import torch
from cute_mla.flashinfer_mla import FlashInferMla
from cute_mla.flashinfer_mla import flashinfer_mla as fim
from cute_mla.flashmla import FlashMla
from cute_mla.flashmla import flashmla as fmla
from cute_mla.tilegym_mla import TileGymMla
from cute_mla.tilegym_mla import tilegym_mla as tgm

from kernelplan import KernelPlanError, ShapeError
from kernelplan.check import compare
from kernelplan.workloads.mla_decode import MLA_DECODE, MlaDecodeProblem

W = MLA_DECODE


def inputs_for(p: MlaDecodeProblem, seed: int = 0) -> dict:
    return W.prepare_inputs(p, W.tensor_specs(p), seed, device="cpu")


def token_row(x: dict, p: MlaDecodeProblem, i: int, k: int) -> torch.Tensor:
    """Token k of sequence i, by the workload's definition."""
    return x["kv_cache"][x["page_table"][i, k // p.page], k % p.page]


# -- a missing peer: one line naming the package and version ---------------------------------
@pytest.mark.parametrize(
    ("plan_cls", "module", "needles"),
    [
        (
            FlashInferMla,
            "flashinfer",
            ("flashinfer-python==0.7.2.post1", "apache-tvm-ffi==0.1.15.post2"),
        ),
        (TileGymMla, "tilegym", ("tilegym==1.5.1", "cuda-tile==1.7.0")),
    ],
)
def test_missing_peer_is_one_line(monkeypatch, plan_cls, module, needles):
    monkeypatch.setitem(sys.modules, module, None)  # `import <module>` raises ImportError
    plan = plan_cls()
    p = plan.problem(b=2, t=128)
    with pytest.raises(KernelPlanError) as e:
        plan.kernel(p, plan.default_config(p), plan.target("sm_90a"))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{plan.name} needs")
    for n in needles:
        assert n in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__  # no chained traceback


# -- supports(): one line each ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"dtype": "float8_e4m3fn"}, "takes dtype bfloat16 or float16"),
        ({"dtype": "float32"}, "takes dtype bfloat16 or float16"),
        ({"d_latent": 448}, "d_latent a multiple of 128"),
        ({"d_rope": 32}, "d_rope a positive multiple of 64"),
        ({"d_rope": 0}, "d_rope a positive multiple of 64"),
        # s*h = 192 rows: a 128-row tile splits query 2's heads; its last key 64 starts a tile
        ({"b": 1, "s": 4, "h": 48, "t": 66}, "FlashInfer refuses this causal plan"),
    ],
)
def test_flashinfer_refuses_in_one_line(kw, needle):
    plan = FlashInferMla()
    base = {"b": 2, "t": 100}
    with pytest.raises(ShapeError, match=needle) as e:
        plan.problem(**{**base, **kw})
    assert "\n" not in str(e.value)


def test_flashinfer_work_item_bound(monkeypatch):
    # b * ceil(s*h / tile) query tiles against FlashInfer's 16384 (a b of 16385 is slow to
    # build: the workload's validate() is quadratic in b), so the bound is lowered here
    assert fim.MAX_WORK_ITEMS == 16384
    monkeypatch.setattr(fim, "MAX_WORK_ITEMS", 7)
    plan = FlashInferMla()
    plan.problem(b=7, t=10, h=16)  # 7 tiles of 64 rows
    with pytest.raises(ShapeError, match="8 query tiles exceed FlashInfer's 7 work items"):
        plan.problem(b=4, t=10, h=128, s=2)  # 4 * ceil(256 / 128)


def test_flashinfer_takes():
    plan = FlashInferMla()
    for kw in (
        {"b": 1, "s": 4, "h": 48, "t": 67},  # the same tile split, but key 65 starts no tile
        {"b": 1, "s": 4, "h": 48, "t": 66, "causal": False},
        {"b": 4, "s": 2, "h": 128, "t": 1000},  # tile 128 divides by h: never refused
        {"b": 8, "t": 777, "varlen": True},
        {"b": 2, "t": 100, "page": 16, "dtype": "float16"},
        {"b": 2, "t": 100, "page": 1},
    ):
        plan.problem(**kw)
    # fa3 narrows d_latent; fa2 does not
    p = plan.problem(b=2, t=100, d_latent=384)
    with pytest.raises(ShapeError, match="backend fa3 takes d_latent"):
        plan.config(p, {"backend": "fa3"})
    assert plan.config(p, {"backend": "fa2"}).backend == "fa2"
    with pytest.raises(ShapeError, match="one of fa3, fa2"):
        plan.config(p, {"backend": "auto"})


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"varlen": True, "b": 8}, "one KV length for the whole batch"),
        ({"seqlens": (100, 99)}, "one KV length for the whole batch"),
        ({"s": 2}, "has no causal mask: s > 1 needs --causal false"),
        ({"h": 8}, "s\\*h a multiple of 16"),
        ({"dtype": "float8_e4m3fn"}, "takes dtype bfloat16 or float16"),
        ({"d_rope": 48}, "powers of two"),
        ({"d_rope": 0}, "powers of two"),
    ],
)
def test_tilegym_refuses_in_one_line(kw, needle):
    plan = TileGymMla()
    with pytest.raises(ShapeError, match=needle) as e:
        plan.problem(**{"b": 2, "t": 100, **kw})
    assert "\n" not in str(e.value)


def test_tilegym_takes_and_declares_o_only():
    plan = TileGymMla()
    for kw in (
        {"b": 2, "t": 100},
        {"b": 2, "seqlens": (100, 100)},
        {"b": 2, "s": 2, "h": 8, "t": 100, "causal": False},  # 16 folded heads
        {"b": 2, "t": 100, "page": 16},
    ):
        p = plan.problem(**kw)
        assert plan.output_names(p) == ["o"]  # no LSE: lse is neither poisoned nor compared
    # the workload's own outputs are both; the other implementations check both
    assert FlashInferMla().output_names(p) == ["o", "lse"]
    # which of the workload's check/profile problems it takes
    assert [q.label() for q in plan.check_problems()] == [
        q.label() for q in W.check_problems() if not q.varlen and q.s == 1
    ]
    assert all(not q.varlen and q.s == 1 for q in plan.profile_problems())


def test_tilegym_config():
    C = tgm.TileGymMlaConfig
    c = C.from_overrides(C(), {"gather": "at_bind", "kv_len_per_split": "512"})
    assert (c.gather, c.kv_len_per_split) == ("at_bind", 512)
    for bad in ("300", "64"):
        with pytest.raises(ShapeError, match="power of two >= 128"):
            C.from_overrides(C(), {"kv_len_per_split": bad})
    with pytest.raises(ShapeError, match="one of in_launch, at_bind"):
        C.from_overrides(C(), {"gather": "never"})
    assert all(c.gather == "in_launch" for c in TileGymMla().autotune_configs(None))
    # the op's own default split (mla-peers.md: 1024 at B=32 T=4096, 4096 at B=128)
    assert tgm.default_split(4096, 32, 132) == 1024
    assert tgm.default_split(4096, 128, 132) == 4096
    assert tgm.default_split(100, 2, 132) == 128


# -- layouts from the workload's own page table ----------------------------------------------
@pytest.mark.parametrize(
    "p",
    [
        MlaDecodeProblem(b=3, t=1000),  # a partly filled last page (its tail is NaN)
        MlaDecodeProblem(b=4, t=64),  # exactly one page each
        MlaDecodeProblem(b=2, t=100, page=16, d_latent=128, d_rope=64),
    ],
    ids=lambda p: f"b{p.b}-s{p.s}-h{p.h}-t{p.t}-page{p.page}" + ("-varlen" if p.varlen else ""),
)
def test_dense_gather_follows_the_page_table(p):
    x = inputs_for(p, seed=3)
    rows = tgm.dense_row_index(x["page_table"], p.t, p.page)
    assert rows.shape == (p.b * p.t,) and rows.dtype == torch.int64
    latent = torch.full((p.b, p.t, p.d_latent), float("nan"), dtype=x["kv_cache"].dtype)
    rope = torch.full((p.b, p.t, p.d_rope), float("nan"), dtype=x["kv_cache"].dtype)
    tgm.gather_dense(x["kv_cache"], rows, latent, rope)
    assert not torch.isnan(latent).any() and not torch.isnan(rope).any()  # no slot past an end
    for i in range(p.b):
        for k in {0, p.page - 1, p.page, p.t // 2, p.t - 1} & set(range(p.t)):
            row = token_row(x, p, i, k)
            assert torch.equal(latent[i, k], row[: p.d_latent])
            assert torch.equal(rope[i, k], row[p.d_latent :])
    # and all of it, the slow way
    want = torch.stack(
        [torch.stack([token_row(x, p, i, k) for k in range(p.t)]) for i in range(p.b)]
    )
    assert torch.equal(torch.cat([latent, rope], -1), want)


@pytest.mark.parametrize(
    "p",
    [
        MlaDecodeProblem(b=8, t=777, varlen=True),  # an empty sequence, partial pages
        MlaDecodeProblem(b=4, s=2, t=1000),
        MlaDecodeProblem(b=3, seqlens=(64, 1, 129), page=32),
    ],
    ids=lambda p: f"b{p.b}-s{p.s}-h{p.h}-t{p.t}-page{p.page}" + ("-varlen" if p.varlen else ""),
)
def test_csr_follows_the_page_table(p):
    x = inputs_for(p, seed=5)
    qo, kvp, kvi, kvl = fim.csr_metadata(x["page_table"], x["seqlens"], p.page, p.s)
    assert all(t.dtype == torch.int32 and t.device.type == "cpu" for t in (qo, kvp, kvi, kvl))
    assert qo.tolist() == [i * p.s for i in range(p.b + 1)]
    assert kvl.tolist() == list(p.lengths())
    owned = []
    for i, n in enumerate(p.lengths()):
        npg = -(-n // p.page)
        assert kvp[i + 1] - kvp[i] == npg
        mine = kvi[kvp[i] : kvp[i + 1]]
        assert mine.tolist() == x["page_table"][i, :npg].tolist()
        owned += mine.tolist()
        # every token the CSR names is the workload's token, and none is a NaN slot
        rows = x["kv_cache"][mine.long()].reshape(-1, p.d_qk)[:n]
        assert not torch.isnan(rows).any()
        for k in {0, n // 2, n - 1} if n else ():
            assert torch.equal(rows[k], token_row(x, p, i, k))
    assert len(owned) == len(set(owned)) == kvi.numel() == p.pages_needed()


# -- the adapters end to end, the peers replaced by PyTorch stand-ins ---------------------------
class FakeMetadata:
    @staticmethod
    def csr(qo_indptr, kv_indptr, kv_indices, kv_len_arr):
        return (qo_indptr, kv_indptr, kv_indices, kv_len_arr)


class FakeWrapper:
    """FlashInfer's documented contract (mla-peers.md section 1): CSR pages, packed query rows
    batch-major, causal right-aligned, LSE base 2 unless planned and run as natural log."""

    instances: list = []

    def __init__(self, workspace, backend="auto"):
        self.backend = backend
        FakeWrapper.instances.append(self)

    def plan(self, *, metadata, num_heads, head_dim_ckv, head_dim_kpe, page_size, causal,
             sm_scale, q_data_type, kv_data_type, lse_mode="none"):  # fmt: skip
        self.meta = metadata
        self.kw = dict(h=num_heads, dl=head_dim_ckv, dr=head_dim_kpe, page=page_size,
                       causal=causal, scale=sm_scale, lse_mode=lse_mode)  # fmt: skip
        self.runs = 0

    def run(self, *, query, kv_cache, out, lse, return_lse, return_lse_base_on_e):
        k = self.kw
        assert return_lse and (k["lse_mode"] == "basee") == return_lse_base_on_e
        qo, kvp, kvi, kvl = self.meta
        for i in range(kvl.numel()):
            n, q0, q1 = int(kvl[i]), int(qo[i]), int(qo[i + 1])
            pages = kvi[int(kvp[i]) : int(kvp[i + 1])].long()
            rows = kv_cache[pages].reshape(-1, kv_cache.shape[-1])[:n].double()
            for r in range(q1 - q0):
                seen = n - (q1 - q0) + r + 1 if k["causal"] else n
                seen = max(0, min(seen, n))
                s = query[q0 + r].double() @ rows[:seen].T * k["scale"]  # (h, seen)
                if seen == 0:
                    out[q0 + r] = 0
                    lse[q0 + r] = -math.inf
                    continue
                m = torch.logsumexp(s, -1)
                out[q0 + r] = (torch.softmax(s, -1) @ rows[:seen, : k["dl"]]).to(out.dtype)
                lse[q0 + r] = (m if return_lse_base_on_e else m / math.log(2)).float()
        self.runs += 1


@pytest.mark.parametrize(
    "p",
    [
        MlaDecodeProblem(b=8, h=16, t=300, varlen=True),  # an empty sequence: o 0, lse -inf
        MlaDecodeProblem(b=3, s=2, h=16, t=200),  # causal s = 2
        MlaDecodeProblem(b=2, h=16, t=130, page=16),
    ],
    ids=lambda p: f"b{p.b}-s{p.s}-h{p.h}-t{p.t}-page{p.page}" + ("-varlen" if p.varlen else ""),
)
def test_flashinfer_adapter_wiring(monkeypatch, p):
    monkeypatch.setattr(fim, "load_flashinfer", lambda: (FakeWrapper, FakeMetadata, "fake"))
    monkeypatch.setenv(fim.CUDA_HOME_ENV, "/opt/some-cuda")
    FakeWrapper.instances.clear()
    plan = FlashInferMla()
    x = inputs_for(p, seed=7)
    for n in ("o", "lse"):
        x[n].fill_(float("nan"))
    kernel = plan.kernel(p, plan.config(p, {"backend": "fa2"}), plan.target("sm_90a"))
    launch = kernel.bind(x)
    w = FakeWrapper.instances[-1]
    assert w.backend == "fa2" and w.runs == 0  # planned at bind, nothing run yet
    assert w.kw["causal"] == (p.s > 1) and w.kw["lse_mode"] == "basee"
    assert w.kw["scale"] == p.scale() and w.kw["page"] == p.page
    assert torch.isnan(x["o"]).all()  # bind writes no output (the skip-launch fault holds)
    launch()
    launch()
    assert w.runs == 2 and len(FakeWrapper.instances) == 1  # one plan, many launches
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    for n in ("o", "lse"):
        r = compare(n, x[n], ref[n], W.tolerance(p, n), baseline=low[n])
        assert r.passed, r.line()
    assert torch.equal(torch.isneginf(x["lse"]), torch.isneginf(ref["lse"]))


def fake_tilegym(calls: list):
    def op(q_nope, q_pe, kv, kpe, sm_scale, kv_len_per_split=None, backend=None):
        assert backend == "cutile" and kv_len_per_split >= 128
        assert all(t.is_contiguous() for t in (q_nope, q_pe, kv, kpe))
        calls.append(kv_len_per_split)
        s = (q_nope.double() @ kv.double().transpose(1, 2)
             + q_pe.double() @ kpe.double().transpose(1, 2)) * sm_scale  # fmt: skip
        return (torch.softmax(s, -1) @ kv.double()).to(q_nope.dtype)

    return op


@pytest.mark.parametrize(
    "p",
    [
        MlaDecodeProblem(b=3, h=16, t=1000),  # partial last page: its NaN tail must stay out
        MlaDecodeProblem(b=2, s=2, h=16, t=200, causal=False),  # folded heads
    ],
    ids=lambda p: f"b{p.b}-s{p.s}-h{p.h}-t{p.t}-page{p.page}" + ("-varlen" if p.varlen else ""),
)
def test_tilegym_adapter_wiring(monkeypatch, p):
    calls: list = []
    monkeypatch.setattr(tgm, "load_tilegym", lambda: (fake_tilegym(calls), "fake"))
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda")
    plan = TileGymMla()
    x = inputs_for(p, seed=9)
    x["o"].fill_(float("nan"))
    x["lse"].fill_(float("nan"))
    kernel = plan.kernel(p, plan.default_config(p), plan.target("sm_90a", sm_count=132))
    launch = kernel.bind(x)
    assert len(calls) == 1 and torch.isnan(x["o"]).all()  # the compile call wrote scratch only
    launch()
    ref, low = W.reference(p, x), W.reference_lowp(p, x)
    r = compare("o", x["o"], ref["o"], baseline=low["o"])
    assert r.passed, r.line()
    assert torch.isnan(x["lse"]).all()  # no LSE: left as it was, and not compared
    assert calls == [tgm.default_split(p.t, p.b, 132)] * 2


def test_tilegym_gather_is_in_the_launch(monkeypatch):
    """in_launch re-reads the paged cache every launch; at_bind does not."""
    monkeypatch.setattr(tgm, "load_tilegym", lambda: (fake_tilegym([]), "fake"))
    plan = TileGymMla()
    p = plan.problem(b=2, h=16, t=128)
    results = {}
    for gather in ("in_launch", "at_bind"):
        x = inputs_for(p, seed=1)
        launch = plan.kernel(p, plan.config(p, {"gather": gather}), plan.target("sm_90a")).bind(x)
        launch()
        before = x["o"].clone()
        x["kv_cache"].mul_(2)  # the cache changes after bind
        launch()
        results[gather] = torch.equal(before, x["o"])
    assert results == {"in_launch": False, "at_bind": True}


# -- FlashMLA (sgl-kernel's flashmla_ops) ------------------------------------------------------
class FakeFlashMlaOps:
    """``torch.ops.sgl_kernel`` as FlashMLA's two dense-decode ops document it (the wheel's
    ``sgl_kernel/flash_mla.py``): metadata from the lengths; the op returns a new ``out (b, s,
    h, d_v)`` and a natural-log ``lse (b, h, s)`` (+inf where a query sees no key, FlashMLA's
    own reference) and writes nothing it was given."""

    def __init__(self):
        self.metadata_calls: list = []
        self.runs = 0

    def get_mla_decoding_metadata(self, seqlens, rows_per_head_k, h_k, h_q, is_fp8, topk):
        assert seqlens.dtype == torch.int32 and seqlens.dim() == 1
        assert h_k == 1 and h_q is None and is_fp8 is False and topk is None
        self.metadata_calls.append(rows_per_head_k)
        return [
            torch.zeros(4, 8, dtype=torch.int32),
            torch.zeros(seqlens.numel() + 1, dtype=torch.int32),
        ]

    def fwd_kvcache_mla(self, q, cache, d_v, seqlens, table, scale, causal, meta, splits, fp8, idx):
        b, s, h, d = q.shape
        assert cache.shape[1:] == (64, 1, d) and table.dtype == torch.int32
        assert fp8 is False and idx is None and splits.numel() == b + 1
        out = torch.empty(b, s, h, d_v, dtype=q.dtype)
        lse = torch.empty(b, h, s)
        for i in range(b):
            n = int(seqlens[i])
            pages = table[i, : -(-n // 64)].long()
            rows = cache[pages].reshape(-1, d)[:n].double()
            for r in range(s):
                seen = max(0, min(n - s + r + 1 if causal else n, n))
                if seen == 0:  # FlashMLA's convention: o 0, lse +inf
                    out[i, r], lse[i, :, r] = 0, math.inf
                    continue
                sc = q[i, r].double() @ rows[:seen].T * scale  # (h, seen)
                out[i, r] = (torch.softmax(sc, -1) @ rows[:seen, :d_v]).to(q.dtype)
                lse[i, :, r] = torch.logsumexp(sc, -1).float()
        self.runs += 1
        return [out, lse]


def _fm_args(x: dict, p: MlaDecodeProblem) -> tuple:
    """The op's arguments as the adapter passes them (metadata stand-ins)."""
    splits = torch.zeros(p.b + 1, dtype=torch.int32)
    cache = x["kv_cache"].view(-1, p.page, 1, p.d_qk)
    meta = torch.zeros(4, 8, dtype=torch.int32)
    return (x["q"], cache, p.d_latent, x["seqlens"], x["page_table"], p.scale(), False, meta,
            splits, False, None)  # fmt: skip


class _CpuFlashMla(FlashMla):
    """FlashMla on CPU tensors (the check's inputs are made on the GPU otherwise)."""

    def prepare_inputs(self, problem, seed, device="cpu"):
        return super().prepare_inputs(problem, seed, device="cpu")


@pytest.fixture
def fake_flashmla(monkeypatch):
    ops = FakeFlashMlaOps()
    monkeypatch.setattr(fmla, "load_flashmla", lambda: ops)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    return ops


def test_flashmla_missing_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(fmla, "_OPS", None)
    monkeypatch.setattr(torch, "__version__", fmla.BRIDGE_TORCH + ".0")  # the bundle's torch
    monkeypatch.setenv(fmla.OPS_ENV, str(tmp_path / "nowhere.so"))
    plan = FlashMla()
    p = plan.problem(b=2, t=128)
    with pytest.raises(KernelPlanError) as e:
        plan.kernel(p, plan.default_config(p), plan.target("sm_90a"))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(
        "flashmla needs FlashMLA's ops from sgl-kernel 0.3.21"
    )
    assert "pack-flashmla.sh" in msg and "nowhere.so: no such file" in msg
    assert e.value.__cause__ is None and e.value.__suppress_context__


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"page": 16}, "takes --page 64 only"),
        ({"dtype": "float32"}, "takes dtype bfloat16 or float16"),
        ({"d_latent": 384}, "takes d_latent 512 and d_rope 64 only"),
        ({"d_rope": 128}, "takes d_latent 512 and d_rope 64 only"),
        ({"kv_dtype": "float8_e4m3fn"}, "flashmla takes a cache of the --dtype only"),
    ],
)
def test_flashmla_refuses_in_one_line(kw, needle):
    with pytest.raises(ShapeError, match=needle) as e:
        FlashMla().problem(**{"b": 2, "t": 100, **kw})
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "p",
    [
        MlaDecodeProblem(b=8, h=16, t=300, varlen=True),  # an empty sequence
        MlaDecodeProblem(b=3, s=2, h=16, t=200),  # causal s = 2
        MlaDecodeProblem(b=2, h=128, t=70),  # a partial second page
    ],
    ids=lambda p: f"b{p.b}-s{p.s}-h{p.h}-t{p.t}" + ("-varlen" if p.varlen else ""),
)
def test_flashmla_check_copies_and_timing_returns(fake_flashmla, p):
    plan = _CpuFlashMla()
    cfg = plan.default_config(p)
    assert cfg.outputs == "returned" and plan.autotune_configs(p) == [cfg]
    ok, res, _ = plan.run_check(p, cfg, target=plan.target("sm_90a"), seed=3, launches=2)
    assert ok, [r.line() for r in res]
    assert [r.name for r in res] == ["o", "lse"]  # both compared, through the copies
    assert fake_flashmla.metadata_calls == [p.s * p.h]  # one metadata call, at bind
    if p.varlen:  # an empty sequence: +inf from the op, -inf in the workload's lse
        x = inputs_for(p, seed=4)
        x["lse"].fill_(float("nan"))
        copied = dataclasses.replace(cfg, outputs="copied")
        _, op_lse = fake_flashmla.fwd_kvcache_mla(*_fm_args(x, p))
        plan.kernel(p, copied, plan.target("sm_90a")).bind(x)()
        empty = x["seqlens"] == 0
        assert empty.any() and torch.isposinf(op_lse[empty]).all()
        assert torch.isneginf(x["lse"][empty]).all() and not torch.isinf(x["lse"][~empty]).any()
    ok, res, _ = plan.run_check(p, cfg, target=plan.target("sm_90a"), seed=3, fault="skip-launch")
    assert not ok and not any(r.passed for r in res)
    ok, res, _ = plan.run_check(p, cfg, target=plan.target("sm_90a"), seed=3, fault="perturb")
    assert not ok and [r.name for r in res if not r.passed] == ["o"]
    # the timed launch is the op alone: its results are returned, the workload's untouched
    x = inputs_for(p, seed=5)
    x["o"].fill_(float("nan"))
    runs = fake_flashmla.runs
    out, lse = plan.kernel(p, cfg, plan.target("sm_90a")).bind(x)()
    assert fake_flashmla.runs == runs + 1 and torch.isnan(x["o"]).all()
    ref = W.reference(p, x)
    got = lse.transpose(1, 2).contiguous()
    got[got == math.inf] = -math.inf  # FlashMLA's empty-query convention, as the check maps it
    r = compare("lse", got, ref["lse"], W.tolerance(p, "lse"))
    assert r.passed, r.line()


def test_flashmla_op_failure_is_one_line(fake_flashmla, monkeypatch):
    """A TORCH_CHECK inside FlashMLA's op (the first device run hit one: "Cannot access data
    pointer of Tensor that doesn't have storage", from a torch 2.9 vtable slot) reaches the
    caller as one KernelPlanError line naming the op, not as the library's traceback."""

    def failing(*a, **k):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage\n"
                           "Exception raised from throw_data_ptr_access_error at ...")  # fmt: skip

    monkeypatch.setattr(fake_flashmla, "fwd_kvcache_mla", failing)
    plan = _CpuFlashMla()
    p = MlaDecodeProblem(b=2, h=16, t=70)
    launch = plan.kernel(p, plan.default_config(p), plan.target("sm_90a")).bind(inputs_for(p, 1))
    with pytest.raises(KernelPlanError) as e:
        launch()
    assert str(e.value) == (
        "flashmla: FlashMLA fwd_kvcache_mla failed: RuntimeError: Cannot access data pointer "
        "of Tensor that doesn't have storage"
    )


def test_flashmla_bundle_under_another_torch_says_which(monkeypatch, tmp_path):
    """The bundle is bridged to torch 2.11 only: under another torch (this venv's), naming it
    gets one line that names both torches and the way out, and the unnamed bundle under the
    project's root is reported as skipped, not silently ignored."""
    monkeypatch.setattr(torch, "__version__", "2.15.0")  # not the bundle's torch, on any host
    bundle = tmp_path / "libflashmla_ops_bridge.so"
    bundle.write_bytes(b"\x7fELF")
    monkeypatch.setattr(fmla, "_OPS", None)
    monkeypatch.setenv(fmla.OPS_ENV, str(bundle))
    with pytest.raises(KernelPlanError) as e:
        fmla.load_flashmla()
    msg = str(e.value)
    assert "\n" not in msg and f"needs torch {fmla.BRIDGE_TORCH}" in msg
    assert f"this is torch {torch.__version__}" in msg and "sgl-kernel==0.3.21" in msg
    monkeypatch.delenv(fmla.OPS_ENV)
    monkeypatch.setattr(fmla, "DEFAULT_OPS", bundle)
    monkeypatch.setitem(sys.modules, "sgl_kernel", None)  # not installed, whatever this venv has
    with pytest.raises(KernelPlanError) as e:
        fmla.load_flashmla()
    msg = str(e.value)
    assert "\n" not in msg and f"the bundle at {bundle} was not used" in msg


def test_flashmla_named_library_is_not_the_bridge(monkeypatch, tmp_path):
    """Naming sgl-kernel's library where the ops bridge is expected (what the variable named
    before the bridge existed) is one line that names the bridge beside it; nothing loads."""
    monkeypatch.setattr(fmla, "_OPS", None)
    monkeypatch.setattr(fmla, "_SOURCE", {})
    monkeypatch.setattr(torch, "__version__", fmla.BRIDGE_TORCH + ".0")
    library = tmp_path / "flashmla_ops.abi3.so"
    library.write_bytes(b"\x7fELF")
    monkeypatch.setenv(fmla.OPS_ENV, str(library))
    loaded = []
    monkeypatch.setattr(fmla, "_load_library", loaded.append)
    with pytest.raises(KernelPlanError) as e:
        fmla.load_flashmla()
    msg = str(e.value)
    assert "\n" not in msg and "is sgl-kernel's library; name the bundle's ops bridge" in msg
    assert str(tmp_path / "libflashmla_ops_bridge.so") in msg
    assert loaded == [] and fmla._SOURCE == {}


def test_flashmla_without_a_gpu_names_sm_90():
    """On a host without a GPU the CLI refuses FlashMLA in one line naming the SM it needs
    (its dense decode is built for sm_90a only), before any library is loaded."""
    from cute_mla.flashmla.flashmla import FlashMla

    from kernelplan import device as devmod

    with pytest.raises(devmod.ArchMismatch, match=r"flashmla: no CUDA GPU here; it needs sm_90a"):
        devmod.require_plan_runs_on(FlashMla, None)
