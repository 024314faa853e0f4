"""The embedded synthetic workload: a DESY-HH-like multi-VO Grid farm (Gellrich, CHEP2013).

Five queues (atlas, cms, lhcb, desy for the other VOs, operations for monitoring), VOs with
production, user and software-manager groups, production submitting in large bursts (pilot
factories), users in smaller batches with a daily rhythm, VOs running campaigns that come
and go. Runtimes are log-normal, capped by the queue's wall-clock limit (90 h; 1 h for
operations). The offered load is scaled to the farm so that jobs queue and shares matter.
Deterministic for a given seed.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ..model import Job, JobState, TraceJob

EPOCH = 1_767_571_200.0  # 2026-01-05 00:00 UTC: a Monday; fixed so runs are reproducible

# VO -> (queue, fraction of the offered load); groups below.
DESY_QUEUES: dict[str, float] = {"atlas": 90 * 3600.0, "cms": 90 * 3600.0, "lhcb": 90 * 3600.0,
                                 "desy": 90 * 3600.0, "operations": 3600.0}
"""Queue -> wall-clock limit (seconds), as in the paper's table 1."""

# group -> (VO, kind, users, share of its VO's load)
DESY_GROUPS: dict[str, tuple[str, str, int, float]] = {
    "atlasprd": ("atlas", "prod", 3, 0.60), "atlas": ("atlas", "pilot", 2, 0.15),
    "atlasusr": ("atlas", "user", 40, 0.23), "atlassgm": ("atlas", "sgm", 1, 0.02),
    "cmsprd": ("cms", "prod", 3, 0.55), "cms": ("cms", "pilot", 2, 0.15),
    "cmsusr": ("cms", "user", 30, 0.28), "cmssgm": ("cms", "sgm", 1, 0.02),
    "lhcbprd": ("lhcb", "prod", 2, 0.80), "lhcb": ("lhcb", "user", 10, 0.18), "lhcbsgm": ("lhcb", "sgm", 1, 0.02),
    "ilcprd": ("ilc", "prod", 2, 0.6), "ilc": ("ilc", "user", 8, 0.3), "calice": ("ilc", "user", 4, 0.1),
    "hone": ("hone", "user", 6, 1.0), "zeus": ("zeus", "user", 5, 1.0),
    "ops": ("ops", "ops", 2, 0.7), "dteam": ("ops", "ops", 2, 0.3),
    "ghep": ("others", "user", 4, 0.3), "desy": ("others", "user", 6, 0.3),
    "biomed": ("others", "prod", 5, 0.3), "belle": ("others", "user", 3, 0.1),
}

DESY_VOS: dict[str, tuple[str, ...]] = {}
for _g, (_vo, *_rest) in DESY_GROUPS.items():
    DESY_VOS.setdefault(_vo, ())
    DESY_VOS[_vo] += (_g,)

VO_LOAD: dict[str, float] = {"atlas": 0.34, "cms": 0.30, "lhcb": 0.09, "ilc": 0.07, "hone": 0.04, "zeus": 0.03,
                             "ops": 0.01, "others": 0.12}
VO_QUEUE: dict[str, str] = {"atlas": "atlas", "cms": "cms", "lhcb": "lhcb", "ops": "operations"}

# kind -> (median runtime s, log-sigma, mean batch size)
KINDS: dict[str, tuple[float, float, float]] = {
    "prod": (3 * 3600.0, 1.0, 60.0),
    "pilot": (6 * 3600.0, 0.8, 25.0),
    "user": (40 * 60.0, 1.3, 8.0),
    "sgm": (20 * 60.0, 0.7, 1.0),
    "ops": (3 * 60.0, 0.5, 3.0),
}


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of the synthetic workload."""

    duration: float = 48 * 3600.0
    """Seconds of submissions."""
    slots: int = 400
    """Farm size the load is scaled to."""
    load: float = 1.2
    """Offered load as a multiple of the farm (over the duration, on average)."""
    mcore_fraction: float = 0.0
    """Fraction of atlas/cms production jobs asking for 8 cores (placed on one node)."""
    seed: int = 1
    start: float = EPOCH


def generate(spec: SyntheticSpec = SyntheticSpec()) -> list[TraceJob]:
    """The workload, sorted by submit time."""
    if spec.duration <= 0 or spec.slots <= 0:
        return []
    rnd = random.Random(spec.seed)
    out: list[TraceJob] = []
    n = 0
    blocks = max(1, math.ceil(spec.duration / (6 * 3600.0)))
    for group, (vo, kind, n_users, frac) in DESY_GROUPS.items():
        queue = VO_QUEUE.get(vo, "desy")
        limit = DESY_QUEUES[queue]
        median, sigma, batch = KINDS[kind]
        if kind == "ops":
            queue, limit = "operations", DESY_QUEUES["operations"]
        mean_rt = min(limit, median * math.exp(sigma * sigma / 2))
        # slot-seconds this group offers over the whole duration
        offered = spec.load * spec.slots * spec.duration * VO_LOAD[vo] * frac
        n_batches = max(1.0, offered / (mean_rt * batch))
        # Campaigns: each 6-hour block has its own intensity (some blocks idle), mean 1.
        if kind in ("ops", "sgm"):
            weights = [1.0] * blocks
        else:
            weights = [rnd.choice((0.0, 0.3, 1.0, 1.0, 1.5, 2.2)) for _ in range(blocks)]
        total_w = sum(weights) or 1.0
        rate = n_batches / spec.duration  # batches per second, on average
        for b, w in enumerate(weights):
            t0 = b * 6 * 3600.0
            t1 = min(spec.duration, t0 + 6 * 3600.0)
            lam = rate * w * blocks / total_w
            if lam <= 0:
                continue
            t = t0 + rnd.expovariate(lam)
            while t < t1:
                # users submit more in the (European) day
                if kind == "user" and rnd.random() > 0.6 + 0.4 * math.sin(2 * math.pi * ((t / 3600.0) % 24 - 9) / 24):
                    t += rnd.expovariate(lam)
                    continue
                user = f"{group}{rnd.randrange(n_users):02d}" if n_users > 1 else f"{group}00"
                size = max(1, int(rnd.expovariate(1.0 / batch))) if batch > 1 else 1
                for k in range(size):
                    runtime = min(limit, rnd.lognormvariate(math.log(median), sigma))
                    cores = 8 if kind == "prod" and vo in ("atlas", "cms") and rnd.random() < spec.mcore_fraction else 1
                    submit = spec.start + t + k * 0.5
                    walltime = limit if kind != "user" else min(limit, max(3600.0, runtime * rnd.uniform(1.5, 4)))
                    n += 1
                    out.append(TraceJob(Job(f"{n}.sim", queue, user, group, cores, JobState.QUEUED, submit,
                                            None, float(math.ceil(walltime)), 2_000_000_000 * cores), runtime))
                t += rnd.expovariate(lam)
    out.sort(key=lambda tj: (tj.job.submit_time, tj.job.id))
    return out
