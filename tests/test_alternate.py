"""The alternated comparison table refuses bad input in one line (the timing itself needs a
GPU: it runs on the H200, see scripts/device/mla-table.sh)."""

import pytest

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
    assert (
        written[0]["launch_order"]
        == written[1]["launch_order"]
        == {
            "design": "williams",
            "entries": ["a bf16 (t=4096)", "a fp8 (t=4096 kv_dtype=fp8)"],
        }
    )
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


def test_per_round_ratio_and_the_clock_note():
    """The per-round ratio is the median of each round's time over the reference's time in
    the same round: a step change of the clock that slows one entry and not the other shows
    in it as in neither median's ratio alone; a note names a busy SM clock range wider than
    5% of its top, and nothing else."""
    fast = [10.0] * 4 + [11.0] * 6  # the reference: barely follows the clock
    slow = [10.0] * 4 + [13.2] * 6  # follows it: 1.0x, then 1.2x per round
    assert alternate.per_round_ratio(slow, fast) == pytest.approx(1.2)
    assert alternate.per_round_ratio(fast, fast) == 1.0
    assert alternate.per_round_ratio(slow, fast[:-1]) is None  # rounds do not line up
    assert alternate.per_round_ratio([], []) is None
    stats = type("S", (), {"clocks_during": {"busy_sm_mhz": [1980, 1980, 1710]}})()
    assert alternate.sm_clock_span(stats) == (1710, 1980)
    assert alternate.sm_clock_span(type("S", (), {"clocks_during": None})()) is None
    note = alternate.clock_note("b=128 h=16", (1710, 1980))
    assert note.startswith("note: b=128 h=16: the SM clock moved between 1710 and 1980 MHz")
    assert alternate.clock_note("b=1", (1935, 1980)) is None  # within 5%
    assert alternate.clock_note("b=1", None) is None


def test_table_rows_per_round_and_clock_columns():
    """Each row: the ratio of medians and the per-round ratio to the fastest entry, and the
    busy SM clock range; '-' where an entry has no samples or no clocks."""

    class _S(_Stats):
        def __init__(self, us, samples, busy):
            super().__init__(us)
            self.samples_us = samples
            self.clocks_during = {"busy_sm_mhz": busy} if busy else None

    def timed(label, st):
        return alternate.Timed(label, None, _Problem("b=1"), st, _Roof(), None)

    rows = alternate.table_rows([
        timed("a", _S(12.0, [10.0, 12.0, 14.0], [1980, 1710])),
        timed("b", _S(10.0, [10.0, 10.0, 10.0], [1980, 1710])),
        timed("c", _S(20.0, [], None)),
    ])  # fmt: skip
    assert [(r["implementation"], r["x fastest"], r["x per round"], r["SM MHz"]) for r in rows] == [
        ("a", "1.20", "1.200", "1710-1980"),
        ("b", "1.00", "1.000", "1710-1980"),
        ("c", "2.00", "-", "-"),
    ]
    assert alternate.table_rows([]) == []
    # an entry whose config resolves per problem shows its build (session 29: the default of
    # mla_decode_sm90 builds 62 or 67 by the batch, and a table that did not say so hid that
    # one process launched the wrong build)
    built = alternate.Timed(
        "m", None, _Problem("b=1"), _S(10.0, [10.0], None), _Roof(), None, "seesaw step 67"
    )
    (row,) = alternate.table_rows([built])
    assert row["implementation"] == "m (seesaw step 67)"


def test_per_round_ratio_skips_rounds_it_cannot_read():
    """Rounds with a non-finite or non-positive time on either side are left out; a missing
    side is None, and so is a run with no round left."""
    nan = float("nan")
    assert alternate.per_round_ratio([2.0, nan, 6.0], [1.0, 1.0, 2.0]) == 2.5
    assert alternate.per_round_ratio([1.0, 2.0, 3.0], [0.0, 1.0, 1.0]) == 2.5
    assert alternate.per_round_ratio([1.0], None) is None
    assert alternate.per_round_ratio(None, [1.0]) is None
    assert alternate.per_round_ratio([nan], [1.0]) is None
    stats = type("S", (), {"clocks_during": {"busy_sm_mhz": [nan, 1710, 1980]}})()
    assert alternate.sm_clock_span(stats) == (1710, 1980)


def test_run_check_poisons_scratch_not_inputs_before_the_last_launch(monkeypatch):
    """``run_check(launches=2)`` poisons the outputs and the tensors of role ``scratch`` before
    the last launch, never an input: the attention backward's ``o`` and ``lse`` are inputs
    with ``init="empty"`` that ``prepare_inputs`` fills from the forward pass, and its check
    keeps a finite tolerance with two launches (it became inf while every ``init="empty"``
    tensor was poisoned). On the CPU: torch's SDPA math backward, the sync stubbed."""
    import torch

    from kernelplan.registry import load_plan_class

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    plan = load_plan_class("fmha", "sdpa_math_bwd")()
    orig = plan.prepare_inputs
    monkeypatch.setattr(
        plan, "prepare_inputs", lambda p, seed, device="cuda": orig(p, seed, device="cpu")
    )
    prob = plan.workload.problem_type(b=1, sq=64, h_q=2, d_qk=64, dtype="bfloat16")
    specs = plan.tensor_specs(prob)
    assert specs["o"].role == "input" and specs["o"].init == "empty"
    ok, results, _ = plan.run_check(prob, plan.default_config(prob), seed=1, launches=2)
    assert ok and all("inf" not in r.line() for r in results), [r.line() for r in results]
    mla = load_plan_class("mla", "mla_decode_sm90")()
    mspecs = mla.tensor_specs(mla.problem(b=2, t=100))
    assert mspecs["o_acc"].role == mspecs["lse_acc"].role == "scratch"


def test_round_orders_balance_position_and_predecessor():
    """Each round launches every implementation once; over one cycle of rounds each one is at
    each position equally often and right after each other one equally often (a Williams
    design), where the rotation used until session 25 kept every predecessor fixed."""
    from collections import Counter

    assert alternate.round_orders(0) == [[]] and alternate.round_orders(1) == [[0]]
    assert alternate.round_orders(4)[0] == [0, 1, 3, 2]
    for n in range(2, 9):
        rows = alternate.round_orders(n)
        assert len(rows) == (n if n % 2 == 0 else 2 * n)
        assert all(sorted(r) == list(range(n)) for r in rows)
        at = Counter((r.index(j), j) for r in rows for j in range(n))
        after = Counter((r[k], r[k + 1]) for r in rows for k in range(n - 1))
        assert len(at) == n * n and len(set(at.values())) == 1
        assert len(after) == n * (n - 1) and len(set(after.values())) == 1


def test_idle_ms_drains_and_sleeps_before_every_sample(monkeypatch):
    """``alternate(..., idle_ms=5)``: before each sample the GPU is drained, the host sleeps
    5 ms and a spin is queued ahead of the start event (so the launch's submission falls
    inside the spin, not between the events); the stats say ``idle_ms``. Without it nothing of
    that happens (back to back). torch.cuda is replaced: this is the order of calls, not a
    timing."""
    import torch

    from kernelplan import clocks

    calls = []

    class Event:
        def __init__(self, **kw):
            pass

        def record(self, stream=None):
            calls.append("record")

        def elapsed_time(self, other):
            return 0.05  # ms: 50 us per sample

    monkeypatch.setattr(torch.cuda, "current_stream", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: calls.append("sync"))
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: calls.append(("spin", cycles)))
    monkeypatch.setattr(alternate.time, "sleep", lambda s: calls.append(("sleep", s)))
    monkeypatch.setattr(clocks, "_nvml_reader", lambda: (None, None))
    launchers = {"a": [lambda: calls.append("a")], "b": [lambda: calls.append("b")]}

    out = alternate.alternate(launchers, warmup=0, reps=2, idle_ms=5)
    sample = ["sync", ("sleep", 0.005), ("spin", alternate.IDLE_LEAD_CYCLES), "record"]
    first = calls.index(("sleep", 0.005)) - 1
    assert calls[first : first + 4] == sample
    assert calls[first + 4] in ("a", "b") and calls[first + 5] == "record"  # launch, end event
    assert calls.count(("sleep", 0.005)) == 4  # 2 rounds x 2 entries
    assert out["a"].idle_ms == 5.0 and out["a"].to_dict()["idle_ms"] == 5.0
    assert out["a"].median_us == 50.0

    calls.clear()
    out = alternate.alternate(launchers, warmup=0, reps=2)
    assert not [c for c in calls if isinstance(c, tuple)] and out["b"].idle_ms == 0.0
