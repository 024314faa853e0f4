"""The TORQUE adapter against a scripted IFL: attribute mapping, locations, error translation."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from mysched.errors import (JobGone, JobStateError, RunRefused, ServerError, ServerTimeout, ServerUnavailable,
                            Unauthorized)
from mysched.model import JobState, NodeState
from mysched.torque.backend import (TorqueServer, location, parse_duration, parse_exec_host, parse_mem,
                                    parse_nodes)
from mysched.torque.schedproto import SchedulerListener, decode_command


class FakeIFL:
    def __init__(self):
        self.jobs = [
            ("12.srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd",
                        "Resource_List.nodes": "1:ppn=2", "Resource_List.walltime": "01:30:00",
                        "Resource_List.mem": "2gb", "qtime": "1795337386"}),
            ("13.srv", {"job_state": "R", "queue": "cms", "Job_Owner": "alice@ce", "exec_host": "node03/0-1+node04/2",
                        "start_time": "1795337400", "qtime": "1795337300", "Resource_List.walltime": "bogus"}),
            ("14[].srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd"}),
            ("14[0].srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd"}),
        ]
        self.nodes = [("node03", {"state": "job-exclusive", "np": "2", "jobs": "0-1/13.srv", "properties": "sw,big"}),
                      ("node04", {"state": "free", "np": "4", "jobs": "2/13.srv"}),
                      ("node05", {"state": "down,offline", "np": "4"})]
        self.queues = [("atlas", {"queue_type": "Execution", "enabled": "True", "started": "True",
                                  "max_running": "40"}),
                       ("route", {"queue_type": "Route", "enabled": "True", "started": "True"})]
        self.err = 0
        self.runs = []
        self.connects = 0
        self.run_rc = {}

    def connect(self, server):
        self.connects += 1
        return -1 if self.err == 15010 else 1

    def disconnect(self, conn):
        pass

    def statjob(self, conn, attrs):
        return self.jobs

    def statjob_one(self, conn, job_id, attrs):
        return [j for j in self.jobs if j[0] == job_id]

    def statnode(self, conn, attrs):
        return self.nodes

    def statque(self, conn, attrs):
        return self.queues

    def statserver(self, conn, attrs):
        return []

    def runjob(self, conn, job_id, loc):
        self.runs.append((job_id, loc))
        code = self.run_rc.get(job_id, 0)
        self.err = code
        return -1 if code else 0

    def errno(self):
        return self.err

    def errmsg(self, conn):
        return {15001: "Unknown Job Id Error", 15046: "Resource temporarily unavailable"}.get(self.err, "error")


def test_snapshot_maps_jobs_nodes_and_queues():
    s = TorqueServer("batch", ifl=FakeIFL(), clock=lambda: 5.0).snapshot()
    jobs = {j.id: j for j in s.jobs}
    assert set(jobs) == {"12.srv", "13.srv", "14[0].srv"}  # the array parent is not runnable
    q = jobs["12.srv"]
    assert (q.user, q.group, q.cores, q.walltime, q.mem, q.state) == ("bob", "atlasprd", 2, 5400.0, 2 << 30,
                                                                      JobState.QUEUED)
    r = jobs["13.srv"]
    assert r.user == "alice" and r.placement == (("node03", 2), ("node04", 1)) and r.cores == 3
    assert r.walltime is None and any("bogus" in w for w in s.extra["warnings"])
    nodes = {n.name: n for n in s.nodes}
    assert nodes["node03"].state == NodeState.FULL and nodes["node03"].properties == {"sw", "big"}
    assert nodes["node05"].state == NodeState.DOWN and nodes["node04"].jobs == ("13.srv",)
    assert [q.name for q in s.queues] == ["atlas"] and s.queues[0].max_running == 40


def test_run_job_passes_node_ppn_location():
    ifl = FakeIFL()
    TorqueServer(ifl=ifl).run_job("12.srv", (("node04", 2),))
    assert ifl.runs == [("12.srv", "node04:ppn=2")]
    assert location((("a", 2), ("b", 2))) == "a:ppn=2+b:ppn=2"


@pytest.mark.parametrize("code, exc", [(15001, JobGone), (15018, JobStateError), (15007, Unauthorized),
                                       (15046, RunRefused), (15064, RunRefused), (15085, ServerTimeout),
                                       (15099, ServerUnavailable), (15999, ServerError)])
def test_ifl_errors_are_translated(code, exc):
    ifl = FakeIFL()
    ifl.run_rc["12.srv"] = code
    with pytest.raises(exc) as info:
        TorqueServer(ifl=ifl).run_job("12.srv", (("node04", 1),))
    assert info.value.code == code and "12.srv" in str(info.value)


def test_unreachable_server_is_unavailable_and_reconnects_later():
    ifl = FakeIFL()
    ifl.err = 15010
    srv = TorqueServer("nohost", ifl=ifl)
    with pytest.raises(ServerUnavailable, match="cannot connect to pbs_server at nohost"):
        srv.snapshot()
    ifl.err = 0
    assert len(srv.snapshot().jobs) == 3


def test_get_job_of_unknown_job_is_none():
    assert TorqueServer(ifl=FakeIFL()).get_job("99.srv") is None


def test_value_parsers():
    assert parse_nodes("2:ppn=4") == 8 and parse_nodes("node03:ppn=2") == 2 and parse_nodes("1") == 1
    assert parse_exec_host("b391/0-3") == (("b391", 4),)
    assert parse_exec_host("n1/0,2-3+n2/1") == (("n1", 3), ("n2", 1))
    assert parse_duration("96:00:00") == 345600 and parse_duration("90") == 90
    assert parse_mem("512kb") == 512 * 1024 and parse_mem("100") == 100
    for bad in ("x:ppn=y",):
        with pytest.raises(ValueError):
            parse_nodes(bad)
    with pytest.raises(ValueError):
        parse_duration("19:2x")


def test_missing_libtorque_is_a_clear_error(monkeypatch):
    from mysched.torque import ifl
    monkeypatch.setattr(ifl, "SEARCH", ())
    monkeypatch.setattr(ifl.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(ifl.glob, "glob", lambda pattern: [])
    monkeypatch.delenv("MYSCHED_LIBTORQUE", raising=False)
    with pytest.raises(ServerUnavailable, match="libtorque.so.2 not found"):
        ifl.CtypesIFL(None)


def test_scheduler_listener_decodes_server_contacts():
    assert decode_command(struct.pack("!I", 1)) == "new"
    assert decode_command(struct.pack("!I", 2)) == "term"
    got = []
    done = threading.Event()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=lambda r: (got.append(r), done.set())).start()
    try:
        with socket.create_connection(("127.0.0.1", lst.port)) as s:
            s.sendall(struct.pack("!I", 2))
        assert done.wait(5)
        assert got == ["term"]
    finally:
        lst.close()
