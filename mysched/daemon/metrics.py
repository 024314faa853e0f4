"""Prometheus metrics of the daemon, on an injectable registry.

The daemon talks to a `CycleMetrics` (a Protocol) with plain values -- no planner types cross
this boundary. `Metrics` is the Prometheus one, `NullMetrics` the one for a daemon without
an endpoint, and `Guarded` wraps either so that a failing metric is logged once and never
breaks scheduling. `serve` exposes the registry over HTTP, bound to loopback by default.

The farm's figures and the load sources' are replaced whole after each cycle (a scrape sees
one cycle's set, never a VO or reason missing half-way through an update). They stay as the
last completed cycle left them while cycles fail (`mysched_last_successful_cycle_timestamp_seconds`
says how old they are), and a daemon that stands by exports none: only the leader describes
the farm, and an old leader's figures do not linger beside the new one's.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import time
from typing import ContextManager, Iterator, Mapping, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.core import GaugeMetricFamily

from mysched import __version__
from mysched.errors import ServerError
from mysched.backends.torque.schedproto import REFUSALS
from mysched.core.model.plan import Plan, Start
from mysched.core.model.reasons import REASONS, Reason
from mysched.daemon.series import FARM, LOADS

log = logging.getLogger("mysched")

CYCLE_BUCKETS = (.0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
"""A cycle: ~10 ms on the simulated farm, up to ~1 s at 10,000 slots, minutes if pbs_server hangs."""
PHASE_BUCKETS = (.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300)
"""A phase: most take well under 10 ms (the plan of a small farm, the record), the read or the
starts of a large one seconds."""
CALL_BUCKETS = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30)
POOL_FIGURES = ("total", "free", "guaranteed", "owner_use", "loan_use", "other_use")
CONSUMER_FIGURES = ("guaranteed", "allocated", "owner_use", "loaned", "pending", "owed")
PHASES = ("read", "history", "plan", "start", "record", "publish")
"""The phases of a cycle, in order (see `mysched.daemon.cycle`)."""
CYCLE_RESULTS = ("ok", "error", "partial", "dry-run", "crash", "standby")
TIMED = ("ok", "partial", "dry-run", "error")
"""Results whose duration was measured: not a standby's try of the lock, nor a crash (0 s)."""
COMPLETED = ("ok", "partial", "dry-run")
"""Results of a cycle that published the farm's figures."""
START_REASONS = (Reason.HOT, Reason.SHARE, Reason.FAIRSHARE)
"""Why the daemon starts a job (its policy is always mysched's)."""
START_FAILURES = ("gone", "state", "refused", "timeout", "unauthorized", "unavailable", "error")
"""`mysched.daemon.cycle.FAILURE_REASONS`, a lost server and any other server error."""
CALLS = ("snapshot", "runjob")
STALE = "; as of the last completed cycle, none on a standby"


class CycleMetrics(Protocol):
    """What the daemon reports after each cycle, start and reload."""

    def observe_cycle(self, duration_s: float, result: str) -> None: ...
    def observe_phases(self, phases: Mapping[str, float]) -> None: ...
    def record_start(self, vo: str, reason: str) -> None: ...
    def record_start_failure(self, reason: str) -> None: ...
    def cycle_error(self, reason: str) -> None: ...
    def history_write_error(self) -> None: ...
    def history_locked(self) -> None: ...
    def history_pending(self, finished: int, cycles: int) -> None: ...
    def accounting_suspicious(self, n: int) -> None: ...
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
    def event_contact(self, result: str) -> None: ...


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

    def history_locked(self) -> None:
        pass

    def history_pending(self, finished: int, cycles: int) -> None:
        pass

    def accounting_suspicious(self, n: int) -> None:
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

    def event_contact(self, result: str) -> None:
        pass


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

    def history_locked(self) -> None:
        self._guard("history_locked", self.inner.history_locked)

    def history_pending(self, finished: int, cycles: int) -> None:
        self._guard("history_pending", self.inner.history_pending, finished, cycles)

    def accounting_suspicious(self, n: int) -> None:
        self._guard("accounting_suspicious", self.inner.accounting_suspicious, n)

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

    def event_contact(self, result: str) -> None:
        self._guard("event_contact", self.inner.event_contact, result)


class Snapshot:
    """Gauges replaced whole at once: `replace` swaps in a new set of series, `clear` drops them
    all (a family without samples still has its HELP and TYPE)."""

    def __init__(self, families: Mapping[str, tuple[str, tuple[str, ...]]], registry: CollectorRegistry,
                 note: str = "") -> None:
        self.families = {name: (text + note, labels) for name, (text, labels) in families.items()}
        self.series: Mapping[str, Mapping[tuple[str, ...], float]] = {}
        registry.register(self)

    def replace(self, series: Mapping[str, Mapping[tuple[str, ...], float]]) -> None:
        unknown = set(series) - set(self.families)
        if unknown:
            raise ValueError(f"not a family of this snapshot: {sorted(unknown)}")
        self.series = series  # one reference: a scrape on the server's thread sees the old set or this

    def clear(self) -> None:
        self.series = {}

    def describe(self) -> Iterator[GaugeMetricFamily]:
        for name, (text, labels) in self.families.items():
            yield GaugeMetricFamily(name, text, labels=labels)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        series = self.series
        for name, (text, labels) in self.families.items():
            family = GaugeMetricFamily(name, text, labels=labels)
            for key, value in series.get(name, {}).items():
                family.add_metric(key, value)
            yield family


class Metrics:
    """Every series mysched exports; create one per registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry if registry is not None else CollectorRegistry()
        self.cycle_duration = Histogram("mysched_cycle_duration_seconds", "Wall time of a scheduling cycle that ran "
                                        "(not a standby's try of the lock, nor a crash)", buckets=CYCLE_BUCKETS,
                                        registry=r)
        self.phase_duration = Histogram("mysched_cycle_phase_seconds", "Wall time of each phase of a completed "
                                        "cycle (read, history, plan, start, record, publish; they add up to its "
                                        "mysched_cycle_duration_seconds)", ["phase"], buckets=PHASE_BUCKETS,
                                        registry=r)
        for phase in PHASES:
            self.phase_duration.labels(phase)
        self.cycles = Counter("mysched_cycles_total", "Scheduling cycles by result (standby: a standby's try of the "
                              "leadership lock)", ["result"], registry=r)
        self.history_errors = Counter("mysched_history_write_errors_total",
                                      "Failed writes to the history store (finished jobs, cycles, accounting)", registry=r)
        self.history_locks = Counter("mysched_history_lock_outages_total", "Times the history store was found locked "
                                     "by another process (each outage once; cycles do not wait for it)", registry=r)
        self.history_pending_records = Gauge("mysched_history_pending_records", "Records the history store has not "
                                             "taken yet, kept in memory (finished_jobs, cycles)", ["kind"], registry=r)
        self.suspicious_records = Counter("mysched_accounting_suspicious_records_total", "Accounting E records "
                                          "charged to no one: no S record nor start of mysched's with the same job, "
                                          "owner and start, or inside another record's account= value (each logged "
                                          "with its FILE:LINE)", registry=r)
        self.cycle_errors = Counter("mysched_cycle_errors_total",
                                    "Cycles that failed, by reason (server, store, internal)", ["reason"], registry=r)
        self.last_success = Gauge("mysched_last_successful_cycle_timestamp_seconds", "Unix time of the last cycle "
                                  "this daemon completed (ok, partial or dry-run; 0 before the first)", registry=r)
        self.starts = Counter("mysched_jobs_started_total", "Jobs started, by VO and reason (hot, share, fairshare)",
                              ["vo", "reason"], registry=r)
        self.start_failures = Counter("mysched_job_start_failures_total", "Job starts that failed, by reason",
                                      ["reason"], registry=r)
        self.call_duration = Histogram("mysched_server_call_duration_seconds", "Wall time of batch-server calls "
                                       "(snapshot: jobs, nodes and queues read; runjob: one pbs_runjob)", ["call"],
                                       buckets=CALL_BUCKETS, registry=r)
        self.call_errors = Counter("mysched_server_call_errors_total", "Batch-server calls that failed", ["call"],
                                   registry=r)
        self.reloads = Counter("mysched_config_reloads_total", "Configuration reloads by result", ["result"],
                               registry=r)
        self.leader = Gauge("mysched_leader", "1 while this daemon leads (starts jobs), 0 while it stands by",
                            registry=r)
        self.role_changes = Counter("mysched_leadership_changes_total",
                                    "Times this daemon became leader or standby", ["role"], registry=r)
        self.event_contacts = Counter("mysched_event_contacts_total", "pbs_server scheduler contacts accepted on "
                                      "the event port (each brings a cycle forward, at most one per "
                                      "scheduler.min_interval)", registry=r)
        self.event_refusals = Counter("mysched_event_contacts_refused_total", "Contacts on the event port refused, "
                                      "by reason (address: not from daemon.event_allow; port: not from a port "
                                      "below 1024; malformed: not a pbs_server command; timeout: nothing sent "
                                      "in time; dropped: too many open at once)", ["reason"], registry=r)
        self.farm = Snapshot(FARM, r, STALE)
        self.loads = Snapshot(LOADS, r, STALE)
        self.build = Info("mysched_build", "Version of mysched and Python", registry=r)
        self.build.info({"version": __version__, "python": platform.python_version()})
        # Every label value known beforehand exists from the start: the first event is an
        # increase from 0, which rate() and increase() see.
        for labelled, values in ((self.cycles, CYCLE_RESULTS), (self.cycle_errors, ("server", "store", "internal")),
                                 (self.reloads, ("ok", "error")), (self.role_changes, ("leader", "standby")),
                                 (self.start_failures, START_FAILURES), (self.call_errors, CALLS),
                                 (self.event_refusals, REFUSALS)):
            for value in values:
                labelled.labels(value)
        for call in CALLS:
            self.call_duration.labels(call)
        self.history_pending(0, 0)
        self._vos: frozenset[str] = frozenset()

    def observe_cycle(self, duration_s: float, result: str) -> None:
        if result in TIMED:
            self.cycle_duration.observe(duration_s)
        self.cycles.labels(result).inc()
        if result in COMPLETED:
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

    def event_contact(self, result: str) -> None:
        """A contact on the event port: "accepted", or why it was refused (`REFUSALS`)."""
        if result == "accepted":
            self.event_contacts.inc()
        else:
            self.event_refusals.labels(result).inc()

    def history_write_error(self) -> None:
        self.history_errors.inc()

    def history_locked(self) -> None:
        self.history_locks.inc()

    def history_pending(self, finished: int, cycles: int) -> None:
        self.history_pending_records.labels("finished_jobs").set(finished)
        self.history_pending_records.labels("cycles").set(cycles)

    def accounting_suspicious(self, n: int) -> None:
        self.suspicious_records.inc(n)

    def reload(self, result: str) -> None:
        self.reloads.labels(result).inc()

    def set_loads(self, sources: Mapping[str, tuple[float | None, float | None, bool, bool]],
                  factors: Mapping[str, float]) -> None:
        value: dict[tuple[str, ...], float] = {}
        age: dict[tuple[str, ...], float] = {}
        for name, (v, a, _stale, _failing) in sources.items():
            if v is not None:
                value[(name,)] = v
            if a is not None:
                age[(name,)] = a
        self.loads.replace({
            "mysched_load_value": value, "mysched_load_age_seconds": age,
            "mysched_load_stale": {(n,): 1 if stale else 0 for n, (_v, _a, stale, _f) in sources.items()},
            "mysched_load_failing": {(n,): 1 if failing else 0 for n, (_v, _a, _s, failing) in sources.items()},
            "mysched_load_throttle_factor": {(rule,): f for rule, f in factors.items()}})

    def set_role(self, leader: bool) -> None:
        self.leader.set(1 if leader else 0)
        self.role_changes.labels("leader" if leader else "standby").inc()
        if not leader:  # the leader describes the farm now; these figures would only get older
            self.farm.clear()
            self.loads.clear()

    def set_farm_state(self, *, running_by_vo: Mapping[str, int], queued_by_vo: Mapping[str, int],
                       used_slots_by_vo: Mapping[str, int], total_slots: int, used_slots: int,
                       share_target_by_vo: Mapping[str, float], share_achieved_by_vo: Mapping[str, float],
                       pending_by_reason: Mapping[str, int], nodes_load_skipped: int = 0,
                       draining: int = 0, draining_idle: int = 0, reservations: int = 0,
                       pools: Mapping[str, dict] | None = None) -> None:
        """Replace the farm's figures: series that disappeared are dropped."""
        def by(values: Mapping[str, float]) -> dict[tuple[str, ...], float]:
            return {(k,): v for k, v in values.items()}

        pool: dict[tuple[str, ...], float] = {}
        consumer: dict[tuple[str, ...], float] = {}
        for name, st in (pools or {}).items():
            for fig in POOL_FIGURES:
                pool[(name, fig)] = st[fig]
            pool[(name, "held_hosts")] = len(st["held_hosts"])
            pool[(name, "overcommitted")] = 1 if st["status"] == "overcommitted" else 0
            for c in st["consumers"]:
                for fig in CONSUMER_FIGURES:
                    consumer[(name, f"{c['kind']}:{c['consumer']}", fig)] = c[fig]
        self.farm.replace({
            "mysched_running_jobs": by(running_by_vo), "mysched_queued_jobs": by(queued_by_vo),
            "mysched_used_slots": by(used_slots_by_vo), "mysched_farm_slots": {(): total_slots},
            "mysched_farm_used_slots": {(): used_slots}, "mysched_share_target_ratio": by(share_target_by_vo),
            "mysched_share_achieved_ratio": by(share_achieved_by_vo),
            "mysched_pending_jobs": by({**dict.fromkeys(REASONS, 0), **pending_by_reason}),
            "mysched_nodes_load_skipped": {(): nodes_load_skipped}, "mysched_draining_nodes": {(): draining},
            "mysched_draining_idle_slots": {(): draining_idle}, "mysched_reservations": {(): reservations},
            "mysched_pool_packages": pool, "mysched_pool_consumer_packages": consumer})
        vos = frozenset(running_by_vo) | frozenset(queued_by_vo)
        if not vos <= self._vos:  # each VO's starts counted from 0
            for vo in vos - self._vos:
                for reason in START_REASONS:
                    self.starts.labels(vo, reason)
            self._vos |= vos

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


def sample_cycle(m: Metrics) -> Metrics:
    """Feed `m` one made-up cycle of every kind of figure -- a VO, a pool with a consumer, a
    load source and rule, a start, a timed call -- so that every family has a series with all
    its labels: docs/metrics.md is written from it (tools/gen_docs.py) and the dashboard's
    queries are checked against it."""
    pool = {**dict.fromkeys(POOL_FIGURES, 1), "held_hosts": [], "status": "ok",
            "consumers": [{"kind": "vo", "consumer": "a", **dict.fromkeys(CONSUMER_FIGURES, 1)}]}
    m.set_farm_state(running_by_vo={"a": 1}, queued_by_vo={"a": 1}, used_slots_by_vo={"a": 1}, total_slots=2,
                     used_slots=1, share_target_by_vo={"a": 1.0}, share_achieved_by_vo={"a": 0.5},
                     pending_by_reason={}, pools={"p": pool})
    m.set_loads({"s": (1.0, 1.0, False, False)}, {"r": 1.0})
    m.observe_cycle(0.1, "ok")
    m.record_start("a", Reason.SHARE)
    with m.time_call("snapshot"):
        pass
    return m


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
