"""The TORQUE adapter against a scripted IFL: attribute mapping, locations, error translation,
C struct conversion, and the scheduler-contact decoding. No TORQUE needed."""

from __future__ import annotations

import ctypes
import socket
import struct
import threading

import pytest

from mysched.errors import (JobGone, JobStateError, RunRefused, ServerError, ServerTimeout, ServerUnavailable,
                            Unauthorized)
from mysched.core.model.batch import JobState, NodeState
from mysched.backends.torque.values import parse_exec_host, parse_mem, parse_node_jobs, parse_nodes
from mysched.core.model.durations import parse_duration
from mysched.backends.torque import ifl as ifl_mod
from mysched.backends.torque.backend import (JobReader, TorqueServer, job_from_attrs, location, node_from_attrs,
                                             queue_from_attrs)
from mysched.backends.torque.ifl import (CtypesIFL, PbsModuleIFL, _Attrl, _BatchStatus, convert_packed, convert_status,
                                         pack, unpack)
from mysched.backends.torque.fake import FakeIFL as _FakeIFL
from mysched.backends.torque.schedproto import SchedulerListener, decode_command


class FakeIFL(_FakeIFL):
    """The shipped fake, with jobs, nodes and queues as libtorque 6.1 reported them."""

    def __init__(self) -> None:
        super().__init__(
            jobs=[
                ("12.srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd",
                            "Resource_List.nodes": "1:ppn=2", "Resource_List.walltime": "01:30:00",
                            "Resource_List.mem": "2gb", "qtime": "1795337386"}),
                ("13.srv", {"job_state": "R", "queue": "cms", "Job_Owner": "alice@ce", "exec_host": "node03/0-1+node04/2",
                            "start_time": "1795337400", "qtime": "1795337300", "Resource_List.walltime": "bogus"}),
                ("14[].srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd"}),
                ("14[0].srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd"}),
            ],
            nodes=[("node03", {"state": "job-exclusive", "np": "2", "jobs": "0-1/13.srv", "properties": "sw,big"}),
                   ("node04", {"state": "free", "np": "4", "jobs": "2/13.srv"}),
                   ("node05", {"state": "down,offline", "np": "4"})],
            queues=[("atlas", {"queue_type": "Execution", "enabled": "True", "started": "True", "max_running": "40"}),
                    ("cms", {"queue_type": "Execution", "enabled": "True", "started": "True"}),
                    ("route", {"queue_type": "Route", "enabled": "True", "started": "True"})],
            server={"server_state": "Active", "scheduling": "False", "total_jobs": "4"}, start_jobs=False)


# -- attribute mapping -----------------------------------------------------------------------
def test_snapshot_maps_jobs_nodes_and_queues():
    ifl = FakeIFL()
    s = TorqueServer("batch", ifl=ifl, clock=lambda: 5.0).snapshot()
    jobs = {j.id: j for j in s.jobs}
    assert set(jobs) == {"12.srv", "13.srv", "14[0].srv"}  # the array parent is not runnable
    q = jobs["12.srv"]
    assert (q.user, q.group, q.cores, q.walltime, q.mem, q.state, q.submit_time) == (
        "bob", "atlasprd", 2, 5400.0, 2 << 30, JobState.QUEUED, 1795337386.0)
    r = jobs["13.srv"]
    assert r.user == "alice" and r.group == "alice" and r.placement == (("node03", 2), ("node04", 1))
    assert r.cores == 3 and r.start_time == 1795337400.0
    assert r.walltime is None and any("bogus" in w for w in s.extra["warnings"])
    nodes = {n.name: n for n in s.nodes}
    assert nodes["node03"].state == NodeState.FULL and nodes["node03"].properties == {"sw", "big"}
    assert nodes["node05"].state == NodeState.DOWN and nodes["node04"].jobs == ("13.srv",)
    assert [q.name for q in s.queues] == ["atlas", "cms"] and s.queues[0].max_running == 40
    assert s.time == 5.0 and s.server == "torque://batch"
    assert s.extra["server"] == {"server_state": "Active", "scheduling": "False", "total_jobs": "4"}
    # only the attributes the mapping reads are asked for
    assert all("Variable_List" not in sel and sel for sel in ifl.selects)


@pytest.mark.parametrize("attrs, cores", [
    ({"Resource_List.nodes": "2:ppn=4"}, 8),
    ({"Resource_List.nodes": "node03:ppn=2"}, 2),
    ({"Resource_List.nodes": "a:ppn=2+b:ppn=2"}, 4),
    ({"Resource_List.nodes": "1"}, 1),
    ({"Resource_List.procs": "3"}, 3),
    ({"Resource_List.ncpus": "6"}, 6),
    ({}, 1),
])
def test_cores_from_nodes_procs_ncpus(attrs, cores):
    j = job_from_attrs("1.s", {"job_state": "Q", "euser": "u", **attrs}, [])
    assert j.cores == cores


def test_owner_fallback_and_time_fallback():
    j = job_from_attrs("1.s", {"job_state": "W", "Job_Owner": "carol@ui.example", "ctime": "100"}, [])
    assert (j.user, j.group, j.submit_time, j.state) == ("carol", "carol", 100.0, JobState.WAITING)


@pytest.mark.parametrize("attrs, needle", [
    ({"Resource_List.walltime": "12:xx:00"}, "duration"),
    ({"Resource_List.mem": "lots"}, "size"),
    ({"Resource_List.nodes": "x:ppn=y"}, "nodes spec"),
    ({"Resource_List.procs": "-2"}, "procs"),
    ({"exec_host": "node01/a-b"}, "exec_host"),
    ({"qtime": "yesterday"}, "qtime"),
    ({"start_time": "soon"}, "start_time"),
])
def test_malformed_job_values_warn_and_leave_the_rest(attrs, needle):
    warnings: list[str] = []
    j = job_from_attrs("7.s", {"job_state": "R", "queue": "q", "euser": "u", "egroup": "g", **attrs}, warnings)
    assert j is not None and j.id == "7.s" and j.user == "u"
    assert len(warnings) == 1 and needle in warnings[0] and "7.s" in warnings[0]


def test_unknown_state_skips_the_job_with_a_warning():
    warnings: list[str] = []
    assert job_from_attrs("8.s", {"job_state": "Z"}, warnings) is None
    assert "unknown state" in warnings[0]


def test_malformed_values_in_a_whole_snapshot_do_not_raise():
    ifl = FakeIFL()
    ifl.jobs = [("1.s", {"job_state": "?", "queue": "q"}),
                ("2.s", {"job_state": "Q", "queue": "q", "euser": "u", "Resource_List.walltime": "1:2:3:4:5",
                         "Resource_List.mem": "12qb"}),
                ("3.s", {"job_state": "R", "queue": "q", "euser": "u", "exec_host": "+/+"})]
    ifl.nodes = [("n1", {"state": "free", "np": "four"}), ("n2", {"state": "weird-flag", "np": "2"})]
    ifl.queues = [("q", {"queue_type": "Execution", "max_running": "many"})]
    s = TorqueServer(ifl=ifl).snapshot()
    assert [j.id for j in s.jobs] == ["2.s", "3.s"]
    assert s.jobs[0].walltime is None and s.jobs[0].mem is None
    n1, n2 = s.nodes
    assert (n1.slots, n1.state) == (0, NodeState.OFFLINE) and n2.slots == 2
    assert s.queues[0].max_running is None
    assert len(s.extra["warnings"]) == 6


@pytest.mark.parametrize("flags, state", [
    ("free", NodeState.FREE), ("job-exclusive", NodeState.FULL), ("job-exclusive,busy", NodeState.BUSY),
    ("offline", NodeState.OFFLINE), ("down,offline", NodeState.DOWN), ("state-unknown,down", NodeState.DOWN),
    ("", NodeState.DOWN), ("free,time-shared", NodeState.FREE),
])
def test_node_states(flags, state):
    assert node_from_attrs("n", {"state": flags, "np": "8"}, []).state == state


def test_node_jobs_and_queue_flags():
    assert parse_node_jobs("0-1/12.srv, 2/13.srv,3/12.srv") == ("12.srv", "13.srv")
    assert parse_node_jobs("") == ()
    q = queue_from_attrs("ops", {"queue_type": "Execution", "enabled": "False", "started": "True"}, [])
    assert (q.enabled, q.started, q.max_running) == (False, True, None)
    assert queue_from_attrs("r", {"queue_type": "Route"}, []) is None


def test_value_parsers():
    assert parse_nodes("2:ppn=4") == 8 and parse_nodes("node03:ppn=2") == 2 and parse_nodes("1") == 1
    assert parse_nodes("2:ppn=2:gpus=1+node01") == 5
    assert parse_exec_host("b391/0-3") == (("b391", 4),)
    assert parse_exec_host("n1/0,2-3+n2/1") == (("n1", 3), ("n2", 1))
    assert parse_exec_host("node03/0+node03/1") == (("node03", 2),)
    assert parse_duration("96:00:00") == 345600 and parse_duration("90") == 90 and parse_duration("01:30") == 90
    assert parse_mem("512kb") == 512 << 10 and parse_mem("2000mb") == 2000 << 20 and parse_mem("4gb") == 4 << 30
    assert parse_mem("100") == 100 and parse_mem("1kw") == 8 << 10
    for bad in ("x:ppn=y", "", "1:ppn="):
        with pytest.raises(ValueError):
            parse_nodes(bad)
    for bad in ("19:2x", "", "-5"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    with pytest.raises(ValueError):
        parse_mem("1.5gb")
    with pytest.raises(ValueError):
        parse_exec_host("/0")


# -- starting jobs ---------------------------------------------------------------------------
def test_run_job_passes_node_ppn_location():
    ifl = FakeIFL()
    TorqueServer(ifl=ifl).run_job("12.srv", (("node04", 2),))
    assert ifl.runs == [("12.srv", "node04:ppn=2")]
    assert location((("a", 2), ("b", 2))) == "a:ppn=2+b:ppn=2"
    assert location((("n1", 1),)) == "n1:ppn=1"  # never a bare name
    assert location(()) is None  # the server's own choice


@pytest.mark.parametrize("code, exc", [
    (15001, JobGone), (15086, JobGone), (15018, JobStateError), (15052, JobStateError),
    (15007, Unauthorized), (15008, Unauthorized), (15046, RunRefused), (15064, RunRefused),
    (15072, RunRefused), (15110, RunRefused), (15085, ServerTimeout), (15033, ServerTimeout),
    (15099, ServerTimeout), (15171, ServerTimeout), (15062, ServerUnavailable), (15004, ServerError),
    (15999, ServerError),
])
def test_runjob_errors_are_translated(code, exc):
    ifl = FakeIFL()
    ifl.run_rc["12.srv"] = code
    with pytest.raises(exc) as info:
        TorqueServer(ifl=ifl).run_job("12.srv", (("node04", 1),))
    assert type(info.value) is exc
    assert info.value.code == code and "12.srv" in str(info.value) and info.value.call == "runjob"


def test_runjob_on_a_broken_connection_is_a_timeout_and_reconnects():
    """libtorque 6.1 returns 15033 with pbs_errno -1 when the socket died (seen live)."""
    ifl = FakeIFL()
    ifl.run_rc["12.srv"] = 15033
    ifl.run_errno["12.srv"] = -1
    srv = TorqueServer(ifl=ifl)
    with pytest.raises(ServerTimeout, match="Batch protocol error"):
        srv.run_job("12.srv", (("node04", 1),))
    assert srv.conn is None and ifl.disconnects == 1
    del ifl.run_rc["12.srv"]
    srv.run_job("12.srv", (("node04", 1),))
    assert ifl.connects == 2


def test_job_errors_keep_the_connection():
    ifl = FakeIFL()
    ifl.run_rc["12.srv"] = 15018
    srv = TorqueServer(ifl=ifl)
    with pytest.raises(JobStateError):
        srv.run_job("12.srv", (("node04", 1),))
    assert srv.conn == 1 and ifl.disconnects == 0


# -- connection handling ---------------------------------------------------------------------
@pytest.mark.parametrize("rc, text", [(-111, "Connection refused (error 111)"),
                                      (-15010, "unknown host (error 15010)")])
def test_connect_failures_name_the_cause(rc, text):
    ifl = FakeIFL()
    ifl.connect_rc = [rc]
    srv = TorqueServer("nohost", ifl=ifl)
    with pytest.raises(ServerUnavailable, match="cannot connect to pbs_server at nohost") as info:
        srv.snapshot()
    assert text in str(info.value) and info.value.code == -rc
    assert len(srv.snapshot().jobs) == 3  # and it connects again next time


def test_stat_on_a_stale_connection_reconnects_once():
    ifl = FakeIFL()
    srv = TorqueServer(ifl=ifl)
    srv.snapshot()
    ifl.fail_stat = [15033]  # the server restarted under the open connection
    assert len(srv.snapshot().jobs) == 3
    assert ifl.connects == 2 and ifl.disconnects == 1


def test_stat_that_keeps_failing_is_unavailable():
    ifl = FakeIFL()
    ifl.fail_stat = [15033, 15033]
    with pytest.raises(ServerUnavailable) as info:
        TorqueServer(ifl=ifl).snapshot()
    assert not isinstance(info.value, ServerTimeout) and info.value.call == "statserver"


def test_stat_timeout_is_not_retried():
    ifl = FakeIFL()
    ifl.fail_stat = [15085]
    with pytest.raises(ServerTimeout):
        TorqueServer(ifl=ifl).snapshot()
    assert ifl.connects == 1


def test_a_call_that_ran_into_the_timeout_is_a_timeout_not_retried():
    """libtorque 6.1 reports its own read timeout as 15033, like a dropped connection."""
    import time

    class Slow(FakeIFL):
        def statserver(self, conn, attrs):
            time.sleep(0.12)
            return super().statserver(conn, attrs)

        def runjob(self, conn, job_id, loc):
            time.sleep(0.12)
            return super().runjob(conn, job_id, loc)
    ifl = Slow()
    ifl.fail_stat = [15033]
    srv = TorqueServer(ifl=ifl, timeout=0.1)
    with pytest.raises(ServerTimeout, match="no answer within 0.1 s") as info:
        srv.snapshot()
    assert info.value.code == 15085 and ifl.connects == 1 and srv.conn is None
    ifl.run_rc["12.srv"] = 15033
    with pytest.raises(ServerTimeout, match="runjob 12.srv: no answer"):
        srv.run_job("12.srv", (("node04", 1),))


def test_stat_refused_for_rights_is_unauthorized():
    ifl = FakeIFL()
    ifl.fail_stat = [15007]
    with pytest.raises(Unauthorized):
        TorqueServer(ifl=ifl).snapshot()


def test_get_job():
    ifl = FakeIFL()
    srv = TorqueServer(ifl=ifl)
    assert srv.get_job("99.srv") is None
    assert srv.get_job("13.srv").state == JobState.RUNNING
    ifl.fail_stat = [15099]
    assert srv.get_job("12.srv").cores == 2  # reconnected and asked again


# -- the C side: struct conversion and freeing ----------------------------------------------
def _c_status(rows):
    """Build a C batch_status list like libtorque's; returns (head, keepalive)."""
    keep = []
    head = prev = None
    for name, attrs in rows:
        bs = _BatchStatus()
        bs.name = name.encode()
        a_prev = None
        for key, value in attrs:
            at = _Attrl()
            n, _, r = key.partition(".")
            at.name, at.resource, at.value = n.encode(), (r.encode() if r else None), value
            keep.append(at)
            if a_prev is None:
                bs.attribs = ctypes.pointer(at)
            else:
                a_prev.next = ctypes.pointer(at)
            a_prev = at
        keep.append(bs)
        if prev is None:
            head = ctypes.pointer(bs)
        else:
            prev.next = ctypes.pointer(bs)
        prev = bs
    return head, keep


def test_convert_status_reads_names_resources_and_values():
    head, _keep = _c_status([("12.srv", [("job_state", b"Q"), ("Resource_List.nodes", b"1:ppn=2"),
                                         ("Resource_List.walltime", b"01:00:00"), ("exec_host", None)]),
                             ("13.srv", [])])
    assert convert_status(head) == [("12.srv", {"job_state": "Q", "Resource_List.nodes": "1:ppn=2",
                                                "Resource_List.walltime": "01:00:00", "exec_host": ""}),
                                    ("13.srv", {})]
    assert convert_status(ctypes.POINTER(_BatchStatus)()) == []


@pytest.fixture(params=["python", "c"])
def walk(request, monkeypatch):
    """convert_packed's Python walk, and its C walk where the extension was built."""
    from mysched.backends.torque import ifl

    if request.param == "python":
        monkeypatch.setattr(ifl, "_C_WALK", None)
    elif ifl._C_WALK is None:
        pytest.skip("the C walk (mysched/backends/torque/_packed.c) is not built here")
    return request.param


def test_packed_rows_match_the_dict_conversion_and_leave_out_walltime_remaining(walk):
    rows = [("12.srv", [("job_state", b"R"), ("Resource_List.nodes", b"1:ppn=2"), ("exec_host", b"n1/0-1"),
                        ("Walltime.Remaining", b"3591"), ("Job_Name", None)]),
            ("13.srv", [])]
    head, _keep = _c_status(rows)
    packed = convert_packed(head)
    assert [n for n, _ in packed] == [b"12.srv", b"13.srv"]
    assert unpack(packed[0][1]) == {"job_state": "R", "Resource_List.nodes": "1:ppn=2", "exec_host": "n1/0-1",
                                    "Job_Name": ""}
    assert unpack(packed[1][1]) == {}
    # the same bytes whether libtorque's structs or a dict-returning IFL delivered them
    assert [pack(a) for _, a in convert_status(head)] == [p for _, p in packed]
    # a running job's Walltime.Remaining changes every second; its packed row does not
    head2, _keep2 = _c_status([(rows[0][0], [(k, b"3530" if k == "Walltime.Remaining" else v)
                                             for k, v in rows[0][1]])])
    assert convert_packed(head2)[0] == packed[0]


def test_both_walks_give_the_same_bytes_for_odd_replies(monkeypatch):
    """NULL names, values and resources, a resource entry without its resource, bytes that
    are no UTF-8, an object without attributes, an empty reply: the C walk and the Python
    walk pack them alike (the daemon compares the bytes from cycle to cycle)."""
    from mysched.backends.torque import ifl

    if ifl._C_WALK is None:
        pytest.skip("the C walk (mysched/backends/torque/_packed.c) is not built here")
    rows = [("12.srv", [("job_state", b"Q"), ("Resource_List", b"odd"), ("Resource_List.mem", None),
                        ("Walltime.Remaining", b"3591"), ("Job_Name", b"caf\xe9 \x01"), ("", b"x"),
                        ("resources_used.cput", b"00:00:01")]),
            ("", []), ("14.srv", [("Walltime.Remaining", b"1")]), ("15.srv", [("queue", None)])]
    head, _keep = _c_status(rows)
    head.contents.next.contents.name = None  # an object without a name
    c = convert_packed(head)
    monkeypatch.setattr(ifl, "_C_WALK", None)
    assert c == convert_packed(head)
    assert c[0] == (b"12.srv", b"job_state\0Q\0Resource_List.\0odd\0Resource_List.mem\0\0Job_Name\0caf\xe9 \x01"
                               b"\0\0x\0resources_used.cput\x0000:00:01")
    assert c[1:] == [(b"", b""), (b"14.srv", b""), (b"15.srv", b"queue\0")]
    monkeypatch.setattr(ifl, "_C_WALK", ifl._c_walk())
    assert convert_packed(ctypes.POINTER(_BatchStatus)()) == []


def test_jobs_are_read_queue_by_queue_once_each():
    ifl = FakeIFL()
    calls = []
    real = ifl.statjob_packed

    def statjob_packed(conn, attrs, queue=""):
        calls.append(queue)
        rows = real(conn, attrs, queue)
        if queue == "route":  # 12.srv was moved from atlas to route between the two reads
            moved = {**dict(ifl.jobs)["12.srv"], "queue": "route"}
            rows.append((b"12.srv", pack(moved)))
        return rows
    ifl.statjob_packed = statjob_packed
    s = TorqueServer(ifl=ifl).snapshot()
    assert calls == ["atlas", "cms", "route"]  # routing queues too: their jobs are reported
    assert sorted(j.id for j in s.jobs) == ["12.srv", "13.srv", "14[0].srv"]  # once each
    assert next(j for j in s.jobs if j.id == "12.srv").queue == "route"  # as the later read saw it
    # a queue deleted between statque and its jobs' read is skipped, the others read
    ifl.statjob_packed = real
    listed = [*ifl.queues, ("gone", {"queue_type": "Execution"})]
    ifl.statque = lambda conn, attrs: listed  # the fake's statjob answers 15020 for "gone"
    assert sorted(j.id for j in TorqueServer(ifl=ifl).snapshot().jobs) == ["12.srv", "13.srv", "14[0].srv"]
    # one call for all jobs when asked
    ifl.selects.clear()
    TorqueServer(ifl=ifl, read_by_queue=False).snapshot()
    assert sum(1 for sel in ifl.selects if "job_state" in sel) == 1


def test_job_reader_keeps_unchanged_jobs_and_reads_changed_ones_again():
    names = frozenset({"n1"})
    q = {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd", "Resource_List.nodes": "1:ppn=2",
         "qtime": "100"}
    reader = JobReader()
    first = reader.read([(b"1.s", pack(q)), (b"2.s", pack(q))], [], names)
    again = reader.read([(b"1.s", pack(q)), (b"2.s", pack({**q, "job_state": "R", "exec_host": "n1/0-1"}))],
                        [], names)
    assert again[0] is first[0]  # unchanged: the very same Job, not mapped again
    assert again[1].state == JobState.RUNNING and again[1].placement == (("n1", 2),)
    assert reader.read([(b"2.s", pack(q))], [], names)[0].state == JobState.QUEUED  # 1.s left: dropped
    assert reader.read([(b"1.s", pack(q))], [], names)[0] is not first[0]  # it came back: read afresh
    # a job naming a node is read again when the farm's node names change (n2 was a property)
    named = {**q, "Resource_List.nodes": "n2:ppn=1"}
    (j,) = reader.read([(b"3.s", pack(named))], [], names)
    assert j.request.parts[0].properties == frozenset({"n2"})
    (j,) = reader.read([(b"3.s", pack(named))], [], frozenset({"n1", "n2"}))
    assert j.request.parts[0].host == "n2"
    # a malformed value warns at every read, not only the first
    bad = {**q, "Resource_List.walltime": "bogus"}
    for _ in range(2):
        warnings: list[str] = []
        reader.read([(b"4.s", pack(bad))], warnings, names)
        assert any("bogus" in w for w in warnings)


class _FakeLib:
    """Stands in for the CDLL: hands out a C list, records what was freed."""

    def __init__(self, head):
        self.head, self.freed = head, []
        self.pbs_statjob = lambda conn, ident, attrs, extend: self.head
        self.pbs_statfree = lambda p: self.freed.append(ctypes.addressof(p.contents))


def _ctypes_ifl(lib):
    ifl = object.__new__(CtypesIFL)
    ifl.lib, ifl.lock, ifl._names = lib, threading.Lock(), {}
    ifl._errno = ctypes.c_int(0)
    return ifl


def test_ctypes_stat_always_frees(monkeypatch):
    head, _keep = _c_status([("1.s", [("job_state", b"R")])])
    lib = _FakeLib(head)
    ifl = _ctypes_ifl(lib)
    assert ifl.statjob(1, ["job_state"]) == [("1.s", {"job_state": "R"})]
    assert lib.freed == [ctypes.addressof(head.contents)]
    assert ifl.statjob_packed(1, ["job_state"]) == [(b"1.s", b"job_state\0R")]
    assert len(lib.freed) == 2
    del lib.freed[1:]

    def boom(head, names=None):
        raise UnicodeError("conversion failed")
    monkeypatch.setattr(ifl_mod, "convert_status", boom)
    with pytest.raises(UnicodeError):
        ifl.statjob(1, ["job_state"])
    assert len(lib.freed) == 2  # freed even when the conversion failed


def test_pbs_module_results_are_freed_and_errors_read_from_get_error():
    class Attr:
        def __init__(self, name, resource, value):
            self.name, self.resource, self.value = name, resource, value

    class Status:
        def __init__(self, name, attribs):
            self.name, self.attribs = name, attribs

    class Pbs:
        freed = []

        def new_attrl(self, n):
            return [type("A", (), {"name": None})() for _ in range(n)]

        def pbs_statjob(self, conn, ident, attrl, extend):
            return [Status("1.s", [Attr("Resource_List", "nodes", "1:ppn=2"), Attr("job_state", None, "Q")])]

        def pbs_statfree(self, result):
            self.freed.append(result)

        def get_error(self):
            return 15001

        def pbs_geterrmsg(self, conn):
            return "Unknown Job Id Error"

    pbs = Pbs()
    ifl = PbsModuleIFL(pbs)
    assert ifl.statjob(1, ["job_state"]) == [("1.s", {"Resource_List.nodes": "1:ppn=2", "job_state": "Q"})]
    assert len(pbs.freed) == 1
    assert (ifl.errno(), ifl.errmsg(1)) == (15001, "Unknown Job Id Error")


def test_missing_libtorque_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(ifl_mod, "SEARCH", ())
    monkeypatch.setattr(ifl_mod.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(ifl_mod.glob, "glob", lambda pattern: [])
    monkeypatch.delenv("MYSCHED_LIBTORQUE", raising=False)
    with pytest.raises(ServerUnavailable, match="libtorque.so.2 not found; install"):
        CtypesIFL(None)
    monkeypatch.setenv("MYSCHED_LIBTORQUE", "/nonexistent/libtorque.so.2")
    with pytest.raises(ServerUnavailable, match=r"/nonexistent/libtorque.so.2 \(\$MYSCHED_LIBTORQUE\) does not"):
        CtypesIFL(None)
    with pytest.raises(ServerUnavailable, match=r"server.libtorque"):
        TorqueServer(libtorque="/nonexistent/x.so")


def test_a_library_that_is_not_libtorque_is_refused(monkeypatch):
    monkeypatch.setenv("MYSCHED_LIBTORQUE", ctypes.util.find_library("c") or "libc.so.6")
    with pytest.raises(ServerUnavailable, match="not a usable TORQUE client library"):
        CtypesIFL(None)


# -- scheduler contacts ------------------------------------------------------------------------
def test_decode_command_of_captured_server_bytes():
    # bytes pbs_server 6.1 sent to port 15004 (captured): set scheduling=True, qsub, job end
    assert decode_command(b"\x00\x00\x00\x05") == "command"
    assert decode_command(b"\x00\x00\x00\x01") == "new"
    assert decode_command(b"\x00\x00\x00\x02") == "term"
    assert decode_command(struct.pack("!I", 10)) == "first"
    assert decode_command(struct.pack("!I", 3)) == "time"
    assert decode_command(struct.pack("!I", 42)) == "unknown(42)"
    with pytest.raises(ValueError):
        decode_command(b"\x00\x00")


def test_scheduler_listener_decodes_server_contacts():
    got = []
    done = threading.Event()

    def on_event(reason):
        got.append(reason)
        if len(got) == 2:
            done.set()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=on_event).start()
    try:
        with socket.create_connection(("127.0.0.1", lst.port)) as s:
            s.sendall(b"\x00\x00")  # a contact cut short is ignored
        for code in (2, 1):
            with socket.create_connection(("127.0.0.1", lst.port)) as s:
                s.sendall(struct.pack("!I", code))
                assert s.recv(1) == b""  # the listener closes: no reply is part of the protocol
        assert done.wait(5)
        assert got == ["term", "new"] and lst.events == 2
    finally:
        lst.close()


def test_listener_survives_a_failing_callback():
    calls = []
    done = threading.Event()

    def on_event(reason):
        calls.append(reason)
        if len(calls) == 2:
            done.set()
        raise RuntimeError("callback bug")
    lst = SchedulerListener(("127.0.0.1", 0), on_event=on_event).start()
    try:
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", lst.port)) as s:
                s.sendall(struct.pack("!I", 1))
        assert done.wait(5)
    finally:
        lst.close()


def test_listener_survives_a_failing_accept(caplog):
    """accept() failing (EMFILE: the daemon out of descriptors) ended the listener's thread:
    no event reached the daemon again, and nothing said so."""
    import errno

    class Flaky:
        def __init__(self, sock):
            self.sock, self.fails = sock, 2

        def accept(self):
            if self.fails:
                self.fails -= 1
                raise OSError(errno.EMFILE, "Too many open files")
            return self.sock.accept()

        def __getattr__(self, name):
            return getattr(self.sock, name)

    got = threading.Event()
    lst = SchedulerListener(("127.0.0.1", 0), on_event=lambda reason: got.set())
    lst.sock = Flaky(lst.sock)
    lst.start()
    try:
        with socket.create_connection(("127.0.0.1", lst.port)) as s:
            s.sendall(struct.pack("!I", 1))
        assert got.wait(10) and lst.events == 1
        assert caplog.text.count("cannot accept a contact") == 1  # once, not per retry
    finally:
        lst.close()


def test_listener_port_in_use_is_a_clear_error():
    lst = SchedulerListener(("127.0.0.1", 0))
    try:
        with pytest.raises(OSError, match="cannot listen for pbs_server events on 127.0.0.1"):
            SchedulerListener(("127.0.0.1", lst.port))
    finally:
        lst.close()


def test_a_daemon_cycle_against_the_shipped_fake_starts_each_job_once(tmp_path):
    """The fake runs what it is told, so two daemon cycles see the first one's starts."""
    from mysched.config import config_from_text
    from mysched.daemon.cycle import Daemon

    ifl = _FakeIFL(
        jobs=[(f"{i}.srv", {"job_state": "Q", "queue": "batch", "euser": "alice", "egroup": "atlas",
                            "Resource_List.nodes": "1:ppn=1", "qtime": str(100 + i)}) for i in range(5)],
        nodes=[("wn01", {"state": "free", "np": "2"}), ("wn02", {"state": "free", "np": "2"})],
        queues=[("batch", {"queue_type": "Execution", "enabled": "True", "started": "True"})])
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
    daemon = Daemon(cfg, TorqueServer(ifl=ifl, clock=lambda: 1000.0), state_dir=str(tmp_path))
    assert daemon.cycle().started == 4
    assert daemon.cycle().started == 0  # the farm is full: nothing twice
    started = [jid for jid, _ in ifl.runs]
    assert len(started) == len(set(started)) == 4
    assert sorted(a["exec_host"].split("/")[0] for _, a in ifl.jobs if a["job_state"] == "R") == \
        ["wn01", "wn01", "wn02", "wn02"]


def test_whole_requests_are_read_as_torque_means_them():
    from mysched.backends.torque.backend import request_from_attrs
    from mysched.backends.torque.values import parse_node_parts
    from mysched.core.model.request import NodePart

    names = frozenset({"wn05", "node01"})
    assert parse_node_parts("2:ppn=4:ib+wn05:ppn=1", names) == (
        NodePart(2, 4, None, frozenset({"ib"})), NodePart(1, 1, "wn05"))
    assert parse_node_parts("gpu:ppn=2", names) == (NodePart(1, 2, None, frozenset({"gpu"})),)  # not a node
    assert parse_node_parts("1:ppn=2:gpus=1", names) == (NodePart(1, 2),)
    w: list[str] = []
    r = request_from_attrs("1.s", {"Resource_List.nodes": "2:ppn=2", "Resource_List.pmem": "1gb"}, w, names)
    assert r.cores == 4 and r.nodes == 2 and r.pmem == 1 << 30 and not w
    r = request_from_attrs("1.s", {"Resource_List.nodes": "1", "Resource_List.procs": "6"}, w, names)
    assert r.procs == 6 and r.parts == () and r.cores == 6
    r = request_from_attrs("1.s", {"Resource_List.nodes": "1:ppn=2", "Resource_List.naccesspolicy": "singlejob"},
                           w, names)
    assert r.exclusive and r.cores == 2
    assert request_from_attrs("1.s", {"Resource_List.nodes": "1:ppn=4"}, w, names) is None  # the fast path
    # a queued job of the snapshot carries it; node memory comes from the mom's status
    ifl = FakeIFL()
    ifl.jobs.append(("20.srv", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlasprd",
                                "Resource_List.nodes": "node04:ppn=2+1:ppn=1:sw", "qtime": "1"}))
    ifl.nodes[1] = ("node04", {**ifl.nodes[1][1], "status": "rectime=1,physmem=16318924kb,ncpus=4"})
    s = TorqueServer(ifl=ifl).snapshot()
    job = next(j for j in s.jobs if j.id == "20.srv")
    assert job.cores == 3 and job.request.parts == (NodePart(1, 2, "node04"), NodePart(1, 1, None, frozenset({"sw"})))
    assert next(n for n in s.nodes if n.name == "node04").mem == 16318924 << 10
    # virtual memory: the job's vmem/pvmem, the node's totmem
    r = request_from_attrs("1.s", {"Resource_List.nodes": "1:ppn=2", "Resource_List.vmem": "4gb"}, w, names)
    assert r is not None and r.vmem == 4 << 30 and r.vmem_for(2, 2) == 4 << 30
    r = request_from_attrs("1.s", {"Resource_List.nodes": "1:ppn=2", "Resource_List.pvmem": "3gb"}, w, names)
    assert r.vmem_for(2, 2) == 6 << 30 and "pvmem=" in str(r)
    ifl.nodes[1] = ("node04", {**ifl.nodes[1][1], "status": "rectime=1,physmem=16318924kb,totmem=20000000kb"})
    assert next(n for n in TorqueServer(ifl=ifl).snapshot().nodes if n.name == "node04").vmem == 20000000 << 10
