"""A restarted daemon carries over the reservations, drains and pool gates of its last status
file (as MAUI's checkpoint file keeps its reservations): a restart chose afresh, so the depth
went to another job and a short job took the slot a reservation had kept free."""

from __future__ import annotations

import json
import os
import time

from mysched.backends.sim.farm import SimulatedFarm
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, TraceJob
from mysched.daemon.restartstate import carried
from mysched.daemon.cycle import Daemon

# the partition off: on by default, it serves the one-node 4-core job, which takes no reservation
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                       'drain = { rate = 0; };')


def _farm(name: str = "torque://batch") -> SimulatedFarm:
    # wn01 full for an hour, wn02 for two; a 4-core job waits and is reserved wn01
    wl = [TraceJob(Job(f"r{n}{i}", "q", "x", "cms", 1, JobState.QUEUED, 100.0, None, wall), wall)
          for n, wall in (("1", 3600.0), ("2", 7200.0)) for i in range(4)]
    wl.append(TraceJob(Job("wide", "q", "u", "atlas", 4, JobState.QUEUED, 250.0, None, 4 * 3600.0), 3600.0))
    return SimulatedFarm([Node("wn01", 4), Node("wn02", 4)], wl, start=100.0, name=name)


def test_a_restarted_daemon_keeps_the_last_reservation(tmp_path):
    farm = _farm()
    farm.advance(200.0)
    first = Daemon(CFG, farm, state_dir=str(tmp_path), wall=time.time)
    assert first.cycle().started == 8  # the farm full
    farm.advance(300.0)  # the wide job arrives
    out = first.cycle()
    assert out.result == "ok" and out.plan.reservations["wide"].nodes
    kept = out.plan.reservations["wide"]
    again = Daemon(CFG, farm, state_dir=str(tmp_path), wall=time.time)  # the restart
    assert again._resv == {"wide": kept}
    assert again.cycle().plan.reservations["wide"].nodes == kept.nodes


def test_the_restart_that_upgrades_a_daemon_of_status_format_3_keeps_the_reservation(tmp_path):
    # format 4 writes null for what is absent; the reservations, drains and gates read alike
    farm = _farm()
    farm.advance(200.0)
    first = Daemon(CFG, farm, state_dir=str(tmp_path), wall=time.time)
    first.cycle()
    farm.advance(300.0)
    kept = first.cycle().plan.reservations["wide"]
    path = tmp_path / "status.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": 3}))
    assert carried(str(tmp_path), time.time(), 600.0)[0] == {"wide": kept}
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": 2}))  # ranks meant another thing
    assert carried(str(tmp_path), time.time(), 600.0) == ({}, {}, {})


def test_nothing_is_carried_from_a_stale_file_a_dry_run_or_a_simulated_farm(tmp_path):
    farm = _farm()
    farm.advance(200.0)
    d = Daemon(CFG, farm, state_dir=str(tmp_path), wall=time.time)
    d.cycle()
    farm.advance(300.0)
    d.cycle()
    assert carried(str(tmp_path), time.time(), 600.0)[0]
    old = time.time() - 3600
    os.utime(tmp_path / "status.json", (old, old))
    assert carried(str(tmp_path), time.time(), 600.0) == ({}, {}, {})  # an hour old
    sim = _farm("sim://")
    sim.advance(200.0)
    d = Daemon(CFG, sim, state_dir=str(tmp_path / "s"), wall=time.time)
    d.cycle()
    sim.advance(300.0)
    d.cycle()
    assert carried(str(tmp_path / "s"), time.time(), 600.0) == ({}, {}, {})  # another clock
    assert carried(str(tmp_path / "none"), time.time(), 600.0) == ({}, {}, {})
    dry = _farm()
    dry.advance(200.0)
    d = Daemon(CFG, dry, state_dir=str(tmp_path / "d"), wall=time.time, dry_run=True)
    d.cycle()
    dry.advance(300.0)
    d.cycle()
    assert (tmp_path / "d" / "status.json").exists()
    assert carried(str(tmp_path / "d"), time.time(), 600.0) == ({}, {}, {})  # planned, not done
