"""Absurd walltimes read from pbs_server, through a daemon cycle to the status commands (the
fake IFL answers as libtorque 6.1 does)."""

from __future__ import annotations

import json

from mysched.backends.torque.backend import QUEUE_ATTRS, TorqueServer
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.mapping import queue_from_attrs
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon

# the partition off: reservations from walltimes are what these tests are about (on, a
# one-node multi-core job takes none and the assertions would hold whatever the walltime)
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };')


def _job(walltime: str, cores: int, state: str = "Q", host: str = "") -> dict[str, str]:
    a = {"job_state": state, "queue": "batch", "euser": "bob", "egroup": "atlas", "qtime": "100",
         "Resource_List.nodes": f"1:ppn={cores}", "Resource_List.walltime": walltime}
    if host:
        a.update(exec_host=f"{host}/0-{cores - 1}", start_time="900")
    return a


def test_the_queues_walltime_ceiling_is_read():
    assert "resources_max" in QUEUE_ATTRS
    assert queue_from_attrs("q", {"resources_max.walltime": "48:00:00"}, []).max_walltime == 48 * 3600.0
    warnings: list[str] = []
    assert queue_from_attrs("q", {"resources_max.walltime": "soon"}, warnings).max_walltime is None
    assert warnings == ["queue q: bad resources_max.walltime 'soon'; not taken as its walltime ceiling"]


def _farm(jobs: list, nodes: list) -> FakeIFL:
    return FakeIFL(jobs, nodes, [("batch", {"queue_type": "Execution", "enabled": "True", "started": "True"})])


def test_an_absurd_walltime_makes_no_reservation_of_year_140719(tmp_path, capsys):
    """Before: "reserved n1 in 359999999996300 s", and `free` held n1's 2 idle slots for it."""
    ifl = _farm([("1.s", _job("99999999999:00:00", 2, "R", "n1")), ("2.s", _job("01:00:00", 4))],
                [("n1", {"state": "free", "np": "4", "jobs": "0-1/1.s"})])
    d = Daemon(CFG, TorqueServer(ifl=ifl, clock=lambda: 1000.0), state_dir=str(tmp_path))
    out = d.cycle()
    assert out.plan.reservations == {} and out.plan.waits["2.s"].reason == "no_free_slot"
    for cmd in (["why", "2.s"], ["when", "2.s"], ["free"]):
        assert main([*cmd, "--state-dir", str(tmp_path), "--max-age", "1e12"]) == 0
        said = capsys.readouterr().out
        assert "140719" not in said and "reserved" not in said and "359999" not in said, said
    assert main(["free", "--json", "--state-dir", str(tmp_path), "--max-age", "1e12"]) == 0
    assert json.loads(capsys.readouterr().out)["held"]["reserved"] == 0


def test_a_walltime_of_zero_from_pbs_server_does_not_backfill_onto_a_reserved_node(tmp_path):
    """Before: 3.s (walltime=0) started on n1, reserved for 2.s; pbs_mom then killed it."""
    ifl = _farm([("1.s", _job("01:00:00", 2, "R", "n1")), ("9.s", _job("240:00:00", 4, "R", "n2")),
                 ("2.s", _job("01:00:00", 4)), ("3.s", {**_job("00:00:00", 1), "qtime": "101"})],
                [("n1", {"state": "free", "np": "4", "jobs": "0-1/1.s"}),
                 ("n2", {"state": "job-exclusive", "np": "4", "jobs": "0-3/9.s"})])
    out = Daemon(CFG, TorqueServer(ifl=ifl, clock=lambda: 1000.0), state_dir=str(tmp_path)).cycle()
    assert out.plan.reservations["2.s"].nodes == ("n1",)
    assert out.started == 0 and out.plan.waits["3.s"].reason == "reserved"
