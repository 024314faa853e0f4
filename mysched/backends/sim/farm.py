"""An in-process batch server with a virtual clock, behind the `BatchServer` interface.

Jobs arrive from a workload at their submit time, wait until the scheduler runs them (as
TORQUE with ``scheduling = False``), and end `runtime` seconds after they start. The farm
keeps running integrals (slot-seconds used, per-VO use, diversity) as it advances from
event to event, so the simulator reports exact figures without sampling every second.
"""

from __future__ import annotations

import heapq
import math
from operator import attrgetter
from typing import Callable, Iterable, NamedTuple

from mysched.config.values import MAX_FARM_SLOTS, MAX_WORKLOAD_HOURS  # noqa: F401 - re-exported to the simulator
from mysched.errors import JobGone, JobStateError, RunRefused, ServerError
from mysched.core.model.batch import Changes, FinishedJob, Job, JobState, Node, NodeState, Placement, Queue, Snapshot, TraceJob


class JobMeta(NamedTuple):
    """What the farm keeps of a submitted job beside the job itself."""

    runtime: float
    """How long it runs once started (the trace's run time)."""
    vo: str


class SimulatedFarm:
    """A farm of identical or mixed nodes replaying a workload on a virtual clock."""

    def __init__(self, nodes: Iterable[Node], workload: Iterable[TraceJob], *,
                 queues: Iterable[Queue] = (), start: float | None = None,
                 vo_of: Callable[[str], str] = lambda g: g, name: str = "sim://",
                 classify: Callable[[Job, str], str | None] | None = None,
                 arrays: dict[str, int] | None = None) -> None:
        self.name = name
        self.arrays = dict(arrays or {})
        """Slot limit per job array (`Job.array`): pbs_server refuses a sub-job past it."""
        self._array_running: dict[str, int] = {}
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self.node_by_name = {n.name: n for n in self.nodes}
        self.queues = tuple(queues)
        self.vo_of = vo_of
        self._arrivals = sorted(workload, key=_arrival_order)
        self._arrival_times = [tj.job.submit_time for tj in self._arrivals]
        self._next_arrival = 0
        self.now = start if start is not None else (self._arrivals[0].job.submit_time if self._arrivals else 0.0)
        self.jobs: dict[str, Job] = {}
        self._waiting: dict[str, Job] = {}
        # Changes since the last snapshot (see `Changes`).
        self._token: object = None
        self._started: dict[str, Job] = {}
        self._stopped: list[str] = []
        self._meta: dict[str, JobMeta] = {}
        """Job id -> (runtime, VO)."""
        self._ends: list[tuple[float, str]] = []
        self.free = {n.name: (n.slots if n.state.usable else 0) for n in self.nodes}
        self.total_slots = sum(n.slots for n in self.nodes if n.state not in (NodeState.DOWN, NodeState.OFFLINE))
        self.used = 0
        self._usable_slots = sum(n.slots for n in self.nodes if n.state.usable)
        self.queued = 0
        self.dirty = True
        """Something changed since the last scheduling cycle (arrival, end, start)."""
        self.vo_touched: set[str] = set()
        """VOs whose running or queued counts changed since the caller last cleared this."""
        self.on_finish: Callable[[FinishedJob], None] | None = None
        """Called with the wall-clock record of each job that ends (what accounting keeps)."""
        self.on_end: Callable[[Job, str], None] | None = None
        """Called as on_end(job, vo) when a job ends at `now` (cheaper than `on_finish`)."""
        self.on_change: Callable[[float, float], None] | None = None
        """Called as on_change(t_from, t_to) before the state changes at t_to (for integrals)."""
        # Per-node users and jobs, for diversity.
        self._node_users: dict[str, dict[str, int]] = {n.name: {} for n in self.nodes}
        self._node_jobs: dict[str, int] = {n.name: 0 for n in self.nodes}
        self.div_sum = 0.0
        self.busy_nodes = 0
        self.vo_running: dict[str, int] = {}
        self.vo_queued: dict[str, int] = {}
        # Packing classes (INFN-T1 metrics): slots and nodes used by each class.
        self.classify = classify
        self.class_slots: dict[str, int] = {}
        self.class_nodes: dict[str, int] = {}
        self._node_class: dict[str, dict[str, int]] = {n.name: {} for n in self.nodes}
        self._job_class: dict[str, str] = {}

    # -- BatchServer ----------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The farm now, with what changed since the previous snapshot (`Changes`)."""
        token = object()
        changes = None
        if self._token is not None:
            changes = Changes(self._token, tuple(self._started.values()), tuple(self._stopped),
                              tuple(self._waiting.values()))
        self._token = token
        self._started = {}
        self._stopped = []
        return Snapshot(self.now, tuple(self.jobs.values()), self.nodes, self.queues, self.name,
                        token=token, changes=changes, arrays=self.arrays)

    def get_job(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def run_job(self, job_id: str, placement: Placement) -> None:
        job = self.jobs.get(job_id)
        if job is None:
            raise JobGone(f"Unknown Job Id {job_id}", code=15001, call="runjob")
        if job.state is not JobState.QUEUED:
            raise JobStateError(f"{job_id}: invalid state for job - {job.state.value}", code=15018, call="runjob")
        free = self.free
        total = 0
        for name, cores in placement:
            total += cores
            have = free.get(name)
            if have is None:
                raise RunRefused(f"{job_id}: unknown node {name}", code=15064, call="runjob")
            if have < cores:
                raise RunRefused(f"{job_id}: node {name} has {have} free cores, not {cores}", code=15046,
                                 call="runjob")
        cores = job.cores
        if total != cores:
            raise RunRefused(f"{job_id}: placement gives {total} cores, job needs {cores}", code=15046,
                             call="runjob")
        array = job.array
        if array is not None and array in self.arrays:
            n = self._array_running.get(array, 0)
            if n >= self.arrays[array]:
                raise ServerError(f"runjob {job_id}: Cannot run job. Array slot limit is {self.arrays[array]} and "
                                  f"there are already {n} jobs running (error 15004)", code=15004, call="runjob")
            self._array_running[array] = n + 1
        runtime, vo = self._meta[job_id]
        cls = self.classify(job, vo) if self.classify is not None else None
        if cls is not None:
            self._job_class[job_id] = cls
            self.class_slots[cls] = self.class_slots.get(cls, 0) + cores
        user = job.user
        for name, n in placement:
            free[name] -= n
            self._node_add(name, user, +1)
            if cls is not None:
                nc = self._node_class[name]
                if not nc.get(cls):
                    self.class_nodes[cls] = self.class_nodes.get(cls, 0) + 1
                nc[cls] = nc.get(cls, 0) + n
        self.used += cores
        self.queued -= 1
        self.vo_queued[vo] -= 1
        running = self.vo_running
        running[vo] = running.get(vo, 0) + cores
        now = self.now
        self.jobs[job_id] = started = Job(job_id, job.queue, user, job.group, cores, JobState.RUNNING, job.submit_time,
                                          now, job.walltime, job.mem, tuple(placement), job.vo, job.name,
                                          array=array)
        del self._waiting[job_id]
        self._started[job_id] = started
        heapq.heappush(self._ends, (now + runtime, job_id))
        self.dirty = True
        self.vo_touched.add(vo)

    def close(self) -> None:
        pass

    # -- clock ----------------------------------------------------------------------------
    def _node_add(self, name: str, user: str, delta: int) -> None:
        """Count a job of `user` on or off a node, keeping the diversity sum up to date."""
        users = self._node_users[name]
        n = self._node_jobs[name]
        div = self.div_sum
        if n:
            div -= len(users) / n
        else:
            self.busy_nodes += 1
        c = users.get(user, 0) + delta
        if c:
            users[user] = c
        else:
            del users[user]
        n += delta
        self._node_jobs[name] = n
        if n:
            div += len(users) / n
        else:
            self.busy_nodes -= 1
        self.div_sum = div

    def next_event(self, *, arrivals: bool = True, ends: bool = True) -> float | None:
        """Time of the next arrival or job end (None if there is none)."""
        t = math.inf
        if arrivals and self._next_arrival < len(self._arrivals):
            t = self._arrivals[self._next_arrival].job.submit_time
        if ends and self._ends:
            t = min(t, self._ends[0][0])
        return None if math.isinf(t) else t

    @property
    def free_slots(self) -> int:
        """Free slots on usable nodes."""
        return self._usable_slots - self.used

    @property
    def exhausted(self) -> bool:
        """No job left to arrive, wait or run."""
        return self._next_arrival >= len(self._arrivals) and not self.jobs

    def advance(self, t: float) -> None:
        """Move the clock to `t`, ending and admitting jobs in time order."""
        times = self._arrival_times
        n = len(times)
        ends = self._ends
        on_change = self.on_change
        inf = math.inf
        while True:
            i = self._next_arrival
            ta = times[i] if i < n else inf
            te = ends[0][0] if ends else inf
            nxt = ta if ta < te else te
            if nxt > t:
                break
            if nxt > self.now:
                if on_change is not None:
                    on_change(self.now, nxt)
                self.now = nxt
            if te <= ta:
                self._end(heapq.heappop(ends)[1])
            else:
                self._next_arrival = i + 1
                self._admit(self._arrivals[i])
        if t > self.now:
            if on_change is not None:
                on_change(self.now, t)
            self.now = t

    def _admit(self, tj: TraceJob) -> None:
        job = tj.job
        if job.id in self.jobs:
            job = job._replace(id=f"{job.id}.{self._next_arrival}")
        if job.state != JobState.QUEUED:
            job = job._replace(state=JobState.QUEUED, start_time=None, placement=())
        self.jobs[job.id] = job
        self._waiting[job.id] = job
        vo = job.vo or self.vo_of(job.group)
        self._meta[job.id] = JobMeta(max(0.0, tj.runtime), vo)
        self.queued += 1
        self.vo_queued[vo] = self.vo_queued.get(vo, 0) + 1
        self.dirty = True
        self.vo_touched.add(vo)

    def _end(self, job_id: str) -> None:
        job = self.jobs.pop(job_id)
        vo = self._meta.pop(job_id).vo
        if self._started.pop(job_id, None) is None:  # (a job started and ended unseen is no change)
            self._stopped.append(job_id)
        cls = self._job_class.pop(job_id, None)
        if cls is not None:
            self.class_slots[cls] -= job.cores
        for name, cores in job.placement:
            self.free[name] += cores
            self._node_add(name, job.user, -1)
            if cls is not None:
                nc = self._node_class[name]
                nc[cls] -= cores
                if not nc[cls]:
                    del nc[cls]
                    self.class_nodes[cls] -= 1
        self.used -= job.cores
        self.vo_running[vo] -= job.cores
        if job.array in self._array_running:
            self._array_running[job.array] -= 1
        if self.on_end is not None:
            self.on_end(job, vo)
        if self.on_finish is not None:
            self.on_finish(FinishedJob(job.id, job.user, job.group, job.queue, job.start_time or self.now, self.now,
                                       job.cores, vo, None, 0, tuple(n for n, _ in job.placement)))
        self.dirty = True
        self.vo_touched.add(vo)


    def slot_classes(self) -> dict[str, list[str | None]]:
        """Per node, what each slot holds: None (free), "default" or a class name."""
        out: dict[str, list[str | None]] = {}
        for n in self.nodes:
            cells: list[str | None] = []
            for cls, k in sorted(self._node_class[n.name].items()):
                cells.extend([cls] * k)
            used = n.slots - self.free[n.name] if n.state.usable else 0
            cells.extend(["default"] * max(0, used - len(cells)))
            cells.extend([None] * max(0, n.slots - len(cells)))
            out[n.name] = cells[: n.slots]
        return out


_arrival_order = attrgetter("job.submit_time", "job.id")




def make_nodes(count: int, slots: int, name_format: str = "wn{index:04d}") -> tuple[Node, ...]:
    """`count` identical nodes named by `name_format` (``{index}`` counts from 1)."""
    return tuple(Node(name_format.format(index=i + 1), slots) for i in range(count))
