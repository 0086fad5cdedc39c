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
    # 36 k-blocks of S = Q K^T (K = 576) + 4 of O += P V (64 tokens) per page
    assert sum(n for m, n in st["opcodes"].items() if m.startswith("HGMMA")) == 40
    assert st["dynamic_smem_bytes"] == (64 * 576 * 3) * 2  # Q + 2 pages, bf16


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
