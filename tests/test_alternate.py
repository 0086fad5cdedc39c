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


class _Stats:
    def __init__(self, us):
        self.median_us, self.p10_us, self.p90_us = us, us - 1, us + 1

    def to_dict(self):
        return {"median_us": self.median_us}


class _Roof:
    tflops, gbps = 1.0, 2.0

    def to_dict(self):
        return {}


class _Problem:
    def __init__(self, label):
        self._label = label

    def label(self):
        return self._label


class _Check:
    def line(self):
        return "max abs err 1"


class _Plan:
    """What prepare_entry and time_entries use of a plan, without a GPU."""

    def __init__(self, ok=True):
        self.ok = ok

    def target(self):
        return "sm_90a"

    def run_check(self, problem, config, target, launches=1):
        self.launches = launches
        return self.ok, [_Check()], None

    def kernel(self, problem, config, target):
        return type("K", (), {"meta": None, "bind": lambda self, inputs: lambda: inputs})()

    def cold_l2_workspaces(self, problem, memory_share):
        return 3

    def prepare_inputs(self, problem, seed):
        return seed

    def roofline_for(self, problem, us, device_name):
        return _Roof()

    def record_base(self, kind, problem, config, target):
        return {"kind": kind, "problem": problem.label()}


def test_prepare_entry_checks_and_binds_workspaces():
    lines = []
    bad = alternate.prepare_entry(_Plan(ok=False), _Problem("b=1"), {}, label="x", log=lines.append)
    assert bad is None and lines == ["FAIL x b=1: max abs err 1"]
    plan = _Plan()
    entry = alternate.prepare_entry(plan, _Problem("b=1"), {}, label="x", log=lines.append)
    assert [f() for f in entry[5]] == [0, 1, 2]  # one launcher per cold-L2 workspace
    assert plan.launches == 2  # the check relaunches: what a kernel keeps between launches


def test_time_entries_of_different_problems_in_one_round(monkeypatch):
    """Entries of two problems (e.g. one kernel on the 16-bit and on the FP8 cache) are timed
    in one alternated run; each record names the others with their problems and shares the
    round id; an entry that cannot be captured is logged and left out."""
    from kernelplan import records
    from kernelplan.errors import KernelPlanError

    timed_labels = []

    def fake_alternate(launchers, **kw):
        timed_labels.append(list(launchers))
        return {
            "a bf16": _Stats(10.0),
            "a fp8": _Stats(6.0),
            "b bf16": KernelPlanError("CUDA graph capture failed: no"),
        }

    written = []
    monkeypatch.setattr(alternate, "alternate", fake_alternate)
    monkeypatch.setattr(alternate.devmod, "clocks_now", lambda: {"sm": 1980})
    monkeypatch.setattr(records, "write_record", lambda rec, d: written.append(rec) or None)
    bf16, fp8 = _Problem("t=4096"), _Problem("t=4096 kv_dtype=fp8")
    entries = {
        lab: alternate.prepare_entry(_Plan(), prob, {}, label=lab)
        for lab, prob in (("a bf16", bf16), ("a fp8", fp8), ("b bf16", bf16))
    }
    lines = []
    out = alternate.time_entries(entries, device_name="H200", log=lines.append)
    assert timed_labels == [["a bf16", "a fp8", "b bf16"]]
    assert lines == ["skip b bf16 t=4096: CUDA graph capture failed: no"]
    assert [(t.label, t.stats.median_us, t.record_name) for t in out] == [
        ("a bf16", 10.0, "-"),
        ("a fp8", 6.0, "-"),
    ]
    assert out[1].cells()["median_us"] == "6.0"
    assert [r["alternated_with"] for r in written] == [
        ["a fp8 (t=4096 kv_dtype=fp8)"],
        ["a bf16 (t=4096)"],
    ]
    assert written[0]["round_id"] == written[1]["round_id"]
    assert written[0]["check"] == {"passed": True}
    # one problem: the names are the labels alone
    monkeypatch.setattr(
        alternate, "alternate", lambda launchers, **kw: {k: _Stats(1.0) for k in launchers}
    )
    written.clear()
    one = {k: v for k, v in entries.items() if k != "a fp8"}
    alternate.time_entries(one, device_name="H200", checked=False)
    assert [r["alternated_with"] for r in written] == [["b bf16"], ["a bf16"]]
    assert written[0]["check"] is None
    assert alternate.time_entries({}, device_name=None) == []
