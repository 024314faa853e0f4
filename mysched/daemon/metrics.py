"""Prometheus metrics of the daemon, on an injectable registry.

The daemon calls a few methods with plain values (no planner types cross this boundary);
`serve` exposes the registry over HTTP, bound to loopback by default.
"""

from __future__ import annotations

import contextlib
import platform
import time
from typing import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server

from mysched import __version__
from mysched.errors import ServerError, UsageError

CYCLE_BUCKETS = (.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
CALL_BUCKETS = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)


class Metrics:
    """Every series mysched exports; create one per registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry if registry is not None else CollectorRegistry()
        self.cycle_duration = Histogram("mysched_cycle_duration_seconds", "Wall time of a scheduling cycle",
                                        buckets=CYCLE_BUCKETS, registry=r)
        self.cycles = Counter("mysched_cycles_total", "Scheduling cycles by result", ["result"], registry=r)
        self.last_success = Gauge("mysched_last_successful_cycle_timestamp_seconds",
                                  "Unix time of the last cycle that completed", registry=r)
        self.starts = Counter("mysched_jobs_started_total", "Jobs started", ["vo", "reason"], registry=r)
        self.start_failures = Counter("mysched_job_start_failures_total", "Job starts that failed",
                                      ["reason"], registry=r)
        self.running = Gauge("mysched_running_jobs", "Running jobs by VO", ["vo"], registry=r)
        self.queued = Gauge("mysched_queued_jobs", "Queued jobs by VO", ["vo"], registry=r)
        self.used_by_vo = Gauge("mysched_used_slots", "Slots in use by VO", ["vo"], registry=r)
        self.slots_total = Gauge("mysched_farm_slots", "Usable slots of the farm", registry=r)
        self.slots_used = Gauge("mysched_farm_used_slots", "Slots in use on the farm", registry=r)
        self.share_target = Gauge("mysched_share_target_ratio", "Configured share by VO (fraction of slots)",
                                  ["vo"], registry=r)
        self.share_achieved = Gauge("mysched_share_achieved_ratio", "Slots used by VO as a fraction of the farm",
                                    ["vo"], registry=r)
        self.pending = Gauge("mysched_pending_jobs", "Jobs left waiting by the last cycle, by reason", ["reason"],
                             registry=r)
        self.call_duration = Histogram("mysched_server_call_duration_seconds", "Batch-server call latency",
                                       ["call"], buckets=CALL_BUCKETS, registry=r)
        self.call_errors = Counter("mysched_server_call_errors_total", "Batch-server call errors", ["call"],
                                   registry=r)
        self.reloads = Counter("mysched_config_reloads_total", "Configuration reloads by result", ["result"],
                               registry=r)
        self.build = Info("mysched_build", "Version of mysched and Python", registry=r)
        self.build.info({"version": __version__, "python": platform.python_version()})
        for result in ("ok", "error", "partial", "dry-run"):
            self.cycles.labels(result)
        for result in ("ok", "error"):
            self.reloads.labels(result)

    def observe_cycle(self, duration_s: float, result: str) -> None:
        self.cycle_duration.observe(duration_s)
        self.cycles.labels(result).inc()
        if result != "error":
            self.last_success.set(time.time())

    def record_start(self, vo: str, reason: str) -> None:
        self.starts.labels(vo, reason).inc()

    def record_start_failure(self, reason: str) -> None:
        self.start_failures.labels(reason).inc()

    def reload(self, result: str) -> None:
        self.reloads.labels(result).inc()

    def set_farm_state(self, *, running_by_vo: Mapping[str, int], queued_by_vo: Mapping[str, int],
                       used_slots_by_vo: Mapping[str, int], total_slots: int, used_slots: int,
                       share_target_by_vo: Mapping[str, float], share_achieved_by_vo: Mapping[str, float],
                       pending_by_reason: Mapping[str, int]) -> None:
        """Replace the per-VO and per-reason gauges: series that disappeared are dropped."""
        for gauge, values in ((self.running, running_by_vo), (self.queued, queued_by_vo),
                              (self.used_by_vo, used_slots_by_vo), (self.share_target, share_target_by_vo),
                              (self.share_achieved, share_achieved_by_vo), (self.pending, pending_by_reason)):
            gauge.clear()
            for label, v in values.items():
                gauge.labels(label).set(v)
        self.slots_total.set(total_slots)
        self.slots_used.set(used_slots)

    @contextlib.contextmanager
    def time_call(self, call: str) -> Iterator[None]:
        """Time a batch-server call; count it as an error if it raises a `ServerError`."""
        t0 = time.perf_counter()
        try:
            yield
        except ServerError:
            self.call_errors.labels(call).inc()
            raise
        finally:
            self.call_duration.labels(call).observe(time.perf_counter() - t0)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[::1]:PORT`` -> (host, port); UsageError otherwise."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"metrics address must be HOST:PORT, got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def serve(metrics: Metrics, address: str = "127.0.0.1:9720") -> tuple[str, int]:
    """Serve /metrics on a background thread; returns the bound (host, port)."""
    host, port = parse_address(address)
    try:
        server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise UsageError(f"cannot serve metrics on {address}: {exc.strerror or exc}") from None
    return host, server.server_port
