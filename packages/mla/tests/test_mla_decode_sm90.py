"""mla_decode_sm90 compiles for sm_90a on the CPU (0 spills, WGMMA in the SASS) and refuses
what it does not take with one line."""

import pytest


@pytest.mark.parametrize(
    "shape",
    [
        {"b": 32, "t": 4096},  # h=128, s=1: two full 64-row tiles per sequence
        {"b": 4, "s": 3, "h": 16, "t": 1000},  # 48 packed rows: a partial tile, causal
    ],
)
def test_mla_decode_sm90_compiles_for_sm90a(shape, tmp_path, monkeypatch):
    from kernelplan.registry import load_plan_class

    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))  # a real compile
    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(**shape)
    st = plan.run_static(prob, plan.config(prob, {"schedule": "lockstep"}))
    assert st["arch"] == "sm_90a" and st["cache"]["hit"] is False
    assert st["registers"] <= 255
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    # 36 k-blocks of S = Q K^T (K = 576; 32 tokens per warpgroup since step 2) + 4 of
    # O += P V (64 tokens) per page
    assert st["mma_mnemonics"] == {"HGMMA.64x32x16.F32.BF16": 36, "HGMMA.64x256x16.F32.BF16": 4}
    # Q + 2 pages + P (64 x 64), bf16, + the row max and row sum exchange (2 x 64 fp32 each)
    assert st["dynamic_smem_bytes"] == (64 * 576 * 3 + 64 * 64) * 2 + 2 * 2 * 64 * 4
    # the lockstep schedule's default is the cp.async path (steps 0-2): no TMA
    assert st["opcodes"].get("UTMALDG", 0) == 0 and st["meta"]["kv_load"] == "cp.async"
    # the split kernel's combine (when the problem splits) has no spills either
    for f in st.get("functions", []):
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0


@pytest.mark.parametrize(
    ("shape", "overrides"),
    [
        ({"b": 32, "t": 4096}, {"loads": "tma"}),  # splits (2 per sequence): + the combine
        ({"b": 4, "s": 3, "h": 16, "t": 1000}, {"loads": "tma"}),  # partial tile, causal
        ({"b": 8, "t": 777, "varlen": True}, {"loads": "tma", "splits": "1"}),  # no split
    ],
)
def test_mla_decode_sm90_tma_loads_compile_for_sm90a(shape, overrides, tmp_path, monkeypatch):
    """Step 3 (``--config loads=tma``): pages by TMA, one per 64-column chunk (9 per page:
    the first page before the loop, the next page inside it = 18 UTMALDG), each chunk with its
    own mbarrier; Q still by cp.async (2 x 9 vectors per thread, a valid and a stand-in row
    variant: 36 LDGSTS); 0 spills; the MMAs of step 2 unchanged."""
    from kernelplan.registry import load_plan_class

    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(**shape)
    cfg = plan.config(prob, {"schedule": "lockstep", **overrides})
    assert cfg.loads == "tma"
    st = plan.run_static(prob, cfg)
    assert st["arch"] == "sm_90a" and st["cache"]["hit"] is False
    assert st["registers"] <= 255
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    assert st["mma_mnemonics"] == {"HGMMA.64x32x16.F32.BF16": 36, "HGMMA.64x256x16.F32.BF16": 4}
    ops = st["opcodes"]
    assert ops.get("UTMALDG") == 2 * 9
    assert ops.get("LDGSTS") == 2 * 2 * 9
    assert ops.get("SYNCS", 0) > 0  # mbarrier init / arrive / try_wait
    # step 2's SMEM + 20 mbarriers (2 stages x 9 chunks + 2 stage releases), the struct
    # rounded up to its 1024-byte alignment; within the 227 KB a CTA may have on sm_90
    assert st["dynamic_smem_bytes"] == (64 * 576 * 3 + 64 * 64) * 2 + 2 * 2 * 64 * 4 + 1024
    assert st["dynamic_smem_bytes"] <= 227 * 1024
    assert st["meta"]["kv_load"] == "tma"
    for f in st.get("functions", []):
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0


def test_mla_decode_sm90_loads_config():
    """``loads`` defaults to the validated cp.async path; anything but cpasync/tma is one
    line."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=2, t=100)
    assert plan.default_config(prob).loads == "auto"
    assert plan.config(prob, {"loads": "tma"}).loads == "tma"
    with pytest.raises(ShapeError, match="loads") as e:
        plan.config(prob, {"loads": "cp.async"})
    assert "\n" not in str(e.value)


def test_mla_decode_sm90_split_choice():
    """Splits per call from B, the longest length, h and the SM count (132 on the H200):
    enough CTAs to fill the SMs, none where two waves of one split already do."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import choose_splits, split_cap

    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    cases = [
        ({"b": 32, "t": 4096}, 2),  # 64 CTAs -> 128
        ({"b": 32, "t": 16384}, 2),
        ({"b": 128, "t": 4096}, 1),  # 256 CTAs: two waves already
        ({"b": 128, "t": 4096, "h": 64}, 1),  # 128 CTAs
        ({"b": 4, "t": 1024}, 16),  # 8 CTAs, 16 pages: one page each
        ({"b": 2, "seqlens": (1, 0)}, 1),  # one page: nothing to split
    ]
    for shape, want in cases:
        prob = plan.problem(**shape)
        got = choose_splits(prob, 132)
        assert got == want, (shape, got)
        assert got <= split_cap(prob)
        specs = plan.tensor_specs(prob)
        assert specs["o_acc"].shape[0] == split_cap(prob)


def test_mla_decode_sm90_balanced_split_rule():
    """Step 5b: with sequences of different lengths the balanced rule gives every split the
    same number of pages of every sequence, so the longest sequence gets more splits than the
    equal rule gave it and no CTA holds more pages than under the equal rule; the grid and the
    workspace stay within their caps; equal lengths keep the equal rule (pages_per_split 0);
    an explicit --config splits=N keeps equal parts."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
        balanced_cap,
        choose_balanced,
        choose_splits,
        split_cap,
    )

    from kernelplan.device import Target
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    target = Target("sm_90a", 132)
    prob = plan.problem(b=32, t=4096, varlen=True)
    pages = [-(-n // 64) for n in prob.lengths()]
    longest = max(pages)
    splits, per = choose_balanced(prob, 132)
    eq = choose_splits(prob, 132)
    assert 1 < splits <= balanced_cap(prob) <= split_cap(prob)
    assert splits == -(-longest // per)
    assert per <= -(-longest // eq)  # no CTA longer than the equal rule's longest
    assert splits > eq
    cfg = plan.config(prob, {})
    assert plan.split_plan(prob, cfg, target) == (splits, per)
    assert plan.split_plan(prob, plan.config(prob, {"split_rule": "equal"}), target) == (eq, 0)
    assert plan.split_plan(prob, plan.config(prob, {"splits": "2"}), target) == (2, 0)
    assert plan.tensor_specs(prob)["o_acc"].shape[0] == split_cap(prob)
    fixed = plan.problem(b=32, t=4096)
    assert plan.split_plan(fixed, plan.config(fixed, {}), target) == (choose_splits(fixed, 132), 0)


@pytest.mark.parametrize(
    ("shape", "needle"),
    [
        ({"page": 32}, "page size 64 only"),
        ({"h": 8}, "takes h in {16, 32, 64, 128}"),
        ({"h": 256}, "takes h in {16, 32, 64, 128}"),
        ({"s": 5}, "takes s in 1..4"),
        ({"d_rope": 32}, "d_latent 512 and d_rope 64 only"),
        ({"dtype": "float8_e4m3fn"}, "takes dtype bfloat16 or float16"),
    ],
)
def test_mla_decode_sm90_refuses_in_one_line(shape, needle):
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    with pytest.raises(ShapeError, match=needle) as e:
        plan.problem(b=2, t=100, **shape)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("variant", "expect"),
    [
        ("loads=tma schedule=lockstep", "{'splits': 1, 'loads': 'tma', 'schedule': 'lockstep',"),
        ("schedule=seesaw", "{'splits': 1, 'loads': 'auto', 'schedule': 'seesaw',"),
    ],
)  # fmt: skip
def test_variant_device_script_dry_run(variant, expect):
    """scripts/device/mla-sm90-variant.sh with DRYRUN=1 for step 3 (TMA loads) and step 4 (the
    seesaw schedule): every job's flags and config parse as on the device (problem, config,
    supports), the table's specs (with a peer and an extra spec) pass up to the GPU check."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = root / "scripts" / "device" / "mla-sm90-variant.sh"
    env = dict(
        os.environ, DRYRUN="1", PY=sys.executable, VARIANT=variant, EXTRA="mla_decode_sm90:splits=1"
    )
    r = subprocess.run(
        ["bash", str(script), "check", "table", "ncu"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("0 job(s) not as expected") == 3
    assert "UNEXPECTED" not in r.stdout
    assert f"ok b=2 s=1 t=16384 h=128 {expect}" in r.stdout


def _seesaw_case(shape, overrides, tmp_path, monkeypatch):
    """(plan, problem, config) of mla_decode_sm90 for a test's ``shape`` (its ``splits``, if
    any, moved into the config overrides), compiled into a cache of the test's own."""
    from kernelplan.registry import load_plan_class

    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    plan = load_plan_class("mla", "mla_decode_sm90")()
    overrides = dict(overrides)
    shape = dict(shape)
    if "splits" in shape:
        overrides["splits"] = str(shape.pop("splits"))
    prob = plan.problem(**shape)
    return plan, prob, plan.config(prob, overrides)


@pytest.mark.parametrize(
    "shape",
    [
        {"b": 32, "t": 4096},  # split (2 per sequence) + the combine
        {"b": 4, "s": 3, "h": 16, "t": 1000},  # partial tile, causal
        {"b": 8, "t": 777, "varlen": True, "splits": 1},  # no split
    ],
)
def test_mla_decode_sm90_seesaw_compiles_for_sm90a(shape, tmp_path, monkeypatch):
    """Step 4 (``--config schedule=seesaw``): each warpgroup's S is a whole page (HGMMA 64x64,
    36 k-blocks of K = 576); O_half += P V_half once with P from registers (the own page: 4
    HGMMA 64x256 with the A operand in registers) and once from SMEM (the other warpgroup's
    page, written over the rope chunk: 4 per warpgroup branch, 8 in the code); TMA: 2 x 9
    chunks before the loop, then 4 (WG0, stage 0) + 5 (WG0, stage 1) + 5 + 4 (WG1) inside it
    = 36 UTMALDG; 0 spills; Q + 2 pages + 3 x 64 fp32 exchange rows + 18 mbarriers, within the
    227 KB a CTA may have."""
    plan, prob, cfg = _seesaw_case(shape, {"schedule": "seesaw"}, tmp_path, monkeypatch)
    st = plan.run_static(prob, cfg)
    assert st["registers"] <= 255
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    mn = st["mma_mnemonics"]
    assert mn.get("HGMMA.64x64x16.F32.BF16") == 36
    assert sum(v for k, v in mn.items() if k.startswith("HGMMA.64x256x16")) == 12
    assert st["opcodes"].get("UTMALDG") == 36
    assert st["dynamic_smem_bytes"] <= 227 * 1024
    assert st["meta"]["schedule"] == "seesaw" and st["meta"]["kv_load"] == "tma"
    for f in st.get("functions", []):
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0


@pytest.mark.parametrize(
    ("shape", "split"),
    [({"b": 32, "t": 4096}, True), ({"b": 4, "s": 3, "h": 16, "t": 1000, "splits": 1}, False)],
)
def test_mla_decode_sm90_seesaw_step10_merges_in_the_last_cta(shape, split, tmp_path, monkeypatch):
    """Step 10 (``--config step=10``): split-KV without the combine kernel. The cubin holds one
    kernel (step 9 also holds the combine); a split build takes one ticket per CTA (one
    ATOMG), whose acquire fence invalidates L1 (CCTL) before the last CTA reads the other
    splits' partials; the MMAs and TMAs are step 9's; 0 spills. The counters are a zeroed
    (b, m_tiles) int32 tensor after the FP8 slots of the argument list. Without a split
    there is no ticket."""
    plan, prob, cfg = _seesaw_case(shape, {"step": "10"}, tmp_path, monkeypatch)
    spec = plan.tensor_specs(prob)["split_count"]
    m_tiles = -(-prob.s * prob.h // 64)
    assert (spec.shape, spec.dtype, spec.init) == ((prob.b, m_tiles), "int32", "zeros")
    tgt = plan.target("sm_90a", 132)
    k = plan.plan(prob, cfg, tgt)
    assert k.args_fn({n: n for n in plan.tensor_specs(prob)})[10] == "split_count"
    assert k.fn.fused_combine and not k.fn.early_pages
    st = plan.run_static(prob, cfg)
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    assert st["functions"] == []  # no combine kernel beside the split kernel
    ops = st["opcodes"]
    assert ops.get("ATOMG", 0) == (1 if split else 0)
    if split:
        assert ops.get("CCTL", 0) >= 1
    assert st["meta"]["combine"] == ("last CTA" if split else None)
    assert st["opcodes"].get("UTMALDG") == 36
    assert sum(v for k2, v in st["mma_mnemonics"].items() if k2.startswith("HGMMA.64x256x16")) == 12


# -- FP8 (e4m3) latent cache (issue 11, "Beyond: FP8 KV cache") ------------------------------

FP8 = "float8_e4m3fn"


@pytest.mark.parametrize(
    ("shape", "scales"),
    [
        ({"b": 32, "t": 4096, "kv_scale": "per_token"}, 1),  # split: + the combine
        ({"b": 32, "t": 4096, "kv_scale": "per_block"}, 4),  # kv_block 128 (DeepSeek's)
        ({"b": 4, "s": 2, "h": 64, "t": 1000, "kv_scale": "per_block"}, 4),  # a check problem
        ({"b": 8, "t": 777, "varlen": True, "dtype": "float16"}, 1),  # fp16 MMAs
        ({"b": 4, "t": 1000, "kv_scale": "per_block", "kv_block": 32}, 8),  # a scale per vector
    ],
)
def test_mla_decode_sm90_fp8_compiles_for_sm90a(shape, scales, tmp_path, monkeypatch):
    """The FP8 latent cache on the lockstep schedule's cp.async path: the SMEM stages stay
    16-bit (same SMEM, same MMAs as the 16-bit cache); each page's fp8 latent part comes
    through registers (8 LDG.128 per thread per page, before the loop and in it) and is stored
    dequantised (2 STS.128 per vector: 16 per site); the rope columns by cp.async (2 x 2 LDGSTS
    per site, a valid and a stand-in row variant), Q by cp.async as before (2 x 2 x 9); 0
    spills."""
    from kernelplan.registry import load_plan_class

    monkeypatch.setenv("KERNELPLAN_CACHE", str(tmp_path / "cache"))
    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(kv_dtype=FP8, **shape)
    assert prob.kv_fp8 and prob.scale_groups() * prob.scale_block() == 512
    lockstep = plan.config(prob, {"schedule": "lockstep"})  # auto builds seesaw step 22
    st = plan.run_static(prob, lockstep)
    assert st["arch"] == "sm_90a" and st["cache"]["hit"] is False
    assert st["registers"] <= 255
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    e = "" if shape.get("dtype") == "float16" else ".BF16"  # SASS names no F16 suffix
    assert st["mma_mnemonics"] == {f"HGMMA.64x32x16.F32{e}": 36, f"HGMMA.64x256x16.F32{e}": 4}
    assert st["dynamic_smem_bytes"] == (64 * 576 * 3 + 64 * 64) * 2 + 2 * 2 * 64 * 4
    ops = st["opcodes"]
    assert ops.get("UTMALDG", 0) == 0
    assert ops.get("LDGSTS") == 2 * 2 * 9 + 2 * 2 * 2  # Q + the rope part (prologue, loop)
    assert ops.get("LDG", 0) >= 2 * 8  # the latent vectors (prologue, loop; LDG.E.128)
    assert ops.get("STS", 0) >= 2 * 16  # their dequantised halves (STS.128)
    assert ops.get("F2FP", 0) >= 2 * 128 // 2  # e4m3x2 -> f16x2 for 128 values, 2 sites
    assert st["meta"]["kv_load"] == "cp.async"
    assert st["meta"]["kv_cache"].startswith(f"float8_e4m3fn {prob.kv_scale}")
    for f in st.get("functions", []):
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0
    kern = plan.plan(prob, lockstep, plan.target("sm_90a", 132)).fn
    assert kern.n_scales == scales


def test_mla_decode_sm90_fp8_tensors_and_key():
    """Host side of the FP8 cache: the three cache tensors as the workload stores them, each
    with a dynamic layout; the kernel gets the scales and the rope part after the split
    workspace (the 16-bit path passes its cache there, unused); the kv format is in the
    compile key (one compile per format), batch and lengths are not."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    tgt = plan.target("sm_90a", 132)
    p = plan.problem(b=4, t=1000, kv_dtype=FP8, kv_scale="per_block")
    specs = plan.tensor_specs(p)
    pages = p.pages_total()
    assert (specs["kv_cache"].shape, specs["kv_cache"].dtype) == ((pages, 64, 512), FP8)
    assert (specs["kv_scales"].shape, specs["kv_scales"].dtype) == ((pages, 64, 4), "float32")
    assert (specs["kv_rope"].shape, specs["kv_rope"].dtype) == ((pages, 64, 64), "bfloat16")
    for n in ("kv_cache", "kv_scales", "kv_rope"):
        assert specs[n].leading_dim == 2 and specs[n].align == 16
    cfg = plan.default_config(p)
    names = {n: n for n in specs}
    args = plan.plan(p, cfg, tgt).args_fn(names)
    assert args[:10] == (
        "q", "kv_cache", "page_table", "seqlens", "o", "lse", "o_acc", "lse_acc",
        "kv_scales", "kv_rope",
    )  # fmt: skip
    k = plan.plan(p, cfg, tgt).fn
    assert (k.kv_fp8, k.scale_block, k.groups, k.n_scales) == (True, 128, 4, 4)
    bf = plan.problem(b=4, t=1000)
    assert "kv_scales" not in plan.tensor_specs(bf)
    bplan = plan.plan(bf, plan.default_config(bf), tgt)
    assert bplan.args_fn({n: n for n in plan.tensor_specs(bf)})[8:10] == ("kv_cache", "kv_cache")
    assert not bplan.fn.kv_fp8

    def key(**kw):
        q = plan.problem(**kw)
        return plan.kernel(q, plan.default_config(q), tgt).key

    tok = key(b=4, t=1000, kv_dtype=FP8)
    assert tok == key(b=6, t=3000, varlen=True, kv_dtype=FP8)  # runtime fields only (split)
    others = [
        key(b=4, t=1000),
        key(b=4, t=1000, kv_dtype=FP8, kv_scale="per_block"),
        key(b=4, t=1000, kv_dtype=FP8, kv_scale="per_block", kv_block=256),
        key(b=4, t=1000, kv_dtype=FP8, dtype="float16"),
    ]
    assert len({tok, *others}) == 5


@pytest.mark.parametrize(
    ("shape", "overrides", "needle"),
    [
        ({"kv_scale": "per_block", "kv_block": 8}, {}, "takes --kv_block >= 16"),
        (
            {},
            {"schedule": "lockstep", "loads": "tma"},
            "lockstep schedule takes --config loads=cpasync or auto",
        ),
        (
            {},
            {"schedule": "seesaw", "step": "9"},
            r"seesaw builds are steps 14 to [0-9a-z ,]+ .got step=9",
        ),
        ({}, {"schedule": "seesaw", "splits": "2"}, "plans its own parts"),
        ({}, {"splits": "2"}, "drop --config splits, or add --config schedule=lockstep"),
    ],
)
def test_mla_decode_sm90_fp8_refusals_in_one_line(shape, overrides, needle):
    """What the FP8 path does not take: scale blocks under one 16-value vector, the lockstep
    schedule's TMA path (it would land e4m3 bytes, not the 16-bit operands), a seesaw step
    other than 14 and a split count with it (step 14 plans a work list)."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    with pytest.raises(ShapeError, match=needle) as e:
        prob = plan.problem(b=2, t=100, kv_dtype=FP8, **shape)
        plan.supports_config(prob, plan.config(prob, overrides))
    assert "\n" not in str(e.value)
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import FP8_STEPS, steps_text

    if "builds are steps" in needle:  # the range named is the plan's own list
        assert f"steps {steps_text(FP8_STEPS)} (got" in str(e.value)
    assert steps_text((4, 5, 6, 25)) == "4 to 6 or 25" and steps_text((3,)) == "3"
    assert steps_text((1, 3, 4, 9)) == "1, 3, 4 or 9"  # a run of two is spelled out
    # both granularities at the default block are taken, and the workload's FP8 check
    # problems are among the plan's own
    for kw in ({}, {"kv_scale": "per_block"}, {"kv_scale": "per_block", "kv_block": 16}):
        plan.supports(plan.problem(b=2, t=100, kv_dtype=FP8, **kw))
    assert sum(q.kv_fp8 for q in plan.check_problems()) == 3
    # the FP8 cache builds the seesaw schedule by default (step 22; 14-23 when asked by
    # number), the lockstep one when asked; a 16-bit cache does not take the FP8 steps
    prob = plan.problem(b=2, t=100, kv_dtype=FP8)
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import FP8_STEPS, MlaDecodeSm90

    for ov in ({}, {"schedule": "auto"}, {"schedule": "seesaw"}):
        cfg = plan.config(prob, ov)
        assert MlaDecodeSm90.schedule_for(prob, cfg) == "seesaw"
        assert MlaDecodeSm90.kernel_step(cfg, prob) == 22
    # at s*h = 16 the default puts the page into WGMMA's register A operand: step 47 with
    # per_token scales, 43 with per_block scales of at least 128 columns, else 22
    for kw, want in (
        ({}, 47),
        ({"kv_scale": "per_block"}, 43),
        ({"kv_scale": "per_block", "kv_block": 32}, 22),
    ):
        p16 = plan.problem(b=2, t=100, h=16, kv_dtype=FP8, **kw)
        cfg16 = plan.config(p16, {})
        assert MlaDecodeSm90.kernel_step(cfg16, p16) == want, kw
        plan.supports_config(p16, cfg16)
    # at h=64 s=1 with per_token scales, step 57 from 128 sequences on (measured faster than
    # 22 at B = 128 only); 22 below, with per_block scales, at s > 1 (57 untimed there; it takes
    # s*h = 64 when asked) and at h=128
    for kw, want in (
        ({"b": 128, "h": 64}, 57),
        ({"b": 200, "s": 4, "h": 16, "causal": True}, 22),
        ({"b": 128, "s": 2, "h": 32}, 22),
        ({"b": 127, "h": 64}, 22),
        ({"b": 32, "h": 64}, 22),
        ({"b": 128, "h": 64, "kv_scale": "per_block"}, 22),
        ({"b": 128, "h": 128}, 22),
    ):
        p64 = plan.problem(t=100, kv_dtype=FP8, **kw)
        cfg64 = plan.config(p64, {})
        assert MlaDecodeSm90.kernel_step(cfg64, p64) == want, kw
        plan.supports_config(p64, cfg64)
    lock = plan.config(prob, {"schedule": "lockstep", "splits": "2"})
    assert MlaDecodeSm90.schedule_for(prob, lock) == "lockstep"
    plan.supports_config(prob, lock)
    asked = ({"schedule": "seesaw", "step": str(n)} for n in FP8_STEPS)
    for ov in ({"schedule": "seesaw"}, *asked):
        plan.supports_config(prob, plan.config(prob, ov))
    bf16 = plan.problem(b=2, t=100)
    with pytest.raises(ShapeError, match="step 14 is an FP8 latent cache build") as e:
        plan.supports_config(bf16, plan.config(bf16, {"step": "14"}))
    assert "\n" not in str(e.value)


def test_fp8_device_script_dry_run():
    """scripts/device/mla-sm90-fp8.sh with DRYRUN=1: every job parses as on the device, the
    TMA + FP8 job is refused in one line (rc 2, as expected), and the alternated table's
    entries (ours on bf16 / FP8 per_token / FP8 per_block, FlashInfer on bf16, at h=128 and
    h=64) are built up to the GPU."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = root / "scripts" / "device" / "mla-sm90-fp8.sh"
    env = dict(os.environ, DRYRUN="1", PY=sys.executable)
    r = subprocess.run(
        ["bash", str(script), "check", "table", "ncu"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("0 job(s) not as expected") == 3
    assert "UNEXPECTED" not in r.stdout
    assert "f8-tma-refused: rc=2 as expected" in r.stdout
    for h in (128, 64):
        for fmt in ("", " kv_dtype=float8_e4m3fn", " kv_dtype=float8_e4m3fn kv_scale=per_block"):
            assert f"b=128 s=1 t=4096 h={h}{fmt} {{'splits'" in r.stdout
        assert f"ok flashinfer_mla bf16: b=128 s=1 t=4096 h={h} " in r.stdout


def test_fp8_alt_entries():
    """The helper of the alternated bf16-vs-FP8 table: shapes b,t,h; per shape ours on the
    three cache formats, then each peer on the 16-bit cache."""
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "device"))
    try:
        import mla_sm90_fp8_alt as alt
    finally:
        sys.path.pop(0)
    assert alt.parse_shape("128,4096,64") == (128, 4096, 64)
    assert alt.parse_shape("128x4096x64") == (128, 4096, 64)
    with pytest.raises(argparse.ArgumentTypeError):
        alt.parse_shape("128,4096")
    got = alt.entries((128, 4096, 64), ["flashinfer_mla"])
    assert [(lab, k) for lab, k, _, _ in got] == [
        ("mla_decode_sm90 bf16", "mla_decode_sm90"),
        ("mla_decode_sm90 fp8 per_token lockstep", "mla_decode_sm90"),
        ("mla_decode_sm90 fp8 per_block lockstep", "mla_decode_sm90"),
        ("flashinfer_mla bf16", "flashinfer_mla"),
    ]
    assert got[2][2] == {"b": 128, "t": 4096, "h": 64, "kv_dtype": FP8, "kv_scale": "per_block"}
    assert "kv_dtype" not in got[3][2]
    # --formats lockstep (session 3's table) names the lockstep schedule: auto is seesaw now
    lockstep = {"schedule": "lockstep"}
    assert [o for _lab, _k, _f, o in got[:3]] == [{}, lockstep, lockstep]
    for _lab, kernel, fields, overrides in got:
        plan, prob, _cfg = alt.build(kernel, fields, overrides)
        assert prob.kv_fp8 == ("kv_dtype" in fields)
    # --formats seesaw: step 14 (the producer warpgroup) beside the lockstep FP8 build
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import MlaDecodeSm90

    got = alt.entries((128, 4096, 128), [], "seesaw")
    built = {lab: alt.build(k, f, o) for lab, k, f, o in got}
    steps = {lab: MlaDecodeSm90.kernel_step(c, p) for lab, (_pl, p, c) in built.items()}
    schedules = {lab: MlaDecodeSm90.schedule_for(p, c) for lab, (_pl, p, c) in built.items()}
    assert schedules == {
        "mla_decode_sm90 bf16": "seesaw",
        "mla_decode_sm90 fp8 per_token lockstep": "lockstep",
        "mla_decode_sm90 fp8 per_token seesaw": "seesaw",
        "mla_decode_sm90 fp8 per_block seesaw": "seesaw",
    }
    assert steps["mla_decode_sm90 fp8 per_token seesaw"] == 14  # session 6's first table
    assert steps["mla_decode_sm90 bf16"] == 86  # 128 sequences: no cluster pairs
    # --formats fp8 (table14's default): the FP8 default (auto: seesaw step 22) against lockstep
    got = {lab: alt.build(k, f, o) for lab, k, f, o in alt.entries((32, 4096, 128), [], "fp8")}
    assert {
        lab: (sched, MlaDecodeSm90.kernel_step(c, p) if sched == "seesaw" else None)
        for lab, (_pl, p, c) in got.items()
        if p.kv_fp8
        for sched in [MlaDecodeSm90.schedule_for(p, c)]
    } == {
        "mla_decode_sm90 fp8 per_token lockstep": ("lockstep", None),
        "mla_decode_sm90 fp8 per_block lockstep": ("lockstep", None),
        "mla_decode_sm90 fp8 per_token step22": ("seesaw", 22),
        "mla_decode_sm90 fp8 per_block step22": ("seesaw", 22),
    }


def test_mla_decode_sm90_fp8_kernel_parameters():
    """The kernel object's FP8 parameters (no compile): scales held per thread and page are
    G when a scale block spans >= 64 columns (its group is compile-time per vector), else one
    per 16-value vector; the TMA path and blocks that split a vector are refused."""
    import cutlass
    from cute_mla.mla_decode_sm90.kernel import FP8_VECS, MlaDecodeSm90Kernel

    cases = {512: (1, 1), 256: (2, 2), 128: (4, 4), 64: (8, 8), 32: (16, FP8_VECS), 16: (32, 8)}
    for block, (groups, held) in cases.items():
        k = MlaDecodeSm90Kernel(1, 128, True, cutlass.BFloat16, kv_fp8=True, scale_block=block)
        assert (k.groups, k.n_scales) == (groups, held), block
    for bad in (8, 24, 48):
        with pytest.raises(ValueError, match="scale_block"):
            MlaDecodeSm90Kernel(1, 128, True, kv_fp8=True, scale_block=bad)
    with pytest.raises(ValueError, match="cpasync"):
        MlaDecodeSm90Kernel(1, 128, True, loads="tma", kv_fp8=True)
    assert not MlaDecodeSm90Kernel(1, 128, True).kv_fp8


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"schedule": "seesaw", "loads": "cpasync"}, "seesaw schedule loads pages by TMA"),
        ({"loads": "cpasync"}, "seesaw schedule loads pages by TMA"),  # auto -> seesaw
        ({"schedule": "lockstep", "step": "4"}, "step applies to the seesaw schedule"),
    ],
)
def test_mla_decode_sm90_config_combinations_not_built_are_refused(overrides, needle):
    """A --config combination that would be silently ignored is refused in one line: cp.async
    pages with the seesaw schedule (it loads by TMA), a seesaw step with lockstep."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=2, t=100)
    with pytest.raises(ShapeError, match=needle) as e:
        plan.supports_config(prob, plan.config(prob, overrides))
    assert "\n" not in str(e.value)
    # what is taken: lockstep with either load path, seesaw with auto or tma loads
    taken = ({"schedule": "lockstep", "loads": "tma"}, {"schedule": "seesaw", "loads": "tma"}, {})
    for ok in taken:
        plan.supports_config(prob, plan.config(prob, ok))


# -- step 11: the host-planned work list (FlashMLA's tile scheduler idea) --------------------


def _check_work_list(pages, work):
    """Every page of every sequence in exactly one segment; a part's segments are contiguous
    and within its range; slots run 0..pieces-1 per sequence; an empty sequence has one empty
    segment."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import PARTS_CAP, work_rows

    seen = [[0] * n for n in pages]
    slots = [[] for _ in pages]
    assert len(work.part_segs) == work.parts
    for c, (lo, hi) in enumerate(work.part_segs):
        assert 0 <= lo <= hi <= len(work.segments)
        if c:
            assert lo == work.part_segs[c - 1][1]  # parts' segments are consecutive
        taken = sum(p1 - p0 for _, p0, p1, _ in work.segments[lo:hi])
        assert taken <= work.per
    for b, p0, p1, slot in work.segments:
        assert 0 <= p0 <= p1 <= pages[b]
        for i in range(p0, p1):
            seen[b][i] += 1
        slots[b].append(slot)
    assert all(x == 1 for row in seen for x in row)
    for b, n in enumerate(pages):
        assert sorted(slots[b]) == list(range(work.pieces[b]))
        if n == 0:
            assert work.pieces[b] == 1 and len(slots[b]) == 1
    rows = work.rows()
    assert len(rows) == work_rows(len(pages))
    first = PARTS_CAP + len(pages)
    assert [rows[PARTS_CAP + b][0] for b in range(len(pages))] == list(work.pieces)
    for c, (lo, hi) in enumerate(work.part_segs):
        assert rows[c][:2] == [first + lo, first + hi]
        assert [tuple(r) for r in rows[first + lo : first + hi]] == list(work.segments[lo:hi])
    assert rows[work.parts : PARTS_CAP] == [[0, 0, 0, 0]] * (PARTS_CAP - work.parts)


@pytest.mark.parametrize(
    ("shape", "parts", "per", "split_seqs"),
    [
        ({"b": 128, "t": 4096}, 66, 128, 0),  # 128 x 64 pages: cuts only between sequences
        ({"b": 32, "t": 4096}, 66, 32, 32),  # every sequence in two pieces
        ({"b": 128, "t": 4096, "h": 64}, 132, 64, 0),  # one m-tile: 132 parts
        ({"b": 32, "s": 2, "t": 4096}, 33, 64, 0),  # s=2: 4 m-tiles
    ],
)
def test_work_list_for_fixed_lengths(shape, parts, per, split_seqs):
    """Step 11's plan for the fixed-length table rows on 132 SMs: the parts per m-tile, the
    pages per part (a multiple of the sequence length whenever that costs nothing: no
    sequence is cut) and how many sequences the combine must merge."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import _pages, _work_parts, work_list

    from kernelplan.registry import load_plan_class

    prob = load_plan_class("mla", "mla_decode_sm90")().problem(**shape)
    pages = _pages(prob)
    work = work_list(pages, _work_parts(prob, 132))
    assert (work.parts, work.per) == (parts, per)
    assert sum(n > 1 for n in work.pieces) == split_seqs
    _check_work_list(pages, work)


#: page counts per sequence that stress a work list's plan
PAGE_LISTS = [
    [64, 0, 17, 1, 130, 0, 0, 64, 3],  # empty sequences among others, a long one
    [0, 0, 5],  # leading empty sequences
    [7, 0, 0],  # trailing empty sequences
    [1] * 40,  # more sequences than parts
    [500],  # one long sequence in many pieces
    [3, 90, 2, 2, 41, 130, 7, 0, 66],  # short and long sequences mixed
]


@pytest.mark.parametrize("pages", PAGE_LISTS)
@pytest.mark.parametrize("parts", [1, 3, 16, 132])
def test_work_list_covers_every_page_once(pages, parts):
    """Whatever the lengths and parts: each page once, slots 0..pieces-1, an empty sequence in
    one empty segment, no more rows than the work tensor has and no more pieces than the
    workspace holds (work_cap)."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import work_list

    work = work_list(pages, parts)
    assert -(-sum(pages) // work.per) <= parts
    _check_work_list(pages, work)


@pytest.mark.parametrize("planner", ["work_list", "costed_work_list"])
def test_work_cap_bounds_every_plan(planner):
    """The workspace (split_cap, which includes work_cap) holds every slot for any SM count,
    with equal (work_list) and costed cuts (costed_work_list) alike."""
    from cute_mla.mla_decode_sm90 import mla_decode_sm90 as m

    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    split_cap, work_cap = m.split_cap, m.work_cap
    for shape in ({"b": 32, "t": 4096, "varlen": True}, {"b": 3, "seqlens": (9000, 0, 64)},
                  {"b": 1, "t": 65536}, {"b": 16, "s": 4, "h": 64, "t": 3000},
                  {"b": 64, "t": 4096, "varlen": True}):  # fmt: skip
        prob = plan.problem(**shape)
        for sms in (1, 7, 78, 114, 132):
            work = getattr(m, planner)(m._pages(prob), m._work_parts(prob, sms))
            assert max(work.pieces) <= work_cap(prob) <= split_cap(prob), (shape, sms)
            assert plan.tensor_specs(prob)["o_acc"].shape[0] >= max(work.pieces)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (([4, 4], 0), "parts must be in 1..264"),
        (([4, 4], 265), "parts must be in 1..264"),
        (([4, 4], 2, 3), "3 pages per part need more than 2 parts"),
    ],  # fmt: skip
)
def test_work_list_refusals_in_one_line(args, needle):
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import work_list

    from kernelplan import ShapeError

    with pytest.raises(ShapeError) as e:
        work_list(*args)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_step11_with_a_split_count_builds_step9():
    """The default (step 0, which builds 87 here: every sequence a cluster pair) plans its own
    parts; an explicit ``splits`` asks for step 9's per-sequence splits, and gets them, as does
    step 11 with ``splits`` (the record's meta names the step built)."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096)
    tgt = plan.target("sm_90a", 132)
    assert plan.config(prob, {}).step == 0
    for asked in ({"splits": "2"}, {"splits": "2", "step": "11"}):
        k = plan.plan(prob, plan.config(prob, asked), tgt)
        assert k.fn.step == 9 and not k.fn.work_list
    assert (k.meta["seesaw_step"], k.meta["split_rule"], k.meta["split_kv"]) == (9, "config", 2)
    k = plan.plan(prob, plan.config(prob, {}), tgt)
    assert k.fn.step == 87 and k.meta["split_rule"] == "work list"
    # every sequence in two pieces, one cluster's two parts: no combine kernel
    assert k.meta["combine"] == "cluster pairs (dsmem)"


@pytest.mark.parametrize("step", [31, 32])
def test_mla_decode_sm90_seesaw_step31_issues_the_next_qk_behind_pv(step, tmp_path, monkeypatch):
    """Steps 31-32: WG0's next S0 is issued at the end of a pair as well as at a segment's
    first pair (the QK's 36 m64n64k16 WGMMAs at two sites, WG1's at one: 72 in all against
    step 11's 36), the PVs unchanged (12 m64n256k16), 0 spills; 32 adds the PV0R barrier."""
    plan, prob, cfg = _seesaw_case({"b": 32, "t": 4096}, {"step": str(step)}, tmp_path, monkeypatch)
    k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
    assert k.fn.qk_behind_pv and k.fn.pv0r_first == (step == 32) and k.fn.work_list
    st = plan.run_static(prob, cfg)
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    mn = st["mma_mnemonics"]
    assert sum(v for k2, v in mn.items() if k2.startswith("HGMMA.64x64x16")) == 72
    assert sum(v for k2, v in mn.items() if k2.startswith("HGMMA.64x256x16")) == 12


@pytest.mark.parametrize(
    ("shape", "split", "step"),
    [
        ({"b": 32, "t": 4096, "varlen": True}, True, 11),
        ({"b": 128, "t": 4096, "h": 64}, False, 11),
        ({"b": 32, "t": 4096, "varlen": True}, True, 12),
        ({"b": 32, "t": 4096}, True, 13),
        ({"b": 32, "t": 4096, "varlen": True}, True, 28),
        ({"b": 32, "t": 4096, "varlen": True}, True, 29),
    ],
)
def test_mla_decode_sm90_seesaw_step11_walks_the_work_list(
    shape, split, step, tmp_path, monkeypatch
):
    """Step 11 (``--config step=11``): a grid of (m-tiles, parts, 1), each CTA walking its
    part's segments; the work list is filled at bind by the plan's setup (the ``work`` tensor,
    after step 10's counters in the argument list); the MMAs per segment are step 9's (the
    segment loop keeps one copy of the body); 0 spills; the combine kernel only where a
    sequence is cut. Step 12 adds the next segment's first two pages to the last pairs' TMA
    issues: 18 more UTMALDG sites (9 chunks per stage), nothing else. Step 28 issues the next
    segment's Q in the last pair as well, from either warpgroup: the Q load's LDGSTS sites
    three times over, the same TMAs; step 29 is 28 with step 12's."""
    import torch
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import PARTS_CAP

    plan, prob, cfg = _seesaw_case(shape, {"step": str(step)}, tmp_path, monkeypatch)
    tgt = plan.target("sm_90a", 132)
    k = plan.plan(prob, cfg, tgt)
    specs = plan.tensor_specs(prob)
    assert k.args_fn({n: n for n in specs})[11] == "work"
    assert k.fn.work_list and not k.fn.fused_combine
    assert k.fn.prefetch_next == (step in (12, 29)) and k.fn.early_q == (step in (28, 29))
    wl = k.meta["work_list"]
    assert k.meta["split_rule"] == "work list" and k.meta["split_kv"] == wl["parts"]
    assert (wl["sequences_split"] > 0) == split
    work = torch.zeros(specs["work"].shape, dtype=torch.int32)
    k.setup({"work": work})
    assert work[: wl["parts"], 1].max().item() == wl["segments"] + prob.b + PARTS_CAP
    st = plan.run_static(prob, cfg)
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    assert st["opcodes"].get("UTMALDG") == (54 if step in (12, 29) else 36)
    assert st["opcodes"].get("LDGSTS") == (108 if step in (28, 29) else 36)
    assert sum(v for k2, v in st["mma_mnemonics"].items() if k2.startswith("HGMMA.64x256x16")) == 12
    assert (len(st["functions"]) == 1) == split
    if split:  # the combine: 4 pieces per round hold 128 registers, 2 (step 13) fewer
        assert (st["functions"][0]["registers"] < 128) == (
            step == 13
        )  # the combine kernel beside the main one


def _sass_text(st) -> str:
    """The SASS text (``cuobjdump -sass``) of a static record's cubin."""
    import subprocess
    from pathlib import Path

    from kernelplan import static
    from kernelplan.cutlass_src import repo_root

    cubin = Path(st["cubin_path"])
    cubin = cubin if cubin.is_absolute() else repo_root() / cubin
    return subprocess.run(
        [str(static.find_tool("cuobjdump")), "-sass", str(cubin)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip


def _seesaw_pair(steps, flag, tmp_path, monkeypatch, both: bool = False):
    """Plan and statically compile seesaw ``steps`` (two step numbers) at h=128 (32, 4096):
    {step: static record}, after checking that the kernel's attribute ``flag`` is set in the
    second step only (in both with ``both``) and that neither spills; also returns the plan,
    problem and the second step's config (for its label)."""
    got = {}
    for step in steps:
        plan, prob, cfg = _seesaw_case(
            {"b": 32, "t": 4096}, {"step": str(step)}, tmp_path / str(step), monkeypatch
        )
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        assert getattr(k.fn, flag) == (both or step == steps[1]) and k.fn.work_list
        st = plan.run_static(prob, cfg)
        assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
        got[step] = (st, k)
    return got, plan, prob, cfg


def test_mla_decode_sm90_seesaw_step33_takes_chunks_in_release_order(tmp_path, monkeypatch):
    """Step 33 (16-bit cache, ``--config step=33``): step 11 with each warpgroup's S = Q K^T
    over its page's 9 chunks in the order its stage is released (release_order_chunk): stage 0
    (WG0) 0-8, stage 1 (WG1) 4-7, 0-3, 8, each chunk once; the same MMAs and page TMAs as
    step 11, 0 spills. Timed in session 21 (H100): 0.98-0.99x step 11 at h=128."""
    from cute_mla.mla_decode_sm90.seesaw import release_order_chunk

    assert [release_order_chunk(c, 0) for c in range(9)] == list(range(9))
    assert [release_order_chunk(c, 1) for c in range(9)] == [4, 5, 6, 7, 0, 1, 2, 3, 8]
    got, plan, prob, cfg = _seesaw_pair((11, 33), "qk_release_order", tmp_path, monkeypatch)
    (a, _), (b, _) = got[11], got[33]
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert b["opcodes"].get("UTMALDG") == a["opcodes"].get("UTMALDG") == 36
    assert plan.build_label(prob, cfg) == "seesaw step 33"


def test_mla_decode_sm90_seesaw_step34_stores_16bit_partials(tmp_path, monkeypatch):
    """Step 34 (16-bit cache, ``--config step=34``): step 33 with the cut sequences' partial O
    stored in the dtype: the main kernel converts its 128 fp32 accumulators per thread into 64
    bf16 pairs (64 more F2FP than step 33) and stores them in place of the fp32 values, and
    the combine widens what it loads (PRMT, absent from step 33's combine) and needs fewer
    registers. The same MMAs, page TMAs and loads otherwise; 0 spills. Measured in session 21
    (H100): 1.008-1.046x step 33's time at h=128, so 33 stayed the default."""
    got, plan, prob, cfg = _seesaw_pair((33, 34), "partials_16bit", tmp_path, monkeypatch)
    (a, _), (b, k) = got[33], got[34]
    assert k.fn.qk_release_order
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert b["opcodes"]["F2FP"] - a["opcodes"]["F2FP"] == 64
    assert b["opcodes"]["STG"] == a["opcodes"]["STG"]
    (comb33,), (comb34,) = a["functions"], b["functions"]
    assert comb33["opcodes"]["LDG"] == comb34["opcodes"]["LDG"]
    assert "PRMT" not in comb33["opcodes"] and comb34["opcodes"]["PRMT"] > 0
    assert comb34["registers"] < comb33["registers"]
    assert plan.build_label(prob, cfg) == "seesaw step 34"


def test_mla_decode_sm90_seesaw_step35_merges_in_the_split_kernel(tmp_path, monkeypatch):
    """Step 35 (16-bit cache, ``--config step=35``): step 33 with no combine kernel. The module
    holds one kernel (33: the split kernel and the combine); it counts stored pieces with
    atomics (ATOMG) and waits on the counters with acquire loads, and its loads include the
    merge's (33's combine has 71 LDG). Where no sequence is cut (one piece each) nothing
    changes: no merge and no combine. 0 spills. Measured in session 21 (H100): correct, and
    1.05-1.10x step 33's time at h=128 s=1."""
    got, plan, prob, cfg = _seesaw_pair((33, 35), "merge_in_kernel", tmp_path, monkeypatch)
    for step, (_, k) in got.items():
        assert k.fn.qk_release_order
        assert k.meta["combine"] == ("in kernel" if step == 35 else "pdl")
    (a, _), (b, _) = got[33], got[35]
    assert len(a["functions"]) == 1 and b["functions"] == []
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert "ATOMG" not in a["opcodes"] and b["opcodes"]["ATOMG"] == 2
    assert b["opcodes"]["LDG"] > a["opcodes"]["LDG"] + a["functions"][0]["opcodes"]["LDG"] // 2
    assert plan.build_label(prob, cfg) == "seesaw step 35"
    # 132 sequences of 64 pages at h=128, one per CTA and m-tile: none cut, no merge
    plan, prob, cfg = _seesaw_case(
        {"b": 132, "t": 4096}, {"step": "35"}, tmp_path / "whole", monkeypatch
    )
    assert plan.plan(prob, cfg, plan.target("sm_90a", 132)).meta["combine"] is None
    # its CTAs wait on each other: on a GPU of 132 SMs a grid planned for 264 would hang

    from kernelplan import ShapeError, device

    monkeypatch.setattr(device, "current_device", lambda: type("D", (), {"sm_count": 132}))
    plan, prob, cfg = _seesaw_case({"b": 32, "t": 4096}, {"step": "35"}, tmp_path, monkeypatch)
    assert plan.plan(prob, cfg, plan.target("sm_90a", 132)).fn.merge_in_kernel
    with pytest.raises(ShapeError, match="264 CTAs must all be resident"):
        plan.plan(prob, cfg, plan.target("sm_90a", 264))


def test_mla_decode_sm90_seesaw_step36_loads_the_combine_splits_as_vectors(tmp_path, monkeypatch):
    """Step 36 (``--config step=36``): step 33 with the combine's batched split loads (4 splits
    x 4 column groups per lane and round) landing in a register tensor whose 4 columns are
    contiguous, so each is one LDG.E.128; step 33's column-major (splits, k, 4) tensor gets
    four 4-byte LDG.E per 16 bytes. The split kernel is unchanged. Built in session 21, not yet
    timed on a GPU."""
    import re

    got, plan, prob, cfg = _seesaw_pair((33, 36), "combine_vec16", tmp_path, monkeypatch)
    loads = {}
    for step, (st, _) in got.items():
        sass = _sass_text(st)
        loads[step] = {
            w: len(re.findall(rf"\bLDG\.E{re.escape(w)}(?![.\w])", sass))
            for w in ("", ".64", ".128")
        }
    assert loads[36][".128"] - loads[33][".128"] == 16
    assert loads[33][""] - loads[36][""] == 64
    (a, _), (b, _) = got[33], got[36]
    assert a["instructions"] == b["instructions"] and a["registers"] == b["registers"]
    assert b["functions"][0]["instructions"] < a["functions"][0]["instructions"]
    assert plan.build_label(prob, cfg) == "seesaw step 36"


def test_mla_decode_sm90_seesaw_step37_merges_four_rows_per_warp(tmp_path, monkeypatch):
    """Step 37 (``--config step=37``): step 35 (the merge in the split kernel, no combine
    kernel) with each warp merging MERGE_ROWS = 4 rows together: per piece, the 4 rows' 4
    16-byte partial-O loads each (16 LDG.E.128, which 35's one-row merge issues as 4-byte
    LDG.E), and the rows' counter waits as acquire loads. One kernel, 0 spills; refused as
    35 is where the grid would not be resident at once. Timed in session 22 (H100): 1.04-1.09x
    step 33 at h=128 s=1, no better than 35."""
    import re

    from cute_mla.mla_decode_sm90.seesaw import MERGE_ROWS

    assert MERGE_ROWS == 4
    sass = {}
    for step in (35, 37):
        plan, prob, cfg = _seesaw_case(
            {"b": 32, "t": 4096}, {"step": str(step)}, tmp_path / str(step), monkeypatch
        )
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        assert k.fn.merge_in_kernel and k.meta["combine"] == "in kernel"
        assert k.fn.merge_rows == (MERGE_ROWS if step == 37 else 1)
        st = plan.run_static(prob, cfg)
        assert st["spill_store_bytes"] == 0 and st["functions"] == []
        sass[step] = _sass_text(st)
    wide = {n: len(re.findall(r"\bLDG\.E\.128(?![.\w])", t)) for n, t in sass.items()}
    assert wide[37] - wide[35] == 4 * MERGE_ROWS
    assert all(len(re.findall(r"\bLDG\.E\.STRONG\.GPU\b", t)) >= 2 for t in sass.values())
    assert plan.build_label(prob, cfg) == "seesaw step 37"


def _kernel_sass(st, combine: bool) -> str:
    """The SASS of one kernel of a static record's cubin: its combine kernel, or the split
    kernel (the one that is not the combine)."""
    import re

    for func in re.split(r"\n\s*Function : ", _sass_text(st))[1:]:
        if ("combine" in func.split("\n", 1)[0]) == combine:
            return func
    raise AssertionError(f"no {'combine' if combine else 'split'} kernel in the cubin")


def _combine_loads(st) -> list[str]:
    """The global loads of a static record's combine kernel in SASS order, by width: "4B"
    (LDG.E), ".64", ".128"."""
    import re

    func = _kernel_sass(st, combine=True)
    return [m.group(1) or "4B" for m in re.finditer(r"\bLDG\.E((?:\.\w+)*)", func)]


def test_mla_decode_sm90_seesaw_step38_issues_the_combine_loads_in_one_trip(tmp_path, monkeypatch):
    """Step 38 (``--config step=38``): step 36 (16-byte split loads) with the combine's first
    round of partial-O loads (4 pieces x 4 vectors per lane, predicated on the row's piece
    count) issued right after the work list's piece count, before any LSE load: in step 36 the
    LSEs come first and the partial O only once their weights are known, two round trips per
    row. The split kernel is unchanged; 0 spills. Timed in session 22 (H100): tied with 33,
    0.996-1.008x per round."""
    got, plan, prob, cfg = _seesaw_pair((36, 38), "combine_one_trip", tmp_path, monkeypatch)
    (a, ka), (b, kb) = got[36], got[38]
    assert ka.fn.combine_vec16 and kb.fn.combine_vec16 and kb.fn.qk_release_order
    assert a["instructions"] == b["instructions"] and a["registers"] == b["registers"]
    early, late = _combine_loads(b), _combine_loads(a)
    # 36: the piece count, the LSE loads, then the 16-byte loads
    assert late[0] == "4B" and late[1] == "4B" and ".128" in late
    # 38: the piece count, then one round's 16 vectors before the first LSE load
    assert early[0] == "4B" and early[1:17] == [".128"] * 16
    assert early.count(".128") == late.count(".128") + 16
    assert plan.build_label(prob, cfg) == "seesaw step 38"


def test_mla_decode_sm90_seesaw_step39_reloads_v1r_once_pv1r_retires(tmp_path, monkeypatch):
    """Step 39 (``--config step=39``): step 33 with warpgroup 1 reloading stage 1's chunks 4-7
    (V1R, the chunks its next S1 reads first) as soon as its PV1R has retired: one
    ``wait_group(1)`` (WARPGROUP.DEPBAR.LE gsb0, 0x1, which step 33's split kernel has none
    of), a warpgroup barrier, and the 4 chunk TMAs issued between it and the wait for PV0R,
    not after. The same 36 page-TMA sites, MMAs and registers, 0 spills; the combine is 33's.
    Measured in session 22 (H100): 0.955-0.978x step 33's time per round at every h=128 row,
    the 16-bit default in sessions 22-23."""
    import re

    got, plan, prob, cfg = _seesaw_pair((33, 39), "early_v1r", tmp_path, monkeypatch)
    (a, _), (b, kb) = got[33], got[39]
    assert kb.fn.qk_release_order and not kb.fn.combine_one_trip
    assert b["mma_mnemonics"] == a["mma_mnemonics"] and b["registers"] == a["registers"]
    assert b["functions"][0]["instructions"] == a["functions"][0]["instructions"]
    mains = {step: _kernel_sass(st, combine=False) for step, (st, _) in got.items()}
    for step in (33, 39):
        assert len(re.findall(r"\bUTMALDG\b", mains[step])) == 36
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" not in mains[33]
    (i,) = [m.start() for m in re.finditer(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x1", mains[39])]
    j = mains[39].index("WARPGROUP.DEPBAR.LE gsb0, 0x0", i)
    assert len(re.findall(r"\bUTMALDG\b", mains[39][i:j])) == 4
    assert plan.build_label(prob, cfg) == "seesaw step 39"


def test_mla_decode_sm90_seesaw_step64_reloads_v0l_before_taking_m1(tmp_path, monkeypatch):
    """Step 64 (``--config step=64``): step 61 with warpgroup 0 reloading stage 0's chunks 0-3
    (V0L, the first its next S0 reads) as soon as its PV0L retires, before it waits for
    warpgroup 1's row max: in the main kernel's SASS the 4 chunk TMAs now sit between WG0's
    wait_group(0) (WARPGROUP.DEPBAR.LE gsb0, 0x0) and its wait on BAR_M1 (BAR.SYNC 0x2,
    0x100), where 61 issues none there. The same 36 page-TMA sites, MMAs, registers and
    combine as 61, 0 spills. Measured in session 25 (H200): 1.015-1.045x step 39 per round at
    h=128, so 61 stays the default."""
    import re

    got, plan, prob, cfg = _seesaw_pair((61, 64), "early_v0l", tmp_path, monkeypatch)
    (a, _), (b, kb) = got[61], got[64]
    assert kb.fn.early_v1r and kb.fn.qk_release_order and kb.fn.combine_batch == 2
    assert b["mma_mnemonics"] == a["mma_mnemonics"] and b["registers"] == a["registers"]
    assert b["functions"][0]["instructions"] == a["functions"][0]["instructions"]
    mains = {step: _kernel_sass(st, combine=False) for step, (st, _) in got.items()}

    def tmas_before_m1(sass):
        # the page TMAs between WG0's last wait_group(0) before its BAR_M1 wait and that wait
        m1 = sass.index("BAR.SYNC.DEFER_BLOCKING 0x2, 0x100")
        last_wait = sass.rindex("WARPGROUP.DEPBAR.LE gsb0, 0x0", 0, m1)
        return len(re.findall(r"\bUTMALDG\b", sass[last_wait:m1]))

    for step in (61, 64):
        assert len(re.findall(r"\bUTMALDG\b", mains[step])) == 36
    assert tmas_before_m1(mains[64]) == 4 and tmas_before_m1(mains[61]) == 0
    assert plan.build_label(prob, cfg) == "seesaw step 64"


def test_mla_decode_sm90_seesaw_step65_queues_s0_behind_pv1l(tmp_path, monkeypatch):
    """Step 65 (``--config step=65``): step 61 with warpgroup 0's next S0 issued behind its
    PV1L (step 31's order, FlashMLA's ``wg0_subroutine``, on the 61 base): S0's chunks 0-3,
    then ``wait_group(1)`` (PV1L retired: one more WARPGROUP.DEPBAR.LE gsb0, 0x1 than 61),
    stage 1's reload, chunks 4-8, one ``wait_group(0)``. The QK is built twice (the loop's top
    for warpgroup 1 and a segment's first pair, and behind PV1L), so 36 more HGMMAs and 5 more
    page-TMA sites; no WGMMA is serialized (a handful of DEPBARs, not one per HGMMA) and
    nothing spills, at 237 registers against 61's 220. The loop's top keeps 61's one group of
    9 chunks in step 33's release order (``part`` -1; a review found a first build issuing it
    in two natural-order parts, which undid that order for warpgroup 1): the QK sites traced
    are -1 for 61 and -1, 0, 1 for 65."""
    import inspect

    from cute_mla.mla_decode_sm90.seesaw import MlaDecodeSm90Seesaw

    parts: list = []
    orig = MlaDecodeSm90Seesaw.qk_chunks

    def recording(self, *args):
        parts.append((self.step, inspect.signature(orig).bind(self, *args).arguments["part"]))
        return orig(self, *args)

    monkeypatch.setattr(MlaDecodeSm90Seesaw, "qk_chunks", recording)
    got, plan, prob, cfg = _seesaw_pair((61, 65), "qk_behind_pv", tmp_path, monkeypatch)
    assert [pt for st, pt in parts if st == 61] == [-1]
    assert [pt for st, pt in parts if st == 65] == [-1, 0, 1]
    (a, _), (b, kb) = got[61], got[65]
    assert kb.fn.early_v1r and kb.fn.qk_release_order and kb.fn.combine_batch == 2
    assert not kb.fn.pv0r_first and not kb.fn.early_v0l
    mains = {step: _kernel_sass(st, combine=False) for step, (st, _) in got.items()}
    hgmma = {step: mains[step].count("HGMMA.") for step in mains}
    assert hgmma[65] == hgmma[61] + 36
    depbar = {step: mains[step].count("WARPGROUP.DEPBAR") for step in mains}
    assert depbar[65] <= depbar[61] + 2 < hgmma[65] // 4
    ones = {step: mains[step].count("WARPGROUP.DEPBAR.LE gsb0, 0x1") for step in mains}
    assert ones[65] == ones[61] + 1
    assert b["registers"] > a["registers"]
    assert plan.build_label(prob, cfg) == "seesaw step 65"


def test_mla_decode_sm90_seesaw_step58_combine_fits_beside_a_split_cta(tmp_path, monkeypatch):
    """Step 58 (``--config step=58``): step 39 with combine CTAs of 2 warps (``combine_rows``)
    instead of 4. The point is residency: an SM holds 65536 registers; the split CTA's 8 warps
    take theirs (per thread rounded up to 8, times 32 per warp), and a combine CTA of 2 warps
    at the combine's register count must fit in what is left, where one of 4 warps must not,
    so that PDL can place one combine CTA per SM before the split kernel ends; their SMEM fits
    the SM's 228 KB as well. The split kernel and the combine's code are 39's. Timed in
    session 23 (H100): tied with 39, 1.000-1.005x per round."""
    got = {}
    for step in (39, 58):
        plan, prob, cfg = _seesaw_case(
            {"b": 32, "t": 4096}, {"step": str(step)}, tmp_path / str(step), monkeypatch
        )
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        st = plan.run_static(prob, cfg)
        assert st["spill_store_bytes"] == 0 and k.fn.early_v1r
        got[step] = (st, k)
    (a, ka), (b, kb) = got[39], got[58]
    assert (ka.fn.combine_rows, kb.fn.combine_rows) == (4, 2)
    assert a["instructions"] == b["instructions"] and a["registers"] == b["registers"]
    (comb39,), (comb58,) = a["functions"], b["functions"]
    assert comb58["instructions"] == comb39["instructions"]

    def warp_regs(regs: int) -> int:
        return -(-regs // 8) * 8 * 32

    split_regs = 8 * warp_regs(b["registers"])
    combine_warp = warp_regs(comb58["registers"])
    assert split_regs + 2 * combine_warp <= 65536 < split_regs + 4 * combine_warp
    # and SMEM: 228 KB per SM on the H100 and H200, 1 KB reserved per resident CTA
    split_smem = b["dynamic_smem_bytes"] + b["static_smem_bytes"] + 1024
    combine_smem = comb58["dynamic_smem_bytes"] + comb58["static_smem_bytes"] + 1024
    assert split_smem + combine_smem <= 228 * 1024
    assert plan.build_label(prob, cfg) == "seesaw step 58"


def test_mla_decode_sm90_seesaw_step59_merges_in_the_first_pieces_cta(tmp_path, monkeypatch):
    """Step 59 (``--config step=59``): step 39 with no combine kernel. The module holds one
    kernel (39: the split kernel and the combine); the pieces after the first count
    themselves with a release atomic (ATOMG, none in 39's split kernel) and the first piece's
    CTA waits with acquire loads, then merges from the workspace: more global loads than 39's
    split kernel. The first piece's partial O is never stored, so the split kernel's global
    stores do not grow by a second partial-store loop. 0 spills. The plan labels the merge,
    needs the grid resident at once, and refuses a work list whose first pieces are not last
    in their parts (a wait there could hold back a piece that a later segment stores).
    Timed in session 23 (H100): correct, and 1.030x step 39 at h=128 (32, 4096)."""
    got, plan, prob, cfg = _seesaw_pair((39, 59), "owner_merge", tmp_path, monkeypatch)
    for step, (_, k) in got.items():
        assert k.fn.qk_release_order and k.fn.early_v1r
        assert k.meta["combine"] == ("first piece's CTA" if step == 59 else "pdl")
    (a, _), (b, _) = got[39], got[59]
    assert len(a["functions"]) == 1 and b["functions"] == []
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert "ATOMG" not in a["opcodes"] and b["opcodes"]["ATOMG"] == 1
    assert b["opcodes"]["LDG"] > a["opcodes"]["LDG"]
    assert plan.build_label(prob, cfg) == "seesaw step 59"

    from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
        WorkList,
        _first_pieces_last,
        costed_work_list,
        work_list,
    )

    from kernelplan import ShapeError, device

    # both planners fill parts in order: every cut sequence's first piece ends its part
    rng = __import__("random").Random(59)
    for _ in range(200):
        pages = [rng.choice([0, 1, 2, 5, 17, 64, 65, 200]) for _ in range(rng.randint(1, 40))]
        parts = rng.randint(1, 140)
        for planner in (work_list, costed_work_list):
            w = planner(pages, parts)
            _first_pieces_last("t", 59, w)
            firsts = [seg for lo, hi in w.part_segs for seg in w.segments[lo:hi][-1:]]
            assert all(seg in firsts for seg in w.segments if seg[3] == 0 and w.pieces[seg[0]] > 1)
    # a plan with a cut sequence's first piece ahead of another segment is refused
    bad = WorkList(2, 4, ((0, 2), (2, 3)), ((0, 0, 2, 0), (1, 0, 2, 0), (0, 2, 4, 1)), (2, 1))
    with pytest.raises(ShapeError, match="step 59 needs each cut sequence's first piece last"):
        _first_pieces_last("mla_decode_sm90", 59, bad)
    monkeypatch.setattr(device, "current_device", lambda: type("D", (), {"sm_count": 132}))
    with pytest.raises(ShapeError, match="264 CTAs must all be resident"):
        plan.plan(prob, cfg, plan.target("sm_90a", 264))


def test_mla_decode_sm90_seesaw_step60_merges_in_one_pass(tmp_path, monkeypatch):
    """Step 60 (``--config step=60``): step 59 with the first piece's merge in one pass
    (``merge_pieces_online``): each other piece's LSE is read once, beside its partial O, where
    59's merge (step 10's ``merge_splits``) reads every piece's LSE in two passes and its own
    slot's back as well, so 60 has fewer global loads; the same MMAs, the same release atomic,
    no combine kernel, 0 spills. Timed in session 23 (H100): 1.019x step 39 at (32, 4096)."""
    got, plan, prob, cfg = _seesaw_pair((59, 60), "online_merge", tmp_path, monkeypatch)
    (a, ka), (b, kb) = got[59], got[60]
    assert ka.fn.owner_merge and kb.fn.owner_merge
    assert a["functions"] == [] and b["functions"] == []
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert a["opcodes"]["ATOMG"] == b["opcodes"]["ATOMG"] == 1
    assert b["opcodes"]["LDG"] < a["opcodes"]["LDG"]
    assert kb.meta["combine"] == "first piece's CTA"
    assert plan.build_label(prob, cfg) == "seesaw step 60"


def test_mla_decode_sm90_seesaw_step61_leans_the_combine(tmp_path, monkeypatch):
    """Step 61 (``--config step=61``): step 39 with the combine of steps 13, 36 and 38 together:
    2 pieces per round (``combine_batch``), 16-byte loads and the first round's loads issued
    before any LSE load (one round trip). The split kernel is 39's (same instructions and
    registers); the combine holds at most 72 registers a thread where 39's holds at least 120,
    so an SM keeps 28 of its warps where 16 fit, and its first loads after the piece count
    are one round's 2 pieces x 4 vectors of 16 bytes. 0 spills. Built in session 23."""
    got, plan, prob, cfg = _seesaw_pair((39, 61), "combine_one_trip", tmp_path, monkeypatch)
    (a, ka), (b, kb) = got[39], got[61]
    assert (ka.fn.combine_batch, kb.fn.combine_batch) == (4, 2) and kb.fn.combine_vec16
    assert kb.fn.early_v1r and kb.fn.qk_release_order
    assert a["instructions"] == b["instructions"] and a["registers"] == b["registers"]
    (comb39,), (comb61,) = a["functions"], b["functions"]
    assert comb61["registers"] <= 72 < 120 <= comb39["registers"]
    loads = _combine_loads(b)
    assert loads[0] == "4B" and loads[1:9] == [".128"] * 8
    assert plan.build_label(prob, cfg) == "seesaw step 61"


def test_mla_decode_sm90_seesaw_step62_merges_cluster_pairs_through_dsmem(tmp_path, monkeypatch):
    """Step 62 (``--config step=62``): step 39 with its parts as clusters of 2 CTAs, where a
    sequence's two pieces, whole, are a cluster's two parts, merged by those CTAs through
    distributed shared memory. At h=128 (32, 4096) the costed plan cuts all 32 sequences so:
    no combine kernel, one cluster barrier (UCGABAR), and each CTA's sending warpgroup's
    64 x 256 fp32 O half as 32 16-byte st.async (STAS) per thread plus the LSEs, with one mapa
    per base address (the DSL's store_async_dsmem maps each store anew: 192 spilled bytes in
    the first build). The main loop is 39's (same MMAs and page TMAs), 0 spills. Built in
    session 24."""
    got, plan, prob, cfg = _seesaw_pair((39, 62), "pair_merge", tmp_path, monkeypatch)
    (a, ka), (b, kb) = got[39], got[62]
    assert kb.fn.early_v1r and kb.fn.qk_release_order
    assert kb.meta["combine"] == "cluster pairs (dsmem)" and ka.meta["combine"] == "pdl"
    assert kb.meta["work_list"]["sequences_paired"] == 32 == kb.meta["work_list"]["sequences_split"]
    assert len(a["functions"]) == 1 and b["functions"] == []
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert a["opcodes"]["UTMALDG"] == b["opcodes"]["UTMALDG"]
    assert "STAS" not in a["opcodes"] and b["opcodes"]["STAS"] == 32 + 2
    assert "UCGABAR_ARV" not in a["opcodes"] and b["opcodes"]["UCGABAR_ARV"] == 1
    assert b["registers"] <= 232
    assert plan.build_label(prob, cfg) == "seesaw step 62"

    from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
        WorkList,
        costed_work_list,
        pair_parts,
        pair_sequences,
        work_list,
    )

    assert [pair_parts(n) for n in (1, 2, 33, 66, 132)] == [2, 2, 32, 66, 132]
    # a pair is exactly two pieces, each alone in its part, in parts 2k and 2k + 1
    w = WorkList(
        4, 2, ((0, 1), (1, 2), (2, 4), (4, 5)),
        ((0, 0, 2, 0), (0, 2, 4, 1), (1, 0, 1, 0), (2, 0, 1, 0), (2, 1, 3, 1)),
        (2, 1, 2),
    )  # fmt: skip
    assert pair_sequences(w) == (True, False, False)
    shifted = WorkList(
        3, 2, ((0, 1), (1, 2), (2, 3)), ((1, 0, 2, 0), (0, 0, 2, 0), (0, 2, 4, 1)), (2, 1)
    )
    assert pair_sequences(shifted) == (False, False)  # parts 1 and 2 are not one cluster
    rows = WorkList(**{**w.__dict__, "paired": pair_sequences(w)}).rows()
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import PARTS_CAP

    assert [r[:2] for r in rows[PARTS_CAP : PARTS_CAP + 3]] == [[2, 1], [1, 0], [2, 0]]
    # every pair found in random plans of both planners is a cluster's two whole parts
    rng = __import__("random").Random(62)
    for _ in range(200):
        pages = [rng.choice([0, 1, 2, 5, 17, 32, 64, 65]) for _ in range(rng.randint(1, 40))]
        parts = pair_parts(rng.randint(1, 140))
        for planner in (work_list, costed_work_list):
            pw = planner(pages, parts)
            for seq, both in enumerate(pair_sequences(pw)):
                segs = [(c, k) for c, (lo, hi) in enumerate(pw.part_segs) for k in range(lo, hi)
                        if pw.segments[k][0] == seq]  # fmt: skip
                if both:
                    (c0, k0), (c1, k1) = segs
                    assert c0 % 2 == 0 and c1 == c0 + 1 and pw.pieces[seq] == 2
                    assert pw.part_segs[c0] == (k0, k0 + 1) and pw.part_segs[c1] == (k1, k1 + 1)
    # a plan that mixes pairs with combined sequences still launches the combine
    mixed = plan.problem(
        b=18, seqlens=[65, 1, 1000, 4096, 2048, 3000, 0, 3000, 2000, 700, 1000, 1000, 2048, 0,
                       700, 700, 3000, 2000],
    )  # fmt: skip
    km = plan.plan(mixed, plan.config(mixed, {"step": "62"}), plan.target("sm_90a", 132))
    wl = km.meta["work_list"]
    assert 0 < wl["sequences_paired"] < wl["sequences_split"]
    assert km.meta["combine"] == "cluster pairs (dsmem) + pdl"


def test_mla_decode_sm90_seesaw_step63_multicasts_each_page_to_two_m_tiles(tmp_path, monkeypatch):
    """Step 63 (``--config step=63``): step 61 with the CTAs of m-tiles 2j and 2j + 1 as a
    cluster of 2, each page chunk loaded once for both. All 36 page TMAs of 61 become
    multicast TMAs (UTMALDG.2D.MULTICAST), issued by whichever CTA counts a chunk group's
    release second on rank 0's counter: 5 atomics (the four groups of a pair of stages and a
    segment's first two pages), relaxed, so no MEMBAR.ALL.GPU in the loop (with acq_rel
    ptxas fenced each one; the two left are the cluster barriers at the start and the end).
    The same MMAs, the same combine, 0 spills. Odd m-tile counts are refused with the fix.
    Measured in session 25 (H100): 1.03-1.09x step 39 per round at h=128, not a default."""
    got, plan, prob, cfg = _seesaw_pair((61, 63), "multicast", tmp_path, monkeypatch)
    (a, _), (b, kb) = got[61], got[63]
    assert kb.fn.early_v1r and kb.fn.qk_release_order and kb.fn.combine_batch == 2
    assert b["mma_mnemonics"] == a["mma_mnemonics"]
    assert a["opcodes"]["UTMALDG"] == b["opcodes"]["UTMALDG"] == 36
    sa, sb = _sass_text(a), _sass_text(b)
    assert "MULTICAST" not in sa and sb.count("UTMALDG.2D.MULTICAST") == 36
    assert "ATOM" not in a["opcodes"] and b["opcodes"]["ATOM"] == 5
    assert sa.count("MEMBAR.ALL.GPU") == 0 and sb.count("MEMBAR.ALL.GPU") == 2
    assert "UCGABAR_ARV" not in a["opcodes"] and b["opcodes"]["UCGABAR_ARV"] == 2
    assert len(a["functions"]) == len(b["functions"]) == 1  # 61's combine kernel, both
    assert b["registers"] <= 232
    assert plan.build_label(prob, cfg) == "seesaw step 63"

    from cute_mla.mla_decode_sm90.seesaw import CNT_SEG, MlaDecodeSm90Seesaw, release_counter

    from kernelplan import ShapeError

    # the four chunk groups and the segment's start count on five distinct counters
    assert sorted(release_counter(st, w) for st in (0, 1) for w in (0, 1)) == [0, 1, 2, 3]
    assert CNT_SEG == 4
    # odd m-tile counts: the plan refuses them with what to do, the kernel class too
    for shape in ({"b": 4, "t": 1024, "h": 64}, {"b": 4, "s": 3, "h": 64, "t": 1000}):
        p = plan.problem(**shape)
        with pytest.raises(ShapeError, match="even number of them.*drop --config step"):
            plan.supports_config(p, plan.config(p, {"step": "63"}))
    with pytest.raises(ValueError, match="even number of m-tiles"):
        MlaDecodeSm90Seesaw(1, 64, False, step=63)


def test_mla_decode_sm90_cuts_pairs_halves_each_sequence_onto_a_cluster(tmp_path, monkeypatch):
    """``cuts=pairs`` (:func:`pair_work_list`): sequence i's pages halved onto parts 2i and
    2i + 1, so step 62 pairs every sequence and launches no combine; the costed plan where
    there are more sequences than clusters or a sequence of fewer than 2 pages, and the
    record's ``cuts`` says which plan ran."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import pair_sequences, pair_work_list

    w = pair_work_list([5, 2, 64], 8)
    assert w.segments == ((0, 0, 3, 0), (0, 3, 5, 1), (1, 0, 1, 0), (1, 1, 2, 1),
                          (2, 0, 32, 0), (2, 32, 64, 1))  # fmt: skip
    assert w.part_segs[6:] == ((6, 6), (6, 6)) and w.per == 32 and w.pieces == (2, 2, 2)
    assert pair_sequences(w) == (True, True, True)
    assert pair_work_list([5, 2, 64], 5) is None  # 3 sequences need 3 clusters
    assert pair_work_list([5, 1, 64], 8) is None  # a 1-page sequence cannot be halved
    plan, prob, _ = _seesaw_case({"b": 32, "t": 16384}, {}, tmp_path, monkeypatch)
    for cuts, want, combine in (
        ("pairs", "pairs", "cluster pairs (dsmem)"),
        ("auto", "pairs", "cluster pairs (dsmem)"),  # PAIR_SPARE_PAGES: pairs at (32, 16384)
        ("costed", "costed", "pdl"),
    ):
        cfg = plan.config(prob, {"step": "62", "cuts": cuts})
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        wl = k.meta["work_list"]
        assert (wl["cuts"], k.meta["combine"]) == (want, combine)
    assert wl["max_pieces"] == 3 and wl["sequences_paired"] == 0
    # the default: 87 (79 in session 33, 75 in sessions 31-32, 71 in session 30, 62 until session
    # 29) with the pair plan where it pays in the model (PAIR_SPARE_PAGES), 86 (78 in session 33,
    # 72 in sessions 30-32, 67 in session 29, 61 before) where the plan has no pairs or leaves
    # some cut sequence to the combine
    tgt = plan.target("sm_90a", 132)
    for shape, step, cuts in (
        ({"b": 32, "t": 16384}, 87, "pairs"),  # 130 modelled pages against the costed 129
        ({"b": 32, "t": 4096}, 87, "pairs"),
        ({"b": 16, "t": 16384}, 86, "costed"),  # 32 of 66 parts busy as pairs: costed
        ({"b": 128, "t": 4096}, 86, "costed"),
        ({"b": 32, "t": 4096, "varlen": True}, 86, "costed"),
    ):
        p = plan.problem(**shape)
        k = plan.plan(p, plan.config(p, {}), tgt)
        assert (k.fn.step, k.meta["work_list"]["cuts"]) == (step, cuts), shape
        assert plan.build_label(p, plan.config(p, {})) == f"seesaw step {step}"
    # the label follows the target's SM count as the plan does (114 SMs: 56 parts, too few
    # clusters for 32 sequences, so 86 (78 in session 33, 72 in sessions 30-32, 67 in session
    # 29, 61 before); a
    # fresh user's trial found the label said 62)
    p = plan.problem(b=32, t=4096)
    t114 = plan.target("sm_90a", 114)
    assert plan.plan(p, plan.config(p, {}), t114).fn.step == 86
    assert plan.build_label(p, plan.config(p, {}), t114) == "seesaw step 86"
    varlen = plan.problem(b=32, t=4096, varlen=True)  # some lengths are 0: no pair plan
    k = plan.plan(
        varlen, plan.config(varlen, {"step": "62", "cuts": "pairs"}), plan.target("sm_90a", 132)
    )
    assert k.meta["work_list"]["cuts"] == "costed"


@pytest.mark.parametrize("shape", [{"b": 32, "t": 4096}, {"b": 128, "t": 4096, "h": 64}])
def test_mla_decode_sm90_seesaw_step25_prefetches_the_pair_after_next(shape, tmp_path, monkeypatch):
    """Step 25 (16-bit cache, ``--config step=25``): step 11 plus warp 0's L2 prefetch of the
    pair after next, one TMA prefetch per chunk (2 sites x 9 = 18 UTMAPF, none in step 11),
    the same 36 page TMAs and MMAs, 0 spills; the FP8 cache does not take it."""
    from kernelplan import ShapeError

    got = {}
    for step in (11, 25):
        where = tmp_path / str(step)
        plan, prob, cfg = _seesaw_case(shape, {"step": str(step)}, where, monkeypatch)
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        assert k.fn.l2_pages == (step == 25) and k.fn.work_list
        st = plan.run_static(prob, cfg)
        assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
        assert st["registers"] <= 255
        got[step] = st
    for step, st in got.items():
        assert st["opcodes"].get("UTMALDG") == 36
        assert st["opcodes"].get("UTMAPF", 0) == (18 if step == 25 else 0)
        assert st["mma_mnemonics"] == got[11]["mma_mnemonics"]
    fp8 = plan.problem(**shape, kv_dtype=FP8)
    with pytest.raises(ShapeError, match="seesaw builds are steps 14 to"):
        plan.supports_config(fp8, plan.config(fp8, {"step": "25"}))


# -- steps 14-17: the FP8 latent cache in the seesaw schedule (a dequantising producer) ---------


def test_fp8_seesaw_register_split_fits_the_launch():
    """setmaxnreg moves registers inside what the CTA got at launch: 384 threads x 168 (65536 /
    384 rounded down to the allocation unit of 8); a split asking for more makes the math
    warpgroups' increase wait forever (the first step-14 build hung on the H200 so)."""
    from cute_mla.mla_decode_sm90 import seesaw

    threads = 3 * seesaw.WG_THREADS
    assert (65536 // threads) // 8 * 8 == seesaw.LAUNCH_REGS
    for math, producer in seesaw.REG_SPLITS.values():
        assert 2 * math + producer <= 3 * seesaw.LAUNCH_REGS
        for n in (math, producer):
            assert n % 8 == 0 and 24 <= n <= 256  # setmaxnreg's range and granularity
    # every FP8 step builds with the split in force from its step on
    for step in seesaw.FP8_STEPS:
        k = seesaw.MlaDecodeSm90Seesaw(1, 128, False, step=step, kv_fp8=True)
        assert (k.math_regs, k.producer_regs) == seesaw.REG_SPLITS[18 if step >= 18 else 14]


def test_e4m3_bit_placement_is_exact():
    """Step 15's dequantisation, emulated with the constants the kernel's asm is built from
    (E4M3_PRMT, E4M3_PLACEMENT): every finite e4m3 code placed into a bf16 or fp16 value and
    multiplied by the bias pair equals torch's conversion, subnormals included. (The GPU run of
    the asm itself: scripts/device/fp8_dequant_check.py.)"""
    import numpy as np
    import torch
    from cute_mla.mla_decode_sm90 import seesaw

    def prmt(a, sel):
        src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [0] * 4
        return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))

    def as_float(bits16, half16):
        if half16:
            return float(np.array([bits16], dtype=np.uint16).view(np.float16)[0])
        return float(np.array([bits16 << 16], dtype=np.uint32).view(np.float32)[0])

    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    ref = codes.view(torch.float8_e4m3fn).float()
    checked = 0
    for half16, (shift, mask, one) in seesaw.E4M3_PLACEMENT.items():
        k = as_float(one & 0xFFFF, half16)
        for v in range(256):
            if torch.isnan(ref[v]):
                continue
            word = v * 0x01010101  # the code in all four bytes
            for sel in seesaw.E4M3_PRMT.values():
                y = prmt(word, sel)
                y = (y & 0x80008000) | ((y >> shift) & mask)
                for part in (y & 0xFFFF, y >> 16):
                    assert as_float(part, half16) * k == ref[v].item(), (half16, hex(v))
                    checked += 1
    assert checked == 2 * 254 * 2 * 2


#: (step, shape, the most spill-store bytes taken): the CPU compiles of this commit spill 80,
#: 92, 416, 40, 0, 16, 0, 16, 0 and 0 B for steps 14-23 at h=128 s=1 (the math warpgroups' loop
#: phase words at 208 registers; step 16's producer too), 172 B for step 17 at h=64 s=1 and
#: 188 B at h=64 s=2
FP8_SEESAW_CASES = [
    (14, {"b": 32, "t": 4096}, 96),
    (15, {"b": 32, "t": 4096}, 96),
    (16, {"b": 32, "t": 4096}, 448),
    (17, {"b": 32, "t": 4096}, 64),
    (17, {"b": 128, "t": 4096, "h": 64}, 192),
    (17, {"b": 4, "s": 2, "h": 64, "t": 1000, "kv_scale": "per_block"}, 224),
    (18, {"b": 32, "t": 4096}, 0),  # 216 / 72: the math warpgroups stop spilling
    (19, {"b": 32, "t": 4096}, 32),
    (20, {"b": 32, "t": 4096}, 0),  # 18 + the L2 prefetch: no register cost
    (20, {"b": 128, "t": 4096, "h": 64}, 8),  # 4 B, as step 18 at h=64
    (21, {"b": 32, "t": 4096}, 32),
    (22, {"b": 32, "t": 4096}, 0),  # 20 + each prefetch's page index a page early
    (23, {"b": 32, "t": 4096}, 0),  # 22 prefetching 4 pages ahead
    (24, {"b": 32, "t": 4096}, 0),  # 22 reloading vector by vector
    (24, {"b": 128, "t": 4096, "h": 64}, 8),
    # the second scale set: per_block 128 holds 2 per group (step 22: 0 and 16 B here)
    (24, {"b": 32, "t": 4096, "kv_scale": "per_block"}, 32),
    (24, {"b": 4, "s": 2, "h": 64, "t": 1000, "kv_scale": "per_block"}, 48),
    (27, {"b": 32, "t": 4096}, 0),  # 22 with whole-sector loads: the same registers
    (27, {"b": 128, "t": 4096, "h": 64}, 8),
    (27, {"b": 4, "s": 2, "h": 64, "t": 1000, "kv_scale": "per_block"}, 48),
    (30, {"b": 32, "t": 4096}, 0),  # 22 with the next page index carried a page ahead
    (30, {"b": 128, "t": 4096, "h": 64}, 8),
]


@pytest.mark.parametrize("step", [22, 27])
def test_fp8_seesaw_producer_access_pattern(step):
    """The producer's thread -> (token, vector) map (``fp8_token``, ``fp8_vector``), walked
    in plain Python for one group of a page: every (token, 16-column vector) loaded and stored
    exactly once; the 32-byte sectors each warp's j-th LDG.128 asks for (step 22: 32, half of
    each used, as its ncu source page counted; step 27: 16, whole); and the bank groups of
    each store phase (8 lanes, one 16-byte STS each) under the 128-byte swizzle (unit XOR row
    mod 8 in a 64-column chunk row): 8 distinct in every phase, both steps."""
    from cute_mla.mla_decode_sm90 import seesaw

    k = seesaw.MlaDecodeSm90Seesaw(1, 128, False, step=step, kv_fp8=True)
    seen = set()
    for ptid in range(seesaw.WG_THREADS):
        for j in range(seesaw.FP8_HALF_VECS):
            seen.add((k.fp8_token(ptid), k.fp8_vector(j, ptid % 2)))
    vectors = seesaw.HALF_V // seesaw.FP8_VEC  # 16 per group of a token row
    assert seen == {(t, v) for t in range(seesaw.PAGE) for v in range(vectors)}
    assert len(seen) == seesaw.WG_THREADS * seesaw.FP8_HALF_VECS
    for warp in range(4):
        lanes = range(32 * warp, 32 * warp + 32)
        for j in range(seesaw.FP8_HALF_VECS):
            # the 32-byte sectors of the e4m3 vector each lane loads (token rows of D_V bytes)
            sectors = {
                (k.fp8_token(t) * seesaw.D_V + seesaw.FP8_VEC * k.fp8_vector(j, t % 2)) // 32
                for t in lanes
            }
            assert len(sectors) == (16 if step == 27 else 32)
            for half in range(2):
                for phase in range(4):
                    banks = set()
                    for t in lanes[8 * phase : 8 * phase + 8]:
                        row = k.fp8_token(t)
                        unit = 2 * k.fp8_vector(j, t % 2) + half  # 16-byte unit, 0..31
                        banks.add((unit % 8) ^ (row % 8))
                    assert len(banks) == 8, (warp, j, half, phase)


@pytest.mark.parametrize(("step", "shape", "spill_cap"), FP8_SEESAW_CASES)
def test_fp8_seesaw_compiles_for_sm90a(step, shape, spill_cap, tmp_path, monkeypatch):
    """Steps 14-17 (the FP8 cache with ``--config schedule=seesaw``): 384 threads (168
    registers at launch, one setmaxnreg per role), the math warpgroups' MMAs exactly step 11's,
    the rope chunk the only TMA (two issue sites; step 16's pair body four), the latent part
    through the producer's LDG.128 and STS.128, step 14 converting through F2FP + HADD2, steps
    15-17 by bit placement (PRMT + HMUL2, no HADD2). The spills are bounded, not zero
    (:data:`FP8_SEESAW_CASES`); a build that spills more fails here."""
    from cute_mla.mla_decode_sm90 import seesaw

    plan, prob, cfg = _seesaw_case(
        {**shape, "kv_dtype": FP8}, {"schedule": "seesaw", "step": str(step)}, tmp_path,
        monkeypatch,
    )  # fmt: skip
    st = plan.run_static(prob, cfg)
    assert st["registers"] == seesaw.LAUNCH_REGS
    assert st["spill_store_bytes"] <= spill_cap
    ops = st["opcodes"]
    assert ops.get("USETMAXREG") == 2
    assert st["mma_mnemonics"] == {"HGMMA.64x64x16.F32.BF16": 36, "HGMMA.64x256x16.F32.BF16": 12}
    # the rope chunk (step 11 issues 37 page TMAs)
    assert ops.get("UTMALDG") == (4 if step == 16 else 2)
    assert ops.get("LDG", 0) >= 16 and ops.get("STS", 0) >= 32
    if step == 14:
        assert ops.get("HADD2", 0) >= 256 and "PRMT" not in ops
    else:
        sites = 2 if step == 16 else 1  # step 16's unrolled pair converts in two places
        assert ops.get("PRMT") == 128 * sites and ops.get("HMUL2") == 256 * sites
        assert "HADD2" not in ops
    # steps 20-21: one L2 bulk prefetch per page for the e4m3 part and one for its scales,
    # issued before the page loop and in it (2 sites); none before step 20
    # (step 23 prefetches 3 pages before its loop: 8)
    assert ops.get("UBLKPF", 0) == (0 if step < 20 else 8 if step == 23 else 4)
    meta = st["meta"]
    assert meta["seesaw_step"] == step and meta["producer_warpgroup"] is True
    assert meta["kv_load"].startswith("ldg + dequant")


def test_fp8_seesaw_step26_crossover(tmp_path, monkeypatch):
    """Step 26 (FlashMLA's crossover): at h=128 the two m-tiles of a sequence run as a cluster
    of 2 (one cluster barrier at the start and one at the end), each CTA's producer converts
    one group per page and stores it into both CTAs (16 STAS.128 st.async per group, one copy
    of the loop per cluster rank), each CTA loads its own rope chunk (2 TMA sites per copy),
    216 / 72 as step 22, no spill in either loop (24 B of the math warpgroups' segment-level
    values); where the m-tiles do not pair up (h=64, one m-tile) it is step 22's code."""

    def build(step, shape):
        where = tmp_path / f"{step}-{shape.get('h', 128)}"
        fields = {"b": 32, "t": 4096, "kv_dtype": FP8, **shape}
        plan, prob, cfg = _seesaw_case(fields, {"step": str(step)}, where, monkeypatch)
        k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
        return k, plan.run_static(prob, cfg)

    k, st = build(26, {})
    assert k.fn.crossover and k.meta["crossover"] and st["meta"]["crossover"]
    assert (k.fn.math_regs, k.fn.producer_regs) == (216, 72)
    assert st["spill_store_bytes"] <= 24 and st["spill_load_bytes"] <= 24
    ops = st["opcodes"]
    assert ops.get("STAS") == 2 * 16 and ops.get("UCGABAR_ARV") == ops.get("UCGABAR_WAIT") == 2
    assert ops.get("UTMALDG") == 2 * 2 and ops.get("UBLKPF") == 2 * 4
    assert ops.get("HMUL2") == 2 * 128  # one group (half a page) per copy of the loop
    assert st["mma_mnemonics"] == {"HGMMA.64x64x16.F32.BF16": 36, "HGMMA.64x256x16.F32.BF16": 12}
    # one m-tile (h=64): no cluster, and the same SASS opcode counts as step 22
    k64, st64 = build(26, {"h": 64})
    _, st22 = build(22, {"h": 64})
    assert not k64.fn.crossover and not k64.meta["crossover"]
    assert st64["opcodes"] == st22["opcodes"]


def _producer_loop_groups(sass: str) -> list[int]:
    """Per group of the FP8 producer's page loop (the longest backward branch after
    ``USETMAXREG.DEALLOC``, cut at each ``FENCE.VIEW.ASYNC``): how many LDG.E.128 lie between
    the group's first and last STS.128, i.e. are issued while the group is being stored."""
    import re

    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2), m.group(3)))
    start = next(k for k, x in enumerate(ins) if x[1].startswith("USETMAXREG.DEALLOC"))
    prod = ins[start:]
    loop = None
    for addr, op, rest in prod:
        target = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if target and prod[0][0] <= int(target.group(1), 16) < addr:
            lo = int(target.group(1), 16)
            if loop is None or addr - lo > loop[1] - loop[0]:
                loop = (lo, addr)
    assert loop is not None, "no producer loop in the SASS"
    groups: list[list[str]] = [[]]
    for addr, op, _ in prod:
        if loop[0] <= addr <= loop[1]:
            if op.startswith("FENCE.VIEW.ASYNC"):
                groups.append([])
            else:
                groups[-1].append(op)
    out = []
    for g in groups:
        sts = [k for k, op in enumerate(g) if op.startswith("STS.128")]
        if sts:
            out.append(sum(1 for k in range(sts[0], sts[-1]) if g[k].startswith("LDG.E.128")))
    return out


def test_fp8_seesaw_step24_reloads_while_it_stores(tmp_path, monkeypatch):
    """Step 24's point, in the SASS: the producer issues the next group's LDG.E.128 between
    the current group's stores (7 of its 8 vectors' loads in each group of the page loop),
    where step 22 issues none there (ptxas sinks them to the group's end, after the last
    STS.128, unless a warp sync holds each in place)."""

    got = {}
    for step in (22, 24):
        plan, prob, cfg = _seesaw_case(
            {"b": 32, "t": 4096, "kv_dtype": FP8}, {"schedule": "seesaw", "step": str(step)},
            tmp_path / str(step), monkeypatch,
        )  # fmt: skip
        st = plan.run_static(prob, cfg)
        sass = _sass_text(st)
        got[step] = _producer_loop_groups(sass)
    assert len(got[22]) == len(got[24]) == 2  # the page loop's two groups (w = 0, 1)
    assert got[22] == [0, 0]
    assert all(n >= 7 for n in got[24]), got[24]


def test_mla_decode_sm90_build_label_names_what_is_built():
    """``step=0`` (the config default) builds the step measured fastest for the problem: the
    label the CLI prints and every record keeps as ``build`` names the resolved schedule and
    step (42 at s*h = 16, 79 at s*h = 32 and above where the plan makes every cut sequence a
    cluster pair, 78 elsewhere, 22 with the FP8 cache, at s*h = 16 47 with per_token scales and
    43 with per_block ones, 9 with splits)."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    fp8 = plan.problem(b=2, t=100, kv_dtype=FP8)
    bf16 = plan.problem(b=2, t=100)
    h16, h32 = plan.problem(b=2, t=100, h=16), plan.problem(b=2, t=100, h=32)
    h16_fp8 = plan.problem(b=2, t=100, h=16, kv_dtype=FP8)
    cases = [
        (fp8, {}, "seesaw step 22 (FP8 cache: producer warpgroup)"),
        (fp8, {"step": "24"}, "seesaw step 24 (FP8 cache: producer warpgroup)"),
        (
            fp8,
            {"schedule": "lockstep"},
            "lockstep schedule, cpasync pages, FP8 dequantised by the math warpgroups",
        ),
        (bf16, {}, "seesaw step 87"),  # 2 sequences of 2 pages: the pair plan
        (bf16, {"step": "11"}, "seesaw step 11"),
        (bf16, {"splits": "2"}, "seesaw step 9"),
        (
            h16,
            {},
            "step 42 (query rows on WGMMA's N, one warpgroup, work list, S^T in 4 accumulators)",
        ),
        (h16, {"step": "11"}, "seesaw step 11"),
        (h16, {"splits": "2"}, "seesaw step 9"),
        (h32, {}, "seesaw step 87"),
        (
            h16_fp8,
            {},
            "step 47 (FP8 cache: query rows on WGMMA's N, e4m3 dequantised into the register A "
            "operand, K and V by F2FP to fp16, page index fetched a page early, 2 stages, 2 "
            "CTA(s) per SM)",
        ),
        (
            plan.problem(b=2, t=100, h=16, kv_dtype=FP8, kv_scale="per_block"),
            {},
            "step 43 (FP8 cache: query rows on WGMMA's N, e4m3 dequantised into the register A "
            "operand, bit-placed, 2 stages, 2 CTA(s) per SM)",
        ),
        (h16_fp8, {"step": "22"}, "seesaw step 22 (FP8 cache: producer warpgroup)"),
        (bf16, {"schedule": "lockstep", "loads": "tma"}, "lockstep schedule, tma pages"),
    ]
    for prob, overrides, label in cases:
        assert plan.build_label(prob, plan.config(prob, overrides)) == label
    rec = plan.record_base("static", fp8, plan.config(fp8, {}))
    assert rec["build"] == "seesaw step 22 (FP8 cache: producer warpgroup)"
    assert rec["config"]["step"] == 0  # the config as given, beside what it built


# -- costed cuts (--config cuts=costed): parts filled up to one modelled cost -----------------


@pytest.mark.parametrize("pages", PAGE_LISTS)
@pytest.mark.parametrize("parts", [1, 3, 16, 132])
def test_costed_work_list_covers_every_page_once(pages, parts):
    """The costed plan keeps every invariant of the equal one (each page once, slots
    0..pieces-1, consecutive parts, the work tensor's rows), never models slower than the
    equal plan, and cuts no piece shorter than MIN_PIECE_PAGES unless its sequence's rest is
    or the piece is its part's only segment (a budget that holds fewer pages)."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
        MIN_PIECE_PAGES,
        _plan_cost,
        costed_work_list,
        work_list,
    )

    work = costed_work_list(pages, parts)
    assert work.parts == parts
    _check_work_list(pages, work)
    assert _plan_cost(work) <= _plan_cost(work_list(pages, parts))
    alone = {lo for lo, hi in work.part_segs if hi == lo + 1}  # a part's only segment
    for j, (b, p0, p1, slot) in enumerate(work.segments):
        if slot < work.pieces[b] - 1 and j not in alone:  # not the sequence's last piece
            assert p1 - p0 >= MIN_PIECE_PAGES, (b, p0, p1)


def test_costed_cuts_lower_the_varlen_model_and_keep_fixed_plans():
    """At the table's varlen draw (B=32, 132 SMs) the equal ranges give the busiest part 3
    segments; the costed plan fills parts to one budget, so its modelled cost (pages + 2 per
    segment + the combine) drops from 41 to 36. Where equal ranges already cut only between
    sequences of one length ((128, 4096), h=64) the costed plan is the equal one."""
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
        _pages,
        _plan_cost,
        _work_parts,
        costed_work_list,
        work_list,
    )

    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096, varlen=True)
    pages, parts = _pages(prob), _work_parts(prob, 132)
    eq, co = work_list(pages, parts), costed_work_list(pages, parts)
    assert (_plan_cost(eq), _plan_cost(co)) == (41, 36)
    segs = [hi - lo for lo, hi in co.part_segs]
    assert max(segs) == 3 and len(co.segments) < len(eq.segments)
    for shape in ({"b": 128, "t": 4096}, {"b": 128, "t": 4096, "h": 64}, {"b": 32, "t": 4096}):
        prob = plan.problem(**shape)
        pages, parts = _pages(prob), _work_parts(prob, 132)
        eq, co = work_list(pages, parts), costed_work_list(pages, parts)
        assert (co.per, co.part_segs, co.segments) == (eq.per, eq.part_segs, eq.segments), shape


@pytest.mark.parametrize("step", [12, 25, 28, 31, 32])
def test_later_work_list_steps_refuse_a_split_count(step):
    """A work-list step after 11 asked for with ``splits`` is one line (drop splits or take
    step 9), not step 9 built silently under the step's name; the default step 11 with splits
    still builds step 9."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=4, t=1024)
    with pytest.raises(ShapeError) as e:
        plan.supports_config(prob, plan.config(prob, {"step": step, "splits": 2}))
    assert f"step {step} walks the work list" in str(e.value) and "\n" not in str(e.value)
    cfg = plan.config(prob, {"splits": 2})
    plan.supports_config(prob, cfg)
    assert plan.kernel_step(cfg, prob) == 9


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"cuts": "equal", "schedule": "lockstep"}, "got cuts=equal with schedule=lockstep"),
        ({"cuts": "costed", "schedule": "lockstep"}, "got cuts=costed with schedule=lockstep"),
        ({"cuts": "equal", "step": 9}, "got cuts=equal with step 9"),
        ({"cuts": "costed", "splits": 2}, "cuts=costed with splits=2, which builds step 9's"),
    ],
)
def test_costed_cuts_refused_without_the_work_list(overrides, needle):
    """cuts applies to the work list only: an explicit plan (costed or equal, not the default
    auto) with lockstep, step 9 or a split count is one line that says where it applies, not
    silently ignored; either plan is taken by step 11 and the FP8 cache's default, and auto
    everywhere."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096, varlen=True)
    with pytest.raises(ShapeError) as e:
        plan.supports_config(prob, plan.config(prob, overrides))
    assert needle in str(e.value) and "\n" not in str(e.value)
    fp8 = plan.problem(b=32, t=4096, varlen=True, kv_dtype="float8_e4m3fn")
    for cuts in ("costed", "equal", "even"):
        plan.supports_config(prob, plan.config(prob, {"cuts": cuts}))
        plan.supports_config(fp8, plan.config(fp8, {"cuts": cuts}))
    for other in ({"schedule": "lockstep"}, {"splits": 2}, {"step": 9}):
        plan.supports_config(prob, plan.config(prob, other))  # cuts=auto: nothing to refuse


def test_costed_cuts_reach_the_kernel_meta():
    """The default plan (cuts=auto: costed) hands the kernel the costed work list and names
    it; cuts=equal hands it step 11's equal ranges."""
    import torch
    from cute_mla.mla_decode_sm90.mla_decode_sm90 import _pages, _work_parts, costed_work_list

    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(b=32, t=4096, varlen=True)
    assert plan.config(prob, {}).cuts == "auto"
    k = plan.plan(prob, plan.config(prob, {}), plan.target("sm_90a", 132))
    wl = k.meta["work_list"]
    want = costed_work_list(_pages(prob), _work_parts(prob, 132))
    assert wl["cuts"] == "costed" and wl["segments"] == len(want.segments) == 88
    assert wl["pages_per_part"] == want.per
    work = torch.zeros(plan.tensor_specs(prob)["work"].shape, dtype=torch.int32)
    k.setup({"work": work})
    assert work.tolist() == want.rows()
    k = plan.plan(prob, plan.config(prob, {"cuts": "equal"}), plan.target("sm_90a", 132))
    assert k.meta["work_list"]["cuts"] == "equal" and k.meta["work_list"]["segments"] == 91
    # cuts=even: the shortest ranges that fit, so every part is busy where the model leaves
    # some idle (h=128 (128, 4096): the model keeps 2 whole sequences per part, 64 of 66 parts)
    prob = plan.problem(b=128, t=4096)
    k = plan.plan(prob, plan.config(prob, {}), plan.target("sm_90a", 132))
    assert k.meta["work_list"]["pages_per_part"] == 128
    assert k.meta["work_list"]["sequences_split"] == 0
    k = plan.plan(prob, plan.config(prob, {"cuts": "even"}), plan.target("sm_90a", 132))
    wl = k.meta["work_list"]
    assert wl["cuts"] == "even" and wl["pages_per_part"] == 125 and wl["parts"] == 66
    assert wl["sequences_split"] > 0


def test_even_cuts_fit_the_workspace_and_bound_the_busiest_part():
    """``cuts=even`` (:func:`plan_work`): over random problems (fixed, varlen, explicit lengths
    with zeros; h=16 to 128, s up to 2) on 132 SMs, no part takes more than ceil(pages / parts)
    pages, every page is in one part, and no sequence has more pieces than the workspace's
    slots (:func:`split_cap`), so the kernel never writes past ``o_acc``."""
    import random

    from cute_mla.mla_decode_sm90.mla_decode_sm90 import _pages, _work_parts, plan_work, split_cap

    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    rng = random.Random(61)
    for _ in range(150):
        b = rng.choice([1, 2, 5, 32, 64, 128])
        kw = {"b": b, "h": rng.choice([16, 64, 128]), "s": rng.choice([1, 2])}
        kind = rng.choice(["fixed", "varlen", "lens"])
        if kind == "lens":
            kw["seqlens"] = [rng.choice([0, 1, 63, 64, 65, 700, 4096, 9000]) for _ in range(b)]
            kw["seqlens"][0] = max(kw["seqlens"][0], 1)  # not every sequence empty
        else:
            kw["t"] = rng.choice([64, 1000, 4096, 16384])
            kw["varlen"] = kind == "varlen"
        prob = plan.problem(**kw)
        pages = _pages(prob)
        parts = _work_parts(prob, 132)
        w = plan_work(pages, parts, "even")
        per = max(1, -(-sum(pages) // parts))
        sizes = [sum(e - a for _, a, e, _ in w.segments[lo:hi]) for lo, hi in w.part_segs]
        assert max(sizes) <= per and w.per <= per
        assert sum(sizes) == sum(pages)
        assert max(w.pieces) <= split_cap(prob), (kw, max(w.pieces), split_cap(prob))


@pytest.mark.parametrize(
    ("shape", "mnemonic", "shuffles"),
    [
        ({"b": 128, "t": 4096, "h": 16}, "HGMMA.64x16x16.F32.BF16", 24),
        ({"b": 4, "s": 2, "h": 16, "t": 1000}, "HGMMA.64x32x16.F32.BF16", 48),  # causal, n = 32
        ({"b": 32, "t": 4096, "h": 16, "varlen": True}, "HGMMA.64x16x16.F32.BF16", 24),
    ],
)
@pytest.mark.parametrize("step", [40, 42])
def test_mla_decode_sm90_step40_puts_the_query_rows_on_n(
    shape, mnemonic, shuffles, step, tmp_path, monkeypatch
):
    """Step 40 (``--config step=40``, q_on_n.py): S^T = K Q^T and O^T += V^T P^T with the s*h
    query rows as WGMMA's N: 36 + 32 m64nNk16 WGMMAs (N = s*h) and no other MMA; 9 TMAs per
    page at 3 sites (the two prologue pages, the loop's reload); Q by cp.async (n/16 x 9
    LDGSTS); the column softmax's shuffles (3 per column for the max and 3 for the sum, n/4
    columns a thread); one warpgroup of 128 threads; 0 spills, within 227 KB of SMEM; the
    work list as step 11's, with the combine kernel only where a sequence is cut. Step 42 is
    the same with S^T in 4 accumulators at n = 16 (2 at n = 32, where 4 would spill): the same
    WGMMAs, and (accumulators - 1) x n/2 more FADDs a thread to add them up."""
    plan, prob, cfg = _seesaw_case(shape, {"step": str(step)}, tmp_path, monkeypatch)
    k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
    assert type(k.fn).__name__ == "MlaDecodeSm90QOnN" and k.fn.work_list
    assert k.meta["math_warpgroups"] == 1 and k.meta["query_rows_on"] == "N"
    assert k.meta["split_rule"] == "work list"
    accs = {40: 1, 42: 4 if prob.s * prob.h == 16 else 2}[step]
    assert k.meta["st_accumulators"] == accs
    st = plan.run_static(prob, cfg)
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    assert st["mma_mnemonics"] == {mnemonic: 68}
    ops = st["opcodes"]
    assert ops.get("UTMALDG") == 27
    assert ops.get("LDGSTS") == prob.s * prob.h // 16 * 9
    assert ops.get("SHFL") == shuffles
    assert st["dynamic_smem_bytes"] <= 227 * 1024
    if step == 42:  # the sums of the S^T accumulators: (accs - 1) x n/2 FADDs more than 40
        base = plan.run_static(prob, plan.config(prob, {"step": "40"}))["opcodes"]
        assert ops.get("FADD", 0) - base.get("FADD", 0) == (accs - 1) * (prob.s * prob.h // 2)
    split = k.meta["work_list"]["sequences_split"] > 0
    assert (len(st["functions"]) == 1) == split  # the combine kernel beside the main one


@pytest.mark.parametrize(
    ("shape", "overrides", "needle"),
    [
        ({"b": 4, "t": 1000}, {"step": "40"}, "takes s*h = 16 or 32 (got s=1, h=128"),
        ({"b": 4, "t": 1000, "h": 64}, {"step": "40"}, "takes s*h = 16 or 32 (got s=1, h=64"),
        ({"b": 4, "t": 1000, "h": 16, "s": 4}, {"step": "40"}, "(got s=4, h=16"),
        ({"b": 4, "t": 1000, "h": 16}, {"step": "40", "splits": "2"}, "walks the work list"),
        ({"b": 4, "t": 1000, "h": 16}, {"step": "40", "schedule": "lockstep"}, "seesaw schedule"),
        ({"b": 4, "t": 1000, "h": 64}, {"step": "42"}, "step 42 puts the s*h query rows on"),
        ({"b": 4, "t": 1000, "h": 16}, {"step": "42", "splits": "2"}, "walks the work list"),
        (
            {"b": 4, "t": 1000, "h": 16},
            {"step": "41"},
            "step must be 0 (the default: the fastest build measured for the problem) or a ",
        ),
        (
            {"b": 4, "t": 1000, "h": 16, "kv_dtype": "float8_e4m3fn"},
            {"step": "40"},
            "FP8 latent cache's seesaw builds",
        ),
    ],
)
def test_mla_decode_sm90_step40_refusals_in_one_line(shape, overrides, needle):
    """Step 40 takes s*h = 16 or 32, a 16-bit cache, the seesaw schedule's work list and no
    split count; anything else is one line naming what to change."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    prob = plan.problem(**shape)
    with pytest.raises(ShapeError) as e:
        plan.supports_config(prob, plan.config(prob, overrides))
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def _colex(shape, stride, idx):
    """A (nested) cute layout mode evaluated at a flat index, in plain Python."""
    if isinstance(shape, int):
        return (idx % shape) * stride, idx // shape
    off = 0
    for sh, st in zip(shape, stride, strict=True):
        o, idx = _colex(sh, st, idx)
        off += o
    return off, idx


def test_fp8_q_on_n_fragment_bytes_match_the_permutations():
    """Steps 43-45 (q_on_n_fp8.py), the index arithmetic emulated for every thread of the
    warpgroup: the bytes each thread loads (dequant_k: 8 at physical columns 32 kb + 8 q of rows
    r0, r0 + 8; dequant_v: 16 at columns 16 (8 w + r) of tokens t, t + 1) and the fragment word
    and half each byte is written to, read through the m64k16 A fragment's (row, column) map
    (printed by the DSL on a CPU: value e + 2 h + 4 a of m-tile i and k-block kk is row
    16 w + r + 8 h + 64 i, column 2 q + e + 8 a + 16 kk), hold K[row, K_PERM(column)] and
    V[token, ROW_PERM(row)]: so S^T = K Q^T with Q loaded through K_PERM, and O stored through
    ROW_PERM, are the unpermuted products. Every fragment element is written exactly once."""
    from cute_mla.mla_decode_sm90 import q_on_n_fp8 as m

    kshape, kstride = m.K_PERM
    rshape, rstride = m.ROW_PERM
    assert sorted(_colex(kshape, kstride, i)[0] for i in range(512)) == list(range(512))
    assert sorted(_colex(rshape, rstride, i)[0] for i in range(512)) == list(range(512))
    sel_bytes = {sel: (sel & 0xF, (sel >> 8) & 0xF) for sel in m.SEL_SAME}  # (low, high) byte
    for tid in range(128):
        w, lane = divmod(tid, 32)
        r, q = divmod(lane, 4)
        # S^T: buf word hh + 2 a + 4 kk of box j <- bytes of row r0 + 8 hh
        seen = set()
        for j in range(4):
            for hh in range(2):
                row = 16 * w + r + 8 * hh
                for kb in range(4):
                    cols = [128 * j + 32 * kb + 8 * q + x for x in range(8)]  # the LDS.64
                    for b5 in range(2):
                        for a, sel in enumerate(m.SEL_SAME):
                            kk = 8 * j + 2 * kb + b5
                            for e, byte in enumerate(sel_bytes[sel]):
                                phys = cols[4 * b5 + byte]
                                logical = 16 * kk + 2 * q + e + 8 * a
                                assert _colex(kshape, kstride, logical)[0] == phys
                                seen.add((row, logical))
        assert len(seen) == 2 * 32 * 4  # 2 rows x 4 columns of each of the 32 k-blocks
        # O^T: buf word hh + 2 a + 4 i of k-block kb <- byte 2 i + hh of tokens t, t + 1
        seen = set()
        for kb in range(4):
            for a in range(2):
                t = 16 * kb + 2 * q + 8 * a
                cols = [16 * (8 * w + r) + x for x in range(16)]  # the LDS.128 of each token
                for byte in range(16):
                    i, hh = divmod(byte, 2)
                    row = 16 * w + r + 8 * hh + 64 * i
                    assert _colex(rshape, rstride, row)[0] == cols[byte]
                    for e, tok in enumerate((t, t + 1)):
                        assert tok == 16 * kb + 2 * q + e + 8 * a  # the fragment's column
                        seen.add((row, tok))
        assert len(seen) == 16 * 16
    for b, sel in enumerate(m.SEL_XY):  # byte b of x to byte 1, of y (bytes 4-7) to byte 3
        assert (sel >> 4) & 0xF == b and (sel >> 12) & 0xF == 4 + b
    # steps 45/46, V: one PRMT gives byte b's pair (x_b, y_b: tokens t, t + 1) in its low half
    # and byte b + 1's in its high half, each the input of one F2FP
    for bp, sel in enumerate(m.SEL_PAIRS):
        b = 2 * bp
        assert [(sel >> (4 * k)) & 0xF for k in range(4)] == [b, 4 + b, b + 1, 5 + b]
    # step 46, K: F2FP of half a converts bytes (2 a, 2 a + 1), the bytes SEL_SAME[a] places
    for a, sel in enumerate(m.SEL_SAME):
        assert sel_bytes[sel] == (2 * a, 2 * a + 1)


def test_fp8_q_on_n_h64_fragment_bytes_match_the_permutations():
    """Step 49 (q_on_n_fp8_h64.py, two warpgroups), the index arithmetic emulated for every
    thread of both: S^T's K fragments come in half boxes (dequant_k's kb_lo, kb_n: 4 k-blocks
    into 16 words, WGMMA k-block 8 j + 4 half + kk) and still hold K[row, K_PERM(column)]; O^T's
    V fragments (dequant_v_f16 with words=2: 8 bytes at physical columns 8 (32 w + 8 wp + r) of
    tokens t, t + 1, byte 2 i + h into word h + 2 a + 4 i) hold V[token, ROW_PERM_H64(row)] for
    warpgroup w's logical rows 256 w + 16 wp + r + 8 h + 64 i, so the epilogue's view through
    ROW_PERM_H64 stores O unpermuted. Every fragment element is written exactly once, and the
    two warpgroups' V bytes cover the page's 512 columns once."""
    from cute_mla.mla_decode_sm90 import q_on_n_fp8 as m
    from cute_mla.mla_decode_sm90 import q_on_n_fp8_h64 as w64

    kshape, kstride = m.K_PERM
    rshape, rstride = w64.ROW_PERM_H64
    assert sorted(_colex(rshape, rstride, i)[0] for i in range(512)) == list(range(512))
    assert w64.KB_PER_GROUP == 4 and w64.OT_TILES == 4 and w64.BUF_WORDS_H64 == 16
    v_cols = set()
    for tid in range(256):
        wg, wt = divmod(tid, 128)
        wp, lane = divmod(wt, 32)
        r, q = divmod(lane, 4)
        seen = set()
        for gi in range(8):  # half box gi: box j = gi // 2, its 32-column blocks 2 half, + 1
            j, half = divmod(gi, 2)
            for hh in range(2):
                row = 16 * wp + r + 8 * hh
                for kb in range(2):
                    cols = [128 * j + 32 * (2 * half + kb) + 8 * q + x for x in range(8)]
                    for b5 in range(2):
                        for a in range(2):
                            word = hh + 2 * a + 4 * (2 * kb + b5)
                            assert word < w64.BUF_WORDS_H64
                            k = 8 * j + 4 * half + 2 * kb + b5  # the WGMMA's k-block
                            for e in range(2):  # F2FP of half a: bytes 2 a, 2 a + 1
                                phys = cols[4 * b5 + 2 * a + e]
                                logical = 16 * k + 2 * q + e + 8 * a
                                assert _colex(kshape, kstride, logical)[0] == phys
                                seen.add((row, logical))
        assert len(seen) == 2 * 32 * 4
        seen = set()
        vec8 = 32 * wg + 8 * wp + r
        for kb in range(4):
            for a in range(2):
                t = 16 * kb + 2 * q + 8 * a
                cols = [8 * vec8 + x for x in range(8)]  # the LDS.64 of each token
                words = set()
                for wi in range(2):
                    for bp in range(2):
                        for e in range(2):
                            byte = 4 * wi + 2 * bp + e
                            i, hh = divmod(byte, 2)
                            words.add(byte % 2 + 2 * a + 4 * (byte // 2))
                            row = 256 * wg + 16 * wp + r + 8 * hh + 64 * i
                            assert _colex(rshape, rstride, row)[0] == cols[byte]
                            v_cols.add(cols[byte])
                            for tok in (t, t + 1):
                                seen.add((row, tok))
                assert len(words) == 8 and max(words) < w64.BUF_WORDS_H64
        assert len(seen) == 8 * 16
    assert v_cols == set(range(512))
    # step 54 writes the natural Q through K_PERM's inverse: physical column p lands at the
    # logical column L with K_PERM(L) = p
    ishape, istride = w64.K_PERM_INV
    for p in range(512):
        logical = _colex(ishape, istride, p)[0]
        assert _colex(kshape, kstride, logical)[0] == p


def test_fp8_q_on_n_h64_q_terms():
    """Step 53's Q as two e4m3 terms per row (q_on_n_fp8_h64.load_q_e4m3_pair): with the row
    factor from Q8_FACTOR_BIAS the row max lands in [2^7, 2^8) (e4m3 reaches 448), and
    S = K Q^T with K e4m3 and Q = (hi + lo) / f is within 1e-5 (relative norm) of S with the
    bf16 Q, at row scales from 2^-20 to 2^20; one term alone is off by more than 1e-2."""
    import torch
    from cute_mla.mla_decode_sm90 import q_on_n_fp8 as m
    from cute_mla.mla_decode_sm90 import q_on_n_fp8_h64 as w64

    lo_e, hi_e = m.Q_FACTOR_CLAMP
    gen = torch.Generator().manual_seed(5)
    k = torch.randn(1024, 512, generator=gen).to(torch.float8_e4m3fn).to(torch.float32)
    for e2 in (-20, -3, 0, 5, 20):
        q = (torch.randn(64, 512, generator=gen) * 2.0**e2).to(torch.bfloat16).to(torch.float32)
        amax = q.abs().amax(dim=1, keepdim=True)
        big = amax.view(torch.int32) >> 23
        fe = torch.clamp(w64.Q8_FACTOR_BIAS - big, lo_e, hi_e)
        f = (fe << 23).view(torch.float32)
        inv = ((254 - fe) << 23).view(torch.float32)
        assert torch.equal(f * inv, torch.ones_like(f))
        qs = q * f
        assert float(qs.abs().max()) < 2.0**8 and float(qs.abs().amax(dim=1).min()) >= 2.0**7
        hi = qs.to(torch.float8_e4m3fn).to(torch.float32)
        lo = (qs - hi).to(torch.float8_e4m3fn).to(torch.float32)
        ref = k @ q.T
        two = k @ ((hi + lo) * inv).T
        one = k @ (hi * inv).T
        assert float((two - ref).norm() / ref.norm()) < 1e-5, e2
        assert float((one - ref).norm() / ref.norm()) > 1e-2, e2


def test_fp8_q_on_n_query_row_factor_keeps_bf16_exact_in_fp16():
    """Step 46's Q in fp16 (q_on_n_fp8.load_q_f16): the row factor from Q_FACTOR_BIAS and
    Q_FACTOR_CLAMP brings the row's largest magnitude into [2^14, 2^15) (fp16 holds up to 65504)
    for maxima from 2^-86 to 2^115 (the clamp's reach; below it the max stays under 2^15),
    every bf16 value of the row within 2^-10 of the max then converts to fp16 exactly, and the
    factor's inverse (biased 254 - F) is exact."""
    import numpy as np
    import torch
    from cute_mla.mla_decode_sm90 import q_on_n_fp8 as m

    lo, hi = m.Q_FACTOR_CLAMP
    rng = np.random.default_rng(3)
    for e2 in [*range(-84, 113, 7), 0, 1, -1, 15, 16, -120]:
        row = torch.tensor(rng.standard_normal(512) * 2.0**e2, dtype=torch.float32)
        row = row.to(torch.bfloat16).to(torch.float32)
        amax = row.abs().max()
        big = int(amax.view(torch.int32)) >> 23
        fe = min(max(m.Q_FACTOR_BIAS - big, lo), hi)
        f = torch.tensor(fe << 23, dtype=torch.int32).view(torch.float32)
        inv = torch.tensor((254 - fe) << 23, dtype=torch.int32).view(torch.float32)
        assert float(f) * float(inv) == 1.0
        scaled = row * f
        if e2 < -84:  # past the clamp: smaller, never overflowing
            assert 0 < float(scaled.abs().max()) < 2.0**14
            continue
        assert 2.0**14 <= float(scaled.abs().max()) < 2.0**15, e2
        keep = row.abs() >= amax * 2.0**-10
        assert torch.equal(scaled.to(torch.float16).to(torch.float32)[keep], scaled[keep])
    # an all-zero row: the clamp keeps the factor finite
    assert min(max(m.Q_FACTOR_BIAS - 0, lo), hi) == hi


@pytest.mark.parametrize(
    ("step", "shape", "mnemonics", "hmul2", "smem_cap"),
    [
        (43, {"b": 128, "t": 4096, "h": 16}, {"HGMMA.64x16x16.F32.BF16": 68}, 256, 113 * 1024),
        (44, {"b": 128, "t": 4096, "h": 16}, {"HGMMA.64x16x16.F32.BF16": 68}, 256, 227 * 1024),
        (43, {"b": 32, "t": 4096, "h": 16, "kv_scale": "per_block"}, None, 256, 113 * 1024),
        (
            45,
            {"b": 128, "t": 4096, "h": 16},
            {"HGMMA.64x16x16.F32.BF16": 36, "HGMMA.64x16x16.F32": 32},
            128,
            113 * 1024,
        ),
        (
            46,
            {"b": 128, "t": 4096, "h": 16},
            {"HGMMA.64x16x16.F32.BF16": 4, "HGMMA.64x16x16.F32": 64},
            0,
            113 * 1024,
        ),
        (
            47,
            {"b": 128, "t": 4096, "h": 16},
            {"HGMMA.64x16x16.F32.BF16": 4, "HGMMA.64x16x16.F32": 64},
            0,
            113 * 1024,
        ),
        (
            48,
            {"b": 32, "t": 4096, "h": 16},
            {"HGMMA.64x16x16.F32.BF16": 4, "HGMMA.64x16x16.F32": 64},
            0,
            113 * 1024,
        ),
    ],
)
def test_fp8_q_on_n_compiles_for_sm90a(
    step, shape, mnemonics, hmul2, smem_cap, tmp_path, monkeypatch
):
    """Steps 43-48 (the FP8 cache dequantised into the register A operand): 36 + 32 WGMMAs per
    page (step 45's O^T in fp16; step 46's S^T latent part too, only the 4 rope WGMMAs 16-bit),
    6 TMAs per page (4 latent boxes, the scales, the rope) at stages + 1 sites (the prologue
    unrolled, the loop), one HMUL2 per bit-placed pair (256 a page; 128 in step 45, whose V
    goes by 128 F2FP.E4M3 instead; none in 46, whose K goes by 128 more), 0 spills, SMEM for
    2 CTAs per SM (43, 45, 46) or 1 (44), the work list cut for that many CTAs per SM."""
    plan, prob, cfg = _seesaw_case(
        {**shape, "kv_dtype": "float8_e4m3fn"}, {"step": str(step)}, tmp_path, monkeypatch
    )
    k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
    assert type(k.fn).__name__ == "MlaDecodeSm90QOnNFp8"
    assert k.meta["ctas_per_sm"] == (1 if step == 44 else 2)
    assert k.meta["work_list"]["parts"] == 132 * k.meta["ctas_per_sm"]
    assert k.meta["producer_warpgroup"] is False and k.meta["query_rows_on"] == "N"
    assert f"step {step} (FP8 cache" in plan.build_label(prob, cfg)
    st = plan.run_static(prob, cfg)
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    if mnemonics:
        assert st["mma_mnemonics"] == mnemonics
    ops = st["opcodes"]
    stages = 4 if step == 44 else 2
    assert ops.get("UTMALDG") == 6 * (stages + 1)  # the prologue's pages and the loop's
    assert ops.get("HMUL2", 0) == hmul2
    assert ops.get("F2FP", 0) >= {45: 128, 46: 256, 47: 256, 48: 256}.get(step, 0)
    # step 47 fetches the next page's index into SMEM by cp.async at 2 sites (the prologue's
    # and the loop's) beside the query's rope part (1); 46 has only the latter
    if step in (46, 47, 48):
        assert ops.get("LDGSTS") == (1 if step == 46 else 3)
    assert st["dynamic_smem_bytes"] <= smem_cap


@pytest.mark.parametrize(
    ("step", "shape", "spill_cap"),
    [
        (49, {"b": 128, "t": 4096, "h": 64}, 256),
        (50, {"b": 128, "t": 4096, "h": 64}, 64),
        (51, {"b": 32, "t": 4096, "h": 64}, 128),
        (52, {"b": 128, "t": 4096, "h": 64}, 64),
        (52, {"b": 4, "t": 1000, "h": 16, "s": 4}, None),
        (53, {"b": 128, "t": 4096, "h": 64}, 1),
        (54, {"b": 32, "t": 4096, "h": 64}, 64),
        (55, {"b": 128, "t": 4096, "h": 64}, 1),
        (56, {"b": 128, "t": 4096, "h": 64}, 64),
        (57, {"b": 32, "t": 4096, "h": 64}, 64),
    ],
)
def test_fp8_q_on_n_h64_compiles_for_sm90a(step, shape, spill_cap, tmp_path, monkeypatch):
    """Steps 49-57 (the FP8 cache at s*h = 64, two warpgroups per page): per page and
    warpgroup 32 m64n32 WGMMAs of S^T's latent part (fp16; 53: 32 m64n32k32 FP8 WGMMAs, 16
    k-blocks x 2 Q terms; 56, 57: 16 k-blocks x its own and the other warpgroup's query rows), 4 of
    its rope part (16-bit) and 16 m64n64 of O^T (4 m-tiles x 4 token blocks; step 52 emits the
    S^T half twice, the loop being turned by half a page); 6 TMAs per page at 4 sites (3 stages
    unrolled, the loop); the early page index by cp.async at 2 sites beside the query's rope
    part (2); 256 threads, one CTA per SM (the work list in 132 parts), SMEM within an sm_90
    CTA's 227 KB; spills under a cap per step (49 spilled its precomputed K addresses, which 50
    removed; 55 computes the V addresses at their use too, and spills nothing). s = 4, h = 16
    (causal) is s*h = 64 too."""
    plan, prob, cfg = _seesaw_case(
        {**shape, "kv_dtype": "float8_e4m3fn"}, {"step": str(step)}, tmp_path, monkeypatch
    )
    k = plan.plan(prob, cfg, plan.target("sm_90a", 132))
    assert type(k.fn).__name__ == "MlaDecodeSm90QOnNFp8H64"
    assert k.meta["ctas_per_sm"] == 1 and k.meta["math_warpgroups"] == 2
    assert k.meta["work_list"]["parts"] == 132
    assert k.meta["producer_warpgroup"] is False and k.meta["query_rows_on"] == "N"
    label = plan.build_label(prob, cfg)
    assert f"step {step} (FP8 cache at s*h = 64" in label
    # 53 converts no K (FP8 WGMMA from SMEM) and says it is outside the LSE tolerance
    assert ("K and V by F2FP" in label) == (step != 53)
    assert ("outside the LSE tolerance" in label) == (step == 53)
    st = plan.run_static(prob, cfg)
    copies = 2 if step == 52 else 1
    latent = (
        {"QGMMA.64x32x32.F32.E4M3.E4M3": 32}  # 16 k-blocks of 32 x the two Q terms
        if step == 53
        else {"HGMMA.64x32x16.F32": 32 * copies}
    )
    assert st["mma_mnemonics"] == {
        **latent,
        "HGMMA.64x32x16.F32.BF16": 4 * copies,
        "HGMMA.64x64x16.F32": 16,
    }
    ops = st["opcodes"]
    assert ops.get("UTMALDG") == 6 * (3 + 1)
    assert ops.get("LDGSTS") == 4  # the query's rope part (64 rows: 2 passes), the index (2)
    # 54 and later read Q's latent part by 16-byte loads (about 42 LDG in all), 49-53 by 4-byte
    # ones (about 90): a build that says "Q by 16-byte loads" must have them (57's first build
    # had left them out)
    assert (ops.get("LDG", 0) < 64) == (step >= 54), ops.get("LDG")
    # K by F2FP (256 a page) and V (64) in 49-52, 54, 55; V only in 53, plus its Q terms'
    # conversions; 56 converts half of K (its own 256 columns: 128), so fewer than 55
    assert ops.get("HMUL2", 0) == 0 and ops.get("F2FP", 0) >= (128 if step >= 56 else 256) + 64
    if step >= 56:
        assert ops.get("F2FP", 0) < 256 + 64
    # 57 replaced the CTA barrier at each page's end by an empty mbarrier per stage (one fewer
    # BAR.SYNC 0 than 56 in the SASS, arrivals instead)
    if step >= 57:
        assert ops.get("SYNCS", 0) > 0
    if spill_cap is not None:
        assert st["spill_store_bytes"] < spill_cap and st["spill_load_bytes"] < spill_cap
    assert st["dynamic_smem_bytes"] <= 227 * 1024


@pytest.mark.parametrize(
    ("shape", "overrides", "needle"),
    [
        ({"b": 4, "t": 1000, "h": 16}, {"step": "49"}, "takes s*h = 64 (got s=1, h=16"),
        ({"b": 4, "t": 1000, "h": 32}, {"step": "52"}, "takes s*h = 64 (got s=1, h=32"),
        ({"b": 4, "t": 1000, "h": 16}, {"step": "50"}, "at s*h = 16 take 43 to 48"),
        # a named step with loads=cpasync: lockstep would refuse the step, so not that advice
        ({"b": 4, "t": 1000, "h": 64}, {"step": "50", "loads": "cpasync"}, "drop --config loads"),
        ({"b": 4, "t": 1000, "h": 64, "kv_fp8": False}, {"step": "49"}, "is an FP8 latent cache"),
        ({"b": 4, "t": 1000, "h": 64, "kv_scale": "per_block"}, {"step": "49"}, "per_token"),
        ({"b": 4, "t": 1000, "h": 64}, {"step": "49", "splits": "2"}, "walks the work list"),
        ({"b": 4, "t": 1000, "h": 64}, {"step": "43"}, "step 43 puts the s*h query rows on"),
        ({"b": 4, "t": 1000, "h": 16, "kv_fp8": False}, {"step": "43"}, "is an FP8 latent cache"),
        (
            {"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block", "kv_block": 32},
            {"step": "44"},
            "takes a scale block of at least 128",
        ),
        ({"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block"}, {"step": "45"}, "per_token"),
        ({"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block"}, {"step": "46"}, "per_token"),
        ({"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block"}, {"step": "47"}, "per_token"),
        ({"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block"}, {"step": "48"}, "per_token"),
        # the first refusal names what the next one would ask: per_token, not a larger block
        (
            {"b": 4, "t": 1000, "h": 16, "kv_scale": "per_block", "kv_block": 64},
            {"step": "46"},
            "takes --kv_scale per_token",
        ),
        # and the shape before the cache: a 16-bit cache at h=64 is not sent to step 42
        ({"b": 4, "t": 1000, "h": 64, "kv_fp8": False}, {"step": "47"}, "takes s*h = 16 (got"),
        ({"b": 4, "t": 1000, "h": 16}, {"step": "43", "splits": "2"}, "walks the work list"),
    ],
)
def test_fp8_q_on_n_refusals_in_one_line(shape, overrides, needle):
    """Steps 43-48 take s*h = 16, the FP8 cache with a scale block of at least 128 columns
    (steps 45-48: per_token) and the work list; anything else is one line naming what to
    change, and following it does not meet another refusal of the same step."""
    from kernelplan import ShapeError
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    shape = dict(shape)
    if shape.pop("kv_fp8", True):
        shape["kv_dtype"] = "float8_e4m3fn"
    prob = plan.problem(**shape)
    with pytest.raises(ShapeError) as e:
        plan.supports_config(prob, plan.config(prob, overrides))
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def _sw128_byte(stage, token, col):
    """The byte of (token, physical latent column) in e4m3 page stage ``stage``: boxes of 64
    rows x 128 bytes, the 128-byte swizzle (byte bits 4-6 ^= bits 7-9, the row mod 8)."""
    box, c = divmod(col, 128)
    return stage * 64 * 512 + box * 64 * 128 + token * 128 + (c ^ (16 * (token % 8)))


@pytest.mark.parametrize("stage", [0, 2])
def test_fp8_q_on_n_k_and_v_offsets_address_the_swizzled_page(stage):
    """Steps 50 and 55 address the page's bytes without the swizzled view: K from one base and
    swizzle phase per thread (k_offsets, k_byte_offset), V from one offset per token parity
    (v_offsets, v_byte_offset). For every thread of both warpgroups, each 8-byte load must start
    at the swizzled byte of its first column and cover the 8 columns the unswizzled view gives
    (8-byte units stay whole under the swizzle): K's row r0 + 8 hh, columns 128 j + 32 kb +
    8 qd; V's token 16 kb + 8 a + 2 qd + e, columns 8 vec8 (vec8 = 32 wg + 8 wp + lane // 4)."""
    from cute_mla.mla_decode_sm90 import q_on_n_fp8 as m

    plan = m.MlaDecodeSm90QOnNFp8.__new__(m.MlaDecodeSm90QOnNFp8)
    ptr = object()
    for tid in range(256):
        wg, wt = divmod(tid, 128)
        wp, lane = divmod(wt, 32)
        r, qd = divmod(lane, 4)
        r0 = 16 * wp + r
        k_ptr, base, phase = plan.k_offsets(ptr, stage, r0, qd)
        assert k_ptr is ptr
        for j in range(4):
            for hh in range(2):
                for kb in range(4):
                    row, col = r0 + 8 * hh, 128 * j + 32 * kb + 8 * qd
                    off = m.k_byte_offset((base, phase), j, hh, kb)
                    assert off == _sw128_byte(stage, row, col), (tid, j, hh, kb)
                    assert off % 8 == 0
        vec8 = 32 * wg + 8 * wp + r
        v_ptr, offs = plan.v_offsets(ptr, stage, qd, vec8)
        assert v_ptr is ptr and len(offs) == 2
        for kb in range(4):
            for a in range(2):
                for e in range(2):
                    tok = 16 * kb + 8 * a + 2 * qd + e
                    off = m.v_byte_offset(offs, 16 * kb + 8 * a, e)
                    assert off == _sw128_byte(stage, tok, 8 * vec8), (tid, kb, a, e)
                    assert off % 8 == 0


def test_mla_decode_sm90_default_builds_of_one_config_have_their_own_compile_keys():
    """The default config (``step=0``) builds step 87 at h=128 (32, 4096) and step 86 at
    (128, 4096) (79 and 78 in session 33, 75 and 72 in sessions 31-32, 71 and 72 in session 30,
    62 and 67 in session 29), b and t being runtime
    fields: the compile keys differ (the build label is in them), so that one process timing
    both rows launches each row's own build. Before session 29 they were equal, and a process
    that compiled one launched it for the other: 62's binary at the uncut rows of every table
    that began with (32, 4096), and 61's at (32, 4096), whose O then stayed unwritten (62's plan
    merges its pairs in the kernel)."""
    from kernelplan.registry import load_plan_class

    plan = load_plan_class("mla", "mla_decode_sm90")()
    tgt = plan.target("sm_90a", 132)
    keys, labels = {}, {}
    for b in (32, 128, 120):
        prob = plan.problem(b=b, t=4096)
        cfg = plan.config(prob, {})
        labels[b] = plan.build_label(prob, cfg)
        keys[b] = plan.kernel(prob, cfg, tgt).key
    assert labels == {32: "seesaw step 87", 128: "seesaw step 86", 120: "seesaw step 86"}
    assert keys[32] != keys[128]
    # the input values (``init``) are not compiled in: spiky keys reuse the randn build
    spiky = plan.problem(b=128, t=4096, init="spiky")
    assert plan.kernel(spiky, plan.config(spiky, {}), tgt).key == keys[128]


def test_mla_decode_sm90_seesaw_step66_keeps_descriptors_in_uniform_registers(
    tmp_path, monkeypatch
):
    """Step 66 (``--config step=66``): step 61 with each math warpgroup's code traced with its
    index a compile-time constant (two copies, branched once on the warp-uniform index), so
    that its stage, V half and barrier ids are constants: ptxas computes the WGMMA descriptors
    on the uniform datapath (UIADD3) instead of per thread (IMAD, VIADD, LOP3) with an R2UR
    per descriptor word. In 61 the stage is the run-time ``tidx // 128``. CPU compile at h=128
    (32, 4096): R2UR 312 -> 9 in the cubin, 88 HGMMA sites against 48 (the shared code once per
    warpgroup),
    0 spills. Measured in session 29 (H100): correct (3 launches per check); 23% fewer
    instructions executed than 61 at (128, 4096) under ncu (55.4 M against 72.0 M) but 1.2%
    more SM cycles, and 0.9-1.6% slower per round; not the default (the devlog, "Session 29")."""
    got, plan, prob, cfg = _seesaw_pair((61, 66), "wg_constant", tmp_path, monkeypatch)
    (a, _), (b, kb) = got[61], got[66]
    assert kb.fn.early_v1r and kb.fn.qk_release_order and kb.fn.combine_batch == 2
    assert a["opcodes"]["R2UR"] > 200 and b["opcodes"]["R2UR"] < 20
    assert b["opcodes"]["UIADD3"] > 2 * a["opcodes"]["UIADD3"]
    mains = {step: _kernel_sass(st, combine=False) for step, (st, _) in got.items()}
    # the shared code twice, the code one warpgroup alone runs once: 88 HGMMA sites against 48
    assert mains[61].count("HGMMA.") < mains[66].count("HGMMA.") < 2 * mains[61].count("HGMMA.")
    assert plan.build_label(prob, cfg) == "seesaw step 66"


def test_mla_decode_sm90_seesaw_step67_masks_only_the_tail_pages(tmp_path, monkeypatch):
    """Step 67 (``--config step=67``, the 16-bit default in session 29, where 61 was): step
    61 with S masked only on a page that reaches past the tile's lowest key limit, one
    warp-uniform branch around the compare-and-select of every element; the same registers
    and page TMAs as 61, 0 spills. Measured in session 29 (H100): correct (3 launches per
    check, the wrong-page fault failing as it must), 0.974-0.995x 61's time per round at
    h=128 (64, 4096), (128, 4096), (128, 16384), s=2 and varlen in one run, 0.974-0.990x at
    four of them in a second (the devlog, "Session 29")."""
    got, plan, prob, cfg = _tail_mask_pair((61, 67), tmp_path, monkeypatch)
    kb = got[67][1]
    assert kb.fn.early_v1r and kb.fn.qk_release_order and kb.fn.combine_batch == 2
    assert plan.build_label(prob, cfg) == "seesaw step 67"


def _tail_mask_pair(steps, tmp_path, monkeypatch):
    """:func:`_seesaw_pair` of a build and the same build with step 67's tail-only mask,
    checked to differ only by the branch around the mask: the same registers, page TMAs and
    HGMMAs, and more branches in the split kernel (the mask skipped on a full page)."""
    got, plan, prob, cfg = _seesaw_pair(steps, "tail_mask", tmp_path, monkeypatch)
    (a, _), (b, _) = got[steps[0]], got[steps[1]]
    assert b["registers"] == a["registers"]
    assert b["opcodes"].get("UTMALDG") == a["opcodes"].get("UTMALDG")
    base, masked = (_kernel_sass(got[st][0], combine=False) for st in steps)
    assert masked.count("HGMMA.") == base.count("HGMMA.")
    assert masked.count("BRA") > base.count("BRA")
    return got, plan, prob, cfg


def test_mla_decode_sm90_seesaw_step68_is_62_with_the_tail_only_mask(tmp_path, monkeypatch):
    """Step 68 (``--config step=68``): step 62 (the parts as clusters of 2 CTAs, a sequence cut
    into one cluster's two parts merged through distributed shared memory, the default where
    every cut sequence is such a pair) with step 67's mask on the tail pages only. At h=128
    (32, 4096) its plan pairs every sequence as 62's does; the same registers and page TMAs as
    62, 0 spills, one more branch. Measured in session 30 (H100): 0.991x 62's time per round at
    (32, 4096) and 0.983x at (32, 16384) (the devlog, "Session 30")."""
    got, plan, prob, cfg = _tail_mask_pair((62, 68), tmp_path, monkeypatch)
    ka, kb = got[62][1], got[68][1]
    assert ka.fn.pair_merge and kb.fn.pair_merge
    assert ka.meta["combine"] == kb.meta["combine"] == "cluster pairs (dsmem)"
    assert plan.build_label(prob, cfg) == "seesaw step 68"


def test_mla_decode_sm90_seesaw_step70_stores_o_through_smem(tmp_path, monkeypatch):
    """Step 70 (``--config step=70``): step 67 with a whole sequence's O stored through SMEM
    (:meth:`MlaDecodeSm90Kernel.store_o_through_smem`): each thread's 64 four-byte ``STG.E``
    of O become 16 ``STSM`` into stage 0, one barrier of the warpgroup, 16 ``LDS.128`` and 16
    ``STG.E.128`` (one 512-byte row per warp instruction). The same MMAs and page TMAs as 67,
    at most 4 more registers, 0 spills; the combine kernel is unchanged. Measured in session 30
    (H100): correct (3 launches per check), 0.947-0.997x 67's time per round at h=128 (64, 4096),
    (128, 4096), (128, 16384) and s=2 (the devlog, "Session 30")."""
    got, plan, prob, cfg = _staged_o_pair((67, 70), 1, tmp_path, monkeypatch)
    assert got[70][1].fn.tail_mask and not got[70][1].fn.pair_merge
    assert plan.build_label(prob, cfg) == "seesaw step 70"


def test_mla_decode_sm90_seesaw_step71_is_68_with_o_through_smem(tmp_path, monkeypatch):
    """Step 71 (``--config step=71``): step 68 (cluster pairs, the tail-only mask) with both
    of its O stores through SMEM: the whole sequence's, as step 70's, and the half that each
    CTA of a pair stores after the merge, through stage 1 (its peer's half arrives in stage
    0). Twice step 70's change in the SASS, 0 spills. Measured in session 30 (H100): correct
    (3 launches per check, both wrong-page faults failing as they must), 0.965x 68's time per
    round at (32, 4096) and 0.985x at (32, 16384), and 0.964x FlashMLA's at (32, 4096): the
    16-bit default where every cut sequence is a cluster pair in session 30 (the devlog,
    "Session 30")."""
    got, plan, prob, cfg = _staged_o_pair((68, 71), 2, tmp_path, monkeypatch)
    assert got[71][1].fn.tail_mask and got[71][1].fn.pair_merge
    assert plan.build_label(prob, cfg) == "seesaw step 71"


def _staged_o_pair(steps, sites: int, tmp_path, monkeypatch):
    """:func:`_seesaw_pair` of a build and the same build storing O through SMEM at ``sites``
    places, checked in the split kernel's SASS: per site 64 four-byte ``STG.E`` fewer and 16
    each of ``STSM``, ``LDS.128`` and ``STG.E.128`` more; the same HGMMAs, page TMAs and
    combine kernel (where the plan has one), at most 4 more registers."""
    import re

    got, plan, prob, cfg = _seesaw_pair(steps, "o_via_smem", tmp_path, monkeypatch)
    (a, _), (b, kb) = got[steps[0]], got[steps[1]]
    assert kb.fn.early_v1r and kb.fn.combine_batch == 2
    assert b["registers"] <= a["registers"] + 4
    assert b["opcodes"].get("UTMALDG") == a["opcodes"].get("UTMALDG")
    base, staged = (_kernel_sass(got[st][0], combine=False) for st in steps)
    assert base.count("HGMMA.") == staged.count("HGMMA.")

    def stores(sass: str) -> dict[str, int]:
        ops = re.findall(r"\b(STG\.E(?:\.\d+)?|STSM\.16\.M88\.4|LDS\.128)\b", sass)
        return {op: ops.count(op) for op in set(ops)}

    sa, sb = stores(base), stores(staged)
    assert sa.get("STG.E.128", 0) == 0 and sb["STG.E.128"] == 16 * sites
    assert sb["STSM.16.M88.4"] == sa["STSM.16.M88.4"] + 16 * sites
    assert sb.get("LDS.128", 0) == sa.get("LDS.128", 0) + 16 * sites
    assert sb["STG.E"] == sa["STG.E"] - 64 * sites  # O's 4-byte stores; the LSE's remain
    if kb.meta["combine"] != "cluster pairs (dsmem)":  # step 71's pair plan has no combine
        combine = [_kernel_sass(got[st][0], combine=True) for st in steps]
        assert combine[0] == combine[1]
    return got, plan, prob, cfg


def _assert_fewer_rewaits(base: str, fewer: str) -> None:
    """The split kernel's SASS ``fewer`` has fewer mbarrier try-wait sites than ``base`` and
    the same HGMMAs and page TMAs: a build that drops mbarrier re-waits and nothing else."""
    assert fewer.count("HGMMA.") == base.count("HGMMA.")
    assert fewer.count("UTMALDG") == base.count("UTMALDG")
    assert fewer.count("SYNCS.PHASECHK") < base.count("SYNCS.PHASECHK")


def test_mla_decode_sm90_seesaw_steps72_73_drop_one_v_half_rewait(tmp_path, monkeypatch):
    """Steps 72 and 73 (``--config step=72`` / ``73``): step 70 without warpgroup 1's second
    wait on V0R's four chunk mbarriers before its PV0R (72), or warpgroup 0's on V1L's before
    its PV1L (73); the other warpgroup's QK waited for them before the named barrier that this
    one waits on. Each has 4 mbarrier waits fewer than 70 in the source (more try-wait sites
    fewer in the split kernel's SASS, where ptxas duplicates the code), the same
    HGMMAs and page TMAs, and no spill (dropping both spills: step 69). Measured in session 30
    (H100): 72 correct (3 launches per check) and 0.927-0.983x 67's time per round at four h=128
    rows in two regimes, 73 0.935-0.992x, 70 0.947-0.997x: 72 was the 16-bit default in sessions
    30-32 (the devlog, "Session 30")."""
    got, plan, prob, cfg = _seesaw_pair((70, 72), "o_via_smem", tmp_path, monkeypatch, both=True)
    got73, _, prob73, cfg73 = _seesaw_pair((70, 73), "o_via_smem", tmp_path, monkeypatch, both=True)
    sass = {70: _kernel_sass(got[70][0], combine=False)}
    sass[72] = _kernel_sass(got[72][0], combine=False)
    sass[73] = _kernel_sass(got73[73][0], combine=False)
    assert not got[72][1].fn.rewait_v0r and got[72][1].fn.v1l_rewaits == 4
    assert got73[73][1].fn.rewait_v0r and got73[73][1].fn.v1l_rewaits == 0
    for step in (72, 73):
        _assert_fewer_rewaits(sass[70], sass[step])
    assert plan.build_label(prob, cfg) == "seesaw step 72"
    assert plan.build_label(prob73, cfg73) == "seesaw step 73"


def test_mla_decode_sm90_seesaw_step74_stores_p1_before_pv1r(tmp_path, monkeypatch):
    """Step 74 (``--config step=74``): step 70 with warpgroup 1 storing P1 (4 stmatrix) before
    it issues its PV1R, so that the fence publishing P1 follows a WGMMA issue instead of the
    stores (FlashMLA's order). In the split kernel's SASS 70 has two publishes of the form
    stmatrix, proxy fence, barrier arrive (P0 and P1) and 74 one (P0), with P1's stmatrix
    ahead of the shared PV issue; the same HGMMAs, 0 spills. Measured in session 30 (H100):
    0.944-0.998x 67's time per round at four h=128 rows, 0.994-1.001x 70's there: no gain of
    its own (the devlog, "Session 30")."""
    import re

    got, plan, prob, cfg = _seesaw_pair((70, 74), "o_via_smem", tmp_path, monkeypatch, both=True)
    assert got[74][1].fn.p1_before_pv and not got[70][1].fn.p1_before_pv

    def ops(step: int) -> str:
        sass = _kernel_sass(got[step][0], combine=False)
        found = re.findall(r"\s(STSM\S*|HGMMA|FENCE\.VIEW\.ASYNC\S*|BAR\.ARV)", sass)
        return " ".join(found)

    publish = "STSM.16.M88.4 " * 4 + "FENCE.VIEW.ASYNC.S BAR.ARV"
    assert ops(70).count(publish) == 2 and ops(74).count(publish) == 1
    assert ops(70).count("HGMMA") == ops(74).count("HGMMA")
    assert plan.build_label(prob, cfg) == "seesaw step 74"


def test_mla_decode_sm90_seesaw_step75_is_71_without_the_v0r_rewait(tmp_path, monkeypatch):
    """Step 75 (``--config step=75``): step 71 (session 30's pair default: cluster pairs, the
    tail-only mask, O through SMEM) without warpgroup 1's second wait on V0R's chunk mbarriers
    before PV0R, step 72's change on the pair build. At h=128 (32, 4096) its plan pairs every
    sequence as 71's does; fewer mbarrier try-wait sites, the same HGMMAs and page TMAs, 0
    spills. Built in session 30; checked on an H100 in session 31 and timed at 0.983x 71's time
    per round at (32, 4096) and 0.982x at (32, 16384): the pair default in sessions 31-32 (the
    devlog, "Session 31")."""
    got, plan, prob, cfg = _seesaw_pair((71, 75), "pair_merge", tmp_path, monkeypatch, both=True)
    ka, kb = got[71][1], got[75][1]
    assert ka.fn.rewait_v0r and not kb.fn.rewait_v0r and kb.fn.o_via_smem
    assert kb.fn.v1l_rewaits == 4
    assert ka.meta["combine"] == kb.meta["combine"] == "cluster pairs (dsmem)"
    _assert_fewer_rewaits(*(_kernel_sass(got[st][0], combine=False) for st in (71, 75)))
    assert plan.build_label(prob, cfg) == "seesaw step 75"


def test_mla_decode_sm90_seesaw_steps76_77_rewait_on_fewer_v1l_chunks(tmp_path, monkeypatch):
    """Steps 76 and 77 (``--config step=76`` / ``77``): 72 and 75 (the defaults then) with warpgroup
    0's second wait before PV1L on the first two (76) or the first one (77) of V1L's four chunk
    mbarriers; warpgroup 1's QK waited for all four before BAR_P1, which warpgroup 0 waits on
    first. Fewer try-wait sites in the split kernel's SASS, the same HGMMAs and page TMAs, and
    no spill (on 72 one re-wait or none spills, as step 69 did). The source pages of session 31
    put 1,479 samples on the four re-waits at h=128 (128, 16384) on an H100. Measured in session
    31 (H100): correct (3 launches per check); 76 took 0.994-1.000x 72's time per round at six
    h=128 rows, 77 0.994-1.000x 75's at the two pair rows: no gain (the devlog, "Session 31")."""
    got, plan, prob, cfg = _seesaw_pair((72, 76), "o_via_smem", tmp_path, monkeypatch, both=True)
    pair, _, prob77, cfg77 = _seesaw_pair((75, 77), "pair_merge", tmp_path, monkeypatch, both=True)
    assert [got[st][1].fn.v1l_rewaits for st in (72, 76)] == [4, 2]
    assert [pair[st][1].fn.v1l_rewaits for st in (75, 77)] == [4, 1]
    for kernels, base, fewer in ((got, 72, 76), (pair, 75, 77)):
        assert not kernels[fewer][1].fn.rewait_v0r and kernels[fewer][1].fn.o_via_smem
        _assert_fewer_rewaits(
            *(_kernel_sass(kernels[st][0], combine=False) for st in (base, fewer))
        )
    assert pair[77][1].meta["combine"] == "cluster pairs (dsmem)"
    assert plan.build_label(prob, cfg) == "seesaw step 76"
    assert plan.build_label(prob77, cfg77) == "seesaw step 77"


def test_mla_decode_sm90_seesaw_steps78_79_issue_q_before_the_first_pages(tmp_path, monkeypatch):
    """Steps 78 and 79 (``--config step=78`` / ``79``; the defaults in session 33): 72 and
    75 with Q's cp.async issued at a segment's start before warp 0 reads the first two pages'
    table entries and issues their chunk TMAs, where 72 and 75 issue Q after them. In the split
    kernel's SASS the first LDGSTS (Q) comes before the first UTMALDG (a page) in 78 and 79 and
    after it in 72 and 75; the same counts of LDGSTS, UTMALDG and HGMMA, no spill. Session 31's
    source page at s=2 (32, 4096) (H100) put 197 samples on the CTA barrier after Q's wait,
    which waited for warp 0. Built in session 31; measured in session 33 (H100): 0.988-0.999x
    72's time per round at h=128 and 0.987-1.000x 75's (the devlog, "Session 33")."""
    got, plan, prob, cfg = _seesaw_pair((72, 78), "o_via_smem", tmp_path, monkeypatch, both=True)
    pair, _, prob79, cfg79 = _seesaw_pair((75, 79), "pair_merge", tmp_path, monkeypatch, both=True)
    assert [got[st][1].fn.q_first for st in (72, 78)] == [False, True]
    assert [pair[st][1].fn.q_first for st in (75, 79)] == [False, True]
    for kernels, base, early in ((got, 72, 78), (pair, 75, 79)):
        a, b = (_kernel_sass(kernels[st][0], combine=False) for st in (base, early))
        for op in ("LDGSTS", "UTMALDG", "HGMMA."):
            assert b.count(op) == a.count(op), op
        for op in ("LDGDEPBAR", "DEPBAR"):  # one commit and one wait of Q's cp.async
            assert b.count(op) == a.count(op), op
        assert a.index("LDGSTS") > a.index("UTMALDG")
        assert b.index("LDGSTS") < b.index("LDGDEPBAR") < b.index("UTMALDG")
    assert plan.build_label(prob, cfg) == "seesaw step 78"
    assert plan.build_label(prob79, cfg79) == "seesaw step 79"


def test_mla_decode_sm90_seesaw_step80_waits_on_the_previous_grid_first(tmp_path, monkeypatch):
    """Step 80 (``--config step=80``): step 72 launched as a programmatic dependent of the
    kernel before it in the stream. Its split kernel's SASS has one unpredicated ACQBULK
    (griddepcontrol.wait), no branch before it jumps past it, and no global access of any kind
    (loads, stores, atomics, bulk copies, TMA; the descriptor prefetch aside) precedes it, so
    that nothing the previous kernel writes (Q, the page table) or reads (the workspace) is
    touched before that kernel has finished; 72 has none. The same HGMMAs and page TMAs, no
    spill. Built in session 31; no gain in session 33 (H100; the devlog, "Session 33")."""
    import re

    got, plan, prob, cfg = _seesaw_pair((72, 80), "o_via_smem", tmp_path, monkeypatch, both=True)
    assert got[80][1].fn.pdl_split and not got[72][1].fn.pdl_split
    a, b = (_kernel_sass(got[st][0], combine=False) for st in (72, 80))
    assert "ACQBULK" not in a and b.count("ACQBULK") == 1
    # (address, instruction) in SASS order; text order is execution order up to the wait only
    # if every thread reaches the wait: unpredicated, and no branch before it jumps past it
    ins = [(int(ad, 16), op.strip()) for ad, op in re.findall(r"/\*([0-9a-f]+)\*/\s+([^;]*);", b)]
    k = next(i for i, (_, op) in enumerate(ins) if "ACQBULK" in op)
    assert ins[k][1].startswith("ACQBULK"), ins[k]  # no @P / @UP predicate
    global_ops = re.compile(
        r"^(@!?U?P\S+\s+)?(LDG|LDGSTS|STG|LD\.|ST\.|ATOMG|ATOM|RED|UTMA|UBLKCP|CCTL)"
    )
    for _, op in ins[:k]:
        assert not global_ops.match(op) or "UTMACCTL" in op, op  # (the descriptor prefetch)
        if "BRA" in op:
            assert int(op.split()[-1], 16) <= ins[k][0], op
    assert any(global_ops.match(op) for _, op in ins[k + 1 :])
    for op in ("HGMMA.", "UTMALDG"):
        assert b.count(op) == a.count(op), op
    assert plan.build_label(prob, cfg) == "seesaw step 80"


def test_mla_decode_sm90_seesaw_steps81_82_let_the_next_grid_launch_at_their_start(
    tmp_path, monkeypatch
):
    """Steps 81 and 82 (``--config step=81`` / ``82``): 72 and 75 launched as
    programmatic dependents, as 80 is 72, and executing griddepcontrol.launch_dependents
    (SASS ``PREEXIT``) right after their griddepcontrol.wait (``ACQBULK``), before the first
    HGMMA, so that the next grid in the stream launches once every CTA of this one has started.
    Each split kernel has one trigger: 80 keeps its only one in the split epilogue (for the
    combine; the problem, h=128 (32, 4096), cuts its sequences), 81 and 82 drop that one. The
    same HGMMAs and page TMAs as their bases, no spill; 82 is a cluster-pair build. Built in
    session 32."""
    got, plan, prob, cfg = _seesaw_pair((80, 81), "pdl_split", tmp_path, monkeypatch, both=True)
    pair, _, prob82, cfg82 = _seesaw_pair((75, 82), "pair_merge", tmp_path, monkeypatch, both=True)
    assert [got[st][1].fn.pdl_trigger for st in (80, 81)] == [False, True]
    assert [pair[st][1].fn.pdl_trigger for st in (75, 82)] == [False, True]
    assert not pair[75][1].fn.pdl_split and pair[82][1].fn.pdl_split
    sass = {st: _kernel_sass(got[st][0], combine=False) for st in (80, 81)}
    sass.update({st: _kernel_sass(pair[st][0], combine=False) for st in (75, 82)})
    # 80: the wait at the top, its one trigger after the page loop (in the split epilogue)
    assert sass[80].count("ACQBULK") == 1 and sass[80].count("PREEXIT") == 1
    assert sass[80].index("PREEXIT") > sass[80].index("HGMMA.")
    for st in (81, 82):
        s = sass[st]
        assert s.count("ACQBULK") == 1 and s.count("PREEXIT") == 1, st
        assert s.index("ACQBULK") < s.index("PREEXIT") < s.index("HGMMA."), st
    assert "ACQBULK" not in sass[75]
    for base, new in ((80, 81), (75, 82)):
        for op in ("HGMMA.", "UTMALDG"):
            assert sass[new].count(op) == sass[base].count(op), (new, op)
    assert pair[82][1].meta["combine"] == "cluster pairs (dsmem)"
    assert plan.build_label(prob, cfg) == "seesaw step 81"
    assert plan.build_label(prob82, cfg82) == "seesaw step 82"


def test_mla_decode_sm90_seesaw_steps83_84_combine_q_first_and_the_early_trigger(
    tmp_path, monkeypatch
):
    """Steps 83 and 84 (``--config step=83`` / ``84``): 81 and 82 with Q's cp.async issued at
    a segment's start before the first pages' TMAs (78's and 79's change), so both session-31
    candidates can be timed together. In each split kernel: the wait (ACQBULK), then the
    trigger (PREEXIT), then Q's first LDGSTS and its commit, then the first page TMA, then the
    first HGMMA; no spill; 84 is a cluster-pair build. Built in session 32."""
    got, plan, prob, cfg = _seesaw_pair((81, 83), "pdl_trigger", tmp_path, monkeypatch, both=True)
    pair, _, prob84, cfg84 = _seesaw_pair((79, 84), "q_first", tmp_path, monkeypatch, both=True)
    assert got[83][1].fn.q_first and not got[81][1].fn.q_first
    assert pair[84][1].fn.pdl_trigger and not pair[79][1].fn.pdl_trigger
    assert pair[84][1].meta["combine"] == "cluster pairs (dsmem)"
    for st, kernels in ((83, got), (84, pair)):
        s = _kernel_sass(kernels[st][0], combine=False)
        order = [s.index(op) for op in ("ACQBULK", "PREEXIT", "LDGSTS", "LDGDEPBAR", "UTMALDG")]
        assert order == sorted(order) and order[-1] < s.index("HGMMA."), (st, order)
        assert s.count("ACQBULK") == 1 and s.count("PREEXIT") == 1, st
    assert plan.build_label(prob, cfg) == "seesaw step 83"
    assert plan.build_label(prob84, cfg84) == "seesaw step 84"


def test_mla_decode_sm90_seesaw_step85_takes_q_rope_columns_from_registers(tmp_path, monkeypatch):
    """Step 85 (``--config step=85``): step 72 with Q's 64 rope columns loaded
    from sQ into registers once per segment and S's four rope k-blocks issued as WGMMAs whose A
    operand is those registers: in the split kernel's SASS, 4 of every 36 QK HGMMA
    (64x64x16) sites take A from a register, where 72's take both operands by descriptor; the
    same HGMMA count and page TMAs, no spill. A 64x64x16 WGMMA with both operands in SMEM
    reads 128 bytes per tensor-pipe cycle, the SMEM pipe's width; FlashMLA keeps Q's rope
    columns in registers. Built in session 32; no gain in session 33 (H100): the QK phases are
    not SMEM-bound (the devlog, "Session 33")."""
    import re

    got, plan, prob, cfg = _seesaw_pair((72, 85), "o_via_smem", tmp_path, monkeypatch, both=True)
    assert got[85][1].fn.q_rope_regs and not got[72][1].fn.q_rope_regs
    sass = {st: _kernel_sass(got[st][0], combine=False) for st in (72, 85)}
    qk = {st: re.findall(r"HGMMA\.64x64x16\S*\s+R\d+, (\S+),", s) for st, s in sass.items()}
    reg_a = {st: sum(1 for a in ops if re.fullmatch(r"R\d+", a)) for st, ops in qk.items()}
    assert reg_a[72] == 0 and len(qk[72]) > 0
    assert reg_a[85] > 0 and reg_a[85] * 9 == len(qk[85]) == len(qk[72])
    # the rope k-blocks come last in S, so they accumulate (no `RZ, !UPT` zero-init form)
    rs_lines = re.findall(r"HGMMA\.64x64x16\S*\s+R\d+, R\d+,[^;]*;", sass[85])
    assert len(rs_lines) == reg_a[85] and not any("!UPT" in ln for ln in rs_lines), rs_lines
    for op in ("HGMMA.", "UTMALDG"):
        assert sass[85].count(op) == sass[72].count(op), op
    assert plan.build_label(prob, cfg) == "seesaw step 85"


def test_mla_decode_sm90_step_line_is_the_one_place_for_steps_on_61():
    """Every seesaw step from 61 on is one entry of ``STEP_LINE`` (its base and its changes),
    and the lists and flags of those builds are read from it: the bases form one tree rooted at
    61, every change name is one the kernel reads (a misspelt change would build its base
    silently), and the derived lists are the ones the steps were built and measured as
    (pair merge: 62 and its line; multicast: 63)."""
    import inspect
    import re

    from cute_mla.mla_decode_sm90 import mla_decode_sm90 as plan_mod
    from cute_mla.mla_decode_sm90 import seesaw

    line = plan_mod.STEP_LINE
    assert line[61] == (None, ())
    for step, (base, own) in line.items():
        if step != 61:
            assert base in line and base < step and own, (step, base, own)
            assert not set(own) & plan_mod.step_changes(base), (step, own)
        assert len(plan_mod.step_changes(step) & seesaw.V1L_REWAIT_CHANGES.keys()) <= 1, step
    read = set(re.findall(r'"(\w+)" (?:not )?in changes', inspect.getsource(seesaw)))
    read |= set(re.findall(r'"(\w+)" in step_changes', inspect.getsource(plan_mod)))
    read |= set(seesaw.V1L_REWAIT_CHANGES)
    used = {name for _, own in line.values() for name in own}
    assert used == read, (used - read, read - used)
    assert plan_mod.PAIR_MERGE_STEPS == (62, 68, 71, 75, 77, 79, 82, 84, 87)
    assert plan_mod.MULTICAST_STEPS == (63,)
    assert (*range(61, 69), *range(70, 89)) == seesaw.STEPS_ON_61
    assert not set(plan_mod.BF16_STEPS) & set(plan_mod.FP8_STEPS)
    assert len(set(seesaw.STEPS)) == len(seesaw.STEPS)
    assert set(seesaw.STEPS) == set(plan_mod.BF16_STEPS) | set(plan_mod.FP8_STEPS)
    assert plan_mod.step_changes(83) == {"tail_mask", "o_via_smem", "no_rewait_v0r", "pdl_split",
                                         "pdl_trigger", "q_first"}  # fmt: skip
    assert plan_mod.step_changes(39) == frozenset()
    for step in (72, 78, 79, 85):
        k = seesaw.MlaDecodeSm90Seesaw(1, 128, True, step=step)
        assert not k.rewait_v0r and k.tail_mask and k.o_via_smem and k.v1l_rewaits == 4, step
    assert seesaw.MlaDecodeSm90Seesaw(1, 128, True, step=77).v1l_rewaits == 1
    assert seesaw.MlaDecodeSm90Seesaw(1, 128, True, step=70).rewait_v0r


def test_mla_decode_sm90_seesaw_step86_skips_warpgroup0s_second_rescale_by_a_warp_vote(
    tmp_path, monkeypatch
):
    """Step 86 (``--config step=86``, 78 with ``lazy_rescale``; 87 is 79 so): the running row
    max is kept while a page's max passes it by at most RESCALE_SKIP_LOG2 (FlashAttention-4's
    conditional rescaling), and warpgroup 0 multiplies O_L by sc1 only in a warp whose vote
    says a row's max moved. In the split kernel's SASS: one VOTE.ANY, and still one
    WARPGROUP.ARRIVE per WGMMA batch: the same WARPGROUP, HGMMA and page-TMA counts as 78,
    not a WARPGROUP.DEPBAR after every HGMMA. (A vote-branch around the first O rescale, before
    PV0L or PV1R, made ptxas serialize every WGMMA: 96 WARPGROUP instructions against 18, a CPU
    compile of session 34; this pins that the kept placement does not.) 0 spills."""
    from cute_mla.mla_decode_sm90 import seesaw

    assert seesaw.RESCALE_SKIP_LOG2 == 8.0
    got, plan, prob, cfg = _seesaw_pair((78, 86), "lazy_rescale", tmp_path, monkeypatch)
    sass = {st: _kernel_sass(got[st][0], combine=False) for st in (78, 86)}
    assert sass[78].count("VOTE.ANY") == 0 and sass[86].count("VOTE.ANY") == 1
    for op in ("WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR", "HGMMA.", "UTMALDG"):
        assert sass[86].count(op) == sass[78].count(op), op
    # far fewer batch waits than WGMMAs: the WGMMAs are pipelined, not serialized
    assert sass[86].count("WARPGROUP.DEPBAR") * 4 < sass[86].count("HGMMA."), sass[86].count(
        "WARPGROUP.DEPBAR"
    )
    assert plan.build_label(prob, cfg) == "seesaw step 86"
    # step 88, 86 with the first O rescale under the vote too: every HGMMA waited for alone
    got88, *_ = _seesaw_pair((86, 88), "lazy_rescale_first", tmp_path, monkeypatch)
    sass88 = _kernel_sass(got88[88][0], combine=False)
    assert sass88.count("VOTE.ANY") == 2 and sass88.count("HGMMA.") == sass[86].count("HGMMA.")
    assert sass88.count("WARPGROUP.DEPBAR") >= sass88.count("HGMMA."), sass88.count(
        "WARPGROUP.DEPBAR"
    )
    assert seesaw.MlaDecodeSm90Seesaw(1, 128, True, step=87).lazy_rescale
    assert not seesaw.MlaDecodeSm90Seesaw(1, 128, True, step=79).lazy_rescale
