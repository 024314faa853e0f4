"""Realistic synthetic farm snapshots for `mysched bench` and the benchmark suite.

A site of the given size with 20 VOs (shares summing to 100 %, a few with limits), hundreds
of users in production/user/software groups, node types, a hot queue, per-node limits and an
optional packing class — so the planner is measured with every rule switched on.
"""

from __future__ import annotations

import random

from mysched.core.settings import Config

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, Snapshot

N_VOS = 20


POOL = """pools = { mcore = { hosts = ["wn*"]; package = { slots = 8; };
  groups = { vo00prd = "10%"; vo01prd = 20; }; loan = { queues = ["all"]; max_walltime = "1d"; }; }; };"""


def bench_config(packing: bool = True, pools: bool = False) -> Config:
    """The configuration the benchmark farm runs under (`pools`: with a package guarantee for
    two VOs' multi-core work over every worker node). No drain section: the multi-core
    partition follows the demand, as it does by default."""
    rnd = random.Random(7)
    weights = [30, 25, 12, 8] + [rnd.randint(1, 4) for _ in range(N_VOS - 4)]
    total = sum(weights)
    shares = [round(100.0 * w / total, 2) for w in weights]
    shares[0] -= max(0.0, sum(shares) - 100.0)
    vos = []
    for i in range(N_VOS):
        groups = ", ".join(f'"vo{i:02d}{k}"' for k in ("prd", "usr", "sgm"))
        limit = " max_running = 6000; max_per_node = 6;" if i < 2 else ""
        vos.append(f"  vo{i:02d} = {{ groups = [{groups}]; share = {shares[i]:.2f};{limit} }};")
    sgm = "\n".join(f"  vo{i:02d}sgm = {{ max_running = 20; max_per_node = 1; }};" for i in range(N_VOS))
    pack = ('packing = { mcore = { policy = "exclusive"; groups = ["vo00prd"]; ttl = "2h"; }; };'
            if packing else "")
    text = f"""
scheduler = {{ max_starts_per_cycle = 5000; }};
vos = {{
{chr(10).join(vos)}
}};
default_vo = "vo19";
groups = {{
{sgm}
}};
queues = {{ grid = {{}}; long = {{ max_running = 8000; }}; ops = {{ max_running = 200; }};
           sw = {{ node_types = ["swmgr"]; }}; }};
hot = {{ queues = ["ops"]; }};
node_types = {{ swmgr = {{ nodes = ["wn000[0-9]"]; groups = [{", ".join(f'"vo{i:02d}sgm"' for i in range(N_VOS))}]; }}; }};
{pack}
{POOL if pools else ""}
"""
    return config_from_text(text, "<bench config>")


def bench_snapshot(nodes: int = 2500, slots: int = 8, running: int = 18000, queued: int = 50000,
                   seed: int = 1, now: float = 1_800_000_000.0, mcore: float | None = None) -> Snapshot:
    """A farm with `running` jobs spread over `nodes` and `queued` jobs waiting; `mcore`: the
    fraction of queued jobs asking for 8 cores (None: 5 % of one production group's)."""
    rnd = random.Random(seed)
    node_list = [Node(f"wn{i:04d}", slots) for i in range(nodes)]
    users = [(f"vo{v:02d}", f"vo{v:02d}{kind}", f"u{v:02d}{kind}{k}")
             for v in range(N_VOS) for kind, n in (("prd", 3), ("usr", 20), ("sgm", 1)) for k in range(n)]
    weights = [(30 if kind.endswith("prd") else 3 if kind.endswith("usr") else 0.2) * (3.0 if v in ("vo00", "vo01") else 1.0)
               for v, kind, _ in users]
    queues = ["grid"] * 8 + ["long"] * 2
    free = [slots] * nodes
    jobs: list[Job] = []
    capacity = nodes * slots
    running = min(running, capacity)
    order = list(range(nodes))
    i = 0
    while len(jobs) < running:
        v, g, u = rnd.choices(users, weights)[0]
        cores = 8 if (g == "vo00prd" and rnd.random() < 0.05) else 1
        for _ in range(nodes):
            n = order[i % nodes]
            i += 1
            if free[n] >= cores:
                break
        else:
            cores = 1
            n = next((k for k in range(nodes) if free[k] >= 1), None)
            if n is None:
                break
        free[n] -= cores
        jobs.append(Job(f"{len(jobs)}.bench", rnd.choice(queues), u, g, cores=cores, state=JobState.RUNNING,
                        submit_time=now - rnd.uniform(3600, 200000), start_time=now - rnd.uniform(0, 150000),
                        walltime=rnd.choice([86400.0, 172800.0, 324000.0]), placement=((node_list[n].name, cores),)))
    for k in range(queued):
        v, g, u = rnd.choices(users, weights)[0]
        q = "ops" if rnd.random() < 0.01 else ("sw" if g.endswith("sgm") else rnd.choice(queues))
        if mcore is None:
            cores = 8 if (g == "vo00prd" and rnd.random() < 0.05) else 1
        else:
            cores = 8 if rnd.random() < mcore else 1
        state = JobState.HELD if rnd.random() < 0.01 else JobState.QUEUED
        jobs.append(Job(f"{running + k}.bench", q, u, g, cores=cores, state=state,
                        submit_time=now - rnd.uniform(0, 86400), walltime=rnd.choice([3600.0, 86400.0, 324000.0])))
    return Snapshot(now, tuple(jobs), tuple(node_list))
