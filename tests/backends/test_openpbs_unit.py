"""The OpenPBS adapter without a server: its value parsers (with hypothesis where a rule
holds for every input), the mapping of select/place, vnodes and limits to the model, and
daemon cycles against a scripted libpbs that answers as OpenPBS 23.06 did on the test farm
(docs/openpbs.md)."""

from __future__ import annotations

from typing import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mysched.backends.openpbs.backend import OpenPBSServer
from mysched.backends.openpbs.mapping import (job_from_attrs, node_from_attrs, queue_from_attrs, request_of,
                                              server_limits_from_attrs)
from mysched.backends.openpbs.values import (Chunk, Place, location, parse_exec_vnode, parse_limits, parse_place,
                                             parse_select, parse_vnode_jobs)
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.ifl import PackedRows, StatResult, pack
from mysched.config import config_from_text
from mysched.config.servers import openpbs_host, server_problem
from mysched.core.model.batch import JobState, NodeState, RunCap
from mysched.core.model.request import NodePart
from mysched.core.settings import FarmSpec
from mysched.errors import JobGone, ServerUnavailable, Unauthorized

SETTINGS = settings(max_examples=60, deadline=None)


class FakeLibpbs(FakeIFL):
    """`FakeIFL` answering as libpbs: vnodes from `statvnode`, sub-jobs listed with extend
    ``t``, a successful start records ``exec_vnode`` as given (the server keeps it verbatim)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.extends: list[str | None] = []

    def statvnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.nodes, attrs)

    def statjob_packed(self, conn: int, attrs: Sequence[str], queue: str = "", extend: str | None = "t") -> PackedRows:
        self.extends.append(extend)
        rows = [(jid, a) for jid, a in self.jobs if not queue or a.get("queue") == queue]
        return [(jid.encode(), pack(a)) for jid, a in self._stat(rows, attrs)]

    def runjob(self, conn: int, job_id: str, location: str | None) -> int:
        self.runs.append((job_id, location))
        code = self.run_rc.get(job_id, 0)
        self.err = code
        if code == 0 and self.start_jobs:
            for i, (jid, attrs) in enumerate(self.jobs):
                if jid == job_id:
                    self.jobs[i] = (jid, {**attrs, "job_state": "R", "exec_vnode": location or ""})
        return code


QUEUES = [("atlas", {"queue_type": "Execution", "enabled": "True", "started": "True"}),
          ("cms", {"queue_type": "Execution", "enabled": "True", "started": "True"})]


def vnode(name: str, ncpus: int = 4, **extra: str) -> tuple[str, dict[str, str]]:
    return name, {"state": "free", "resources_available.ncpus": str(ncpus), "resources_available.mem": "4gb",
                  "resources_available.host": "localhost", "resources_available.vnode": name,
                  "resources_available.arch": "linux", **extra}


FARM = [vnode("vm", 0), vnode("node-a"), vnode("node-b"), vnode("node-c", **{"resources_available.bigmem": "True"}),
        vnode("node-d")]


def job(jid: str, user: str, group: str, queue: str, select: str, place: str = "free", **extra: str):
    return jid, {"job_state": "Q", "queue": queue, "euser": user, "egroup": group, "Resource_List.select": select,
                 "schedselect": select, "Resource_List.place": place, "qtime": "1795800000", **extra}


CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 60; }; cms = { groups = ["cms"]; share = 40; }; };')


# -- values -----------------------------------------------------------------------------------
def test_select_chunks_read_as_openpbs_writes_them():
    assert parse_select("2:ncpus=2:mem=4gb:bigmem=True+ncpus=1:vnode=node-a:arch=linux:ngpus=1:host=wn1") == (
        Chunk(2, 2, 4 << 30, None, None, frozenset({"bigmem"})),
        Chunk(1, 1, None, None, "node-a", frozenset({"arch=linux", "host=wn1"}), ("ngpus=1",)))
    assert parse_select("1:ncpus=2:mpiprocs=2:bigmem=False")[0] == Chunk(1, 2, None, 2)  # False asks nothing
    for bad in ("", "2:ncpus", "0:ncpus=1", "1:ncpus=x", "1:mem=lots", "1:=3"):
        with pytest.raises(ValueError):
            parse_select(bad)


def test_place_exec_vnode_jobs_and_limits():
    assert parse_place("scatter:excl") == Place("scatter", "excl")
    assert parse_place("pack:group=switch") == Place("pack", "shared")
    assert parse_place(None) == Place()
    with pytest.raises(ValueError, match="none of free, pack"):
        parse_place("everywhere")
    assert parse_exec_vnode("(node-a:ncpus=2)+(node-b:ncpus=2:mem=4gb)") == (("node-a", 2), ("node-b", 2))
    assert parse_exec_vnode("node-d:ncpus=2+node-d:ncpus=2") == (("node-d", 4),)  # two chunks on one vnode
    assert parse_exec_vnode("(vn1:ncpus=1+vn2:ncpus=1)") == (("vn1", 1), ("vn2", 1))  # one chunk over two
    assert parse_vnode_jobs("17.vm/0, 17.vm/1, 18.vm/2") == ("17.vm", "18.vm")  # one entry per cpu
    assert parse_limits("[o:PBS_ALL=10], [u:PBS_GENERIC=2],[u:alice=1]") == {
        ("o", "PBS_ALL"): "10", ("u", "PBS_GENERIC"): "2", ("u", "alice"): "1"}
    with pytest.raises(ValueError):
        parse_limits("10")


_res = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda n: n not in ("ncpus", "mem", "mpiprocs", "ompthreads", "vnode", "host"))
_chunk = st.builds(Chunk, st.integers(1, 4), st.integers(1, 8), st.one_of(st.none(), st.integers(1, 64).map(lambda g: g << 20)),
                   st.none(), st.none(), st.frozensets(_res, max_size=2), unplaced=st.just(()))


def _select_text(chunks) -> str:
    out = []
    for c in chunks:
        fields = [str(c.count), f"ncpus={c.ncpus}"] + ([f"mem={c.mem >> 20}mb"] if c.mem is not None else [])
        out.append(":".join(fields + [f"{p}=True" for p in sorted(c.properties)]))
    return "+".join(out)


@SETTINGS
@given(st.lists(_chunk, min_size=1, max_size=4))
def test_any_select_written_out_reads_back_the_same(chunks):
    assert parse_select(_select_text(chunks)) == tuple(chunks)


@SETTINGS
@given(st.text(max_size=60))
def test_any_select_text_reads_or_is_refused_as_a_value_error(text):
    try:
        chunks = parse_select(text)
    except ValueError:
        return
    assert all(c.count >= 1 for c in chunks)


@SETTINGS
@given(st.lists(_chunk, min_size=1, max_size=4), st.data())
def test_a_location_names_every_chunk_once_on_a_vnode_that_has_its_properties(chunks, data):
    """Chunks laid on vnodes in any way (as the planner might) come back as one location
    chunk each, each where its properties are, the cores per vnode those of the placement."""
    names = [f"vn{i}" for i in range(6)]
    where = [data.draw(st.sampled_from(names)) for c in chunks for _ in range(c.count)]
    props: dict[str, set[str]] = {n: set() for n in names}
    cores: dict[str, int] = {}
    k = 0
    for c in chunks:
        for _ in range(c.count):
            props[where[k]] |= c.properties
            cores[where[k]] = cores.get(where[k], 0) + c.ncpus
            k += 1
    placement = tuple(cores.items())
    frozen = {n: frozenset(p) for n, p in props.items()}
    loc = location(tuple(chunks), placement, frozen)
    pieces = loc.split("+")
    assert len(pieces) == sum(c.count for c in chunks)
    assert dict(parse_exec_vnode(loc)) == cores
    for piece in pieces:
        assert piece.startswith("(") and piece.endswith(")")


def test_a_location_without_the_chunks_is_one_per_vnode():
    assert location((), (("node-a", 2), ("node-b", 1))) == "(node-a:ncpus=2)+(node-b:ncpus=1)"
    assert location((), ()) is None
    # a bigmem chunk goes where bigmem is, though the other vnode has the same cores
    chunks = (Chunk(1, 2, None, None, None, frozenset({"bigmem"})), Chunk(1, 2))
    assert location(chunks, (("node-a", 2), ("node-c", 2)), {"node-a": frozenset(), "node-c": frozenset({"bigmem"})}) \
        in ("(node-c:ncpus=2)+(node-a:ncpus=2)", "(node-a:ncpus=2)+(node-c:ncpus=2)")
    loc = location(chunks, (("node-a", 2), ("node-c", 2)), {"node-a": frozenset(), "node-c": frozenset({"bigmem"})})
    assert loc.split("+")[0] == "(node-c:ncpus=2)"  # the chunks in the select's order


# -- mapping ----------------------------------------------------------------------------------
def test_requests_map_onto_the_models_parts():
    two = parse_select("2:ncpus=2")
    assert request_of(two, Place("scatter")).parts == (NodePart(2, 2),)
    assert request_of(two, Place("free")).parts == (NodePart(2, 2),)  # chunks of 2 cores stay whole
    assert request_of(parse_select("4:ncpus=1"), Place("free")).procs == 4  # cores anywhere
    assert request_of(parse_select("4:ncpus=1"), Place("scatter")).parts == (NodePart(4, 1),)
    assert request_of(two, Place("pack")) is None  # all on one vnode: 4 cores there, the fast path
    assert request_of(parse_select("2:ncpus=2:bigmem=true"), Place("pack")).parts == (
        NodePart(1, 4, None, frozenset({"bigmem"})),)
    assert request_of(parse_select("1:ncpus=4"), Place("free")) is None  # the planner's fast path
    excl = request_of(parse_select("1:ncpus=4"), Place("scatter", "excl"))
    assert excl.exclusive and excl.cores == 4
    big = request_of(parse_select("1:ncpus=2:mem=6gb:bigmem=True"), Place())
    assert big.parts == (NodePart(1, 2, None, frozenset({"bigmem"})),) and big.pmem == 3 << 30
    named = request_of(parse_select("1:ncpus=1:vnode=node-a+1:ncpus=2:vnode=node-a"), Place())
    assert named.parts == (NodePart(1, 3, "node-a"),)


def test_jobs_vnodes_and_queues_map_to_the_model():
    w: list[str] = []
    j = job_from_attrs(*job("8.vm", "alice", "atlas", "atlas", "2:ncpus=2", "scatter"), w)
    assert (j.user, j.group, j.queue, j.cores, j.state, j.submit_time) == ("alice", "atlas", "atlas", 4,
                                                                          JobState.QUEUED, 1795800000.0)
    assert j.request.parts == (NodePart(2, 2),)
    run = job_from_attrs("9.vm", {**job("9.vm", "bob", "atlas", "atlas", "1:ncpus=1")[1], "job_state": "R",
                                  "exec_vnode": "(node-c:ncpus=1)", "stime": "1795800100"}, w)
    assert run.placement == (("node-c", 1),) and run.start_time == 1795800100.0
    assert job_from_attrs("9.vm", {"job_state": "F", "Resource_List.ncpus": "1"}, w).state == JobState.COMPLETE
    assert job_from_attrs("12[].vm", {"job_state": "B"}, w) is None  # an array's parent: its sub-jobs run
    assert job_from_attrs("12[3].vm", {"job_state": "Q", "Resource_List.ncpus": "1"}, w).array == "12[].vm"
    assert not w
    n = node_from_attrs(*FARM[3], w)
    assert n.slots == 4 and n.mem == 4 << 30 and {"bigmem", "arch=linux", "host=localhost"} <= n.properties
    assert "vnode=node-c" not in n.properties and not any(p.startswith("mem") for p in n.properties)
    assert node_from_attrs("x", {"state": "job-busy", "resources_available.ncpus": "4"}, w).state == NodeState.FULL
    assert node_from_attrs("x", {"state": "state-unknown,down"}, w).state == NodeState.DOWN
    assert node_from_attrs("x", {"state": "free", "resources_available.bigmem": "False"}, w).properties == frozenset()
    q = queue_from_attrs("atlas", {"queue_type": "Execution", "max_running": "8",
                                   "max_run": "[o:PBS_ALL=5], [u:PBS_GENERIC=2], [g:PBS_GENERIC=3], [u:bob=1]"}, w)
    assert q.max_running == 5  # the lower of the old form and [o:PBS_ALL=5]: the queue's job total
    assert set(q.caps) == {RunCap("jobs", "user", 2, None, "max_run [u:PBS_GENERIC=2]"),
                           RunCap("jobs", "group", 3, None, "max_run [g:PBS_GENERIC=3]"),
                           RunCap("jobs", "user", 1, "bob", "max_run [u:bob=1]")}
    assert queue_from_attrs("r", {"queue_type": "Route"}, w) is None
    assert not w


def test_resource_limits_are_caps_others_reported_soft_ones_noted():
    w: list[str] = []
    q = queue_from_attrs("cms", {"queue_type": "Execution", "max_run_res.ncpus": "[o:PBS_ALL=64], [g:cms=16]",
                                 "max_run_res.mem": "[u:PBS_GENERIC=8gb]", "max_user_res.ncpus": "6",
                                 "max_run": "[p:PBS_GENERIC=4], [p:higgs=9]"}, w)
    assert set(q.caps) == {RunCap("cores", "all", 64, None, "max_run_res.ncpus [o:PBS_ALL=64]"),
                           RunCap("cores", "group", 16, "cms", "max_run_res.ncpus [g:cms=16]"),
                           RunCap("mem", "user", 8 << 30, None, "max_run_res.mem [u:PBS_GENERIC=8gb]"),
                           RunCap("cores", "user", 6, None, "max_user_res.ncpus = 6"),
                           RunCap("jobs", "project", 4, None, "max_run [p:PBS_GENERIC=4]"),
                           RunCap("jobs", "project", 9, "higgs", "max_run [p:higgs=9]")}
    assert not w
    lim = server_limits_from_attrs({"max_run_res.ngpus": "[o:PBS_ALL=2]", "max_run_soft": "[u:PBS_GENERIC=2]",
                                    "max_run_res_soft.ncpus": "[u:PBS_GENERIC=8]",
                                    "max_run": "[o:PBS_ALL=x], [o:alice=3], [u:PBS_GENERIC=20]"}, w)
    assert lim.caps == (RunCap("jobs", "user", 20, None, "max_run [u:PBS_GENERIC=20]"),)
    assert w == ["server: max_run [o:PBS_ALL=x] 'x' is no count; not enforced",
                 "server: max_run [o:alice=3]: no such entity (o:PBS_ALL, u|g|p:PBS_GENERIC or u|g|p:NAME); not enforced",
                 "server: max_run_res.ngpus not enforced by mysched (it honours limits of ncpus and mem only)",
                 "server: max_run_res_soft.ncpus, max_run_soft: soft limits, not enforced (OpenPBS only makes jobs "
                 "over them preemptable; mysched does not preempt)"]


def test_malformed_values_are_warnings_not_guesses():
    w: list[str] = []
    j = job_from_attrs(*job("1.vm", "a", "g", "atlas", "2:ncpus=two"), w)
    assert j is not None and j.cores == 1 and "bad select" in w[0]
    assert node_from_attrs("x", {"resources_available.ncpus": "lots"}, w).state == NodeState.OFFLINE
    assert job_from_attrs("2.vm", {"job_state": "Z"}, w) is None and "unknown state" in w[-1]


# -- the backend and a daemon cycle -----------------------------------------------------------
def test_a_cycle_starts_three_users_jobs_with_a_location_per_chunk(tmp_path):
    from mysched.daemon.cycle import Daemon

    ifl = FakeLibpbs(jobs=[job("1.vm", "alice", "atlas", "atlas", "2:ncpus=2", "scatter"),
                           job("2.vm", "carol", "cms", "cms", "1:ncpus=1:bigmem=True"),
                           job("3.vm", "bob", "atlas", "atlas", "1:ncpus=3"),
                           job("4.vm", "carol", "cms", "cms", "1:ncpus=64"),
                           job("5.vm", "bob", "atlas", "atlas", "1:ncpus=1:mem=1gb"),
                           job("6.vm", "bob", "atlas", "atlas", "2:ncpus=1:mpiprocs=1", "pack")],
                     nodes=FARM, queues=QUEUES)
    server = OpenPBSServer("localhost:16001", ifl=ifl, clock=lambda: 1795800100.0)
    assert server.name == "pbs://localhost:16001"
    daemon = Daemon(CFG, server, state_dir=str(tmp_path))
    out = daemon.cycle()
    assert out.started == 5
    runs = dict(ifl.runs)
    two = runs["1.vm"].split("+")
    assert len(two) == 2 and len({p.split(":")[0] for p in two}) == 2  # two chunks, two vnodes
    assert runs["2.vm"] == "(node-c:ncpus=1)"  # only node-c has bigmem
    assert runs["3.vm"].count("ncpus=3") == 1
    assert "4.vm" not in runs and "vm" not in {p.strip("()").split(":")[0] for loc in runs.values() for p in loc.split("+")}
    assert runs["5.vm"].endswith(":ncpus=1:mem=1048576kb)")  # the chunk's memory is assigned too
    one, other = runs["6.vm"].split("+")  # packed: both chunks on one vnode, each named
    assert one == other and one.endswith(":ncpus=1:mpiprocs=1)")
    assert set(ifl.extends) == {"t"}  # sub-jobs listed one by one
    plan = daemon.cycle()
    assert plan.started == 0 and len(ifl.runs) == 5  # nothing twice


def test_a_request_no_vnode_can_serve_waits_never_fits():
    """A boolean no vnode has True, two chunks needing two bigmem vnodes where there is one, a
    string value no vnode has."""
    from mysched.core.planner import plan
    from mysched.core.share.usage import Usage

    ifl = FakeLibpbs(jobs=[job("4.vm", "carol", "cms", "cms", "1:ncpus=64"),
                           job("5.vm", "carol", "cms", "cms", "1:ncpus=1:gpu=True"),
                           job("6.vm", "carol", "cms", "cms", "2:ncpus=1:bigmem=True", "scatter"),
                           job("7.vm", "carol", "cms", "cms", "1:ncpus=1:arch=ppc64")], nodes=FARM, queues=QUEUES)
    snap = OpenPBSServer(ifl=ifl).snapshot()
    p = plan(snap, CFG, Usage(), 1795800100.0)
    assert p.waits["4.vm"].reason == "too_large"  # more cores than any vnode has
    assert {j: p.waits[j].reason for j in ("5.vm", "6.vm", "7.vm")} == dict.fromkeys(("5.vm", "6.vm", "7.vm"),
                                                                                      "never_fits")


def test_errors_are_the_projects_exceptions():
    ifl = FakeLibpbs(jobs=[job("1.vm", "a", "atlas", "atlas", "1:ncpus=1")], nodes=FARM, queues=QUEUES)
    server = OpenPBSServer(ifl=ifl)
    server.snapshot()
    ifl.run_rc["1.vm"] = 15007
    with pytest.raises(Unauthorized, match="not a manager or operator of the OpenPBS server"):
        server.run_job("1.vm", (("node-a", 1),))
    ifl.run_rc["1.vm"] = 15001
    with pytest.raises(JobGone):
        server.run_job("1.vm", (("node-a", 1),))
    ifl.fail_stat = [15031]  # the connection broke: one reconnect, then the answer
    assert server.snapshot().server == "pbs://localhost"
    assert ifl.connects == 2
    ifl.connect_rc = [-1, -1]
    ifl.err = 15010
    ifl.strerror = lambda code: "System error: "  # pbse_to_txt's text, colon and all
    server.close()
    with pytest.raises(ServerUnavailable, match=r"cannot connect to the OpenPBS server at the default server: System error "
                                                r"\(error 15010\)$"):
        server.snapshot()


def test_the_scheduling_flag_on_is_reported():
    ifl = FakeLibpbs(nodes=FARM, queues=QUEUES, server={"server_state": "Active", "scheduling": "True"})
    snap = OpenPBSServer(ifl=ifl).snapshot()
    assert any("pbs_sched starts jobs beside mysched" in w for w in snap.extra["warnings"])


def test_pbs_urls():
    farm = FarmSpec()
    assert openpbs_host("pbs://localhost:16001") == "localhost:16001"
    assert server_problem("openpbs://batch", farm) is None
    assert "names no OpenPBS server host" in server_problem("pbs://", farm)
    assert "a port from 1 to 65535" in server_problem("pbs://h:99999", farm)
    assert "pbs://HOST (OpenPBS)" in server_problem("slurm://h", farm)


def test_a_missing_libpbs_is_a_clear_error(monkeypatch, tmp_path):
    from mysched.backends.openpbs import ifl as pbsifl

    monkeypatch.setattr(pbsifl, "SEARCH", ())
    monkeypatch.setattr(pbsifl, "CONF", str(tmp_path / "none"))
    monkeypatch.delenv("PBS_EXEC", raising=False)
    monkeypatch.setattr(pbsifl.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(ServerUnavailable, match="libpbs.so not found; install"):
        pbsifl.find_libpbs()
    with pytest.raises(ServerUnavailable, match=r"/nonexistent/libpbs.so \(server.libpbs\) does not exist"):
        OpenPBSServer(libpbs="/nonexistent/libpbs.so")
    conf = tmp_path / "pbs.conf"
    conf.write_text("PBS_EXEC=/opt/elsewhere\n")
    assert pbsifl._pbs_exec(str(conf)) == "/opt/elsewhere"


def test_listening_for_hook_events_with_scheduling_false_is_not_called_a_mistake(tmp_path, caplog):
    """OpenPBS's events come from a server hook with scheduling False (docs/openpbs.md); the
    warning a TORQUE daemon gives for that setting would send the site the wrong way."""
    from mysched.backends.torque.backend import TorqueServer
    from mysched.daemon.cycle import Daemon

    pbs = Daemon(CFG, OpenPBSServer(ifl=FakeLibpbs(nodes=FARM, queues=QUEUES)), state_dir=str(tmp_path / "p"))
    pbs.events_expected = True
    with caplog.at_level("WARNING", logger="mysched"):
        pbs.cycle()
    assert "scheduling = False" not in caplog.text
    torque = Daemon(CFG, TorqueServer(ifl=FakeIFL()), state_dir=str(tmp_path / "t"))
    torque.events_expected = True
    with caplog.at_level("WARNING", logger="mysched"):
        torque.cycle()
    assert "pbs_server has scheduling = False and will send none" in caplog.text


def test_the_event_listener_takes_the_openpbs_servers_host(monkeypatch):
    from mysched.cli import run as runmod
    from mysched.backends.torque import schedproto

    seen = []
    monkeypatch.setattr(schedproto, "contact_rule", lambda host, *a, **k: seen.append(host) or (_ for _ in ()).throw(
        OSError("stop")))
    factory = runmod._torque_events("127.0.0.1:0", "pbs://localhost:16001", CFG, None)
    with pytest.raises(OSError, match="stop"):
        factory(lambda reason: None)
    assert seen == ["localhost"]


# -- limits honoured --------------------------------------------------------------------------
def _plan(ifl: FakeLibpbs):
    from mysched.core.planner import plan
    from mysched.core.share.usage import Usage

    return plan(OpenPBSServer(ifl=ifl).snapshot(), CFG, Usage(), 1795800100.0)


def test_a_queues_named_and_generic_limits_of_jobs_and_cores_hold_back_the_right_users():
    """``max_run_res.ncpus = [u:PBS_GENERIC=2], [u:alice=4]`` and ``max_run = [u:bob=1]`` on
    atlas: alice's own limit lets her run 4 cores (more than the generic 2), bob runs one job,
    carol two cores; cms has no limit. Each job held back names the entry that holds it."""
    atlas = {**QUEUES[0][1], "max_run_res.ncpus": "[u:PBS_GENERIC=2], [u:alice=4]", "max_run": "[u:bob=1]"}
    jobs = [job(f"{i}.vm", "alice", "atlas", "atlas", "1:ncpus=1", qtime=str(1795800000 + i)) for i in range(1, 6)]
    jobs += [job(f"{i}.vm", "bob", "atlas", "atlas", "1:ncpus=1", qtime=str(1795800000 + i)) for i in range(6, 8)]
    jobs += [job("8.vm", "carol", "atlas", "atlas", "1:ncpus=2", qtime="1795800008"),
             job("9.vm", "carol", "atlas", "atlas", "1:ncpus=1", qtime="1795800009")]
    jobs += [job(f"{i}.vm", "dave", "cms", "cms", "1:ncpus=1", qtime=str(1795800000 + i)) for i in range(10, 13)]
    p = _plan(FakeLibpbs(jobs=jobs, nodes=FARM, queues=[("atlas", atlas), QUEUES[1]]))
    assert {s.job_id for s in p.starts} == {"1.vm", "2.vm", "3.vm", "4.vm", "6.vm", "8.vm", "10.vm", "11.vm", "12.vm"}
    assert {j: (w.reason, w.detail) for j, w in p.waits.items()} == {
        "5.vm": ("queue_resource_limit", "queue atlas max_run_res.ncpus [u:alice=4]: user alice hold(s) 4 core(s), "
                                         "4 at most; the job asks 1"),
        "7.vm": ("queue_user_limit", "queue atlas max_run [u:bob=1]: user bob run(s) 1 job(s)"),
        "9.vm": ("queue_resource_limit", "queue atlas max_run_res.ncpus [u:PBS_GENERIC=2]: user carol hold(s) 2 "
                                         "core(s), 2 at most; the job asks 1")}


def test_running_jobs_count_against_the_servers_memory_group_and_project_limits():
    """Server limits: ``max_run_res.mem [o:PBS_ALL=3gb]`` holds only jobs that ask memory;
    ``max_run [p:PBS_GENERIC=1], [p:higgs=2]`` counts by the jobs' project, the running ones
    included; ``max_run [g:cms=1]`` holds cms and no other group."""
    server = {"server_state": "Active", "scheduling": "False", "max_run_res.mem": "[o:PBS_ALL=3gb]",
              "max_run": "[p:PBS_GENERIC=1], [p:higgs=2], [g:cms=1]"}
    running = {"job_state": "R", "exec_vnode": "(node-a:ncpus=1)", "stime": "1795800050"}
    jobs = [job("1.vm", "alice", "atlas", "atlas", "1:ncpus=1:mem=1gb", project="higgs", **running,
                **{"Resource_List.mem": "1gb"}),
            job("2.vm", "alice", "atlas", "atlas", "1:ncpus=1:mem=1gb", project="higgs", qtime="1795800002",
                **{"Resource_List.mem": "1gb"}),
            job("3.vm", "alice", "atlas", "atlas", "1:ncpus=1:mem=1gb", project="higgs", qtime="1795800003",
                **{"Resource_List.mem": "1gb"}),
            job("4.vm", "bob", "atlas", "atlas", "1:ncpus=1:mem=3gb", project="susy", qtime="1795800004",
                **{"Resource_List.mem": "3gb"}),
            job("5.vm", "bob", "atlas", "atlas", "1:ncpus=1", project="top", qtime="1795800005"),
            job("6.vm", "bob", "atlas", "atlas", "1:ncpus=1", project="top", qtime="1795800006"),
            job("7.vm", "carol", "cms", "cms", "1:ncpus=1", qtime="1795800007"),
            job("8.vm", "carol", "cms", "cms", "1:ncpus=1", qtime="1795800008")]
    p = _plan(FakeLibpbs(jobs=jobs, nodes=FARM, queues=QUEUES, server=server))
    assert {s.job_id for s in p.starts} == {"2.vm", "5.vm", "7.vm"}
    waits = {j: w.reason for j, w in p.waits.items()}
    assert waits == {"3.vm": "server_project_limit", "4.vm": "server_resource_limit", "6.vm": "server_project_limit",
                     "8.vm": "server_group_limit"}
    held = p.waits["4.vm"].detail  # 1 or 2 GiB, as alice's 2.vm was tried before bob's job or after
    assert held.startswith("server max_run_res.mem [o:PBS_ALL=3gb]: all users hold(s) ")
    assert held.endswith(" GiB of memory, 3 GiB at most; the job asks 3 GiB")
    assert p.waits["3.vm"].detail == "server max_run [p:higgs=2]: project higgs run(s) 2 job(s)"
