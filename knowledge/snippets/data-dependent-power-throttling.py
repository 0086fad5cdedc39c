"""Record the clocks, power and throttle reasons around every timing (host code with NVML).

Shown in knowledge/anti-patterns/data-dependent-power-throttling.md.
"""

# ruff: noqa: E402  (the shown region starts with its own imports)

SM = "generic"

# snippet:begin
import pynvml

SW_POWER_CAP = 0x4  # nvmlClocksEventReasonSwPowerCap
HW_SLOWDOWN = 0x8


def clocks_now(handle):
    return {
        "sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)),
    }


def timed(run_benchmark, handle, max_mhz):
    before = clocks_now(handle)
    stats = run_benchmark()  # inputs drawn like production data (randn), not integers
    after = clocks_now(handle)
    capped = (before["throttle_reasons"] | after["throttle_reasons"]) & (SW_POWER_CAP | HW_SLOWDOWN)
    low = min(before["sm_mhz"], after["sm_mhz"]) < 0.95 * max_mhz
    return {
        "timing": stats,
        "clocks": {"before": before, "after": after},
        "power_limited": bool(capped or low),
    }  # record it; never compare such rows blindly


# Comparisons: same input distribution on both sides; interleave A and B (ABAB...) instead of
# timing all of A then all of B; cool down (idle until the clock returns to max) before each
# config of an autotune at large sizes, or re-time the winner and the runner-up at the end.
# snippet:end


def compile_snippet():
    """CPU: the constants are NVML's, and timed() flags a capped or slow run (NVML faked)."""
    assert pynvml.nvmlClocksEventReasonSwPowerCap == SW_POWER_CAP
    assert pynvml.nvmlClocksEventReasonHwSlowdown == HW_SLOWDOWN
    global clocks_now
    real, states = (
        clocks_now,
        iter(
            [
                {"sm_mhz": 1980, "power_w": 300.0, "throttle_reasons": 0},
                {"sm_mhz": 1755, "power_w": 700.0, "throttle_reasons": SW_POWER_CAP},
            ]
        ),
    )
    clocks_now = lambda handle: next(states)  # noqa: E731
    try:
        rec = timed(lambda: {"median_us": 1.0}, None, 1980)
    finally:
        clocks_now = real
    assert rec["power_limited"] and rec["timing"] == {"median_us": 1.0}
    return "a power-capped run is flagged"


def check():
    """GPU: time a randn matmul with the real NVML readings."""
    import torch

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    max_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)

    def bench():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            a @ a
        end.record()
        torch.cuda.synchronize()
        return {"ms_per_matmul": start.elapsed_time(end) / 20}

    rec = timed(bench, handle, max_mhz)
    assert rec["clocks"]["before"]["sm_mhz"] > 0 and rec["timing"]["ms_per_matmul"] > 0
    return (
        f"{rec['timing']['ms_per_matmul']:.3f} ms, SM {rec['clocks']['before']['sm_mhz']}->"
        f"{rec['clocks']['after']['sm_mhz']} MHz (max {max_mhz}), "
        f"power limited: {rec['power_limited']}"
    )
