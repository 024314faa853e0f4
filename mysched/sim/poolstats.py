"""Package guarantees in a replay: how long each consumer went without what it is owed,
what was lent, and an invariant check of every plan's pool figures.

A consumer's guarantee is *unmet* while it has waiting work and fewer packages than
min(guarantee, use + waiting): the plan says so as ``owed > 0``. The longest unmet stretch
is what the issue's target reads: once a burst arrives, the consumer should have its
packages within the longest loan duration (loans end by then; nothing is preempted).
"""

from __future__ import annotations

from mysched.core.settings import Config
from mysched.core.model.plan import Plan


class PoolWatch:
    """Accumulates pool figures over the cycles of one replay."""

    def __init__(self, config: Config) -> None:
        self.pools = {p.name: p for p in config.pools}
        self.unmet: dict[tuple[str, str], float] = {}
        self.longest: dict[tuple[str, str], float] = {}
        self.since: dict[tuple[str, str], float] = {}
        self.loaned_s: dict[str, float] = {}
        self.breaches: dict[str, int] = {}
        self.kinds: dict[str, dict[str, int]] = {}
        """Pool -> which check failed -> plans."""
        self.cycles = 0
        self.size: dict[str, tuple[int, int, int]] = {}
        """Pool -> the most hosts, packages and guaranteed packages any plan gave it."""
        self._last: tuple[float, set] | None = None

    def observe(self, p: Plan, now: float, jobs: dict, runtime: dict, free: dict[str, int]) -> None:
        """One plan at `now`, before its starts; `jobs` the farm's jobs by id, `runtime` id ->
        (runtime, vo), `free` the free slots per node."""
        self._advance(now)
        if not p.pools:
            return
        self.cycles += 1
        owed_now = set()
        for name, st in p.pools.items():
            hosts, total, guaranteed = self.size.get(name, (0, 0, 0))
            self.size[name] = (max(hosts, st["hosts"]), max(total, st["total"]), max(guaranteed, st["guaranteed"]))
            for c in st["consumers"]:
                key = (name, f"{c['kind']} {c['consumer']}")
                if c["owed"] > 0:
                    owed_now.add(key)
                    self.since.setdefault(key, now)
                if c["owed"] > max(0, c["guaranteed"] - c["allocated"]):
                    self._breach(name, "owed more than the idle guarantee")
            if st["guaranteed"] > st["total"]:
                self._breach(name, "promises more packages than it holds")
        for key in list(self.since):
            if key not in owed_now:
                self._close(key, now)
        self._last = (now, owed_now)
        free_end = dict(free)  # after the plan's starts -- owners' starts count as room kept for them
        for s in p.starts:
            first, _cores = s.placement[0]
            gated = self.pools.get(p.pool_gates[first].pool) if first in p.pool_gates else None
            owner_start = (gated is not None and s.job_id not in p.pool_loans
                           and gated.consumer_of(s.queue, s.vo, s.group) is not None)
            for host, cores in s.placement:
                if not owner_start:
                    free_end[host] = free_end.get(host, 0) - cores
        for s in p.starts:
            for host, _cores in s.placement:
                gate = p.pool_gates.get(host)
                if gate is None:
                    continue
                pool_name, state = gate
                pool = self.pools[pool_name]
                loan = p.pool_loans.get(s.job_id) == pool_name
                owner = pool.consumer_of(s.queue, s.vo, s.group) is not None
                job = jobs.get(s.job_id)
                if state == "held" and not owner and not loan:
                    self._breach(pool_name, "a held package went to a non-owner")
                if loan:
                    packages, per_package = p.pool_need.get(host, (0, 0))
                    if job is None or pool.loan.refuses(s.queue, job.walltime) is not None:
                        self._breach(pool_name, "a loan the loan policy refuses")
                    elif state == "held" and not (
                            (host in p.pool_horizons and p.now + job.walltime <= p.pool_horizons[host])
                            or free_end.get(host, 0) >= packages * per_package):
                        self._breach(pool_name, "a loan on a held host that could delay the owners' package")
        for jid, pool in p.pool_loans.items():
            meta = runtime.get(jid)
            job = jobs.get(jid)
            if meta is not None and job is not None:
                self.loaned_s[pool] = self.loaned_s.get(pool, 0.0) + job.cores * meta.runtime

    def _breach(self, pool: str, what: str) -> None:
        self.breaches[pool] = self.breaches.get(pool, 0) + 1
        k = self.kinds.setdefault(pool, {})
        k[what] = k.get(what, 0) + 1

    def _advance(self, now: float) -> None:
        if self._last is None:
            return
        t, owed = self._last
        for key in owed:
            self.unmet[key] = self.unmet.get(key, 0.0) + (now - t)

    def _close(self, key: tuple[str, str], now: float) -> None:
        start = self.since.pop(key)
        self.longest[key] = max(self.longest.get(key, 0.0), now - start)

    def close(self, now: float) -> None:
        self._advance(now)
        self._last = None
        for key in list(self.since):
            self._close(key, now)

    def figures(self) -> dict:
        """JSON-ready: per pool, loaned slot-hours and invariant breaches; per consumer, the
        seconds its guarantee was unmet while it had waiting work and the longest such stretch."""
        out = {}
        for name, pool in self.pools.items():
            consumers = {}
            for c in pool.consumers:
                key = (name, str(c))
                consumers[str(c)] = {"unmet_s": round(self.unmet.get(key, 0.0), 1),
                                     "longest_unmet_s": round(self.longest.get(key, 0.0), 1)}
            hosts, packages, guaranteed = self.size.get(name, (0, 0, 0))
            out[name] = {"hosts": hosts, "packages": packages, "guaranteed": guaranteed,
                         "loaned_slot_h": round(self.loaned_s.get(name, 0.0) / 3600.0, 3),
                         "invariant_breaches": self.breaches.get(name, 0),
                         **({"breaches_by_check": self.kinds[name]} if name in self.kinds else {}),
                         "consumers": consumers}
        return out
