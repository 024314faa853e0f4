"""Prometheus metrics of the daemon, on an injectable registry.

The daemon talks to a `CycleMetrics` (a Protocol) with plain values -- no planner types cross
this boundary. `Metrics` is the Prometheus one, `NullMetrics` the one for a daemon without
an endpoint, and `Guarded` wraps either so that a failing metric is logged once and never
breaks scheduling. `serve` exposes the registry over HTTP, bound to loopback by default.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import time
from typing import ContextManager, Iterator, Mapping, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server

from mysched import __version__
from mysched.config.values import parse_address as _parse_address
from mysched.errors import ServerError, UsageError
from mysched.core.plan import Plan, Start

log = logging.getLogger("mysched")

CYCLE_BUCKETS = (.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
CALL_BUCKETS = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)
POOL_FIGURES = ("total", "free", "guaranteed", "owner_use", "loan_use", "other_use")
CONSUMER_FIGURES = ("guaranteed", "allocated", "owner_use", "loaned", "pending", "owed")
PHASES = ("read", "history", "plan", "start", "record", "publish")
"""The phases of a cycle, in order (see `mysched.daemon.cycle`)."""


class CycleMetrics(Protocol):
    """What the daemon reports after each cycle, start and reload."""

    def observe_cycle(self, duration_s: float, result: str) -> None: ...
    def observe_phases(self, phases: Mapping[str, float]) -> None: ...
    def record_start(self, vo: str, reason: str) -> None: ...
    def record_start_failure(self, reason: str) -> None: ...
    def cycle_error(self, reason: str) -> None: ...
    def history_write_error(self) -> None: ...
    def reload(self, result: str) -> None: ...
    def set_role(self, leader: bool) -> None: ...
    def set_loads(self, sources: Mapping[str, tuple[float | None, float | None, bool, bool]],
                  factors: Mapping[str, float]) -> None: ...
    def set_farm_state(self, *, running_by_vo: Mapping[str, int], queued_by_vo: Mapping[str, int],
                       used_slots_by_vo: Mapping[str, int], total_slots: int, used_slots: int,
                       share_target_by_vo: Mapping[str, float], share_achieved_by_vo: Mapping[str, float],
                       pending_by_reason: Mapping[str, int], nodes_load_skipped: int = 0,
                       draining: int = 0, draining_idle: int = 0, reservations: int = 0,
                       pools: Mapping[str, dict] | None = None) -> None: ...
    def time_call(self, call: str) -> ContextManager[None]: ...


class NullMetrics:
    """Metrics that go nowhere (no endpoint configured)."""

    def observe_cycle(self, duration_s: float, result: str) -> None:
        pass

    def observe_phases(self, phases: Mapping[str, float]) -> None:
        pass

    def record_start(self, vo: str, reason: str) -> None:
        pass

    def record_start_failure(self, reason: str) -> None:
        pass

    def cycle_error(self, reason: str) -> None:
        pass

    def history_write_error(self) -> None:
        pass

    def reload(self, result: str) -> None:
        pass

    def set_role(self, leader: bool) -> None:
        pass

    def set_loads(self, sources: Mapping[str, tuple[float | None, float | None, bool, bool]],
                  factors: Mapping[str, float]) -> None:
        pass

    def set_farm_state(self, **figures: object) -> None:
        pass

    def time_call(self, call: str) -> ContextManager[None]:
        return contextlib.nullcontext()


class Guarded:
    """A `CycleMetrics` whose failures are logged (with traceback, once per method) and
    swallowed: metrics must never break scheduling."""

    def __init__(self, inner: CycleMetrics) -> None:
        self.inner = inner
        self._failed: set[str] = set()

    def _guard(self, what: str, fn, *args, **kw) -> None:  # noqa: ANN001 - a bound method of `inner`
        try:
            fn(*args, **kw)
        except Exception:  # noqa: BLE001
            self._failure(what)

    def _failure(self, what: str) -> None:
        """Log the exception being handled, once per method."""
        if what not in self._failed:
            self._failed.add(what)
            log.warning("metrics: %s failed (logged once; scheduling goes on)", what, exc_info=True)

    def observe_cycle(self, duration_s: float, result: str) -> None:
        self._guard("observe_cycle", self.inner.observe_cycle, duration_s, result)

    def observe_phases(self, phases: Mapping[str, float]) -> None:
        self._guard("observe_phases", self.inner.observe_phases, phases)

    def record_start(self, vo: str, reason: str) -> None:
        self._guard("record_start", self.inner.record_start, vo, reason)

    def record_start_failure(self, reason: str) -> None:
        self._guard("record_start_failure", self.inner.record_start_failure, reason)

    def cycle_error(self, reason: str) -> None:
        self._guard("cycle_error", self.inner.cycle_error, reason)

    def history_write_error(self) -> None:
        self._guard("history_write_error", self.inner.history_write_error)

    def reload(self, result: str) -> None:
        self._guard("reload", self.inner.reload, result)

    def set_role(self, leader: bool) -> None:
        self._guard("set_role", self.inner.set_role, leader)

    def set_loads(self, sources: Mapping[str, tuple[float | None, float | None, bool, bool]],
                  factors: Mapping[str, float]) -> None:
        self._guard("set_loads", self.inner.set_loads, sources, factors)

    def set_farm_state(self, **figures: object) -> None:
        self._guard("set_farm_state", self.inner.set_farm_state, **figures)

    def time_call(self, call: str) -> ContextManager[None]:
        # The timer wraps a server call: its own failure must not mask or cause that call's.
        try:
            return self.inner.time_call(call)
        except Exception:  # noqa: BLE001
            self._failure("time_call")
            return contextlib.nullcontext()


class Metrics:
    """Every series mysched exports; create one per registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry if registry is not None else CollectorRegistry()
        self.cycle_duration = Histogram("mysched_cycle_duration_seconds", "Wall time of a scheduling cycle",
                                        buckets=CYCLE_BUCKETS, registry=r)
        self.phase_duration = Histogram("mysched_cycle_phase_seconds", "Wall time of each phase of a completed "
                                        "cycle (read, history, plan, start, record, publish; they add up to "
                                        "mysched_cycle_duration_seconds)", ["phase"], buckets=CYCLE_BUCKETS,
                                        registry=r)
        for phase in PHASES:
            self.phase_duration.labels(phase)
        self.cycles = Counter("mysched_cycles_total", "Scheduling cycles by result", ["result"], registry=r)
        self.history_errors = Counter("mysched_history_write_errors_total",
                                      "Failed writes to the history store (finished jobs, cycles, accounting)", registry=r)
        self.cycle_errors = Counter("mysched_cycle_errors_total",
                                    "Cycles that failed, by reason (server, store, internal)", ["reason"], registry=r)
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
        self.leader = Gauge("mysched_leader", "1 while this daemon leads (starts jobs), 0 while it stands by",
                            registry=r)
        self.role_changes = Counter("mysched_leadership_changes_total",
                                    "Times this daemon became leader or standby", ["role"], registry=r)
        for role in ("leader", "standby"):
            self.role_changes.labels(role)
        self.load_value = Gauge("mysched_load_value", "Latest good value of an external load source",
                                ["source"], registry=r)
        self.load_age = Gauge("mysched_load_age_seconds", "Age of a load source's latest good value",
                              ["source"], registry=r)
        self.load_stale = Gauge("mysched_load_stale", "1 while a load source's value is stale (or missing)",
                                ["source"], registry=r)
        self.load_failing = Gauge("mysched_load_failing", "1 while a load source's last read failed (its last good "
                                  "value is kept until stale)", ["source"], registry=r)
        self.throttle = Gauge("mysched_load_throttle_factor",
                              "Fraction of max_running a load rule leaves its VOs, groups and queues (1: open)",
                              ["rule"], registry=r)
        self.draining = Gauge("mysched_draining_nodes", "Nodes in the multi-core partition (draining or drained)",
                              registry=r)
        self.draining_idle = Gauge("mysched_draining_idle_slots", "Free slots on draining or reserved nodes "
                                   "(integrate over time for the idle slot-seconds they cost)", registry=r)
        self.reservations = Gauge("mysched_reservations", "Reservations held for waiting jobs", registry=r)
        self.pool = Gauge("mysched_pool_packages", "Package guarantee pools after the last cycle: total, free, "
                          "guaranteed, owner_use, loan_use, other_use packages; held_hosts; overcommitted (1/0)",
                          ["pool", "figure"], registry=r)
        self.pool_consumer = Gauge("mysched_pool_consumer_packages", "Per pool and consumer (kind:name): guaranteed, "
                                   "allocated, owner_use, loaned, pending and owed packages", ["pool", "consumer",
                                                                                                "figure"], registry=r)
        self.nodes_overloaded = Gauge("mysched_nodes_load_skipped",
                                      "Nodes skipped last cycle for the load or free memory pbs_mom reports",
                                      registry=r)
        self.build = Info("mysched_build", "Version of mysched and Python", registry=r)
        self.build.info({"version": __version__, "python": platform.python_version()})
        for result in ("ok", "error", "partial", "dry-run", "crash", "standby"):
            self.cycles.labels(result)
        for reason in ("server", "store", "internal"):
            self.cycle_errors.labels(reason)
        for result in ("ok", "error"):
            self.reloads.labels(result)

    def observe_cycle(self, duration_s: float, result: str) -> None:
        self.cycle_duration.observe(duration_s)
        self.cycles.labels(result).inc()
        if result not in ("error", "crash"):
            self.last_success.set(time.time())

    def observe_phases(self, phases: Mapping[str, float]) -> None:
        for phase, seconds in phases.items():
            self.phase_duration.labels(phase).observe(seconds)

    def record_start(self, vo: str, reason: str) -> None:
        self.starts.labels(vo, reason).inc()

    def record_start_failure(self, reason: str) -> None:
        self.start_failures.labels(reason).inc()

    def cycle_error(self, reason: str) -> None:
        self.cycle_errors.labels(reason).inc()

    def history_write_error(self) -> None:
        self.history_errors.inc()

    def reload(self, result: str) -> None:
        self.reloads.labels(result).inc()

    def set_loads(self, sources: Mapping[str, tuple[float | None, float | None, bool, bool]],
                  factors: Mapping[str, float]) -> None:
        for g in (self.load_value, self.load_age, self.load_stale, self.load_failing, self.throttle):
            g.clear()
        for name, (value, age, stale, failing) in sources.items():
            if value is not None:
                self.load_value.labels(name).set(value)
            if age is not None:
                self.load_age.labels(name).set(age)
            self.load_stale.labels(name).set(1 if stale else 0)
            self.load_failing.labels(name).set(1 if failing else 0)
        for rule, f in factors.items():
            self.throttle.labels(rule).set(f)

    def set_role(self, leader: bool) -> None:
        self.leader.set(1 if leader else 0)
        self.role_changes.labels("leader" if leader else "standby").inc()

    def set_farm_state(self, *, running_by_vo: Mapping[str, int], queued_by_vo: Mapping[str, int],
                       used_slots_by_vo: Mapping[str, int], total_slots: int, used_slots: int,
                       share_target_by_vo: Mapping[str, float], share_achieved_by_vo: Mapping[str, float],
                       pending_by_reason: Mapping[str, int], nodes_load_skipped: int = 0,
                       draining: int = 0, draining_idle: int = 0, reservations: int = 0,
                       pools: Mapping[str, dict] | None = None) -> None:
        """Replace the per-VO and per-reason gauges: series that disappeared are dropped."""
        for gauge, values in ((self.running, running_by_vo), (self.queued, queued_by_vo),
                              (self.used_by_vo, used_slots_by_vo), (self.share_target, share_target_by_vo),
                              (self.share_achieved, share_achieved_by_vo), (self.pending, pending_by_reason)):
            gauge.clear()
            for label, v in values.items():
                gauge.labels(label).set(v)
        self.slots_total.set(total_slots)
        self.slots_used.set(used_slots)
        self.nodes_overloaded.set(nodes_load_skipped)
        self.draining.set(draining)
        self.draining_idle.set(draining_idle)
        self.reservations.set(reservations)
        self.pool.clear()
        self.pool_consumer.clear()
        for name, st in (pools or {}).items():
            for fig in POOL_FIGURES:
                self.pool.labels(name, fig).set(st[fig])
            self.pool.labels(name, "held_hosts").set(len(st["held_hosts"]))
            self.pool.labels(name, "overcommitted").set(1 if st["status"] == "overcommitted" else 0)
            for c in st["consumers"]:
                for fig in CONSUMER_FIGURES:
                    self.pool_consumer.labels(name, f"{c['kind']}:{c['consumer']}", fig).set(c[fig])

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


def publish_farm(metrics: CycleMetrics, p: Plan, started: list[Start]) -> None:
    """The farm's figures after a cycle's starts (`started`: those that took effect), as the
    next snapshot will show them."""
    started_slots: dict[str, int] = {}
    started_jobs: dict[str, int] = {}
    for s in started:
        started_slots[s.vo] = started_slots.get(s.vo, 0) + s.cores
        started_jobs[s.vo] = started_jobs.get(s.vo, 0) + 1
    total = p.total_slots
    vos = p.vos.values()
    used = {v.name: v.running_slots + started_slots.get(v.name, 0) for v in vos}
    metrics.set_farm_state(
        running_by_vo={v.name: v.running_jobs + started_jobs.get(v.name, 0) for v in vos},
        queued_by_vo={v.name: v.queued_jobs - started_jobs.get(v.name, 0) for v in vos},
        used_slots_by_vo=used,
        total_slots=total, used_slots=p.used_slots + sum(started_slots.values()),
        share_target_by_vo={v.name: v.share for v in vos},
        share_achieved_by_vo={k: (u / total if total else 0.0) for k, u in used.items()},
        pending_by_reason=p.reasons(), nodes_load_skipped=len(p.node_load),
        draining=len(p.drains), reservations=len(p.reservations), draining_idle=p.held_free, pools=p.pools,
    )


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[::1]:PORT`` -> (host, port); UsageError otherwise (the config's rule)."""
    try:
        got = _parse_address(text)
    except ValueError as exc:
        raise UsageError(f"metrics address: {exc}") from None
    if got is None:
        raise UsageError(f"metrics address must be HOST:PORT, got {text!r}")
    return got


def serve(metrics: Metrics, address: str = "127.0.0.1:9720") -> tuple[str, int]:
    """Serve /metrics on a background thread; returns the bound (host, port)."""
    host, port = parse_address(address)
    try:
        server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise UsageError(f"cannot serve metrics on {address}: {exc.strerror or exc}") from None
    return host, server.server_port
