"""The embedded default workload: a DESY-HH-like multi-VO Grid farm (Gellrich, CHEP2013).

Queues as in the paper's table 1: atlas, cms, lhcb (each also probed by ops), desy for the
other VOs, operations for monitoring; wall-clock limit 90 h, operations 1 h. Each VO has
production, pilot, user and software-manager groups with pool-account users
(``atlasprd001``...): production groups have few users with many jobs, user groups many
users of Zipf-like activity.

Arrivals, per group, are submissions from a non-homogeneous Poisson process: a daily rhythm
(strong for users, weak for production) times a campaign level that changes every few hours
(production systems and pilot factories come and go; a VO may fall silent). Each submission
is a burst of jobs a few seconds apart (pilot factories, production systems and users all
submit in bulk), geometric in size. Runtimes are log-normal, capped by the queue limit
(a job at the cap is one the batch system killed); pilots that find no payload and user
jobs that fail at once end in minutes. ops probes (SAM tests) arrive every few minutes in
each queue they watch.

The offered load -- slot-seconds submitted per second -- is scaled to `SyntheticSpec.slots`
times `load` on average over the duration, so jobs queue and the shares decide who runs;
in the campaigns' peaks it is well above, in their troughs below. Deterministic per seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from mysched.backends.sim.farm import MAX_WORKLOAD_HOURS
from mysched.core.model.batch import Job, JobState, TraceJob
from mysched.core.model.request import NodePart, Request

EPOCH = 1_767_571_200.0
"""2026-01-05 00:00 UTC, a Monday: fixed so that runs are reproducible."""

UTC_OFFSET = 3600.0
"""DESY's local time (CET) for the daily rhythm: users submit most in the afternoon."""

HOUR = 3600.0

DESY_QUEUES: dict[str, float] = {"atlas": 90 * HOUR, "cms": 90 * HOUR, "lhcb": 90 * HOUR,
                                 "desy": 90 * HOUR, "operations": 1 * HOUR}
"""Queue -> wall-clock limit in seconds (paper, table 1)."""

DESY_QUEUE_VOS: dict[str, tuple[str, ...]] = {
    "atlas": ("atlas", "ops"), "cms": ("cms", "ops"), "lhcb": ("lhcb", "ops"),
    "desy": ("ilc", "hone", "zeus", "others"), "operations": ("ops",),
}
"""Queue -> VOs that submit to it."""


@dataclass(frozen=True, slots=True)
class GroupModel:
    """How one Unix group submits: its VO, kind of work, pool users and part of the VO's load."""

    vo: str
    queue: str
    kind: str
    users: int
    weight: float


@dataclass(frozen=True, slots=True)
class KindModel:
    """Runtime and submission pattern of a kind of work."""

    median: float
    """Median runtime (s) of the jobs that do work."""
    sigma: float
    """Log-normal shape: large for user analysis, small for production."""
    quick: float
    """Fraction of jobs that end in minutes (empty pilots, jobs failing at once)."""
    burst: float
    """Mean jobs per submission."""
    spacing: float
    """Seconds between the jobs of a submission."""
    daily: float
    """Amplitude of the daily rhythm (0: flat, 1: nothing at night)."""
    campaigns: bool
    """Intensity changes from block to block (production campaigns, analysis rushes)."""


KINDS: dict[str, KindModel] = {
    "prod": KindModel(median=4 * HOUR, sigma=0.9, quick=0.05, burst=15.0, spacing=2.0, daily=0.1, campaigns=True),
    "pilot": KindModel(median=10 * HOUR, sigma=0.7, quick=0.45, burst=10.0, spacing=3.0, daily=0.1,
                       campaigns=True),
    "user": KindModel(median=30 * 60.0, sigma=1.4, quick=0.3, burst=8.0, spacing=1.0, daily=0.6, campaigns=True),
    "sgm": KindModel(median=15 * 60.0, sigma=0.8, quick=0.1, burst=1.0, spacing=0.0, daily=0.3, campaigns=False),
}

DESY_GROUPS: dict[str, GroupModel] = {
    "atlasprd": GroupModel("atlas", "atlas", "prod", 3, 0.50),
    "atlas": GroupModel("atlas", "atlas", "pilot", 2, 0.28),
    "atlasusr": GroupModel("atlas", "atlas", "user", 40, 0.215),
    "atlassgm": GroupModel("atlas", "atlas", "sgm", 1, 0.005),
    "cmsprd": GroupModel("cms", "cms", "prod", 3, 0.50),
    "cms": GroupModel("cms", "cms", "pilot", 2, 0.23),
    "cmsusr": GroupModel("cms", "cms", "user", 30, 0.265),
    "cmssgm": GroupModel("cms", "cms", "sgm", 1, 0.005),
    "lhcbprd": GroupModel("lhcb", "lhcb", "prod", 2, 0.75),
    "lhcb": GroupModel("lhcb", "lhcb", "user", 10, 0.245),
    "lhcbsgm": GroupModel("lhcb", "lhcb", "sgm", 1, 0.005),
    "ilcprd": GroupModel("ilc", "desy", "prod", 2, 0.60),
    "ilc": GroupModel("ilc", "desy", "user", 8, 0.30),
    "calice": GroupModel("ilc", "desy", "user", 4, 0.10),
    "hone": GroupModel("hone", "desy", "user", 6, 1.0),
    "zeus": GroupModel("zeus", "desy", "user", 5, 1.0),
    "ghep": GroupModel("others", "desy", "user", 4, 0.30),
    "desy": GroupModel("others", "desy", "user", 6, 0.30),
    "biomed": GroupModel("others", "desy", "prod", 5, 0.30),
    "belle": GroupModel("others", "desy", "user", 3, 0.10),
}
"""Groups doing the farm's work (the ops groups are modelled apart: monitoring, not load)."""

VO_LOAD: dict[str, float] = {"atlas": 0.34, "cms": 0.30, "lhcb": 0.09, "ilc": 0.07, "hone": 0.04,
                             "zeus": 0.03, "others": 0.13}
"""Part of the offered load each VO brings (atlas and cms ask for more than a 30 % share)."""

OPS_GROUPS: dict[str, int] = {"ops": 2, "dteam": 2}
"""Monitoring groups -> pool users. ``ops`` probes every queue it watches; ``dteam`` now and
then sends a test job to operations."""

DESY_VOS: dict[str, tuple[str, ...]] = {}
"""VO -> its groups, as the example configuration (etc/mysched.cfg) must list them."""
for _name, _g in DESY_GROUPS.items():
    DESY_VOS[_g.vo] = DESY_VOS.get(_g.vo, ()) + (_name,)
DESY_VOS["ops"] = tuple(OPS_GROUPS)
del _name, _g

BURST_GROUP = GroupModel("atlas", "atlas", "pilot", 3, 0.0)
"""`SyntheticSpec.burst_jobs`: the multi-core pilots a package guarantee is for."""
DESY_VOS["atlas"] += ("atlasmc",)
BURST_MEM = 16 * 1024**3
"""Memory a burst pilot asks for (WLCG's 2 GB per core of an 8-core pilot)."""

CAMPAIGN_BLOCK = 6 * HOUR
"""Seconds a campaign level lasts."""
CAMPAIGN_LEVELS = (0.0, 0.3, 0.7, 1.0, 1.0, 1.3, 1.7, 2.0)
"""Intensities a block may take (mean 1): silent, quiet, normal, rush."""
MULTICORE_KINDS = {("atlas", "prod"), ("cms", "prod")}
QUICK_RANGE = (20.0, 600.0)
"""Runtime range (s) of the jobs that end at once."""
MEM_PER_CORE = 2 * 1024**3
"""WLCG's 2 GB per core."""


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    """Parameters of the synthetic workload."""

    duration: float = 48 * HOUR
    """Seconds during which jobs are submitted."""
    slots: int = 400
    """Farm size (slots) the offered load is scaled to."""
    load: float = 1.2
    """Mean offered load as a multiple of `slots`: above 1 so that jobs queue."""
    mcore_fraction: float = 0.0
    """Fraction of atlas/cms production jobs asking for `mcore_cores` cores (0 by default: the
    DESY-HH farm of the paper ran single-core jobs). Such a job runs on one node (the planner
    places all its cores on one node), so mixing them with single-core jobs costs occupancy
    until node reservations exist; `mysched simulate --mcore-fraction` tries it."""
    mcore_cores: int = 8
    burst_jobs: int = 0
    """Bursts of multi-core pilots (group ``atlasmc``, `mcore_cores` cores, 16 GB each, 48 h
    walltime): this many jobs per burst, one burst every `burst_every` seconds from half that
    on -- the class a package guarantee (``pools``) is for. 0: none."""
    burst_every: float = 12 * HOUR
    ops_interval: float = 600.0
    """Seconds between ops probes of one queue (0: no ops jobs)."""
    seed: int = 1
    start: float = EPOCH
    """Unix time of the first possible submission."""

    def __post_init__(self) -> None:
        # Finite and bounded: an infinite duration or a burst every nanosecond would never
        # finish drawing (the command line names its options before it gets here).
        if not (0 <= self.duration <= MAX_DURATION and self.slots >= 0 and 0 <= self.load < math.inf
                and 0 <= self.ops_interval < math.inf):
            raise ValueError("duration (at most a year), slots, load and ops_interval must be finite "
                             "and not negative")
        if not 0 <= self.mcore_fraction <= 1 or self.mcore_cores < 1:
            raise ValueError("mcore_fraction must be within 0..1 and mcore_cores at least 1")
        if self.burst_jobs < 0 or not self.burst_every > 0:
            raise ValueError("burst_jobs must not be negative and burst_every must be positive")
        if burst_count(self.duration, self.burst_every, self.burst_jobs) > MAX_BURST_JOBS:
            raise ValueError(f"bursts of more than {MAX_BURST_JOBS} pilots in all")


MAX_DURATION = MAX_WORKLOAD_HOURS * HOUR
"""The longest workload drawn (a year of submissions)."""
MAX_BURST_JOBS = 1_000_000
"""The most burst pilots drawn in all (bursts x jobs per burst)."""


def burst_count(duration: float, every: float, jobs: int) -> float:
    """Burst pilots drawn in all: `jobs` at every/2, every/2 + every, ... before `duration`
    (a float, so that a burst every nanosecond is counted, not enumerated)."""
    if not jobs or every / 2 >= duration:
        return 0.0
    return float(jobs * math.ceil(min((duration - every / 2) / every, 1e18)))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def capped_lognormal_mean(median: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for X log-normal with this median and shape: what a job offers."""
    mu = math.log(median)
    if sigma <= 0:
        return min(median, cap)
    lc = math.log(cap)
    return (math.exp(mu + sigma * sigma / 2) * _phi((lc - mu - sigma * sigma) / sigma)
            + cap * (1.0 - _phi((lc - mu) / sigma)))


def _daily(t_abs: float, amplitude: float) -> float:
    """Relative submission rate at absolute time `t_abs`: highest at 15:00 local time."""
    hour = ((t_abs + UTC_OFFSET) / HOUR) % 24.0
    return 1.0 + amplitude * math.cos(2 * math.pi * (hour - 15.0) / 24.0)


def _geometric(rnd: random.Random, mean: float) -> int:
    """1, 2, ... with the given mean (burst sizes: many small, a few large)."""
    if mean <= 1.0:
        return 1
    return 1 + int(math.log(1.0 - rnd.random()) / math.log(1.0 - 1.0 / mean))


def _cum_weights(n: int) -> list[float]:
    """Zipf-like activity of n users: the first submits most."""
    out, acc = [], 0.0
    for k in range(1, n + 1):
        acc += 1.0 / k
        out.append(acc)
    return out


Row = tuple[float, str, str, str, int, float, int, float, str]
"""(submit, queue, user, group, cores, walltime, mem, runtime, name) before the id is known."""


def _group_jobs(rnd: random.Random, spec: SyntheticSpec, group: str, gm: GroupModel, out: list[Row]) -> None:
    kind = KINDS[gm.kind]
    limit = DESY_QUEUES[gm.queue]
    mcore = spec.mcore_fraction if (gm.vo, gm.kind) in MULTICORE_KINDS else 0.0
    cores_mean = 1.0 + (spec.mcore_cores - 1) * mcore
    per_job = cores_mean * ((1.0 - kind.quick) * capped_lognormal_mean(kind.median, kind.sigma, limit)
                            + kind.quick * sum(QUICK_RANGE) / 2)
    target = spec.load * spec.slots * VO_LOAD[gm.vo] * gm.weight  # slot-seconds per second
    rate = target / (kind.burst * per_job)  # submissions per second, on average
    if rate <= 0:
        return
    # Campaign levels per block, then one normalisation so that the rate -- daily rhythm
    # times level -- averages exactly `rate` over this duration, whatever its length.
    n_blocks = max(1, math.ceil(spec.duration / CAMPAIGN_BLOCK))
    levels = [rnd.choice(CAMPAIGN_LEVELS) if kind.campaigns else 1.0 for _ in range(n_blocks)]
    if not any(levels):
        levels = [1.0] * n_blocks
    step = 300.0
    n_steps = max(1, math.ceil(spec.duration / step))
    mean = sum(levels[min(n_blocks - 1, int(i * step // CAMPAIGN_BLOCK))]
               * _daily(spec.start + (i + 0.5) * step, kind.daily) for i in range(n_steps)) / n_steps
    rate /= mean
    users = [f"{group}{k:03d}" for k in range(1, gm.users + 1)]
    cum = _cum_weights(gm.users)
    mu = math.log(kind.median)
    peak = 1.0 + kind.daily
    for b, level in enumerate(levels):
        if level <= 0:
            continue
        t1 = min(spec.duration, (b + 1) * CAMPAIGN_BLOCK)
        lam = rate * level * peak
        t = b * CAMPAIGN_BLOCK + rnd.expovariate(lam)
        while t < t1:
            if rnd.random() * peak < _daily(spec.start + t, kind.daily):  # thinning
                user = rnd.choices(users, cum_weights=cum)[0]
                for k in range(_geometric(rnd, kind.burst)):
                    if rnd.random() < kind.quick:
                        runtime = rnd.uniform(*QUICK_RANGE)
                    else:
                        runtime = min(limit, rnd.lognormvariate(mu, kind.sigma))
                    runtime = float(round(runtime))
                    cores = spec.mcore_cores if mcore and rnd.random() < mcore else 1
                    if gm.kind == "user" and rnd.random() < 0.8:
                        # a user's own estimate: generous, in whole hours, within the limit
                        walltime = min(limit, HOUR * math.ceil(max(runtime, 1.0) * rnd.uniform(1.3, 4.0) / HOUR))
                    elif gm.kind == "sgm":
                        walltime = min(limit, max(12 * HOUR, runtime))
                    else:
                        walltime = limit
                    out.append((spec.start + t + k * kind.spacing, gm.queue, user, group, cores, walltime,
                                MEM_PER_CORE * cores, runtime, gm.kind))
            t += rnd.expovariate(lam)


def _ops_jobs(rnd: random.Random, spec: SyntheticSpec, out: list[Row]) -> None:
    """SAM-style probes: every `ops_interval` one short ops job into each watched queue;
    dteam sends a test job to operations about once an hour."""
    if spec.ops_interval <= 0:
        return
    watched = [q for q, vos in DESY_QUEUE_VOS.items() if "ops" in vos]
    ops_users = [f"ops{k:03d}" for k in range(1, OPS_GROUPS["ops"] + 1)]
    for queue in watched:
        t = rnd.uniform(0, spec.ops_interval)
        while t < spec.duration:
            runtime = float(round(min(HOUR, rnd.lognormvariate(math.log(90.0), 0.6))))
            out.append((spec.start + t, queue, rnd.choice(ops_users), "ops", 1, HOUR, MEM_PER_CORE // 2,
                        runtime, "probe"))
            t += spec.ops_interval * rnd.uniform(0.9, 1.1)
    dteam_users = [f"dteam{k:03d}" for k in range(1, OPS_GROUPS["dteam"] + 1)]
    t = rnd.expovariate(1 / HOUR)
    while t < spec.duration:
        runtime = float(round(min(HOUR, rnd.lognormvariate(math.log(300.0), 0.8))))
        out.append((spec.start + t, "operations", rnd.choice(dteam_users), "dteam", 1, HOUR, MEM_PER_CORE // 2,
                    runtime, "test"))
        t += rnd.expovariate(1 / HOUR)


def _burst_jobs(rnd: random.Random, spec: SyntheticSpec, out: list[Row]) -> None:
    """Bursts of 8-core pilots, a few seconds apart; runtimes log-normal around 8 h."""
    if not spec.burst_jobs:
        return
    users = [f"atlasmc{k:03d}" for k in range(1, BURST_GROUP.users + 1)]
    t = spec.burst_every / 2
    while t < spec.duration:
        for k in range(spec.burst_jobs):
            runtime = float(round(min(48 * HOUR, rnd.lognormvariate(math.log(8 * HOUR), 0.5))))
            out.append((spec.start + t + 2.0 * k, "atlas", rnd.choice(users), "atlasmc", spec.mcore_cores,
                        48 * HOUR, BURST_MEM, runtime, "burst"))
        t += spec.burst_every


def generate(spec: SyntheticSpec = SyntheticSpec()) -> list[TraceJob]:
    """The workload, sorted by submit time; job ids ``N.sim`` count up in submit order.

    `Job.vo` stays None: the configuration maps the groups to VOs (see `DESY_VOS`)."""
    if spec.duration <= 0 or spec.slots <= 0:
        return []
    rnd = random.Random(spec.seed)
    rows: list[Row] = []
    for group, gm in DESY_GROUPS.items():
        # One stream per group, seeded from the main one: adding a group leaves the others be.
        _group_jobs(random.Random(rnd.getrandbits(64)), spec, group, gm, rows)
    _ops_jobs(random.Random(rnd.getrandbits(64)), spec, rows)
    _burst_jobs(random.Random(rnd.getrandbits(64)), spec, rows)
    rows.sort()
    queued = JobState.QUEUED
    return [TraceJob(Job(f"{i}.sim", queue, user, group, cores, queued, submit, None, walltime, mem, (), None,
                         name, Request(parts=(NodePart(1, cores),), mem=mem) if name == "burst" else None), runtime)
            for i, (submit, queue, user, group, cores, walltime, mem, runtime, name) in enumerate(rows, 1)]
