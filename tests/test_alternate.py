"""The alternated comparison table refuses bad input in one line (the timing itself needs a
GPU: it runs on the H200, see scripts/device/mla-table.sh)."""

from kernelplan import alternate


def test_table_without_gpu_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(alternate.devmod, "current_device", lambda: None)
    rc = alternate.main(["mla_decode", "--no-record"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err == ["error: the comparison table needs a CUDA GPU; none is visible"]


def test_unknown_workload_is_one_line(capsys):
    rc = alternate.main(["no_such_workload", "--no-record"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "unknown workload 'no_such_workload'" in err[0]
