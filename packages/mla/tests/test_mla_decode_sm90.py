"""mla_decode_sm90 compiles for sm_90a on the CPU (0 spills, WGMMA in the SASS) and refuses
what it does not take with one line."""

import pytest

from kernelplan.testing import needs_sources


@needs_sources
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
    st = plan.run_static(prob, plan.default_config(prob))
    assert st["arch"] == "sm_90a" and st["cache"]["hit"] is False
    assert st["registers"] <= 255
    assert st["spill_store_bytes"] == 0 and st["spill_load_bytes"] == 0
    # 36 k-blocks of S = Q K^T (K = 576; 32 tokens per warpgroup since step 2) + 4 of
    # O += P V (64 tokens) per page
    assert st["mma_mnemonics"] == {"HGMMA.64x32x16.F32.BF16": 36, "HGMMA.64x256x16.F32.BF16": 4}
    # Q + 2 pages + P (64 x 64), bf16, + the row max and row sum exchange (2 x 64 fp32 each)
    assert st["dynamic_smem_bytes"] == (64 * 576 * 3 + 64 * 64) * 2 + 2 * 2 * 64 * 4
    # the default is the cp.async path (steps 0-2): no TMA
    assert st["opcodes"].get("UTMALDG", 0) == 0 and st["meta"]["kv_load"] == "cp.async"
    # the split kernel's combine (when the problem splits) has no spills either
    for f in st.get("functions", []):
        assert f["spill_store_bytes"] == 0 and f["spill_load_bytes"] == 0


@needs_sources
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
    cfg = plan.config(prob, overrides)
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
    assert plan.default_config(prob).loads == "cpasync"
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


def test_step3_device_script_dry_run():
    """scripts/device/mla-sm90-step3.sh with DRYRUN=1: every job's flags and config parse as
    on the device (problem, config, supports), the table's specs pass up to the GPU check."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = root / "scripts" / "device" / "mla-sm90-step3.sh"
    env = dict(os.environ, DRYRUN="1", PY=sys.executable)
    r = subprocess.run(
        ["bash", str(script), "check", "table", "ncu"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("0 job(s) not as expected") == 3
    assert "UNEXPECTED" not in r.stdout
    assert "ok b=2 s=1 t=16384 h=128 {'splits': 1, 'loads': 'tma'}" in r.stdout
