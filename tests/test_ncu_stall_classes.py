"""scripts/ncu_stall_classes.py on a small hand-made source page: every class rule (a)-(g)
once, the QK-phase items, the raw page's elapsed cycles and (h), the TRYWAIT window, and bad
input failing in one line with exit status 2."""

import csv
import importlib.util
import lzma
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HDR = ["Address", "Source", "Warp Stall Sampling (All Samples)", "stall_barrier", "stall_long_sb",
       "stall_wait", "stall_mio", "stall_wait (Not Issued)"]  # fmt: skip
# SASS, samples, barrier, long_sb, wait, mio; the loop is 1-13, its QK phase 1-8. Classes:
ROWS = [
    ("S2R R0, SR_TID.X", 5, 0, 0, 0, 0),  # 0: outside the loop (g)
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R3", 3, 0, 3, 0, 0),  # 1: (a)
    ("IMAD R5, R6, R7, RZ", 2, 0, 0, 2, 0),  # 2: (f)
    ("@!P0 BRA 0x70", 10, 0, 10, 0, 0),  # 3: its @!P0 BRA, (a)
    ("R2UR UR8, R10", 4, 0, 0, 4, 0),  # 4: (f), an R2UR
    ("WARPGROUP.ARRIVE", 6, 0, 0, 0, 0),  # 5: (e), 6 warpgroup_arrive
    ("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT", 7, 0, 0, 0, 2),  # 6: (e), first
    ("HGMMA.64x64x16.F32.BF16 R24, gdesc[UR12], R24", 8, 0, 0, 6, 1),  # 7: (e), other
    ("WARPGROUP.DEPBAR.LE gsb0, 0x0", 9, 0, 0, 9, 0),  # 8: (b)
    ("BAR.SYNC.DEFER_BLOCKING 0x5, 0x80", 4, 4, 0, 0, 0),  # 9: 128 threads after DEPBAR, (b)
    ("FMNMX R1, R2, R3, !PT", 6, 2, 0, 4, 0),  # 10: barrier 2 deferred by 9 (b), 4 (d)
    ("BAR.SYNC.DEFER_BLOCKING 0x1, 0x100", 5, 5, 0, 0, 0),  # 11: named barrier (c)
    ("MUFU.EX2 R4, R4", 3, 1, 0, 2, 0),  # 12: barrier 1 behind 11 (c), 2 (d)
    ("STSM.16.M88.4 [R5], R8", 2, 0, 0, 2, 0),  # 13: P publish (c)
    ("EXIT", 7, 0, 0, 7, 0),  # 14: outside the loop (g)
]
LOOP = ["--loop", "1", "13", "--qk", "1", "8", "--pages", "4"]  # 2048 / 4 = 512 cycles/sample


def _tool():
    spec = importlib.util.spec_from_file_location("nsc", ROOT / "scripts" / "ncu_stall_classes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _page(tmp_path: Path) -> Path:
    f = tmp_path / "k.csv.xz"
    with lzma.open(f, "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Kernel Name", "main_kernel"])
        w.writerow(HDR)
        for i, (sass, n, bar, lsb, wait, mio) in enumerate(ROWS):
            w.writerow([f"0x{16 * i:x}", sass, n, bar, lsb, wait, mio, 0])
        w.writerow(["Kernel Name", "combine_kernel"])  # not read
        w.writerow(HDR)
        w.writerow(["0x00", "@!P0 BRA 0x70", 99, 0, 99, 0, 0, 0])
    return f


def _raw(tmp_path: Path, samples: int = 81) -> Path:
    f = tmp_path / "k.raw.csv"
    names = ["ID", "Kernel Name", "device__attribute_multiprocessor_count",
             "sm__cycles_elapsed.avg", "smsp__pcsamp_interval_cycles",
             "smsp__pcsamp_sample_count"]  # fmt: skip
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerows([names, ["", "", "", "cycle", "cycle", ""],
                     ["0", "main_kernel", "2", "100,000.0", "2048", f"{samples:,}"]])  # fmt: skip
    return f


def _rows(out: str) -> dict[str, list[str]]:
    """Markdown table rows by their first cell (the first table's on a repeated name)."""
    rows = {}
    for line in out.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows.setdefault(cells[0], cells[1:])
    return rows


def test_classes_regions_and_qk_items(tmp_path, capsys):
    page, raw = _page(tmp_path), _raw(tmp_path)
    tool = _tool()
    assert tool.main([str(page), *LOOP, "--raw", str(raw)]) == 0
    out = capsys.readouterr().out
    assert "15 instructions, 81 samples" in out and "note:" not in out
    r = _rows(out)
    want = {"a": 13, "b": 15, "c": 8, "d": 6, "e": 21, "f": 6, "g": 12}
    assert {k: int(r[tool.NAMES[k]][0]) for k in want} == want
    assert r["(a) page data (mbarrier)"] == ["13", "16.0", "6,656.0"]  # 13 x 2048 / 4
    assert r["sampled"] == ["81", "", "41,472.0"]
    assert r["(h) no sample"][-1] == "8,528.0"  # 100,000 x 2 SMs / 4 pages - 41,472
    assert r["elapsed / page (100,000 x 2 SMs / 4)"][-1] == "50,000.0"
    assert "whole kernel: 17" in out  # warpgroup_arrive: 5 (S2R, no reason column) + 6 + 5 + 1
    # regions: QK 1-8, the rest of the loop 9-13, start 0, epilogue 14
    assert r["QK phases"][:3] == ["1-8", "49", "25,088.0"]
    assert r["rest of the loop"][1] == "20" and r["epilogue"][1] == "7"
    assert r["segment start"][1] == "5"
    # QK items
    assert r["- on the `@!P BRA`s"] == ["1", "10", "5,120.0"]
    assert r["- on `WARPGROUP.DEPBAR`"] == ["1", "9", "4,608.0"]
    assert r["- `WARPGROUP.ARRIVE`"][:2] == ["1", "6"]
    assert r["- first HGMMA after each ARRIVE (`warpgroup_arrive`)"][:2] == ["1", "7 (5)"]
    assert r["- other HGMMAs (`wait`)"][:2] == ["1", "8 (6)"]
    assert r["- `mio` reason on the HGMMAs and ARRIVEs"][1] == "3"
    assert r["- `R2UR`"][:2] == ["1", "4"]


def test_trywait_window_and_start_ranges(tmp_path, capsys):
    """A BRA beyond the window is (f); --start moves loop code to the segment start only."""
    page = _page(tmp_path)
    args = [str(page), *LOOP, "--trywait-window", "1", "--start", "12", "13"]
    assert _tool().main(args) == 0
    r = _rows(capsys.readouterr().out)
    assert r["(a) page data (mbarrier)"][0] == "3" and r["(f) TMA issue / other"][0] == "16"
    assert r["(c) named barriers + P publish"][0] == "8"  # classes unchanged by --start
    assert r["segment start"][1] == "10" and r["rest of the loop"][1] == "15"
    assert "(h) no sample" not in r  # no raw page


def test_sample_count_mismatch_is_noted(tmp_path, capsys):
    assert _tool().main([str(_page(tmp_path)), *LOOP, "--raw", str(_raw(tmp_path, 80))]) == 0
    assert "note: the source page has 81 samples, raw row 0 80" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--loop", "13", "1", "--pages", "4"], "--loop 13 1: give 0 <= FIRST <= LAST < 15"),
        (["--loop", "1", "15", "--pages", "4"], "--loop 1 15: give 0 <= FIRST <= LAST < 15"),
        ([*LOOP, "--qk", "0", "3"], "--qk 0 3: give FIRST <= LAST inside the loop 1-13"),
        ([*LOOP, "--start", "8", "9"], "--start 8 9 overlaps --qk 1 8"),
        (["--loop", "1", "x", "--pages", "4"], "give an integer >= 0"),
        (["--loop", "1", "13", "--pages", "0"], "give a number > 0"),
    ],
)
def test_bad_ranges_exit_2_in_one_line(tmp_path, capsys, args, needle):
    try:
        status = _tool().main([str(_page(tmp_path)), *args])
    except SystemExit as e:  # argparse's own checks (our one-line error())
        status = e.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and "Traceback" not in err


def test_missing_and_foreign_files_exit_2(tmp_path, capsys):
    tool = _tool()
    assert tool.main([str(tmp_path / "absent.csv.xz"), *LOOP]) == 2
    err = capsys.readouterr().err.strip()
    assert "absent.csv.xz: No such file or directory" in err and "\n" not in err
    page = _page(tmp_path)
    assert tool.main([str(page), *LOOP, "--raw", str(page)]) == 2  # a source page as raw
    err = capsys.readouterr().err.strip()
    assert "no smsp__pcsamp_sample_count column" in err and "\n" not in err
