"""scripts/ncu_source_stalls.py on a small hand-made source page: the roles split at the
setmaxnreg instructions, the samples add up per role, the second kernel is ignored, and a file
that is not such an export fails in one line with exit status 2."""

import csv
import importlib.util
import lzma
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HDR = ["Address", "Source", "Warp Stall Sampling (All Samples)", "stall_long_sb", "stall_barrier",
       "stall_long_sb (Not Issued)"]  # fmt: skip


def _tool():
    spec = importlib.util.spec_from_file_location("nss", ROOT / "scripts" / "ncu_source_stalls.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write(path: Path, rows):
    with lzma.open(path, "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Kernel Name", "main_kernel"])
        w.writerow(HDR)
        w.writerows(rows)
        w.writerow(["Kernel Name", "combine_kernel"])
        w.writerow(HDR)
        w.writerow(["0x90", "LDG.E R1, [R2]", "999", "999", "0", "0"])


def test_roles_and_sums(tmp_path, capsys):
    f = tmp_path / "k.csv.xz"
    _write(f, [
        ["0x00", "S2R R0, SR_TID.X", "1", "0", "1", "0"],
        ["0x10", "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xd8", "0", "0", "0", "0"],
        ["0x20", "@!P1 BRA 0x40", "30", "30", "0", "0"],
        ["0x30", "BAR.SYNC 0x2, 0x100", "10", "0", "10", "0"],
        ["0x40", "USETMAXREG.DEALLOC.CTAPOOL 0x48", "0", "0", "0", "0"],
        ["0x50", "PRMT R2, R32, 0x1404, RZ", "20", "20", "0", "0"],
    ])  # fmt: skip
    tool = _tool()
    stalls, data = tool.read_source_page(f)
    assert stalls == ["stall_long_sb", "stall_barrier"]
    assert len(data) == 6  # the combine kernel's row is not read
    assert tool.roles(data) == ["common", "math", "math", "math", "producer", "producer"]
    assert tool.main([str(f), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "61 stall samples" in out
    assert "math          40 (65.6%)  long_sb 30, barrier 10" in out
    assert "producer      20 (32.8%)  long_sb 20" in out
    assert "LDG.E R1" not in out


def test_not_a_source_page(tmp_path, capsys):
    f = tmp_path / "x.csv"
    f.write_text("a,b\n1,2\n")
    assert _tool().main([str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no 'Warp Stall Sampling (All Samples)' column" in err and "\n" not in err


def test_thousands_separators_count_and_bad_counts_fail(tmp_path, capsys):
    """ncu may print ``1,234``: it counts as 1234; a count that is no number fails the file in
    one line instead of counting as 0."""
    good = tmp_path / "g.csv.xz"
    _write(good, [["0x00", "LDG.E R1, [R2]", "1,234", "1,200", "34", "0"]])
    assert _tool().main([str(good)]) == 0
    assert "1234 stall samples" in capsys.readouterr().out
    bad = tmp_path / "b.csv.xz"
    _write(bad, [["0x00", "LDG.E R1, [R2]", "n/a", "0", "0", "0"]])
    assert _tool().main([str(bad), str(good)]) == 2  # the good file is still reported
    cap = capsys.readouterr()
    assert "sample count 'n/a' is not a number" in cap.err and str(bad) in cap.err
    assert "1234 stall samples" in cap.out


def test_damaged_files_fail_in_one_line(tmp_path, capsys):
    """A truncated .xz (an interrupted copy), binary data named .csv, and a negative --top."""
    whole = tmp_path / "w.csv.xz"
    _write(whole, [["0x00", "LDG.E R1, [R2]", "5", "5", "0", "0"]])
    cut = tmp_path / "cut.csv.xz"
    cut.write_bytes(whole.read_bytes()[:-20])
    binary = tmp_path / "bin.csv"
    binary.write_bytes(whole.read_bytes())
    for f, needle in ((cut, "not a complete .xz file"), (binary, "not a text CSV")):
        assert _tool().main([str(f)]) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and str(f) in err and "\n" not in err
    with pytest.raises(SystemExit) as e:
        _tool().main([str(whole), "--top", "-1"])
    assert e.value.code == 2
    assert "give an integer >= 0" in capsys.readouterr().err
