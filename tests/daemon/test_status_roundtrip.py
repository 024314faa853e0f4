"""Every status the daemon publishes is one the status commands read: a simulated half day
with multi-core jobs, the drain partition and reservations, each cycle's status file put
through all eight commands."""

from __future__ import annotations

import json

from mysched.backends.sim.farm import SimulatedFarm, make_nodes
from mysched.backends.sim.server import SimServer
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon
from mysched.sim.workloads.synthetic import SyntheticSpec, generate

from ..conftest import REPO

DRAIN = '\ndrain = { rate = 60; max_draining = 4; keep = "30m"; min_cores = 2; };\n'


def test_the_status_commands_read_every_status_of_a_day_with_drains_and_reservations(tmp_path, capsys):
    cfg = config_from_text((REPO / "etc" / "mysched.cfg").read_text() + DRAIN)
    wl = generate(SyntheticSpec(duration=8 * 3600.0, slots=320, seed=2, mcore_fraction=1.0, burst_jobs=6,
                                burst_every=7200.0))  # overloaded, with 8-core jobs
    farm = SimulatedFarm(make_nodes(10, 8, cfg.farm.name_format), wl, start=wl[0].job.submit_time, vo_of=cfg.vo_of)
    clock = [0.0]
    d = Daemon(cfg, SimServer(farm, speed=1.0, clock=lambda: clock[0]), state_dir=str(tmp_path))
    seen = {"drains": 0, "reservations": 0}
    for _ in range(40):  # every 10 simulated minutes
        d.cycle()
        doc = json.loads((tmp_path / "status.json").read_text())
        for k in seen:
            seen[k] += bool(doc.get(k))
        job = next((r[0] for r in doc["jobs"] if r[6] != "R"), doc["jobs"][0][0]) if doc["jobs"] else None
        for cmd in (["jobs"], ["nodes"], ["shares"], ["free"], ["pools"], ["loads"]) + (
                (["why", job], ["when", job]) if job else ()):
            rc = main([*cmd, "--state-dir", str(tmp_path), "--max-age", "1e10"])
            assert rc == 0, f"{cmd}: {capsys.readouterr().err}"
        capsys.readouterr()
        clock[0] += 600.0
    assert seen["drains"] and seen["reservations"], seen  # the cases this test is for did occur
