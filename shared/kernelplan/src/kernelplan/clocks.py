"""GPU clocks during a timed run: an NVML sampler thread and the throttle flag.

Reads only: nothing here changes a clock (``scripts/lock-gpu-clock.sh`` does that, on machines
one owns). ``ClockSampler`` samples the SM and memory clocks and NVML's clock-event
("throttle") reasons every ``interval_s`` while the timed region runs; ``throttle_flag`` says
whether the SM clock fell below ``THROTTLE_FRACTION`` of its maximum while the GPU was busy.

Samples NVML marks as "GPU idle" (reason bit 0x1) are left out of the flag, and so is the clock
read before a run (a GPU that idles at 345 MHz before the first launch is not throttled). Set
``KERNELPLAN_CLOCK_SAMPLER=0`` to switch the sampler off (the ncu child does, since ncu
serialises and replays the kernels anyway).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Flag a run whose busy SM clock fell below this fraction of the device's maximum SM clock.
THROTTLE_FRACTION = 0.75

#: ``nvmlDeviceGetCurrentClocksEventReasons`` bits (nvml.h, ``nvmlClocksEventReason*``).
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
GPU_IDLE = 0x1

SAMPLER_ENV = "KERNELPLAN_CLOCK_SAMPLER"


def decode_reasons(mask: int | None) -> list[str]:
    """NVML clock-event reason bits -> names (``0x4`` -> ``["sw_power_cap"]``)."""
    if not mask:
        return []
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    if rest:
        names.append(hex(rest))
    return names


def _nvml_reader() -> tuple[Callable[[], dict[str, Any]] | None, int | None]:
    """A cheap reader of (SM MHz, memory MHz, reasons) for the current device, and its max SM
    clock; (None, None) where NVML is unavailable."""
    try:
        from . import device as devmod

        idx = 0
        try:
            import torch

            if torch.cuda.is_available():
                idx = torch.cuda.current_device()
        except ImportError:
            pass
        nv, h = devmod._nvml_handle(idx)
        if h is None:
            return None, None
        max_sm = int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
    except Exception:
        return None, None

    def read() -> dict[str, Any]:
        out = {
            "t": time.perf_counter(),
            "sm_mhz": int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "mem_mhz": int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
        }
        if reasons_fn is not None:
            out["throttle_reasons"] = int(reasons_fn(h))
        return out

    return read, max_sm


class ClockSampler:
    """Context manager: samples clocks on a background thread while the block runs.

    Args:
        interval_s: time between samples (NVML reads cost tens of microseconds; the thread
            sleeps in between and holds the GIL only while it reads).
        reader: returns one sample dict (``sm_mhz``, ``mem_mhz``, ``throttle_reasons``);
            default: NVML for the current device. Injectable for tests.
        max_sm_mhz: the device's maximum SM clock (default: from NVML).

    After the block, :meth:`summary` holds the statistics (empty dict when disabled).
    """

    def __init__(
        self,
        interval_s: float = 0.01,
        reader: Callable[[], dict[str, Any]] | None = None,
        max_sm_mhz: int | None = None,
    ):
        self.interval_s = interval_s
        self.samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if reader is None and os.environ.get(SAMPLER_ENV, "1") != "0":
            reader, found_max = _nvml_reader()
            max_sm_mhz = max_sm_mhz or found_max
        self.reader = reader
        self.max_sm_mhz = max_sm_mhz

    def _sample(self) -> None:
        # a failed read is a missing sample, never a failed run
        with contextlib.suppress(Exception):
            self.samples.append(self.reader())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> ClockSampler:
        if self.reader is not None:
            self._sample()
            self._thread = threading.Thread(target=self._loop, name="clock-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=1.0)
            self._sample()

    def summary(self) -> dict[str, Any]:
        return summarize_samples(self.samples, self.max_sm_mhz)


def summarize_samples(
    samples: Sequence[Mapping[str, Any]], max_sm_mhz: int | None = None
) -> dict[str, Any]:
    """Min/median/max of the SM and memory clocks over the samples, the OR of the reasons, and
    the busy samples (not marked idle) below ``THROTTLE_FRACTION`` of ``max_sm_mhz``."""
    if not samples:
        return {}
    sm = [s["sm_mhz"] for s in samples if s.get("sm_mhz") is not None]
    mem = [s["mem_mhz"] for s in samples if s.get("mem_mhz") is not None]
    mask = 0
    for s in samples:
        mask |= int(s.get("throttle_reasons") or 0)
    busy = [s["sm_mhz"] for s in samples if not int(s.get("throttle_reasons") or 0) & GPU_IDLE]
    out: dict[str, Any] = {
        "n": len(samples),
        "sm_mhz_min": min(sm) if sm else None,
        "sm_mhz_median": statistics.median(sm) if sm else None,
        "sm_mhz_max": max(sm) if sm else None,
        "mem_mhz_min": min(mem) if mem else None,
        "mem_mhz_median": statistics.median(mem) if mem else None,
        "busy_sm_mhz": busy,
        "throttle_reasons_any": mask,
        "reasons": decode_reasons(mask),
        "max_sm_mhz": max_sm_mhz,
    }
    if max_sm_mhz and busy:
        limit = THROTTLE_FRACTION * max_sm_mhz
        out["busy_below_threshold"] = sum(1 for v in busy if v < limit)
    return out


def throttle_flag(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    during: Mapping[str, Any] | None,
    max_sm_mhz: int | None,
    fraction: float = THROTTLE_FRACTION,
) -> dict[str, Any]:
    """Whether the SM clock fell below ``fraction`` x max while the GPU was busy.

    Uses the samples taken during the timed region (``during``, from :class:`ClockSampler`)
    and the clock read right after it (``after``); ``before`` is reported but not judged (an
    idle GPU clocks down). Returns a dict for the record: ``throttled`` (True, False, or None
    when nothing was measured), ``min_busy_sm_mhz``, ``threshold_mhz``, ``reasons`` and, when
    throttled, a one-line ``message``.
    """
    busy: list[float] = list((during or {}).get("busy_sm_mhz") or [])
    mask = int((during or {}).get("throttle_reasons_any") or 0)
    if after and after.get("sm_mhz") is not None:
        a_mask = int(after.get("throttle_reasons") or 0)
        if not a_mask & GPU_IDLE:
            busy.append(after["sm_mhz"])
        mask |= a_mask
    mask &= ~GPU_IDLE
    out: dict[str, Any] = {
        "throttled": None,
        "fraction": fraction,
        "max_sm_mhz": max_sm_mhz,
        "threshold_mhz": round(fraction * max_sm_mhz, 1) if max_sm_mhz else None,
        "min_busy_sm_mhz": min(busy) if busy else None,
        "sm_mhz_before": (before or {}).get("sm_mhz"),
        "samples": len(busy),
        "reasons": decode_reasons(mask),
    }
    if not busy or not max_sm_mhz:
        out["message"] = "clocks not measured (NVML unavailable)"
        return out
    low = min(busy)
    out["throttled"] = low < fraction * max_sm_mhz
    if out["throttled"]:
        why = ", ".join(out["reasons"]) or "no NVML reason given"
        out["message"] = (
            f"SM clock fell to {low:.0f} MHz during the run, below {100 * fraction:.0f}% of "
            f"its {max_sm_mhz} MHz maximum ({why}): the time reflects a throttled GPU"
        )
    return out


def record_throttle(
    rec: dict[str, Any],
    device: Any,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    stats: Any,
    log: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Put :func:`throttle_flag` into a benchmark record as ``rec["throttle"]`` and print a
    warning line when the run was throttled. ``stats``: the run's ``TimingStats``."""
    max_sm = ((getattr(device, "clocks_max", None) or {}) if device else {}).get("sm_mhz")
    thr = throttle_flag(before, after, getattr(stats, "clocks_during", None), max_sm)
    rec["throttle"] = thr
    if thr.get("throttled"):
        log(f"warning: {rec.get('kernel', '?')}: {thr['message']}")
    return thr
