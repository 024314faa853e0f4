"""`sim://`: the simulated farm as a live batch server for the daemon.

The farm's virtual clock runs `speed` times faster than wall time, so the whole daemon —
cycles, history, metrics, status file and status commands — can be tried on a machine
without TORQUE. URL form: ``sim://?nodes=50&slots=8&speed=60&seed=1&hours=48&backlog=6``:
`backlog` hours of the synthetic workload are already submitted when the server starts, so
the first cycle finds a full farm and a queue to look at (``mysched jobs``, ``why``, ``when``).
Each parameter is checked on its own (NaN and infinity included) and named when refused
(`mysched.config.servers`, which check-config asks too).
"""

from __future__ import annotations

import time
from typing import Callable

from mysched.config.parse import clip
from mysched.config.servers import MAX_SPEED, sim_params
from mysched.config.values import check_name_format
from mysched.core.settings import Config
from mysched.errors import UsageError
from mysched.core.model.batch import FinishedJob, Job, Placement, Snapshot
from mysched.backends.sim.farm import SimulatedFarm, make_nodes

__all__ = ["MAX_SPEED", "SimServer", "sim_server_from_url"]


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

    try:
        p = sim_params(url, config.farm)
    except ValueError as exc:
        raise UsageError(f"{clip(url)}: {exc}") from None
    nodes, slots, speed, seed, hours, backlog = p.nodes, p.slots, p.speed, p.seed, p.hours, p.backlog
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
