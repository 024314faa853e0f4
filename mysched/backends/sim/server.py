"""`sim://`: the simulated farm as a live batch server for the daemon.

The farm's virtual clock runs `speed` times faster than wall time, so the whole daemon —
cycles, history, metrics, status file and status commands — can be tried on a machine
without TORQUE. URL form: ``sim://?nodes=50&slots=8&speed=60&seed=1&hours=48&backlog=6``:
`backlog` hours of the synthetic workload are already submitted when the server starts, so
the first cycle finds a full farm and a queue to look at (``mysched jobs``, ``why``, ``when``).
Each parameter is checked on its own (NaN and infinity included) and named when refused.
"""

from __future__ import annotations

import time
from typing import Callable
from urllib.parse import parse_qs, urlparse

from mysched.config.values import check_name_format
from mysched.core.config import Config
from mysched.errors import UsageError
from mysched.core.model import FinishedJob, Job, Placement, Snapshot
from mysched.backends.sim.farm import MAX_FARM_SLOTS, MAX_WORKLOAD_HOURS, SimulatedFarm, make_nodes

MAX_SPEED = 1e6
"""The fastest virtual clock (a year in about half a minute); an infinite one would jump past every event."""


class SimServer:
    """A `BatchServer` over a `SimulatedFarm` whose clock follows wall time × speed."""

    def __init__(self, farm: SimulatedFarm, speed: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.farm = farm
        self.name = farm.name
        self.speed = speed
        self._clock = clock
        self._wall0 = clock()
        self._virt0 = farm.now
        self._finished: list[FinishedJob] = []
        farm.on_finish = self._finished.append

    def _sync(self) -> None:
        target = self._virt0 + (self._clock() - self._wall0) * self.speed
        if target > self.farm.now:
            self.farm.advance(target)

    def snapshot(self) -> Snapshot:
        self._sync()
        return self.farm.snapshot()

    def run_job(self, job_id: str, placement: Placement) -> None:
        self.farm.run_job(job_id, placement)

    def get_job(self, job_id: str) -> Job | None:
        return self.farm.get_job(job_id)

    def pop_finished(self) -> list[FinishedJob]:
        """Jobs that ended since the last call (the simulated accounting log)."""
        out, self._finished = self._finished, []
        self.farm.on_finish = self._finished.append
        return out

    def close(self) -> None:
        pass


def sim_server_from_url(url: str, config: Config) -> SimServer:
    """Build a simulated server from a ``sim://`` URL and the configuration's farm."""
    from mysched.sim.workloads.synthetic import SyntheticSpec, generate

    parts = urlparse(url)
    if parts.scheme != "sim":
        raise UsageError(f"not a sim:// URL: {url!r}")
    q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    known = {"nodes", "slots", "speed", "seed", "hours", "backlog"}
    unknown = set(q) - known
    if unknown:
        raise UsageError(f"{url}: unknown parameter(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    try:
        nodes = int(q.get("nodes", config.farm.nodes))
        slots = int(q.get("slots", config.farm.slots_per_node))
        speed = float(q.get("speed", 60.0))
        seed = int(q.get("seed", 1))
        hours = float(q.get("hours", 48.0))
        backlog = float(q.get("backlog", 6.0))
    except ValueError as exc:
        raise UsageError(f"{url}: bad parameter value ({exc})") from None
    # Each checked on its own, NaN included (every comparison with it is false), so that the
    # message names the parameter; an infinite speed would move the clock to infinity.
    for name, value, ok, rule in (
            ("nodes", nodes, nodes >= 1, "a positive whole number"),
            ("slots", slots, slots >= 1, "a positive whole number"),
            ("speed", speed, 0 < speed <= MAX_SPEED, f"a positive number of at most {MAX_SPEED:g}"),
            ("hours", hours, 0 < hours <= MAX_WORKLOAD_HOURS, f"a positive number of at most {MAX_WORKLOAD_HOURS} "
                                                                "(a year)"),
            ("backlog", backlog, 0 <= backlog <= MAX_WORKLOAD_HOURS, f"a number of hours from 0 to "
                                                                      f"{MAX_WORKLOAD_HOURS}")):
        if not ok:
            raise UsageError(f"{url}: {name} must be {rule}, got {q.get(name, value)}")
    if nodes * slots > MAX_FARM_SLOTS:
        raise UsageError(f"{url}: nodes x slots is {nodes * slots}: a farm of at most {MAX_FARM_SLOTS} slots")
    try:  # the config checked its own farm size; nodes= may ask for more names
        check_name_format(config.farm.name_format, nodes)
    except ValueError as exc:
        raise UsageError(f"{url}: farm.name_format of {config.source}: {exc}") from None
    workload = generate(SyntheticSpec(duration=hours * 3600.0, slots=nodes * slots, seed=seed))
    start = time.time()
    # Shift the synthetic workload so that its first `backlog` hours were submitted before now:
    # status shows real-looking times and a queue from the first cycle on.
    if workload:
        shift = start - workload[0].job.submit_time - backlog * 3600.0

        workload = [t._replace(job=t.job._replace(submit_time=t.job.submit_time + shift)) for t in workload]
    farm = SimulatedFarm(make_nodes(nodes, slots, config.farm.name_format), workload, start=start,
                         vo_of=config.vo_of, name=url)
    return SimServer(farm, speed=speed)
