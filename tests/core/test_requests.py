"""Whole resource requests: several nodes, properties, host names, memory, exclusive nodes,
cores spread over nodes -- and requests the farm can never serve."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };')
GB = 1 << 30


def farm(n=4, slots=4, mem=None, props=None):
    return [Node(f"wn{i:02d}", slots, NodeState.FREE, frozenset((props or {}).get(f"wn{i:02d}", ())), (), mem)
            for i in range(1, n + 1)]


def want(jid, req: Request, user="alice", group="atlas", submit=0.0):
    return Job(jid, "q", user, group, req.cores, JobState.QUEUED, submit, request=req)


def where(p, jid):
    return dict(next(s.placement for s in p.starts if s.job_id == jid))


def test_a_node_type_can_set_the_memory_jobs_may_use():
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                           'node_types = { small = { nodes = ["wn0[12]"]; mem = "4gb"; }; };')
    nodes = farm(n=3, slots=8, mem=16 * GB)  # pbs_mom says 16 GB everywhere
    jobs = [want("a", Request((NodePart(1, 1),), mem=6 * GB), submit=1),
            want("b", Request((NodePart(1, 1),), mem=6 * GB), submit=2, user="bob"),
            want("c", Request((NodePart(1, 1),), mem=3 * GB), submit=3, user="carol")]
    p = plan(snap(jobs, nodes), cfg, Usage(), 1000)
    assert where(p, "a") == where(p, "b") == {"wn03": 1}  # 6 GB fits only the untyped node
    assert where(p, "c") == {"wn01": 1}  # fewer jobs there than on wn03; wn01 before wn02 by name
    # a farm of only such nodes can never serve 6 GB, whatever pbs_mom reports
    p = plan(snap(jobs[:1], nodes[:2]), cfg, Usage(), 1000)
    assert p.waits["a"].reason == "never_fits" and "6144 MB" in p.waits["a"].detail


def test_several_nodes_each_with_their_cores():
    p = plan(snap([want("mpi", Request((NodePart(2, 2),)))], farm()), CFG, Usage(), 1000)
    placed = where(p, "mpi")
    assert len(placed) == 2 and set(placed.values()) == {2}
    assert p.starts[0].cores == 4


def test_a_request_takes_nodes_closed_to_other_groups_first_where_it_may_use_them():
    # wn03 and wn04 are open only to atlas; cms runs on wn01 and wn02, which alice's request
    # would otherwise prefer (more diverse after placement, then fewer used cores)
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };'
                           'node_types = { sw = { nodes = ["wn03", "wn04"]; groups = ["atlas"]; }; };')
    busy = [running("c1", "bob", "atlas", "wn03"), running("c2", "bob", "atlas", "wn04"),
            running("c3", "bob", "atlas", "wn03"), running("c4", "bob", "atlas", "wn04"),
            running("c5", "x", "cms", "wn01"), running("c6", "y", "cms", "wn02")]
    p = plan(snap(busy + [want("mpi", Request((NodePart(2, 2),)))], farm()), cfg, Usage(), 1000)
    assert set(where(p, "mpi")) == {"wn03", "wn04"}
    p = plan(snap(busy + [want("mpi", Request((NodePart(2, 2),)))], farm()), CFG, Usage(), 1000)
    assert set(where(p, "mpi")) == {"wn01", "wn02"}


def test_properties_and_host_names_are_honoured():
    nodes = farm(props={"wn03": {"gpu"}})
    jobs = [want("g", Request((NodePart(1, 1, None, frozenset({"gpu"})),))),
            want("h", Request((NodePart(1, 2, "wn04"),)), submit=1)]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    assert where(p, "g") == {"wn03": 1} and where(p, "h") == {"wn04": 2}


def test_memory_is_never_overcommitted():
    nodes = farm(n=2, slots=8, mem=4 * GB)
    jobs = [want(f"m{i}", Request((NodePart(1, 1),), mem=3 * GB), user=f"u{i}", submit=i) for i in range(3)]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    used = [next(iter(where(p, j))) for j in ("m0", "m1")]
    assert sorted(used) == ["wn01", "wn02"]  # 3 GB each: one per 4 GB node, though cores are free
    assert p.waits["m2"].reason == "no_free_slot"
    # the same counted from running jobs on the next cycle
    run = [j._replace(state=JobState.RUNNING, start_time=900.0, placement=tuple(where(p, j.id).items()))
           for j in jobs[:2]]
    p2 = plan(snap(run + jobs[2:], nodes), CFG, Usage(), 1000)
    assert p2.starts == [] and p2.waits["m2"].reason == "no_free_slot"
    assert "2 node(s) with the cores lack the memory" in p2.waits["m2"].detail  # why says what is short


def test_exclusive_nodes_take_an_empty_node_and_keep_it():
    nodes = farm(n=2, slots=4)
    busy = running("r1", "bob", "cms", "wn01")
    jobs = [busy, want("x", Request((NodePart(1, 1),), exclusive=True)), queued("s", "carol", "cms", submit=5)]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    assert where(p, "x") == {"wn02": 1}
    assert where(p, "s") == {"wn01": 1}  # not beside the exclusive job
    run = jobs[:1] + [jobs[1]._replace(state=JobState.RUNNING, start_time=990.0, placement=(("wn02", 1),))]
    p2 = plan(snap(run + [queued(f"t{i}", "carol", "cms", submit=9 + i) for i in range(5)], nodes), CFG, Usage(),
              1000, index=NodeIndex())
    assert all(s.placement[0][0] == "wn01" for s in p2.starts) and len(p2.starts) == 3


def test_cores_spread_over_nodes_for_procs():
    nodes = farm(n=4, slots=2)
    jobs = [running("r1", "bob", "cms", "wn01", cores=2), want("p", Request(procs=5))]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    placed = where(p, "p")
    assert sum(placed.values()) == 5 and "wn01" not in placed


def test_requests_the_farm_can_never_serve_say_so():
    nodes = farm(n=4, slots=4, mem=8 * GB)
    jobs = [want("gpu", Request((NodePart(1, 1, None, frozenset({"gpu"})),))),
            want("five", Request((NodePart(5, 1),))),
            want("big", Request((NodePart(1, 2),), mem=16 * GB)),
            want("nohost", Request((NodePart(1, 1, "wn99"),))),
            want("ok", Request((NodePart(4, 4),)))]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    for jid in ("gpu", "five", "big", "nohost"):
        assert p.waits[jid].reason == "never_fits", jid
    assert "1:ppn=1:gpu: 0 node(s)" in p.waits["gpu"].detail
    assert "4 node(s) of the farm" in p.waits["five"].detail
    assert "16384 MB" in p.waits["big"].detail
    assert [s.job_id for s in p.starts] == ["ok"]


def test_status_commands_show_the_request_and_its_reserved_start(tmp_path, capsys):
    import json
    import time

    from mysched.cli.main import main
    from mysched.daemon.statusfile import build_status, write_status

    jobs = [running("r", "bob", "cms", "wn01", cores=4, start=900.0)._replace(walltime=600.0),
            want("mpi", Request((NodePart(2, 4),)))]
    s = snap(jobs, farm(n=2))
    p = plan(s, CFG, Usage(), 1000)
    assert p.waits["mpi"].reason == "no_free_slot"
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time()))
    assert main(["why", "--state-dir", str(tmp_path), "mpi"]) == 0
    assert "(nodes=2:ppn=4)" in capsys.readouterr().out
    assert main(["when", "--state-dir", str(tmp_path), "mpi", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # two nodes: wn02 is free, wn01 frees when r's requested walltime ends (900 + 600)
    assert doc["start"] == 1500.0 and "nodes wn02+wn01 are reserved for it" in doc["why"]  # earliest room first
    assert p.reservations["mpi"].start == 1500.0


def test_virtual_memory_is_checked_against_totmem_and_never_overcommitted():
    nodes = [Node(f"wn0{i}", 8, NodeState.FREE, vmem=8 * GB) for i in (1, 2)]  # pbs_mom's totmem
    jobs = [want(f"v{i}", Request((NodePart(1, 1),), vmem=5 * GB), user=f"u{i}", submit=i) for i in range(3)]
    p = plan(snap(jobs, nodes), CFG, Usage(), 1000)
    assert [where(p, j) for j in ("v0", "v1")] == [{"wn01": 1}, {"wn02": 1}]  # 3 GB left on wn01 after v0
    assert p.waits["v2"].reason == "no_free_slot" and "lack the memory" in p.waits["v2"].detail
    huge = want("huge", Request((NodePart(1, 2),), pvmem=5 * GB))  # 10 GB virtual on one node
    p = plan(snap([huge], nodes), CFG, Usage(), 1000)
    assert p.waits["huge"].reason == "never_fits" and "10240 MB virtual" in p.waits["huge"].detail


def test_a_request_reads_back_in_torques_units():
    r = Request((NodePart(2, 4, None, frozenset({"ib"})),), mem=16 * GB, pmem=1500 << 20, vmem=3)
    assert str(r) == "nodes=2:ppn=4:ib,mem=16gb,pmem=1500mb,vmem=3b"  # what `why` and `jobs` show


def test_parts_get_nodes_of_their_own_when_some_node_could_serve_either():
    # A plain part and a gpu part: taken part by part in rank order, the plain part could take
    # the gpu node, and the job waited for ever (here: on an idle farm). Two 4-core parts and an
    # ib part likewise, with one node of the two that have 4 cores free being ib.
    gpu = [Node("gpu01", 2, NodeState.FREE, frozenset({"gpu"})), Node("wn01", 2)]
    for nodes, req in (
            (gpu, Request((NodePart(1, 2), NodePart(1, 2, None, frozenset({"gpu"}))))),
            (gpu[::-1], Request((NodePart(1, 2), NodePart(1, 2, None, frozenset({"gpu"}))))),
            (farm(3, 4, props={"wn01": ("ib",), "wn03": ("ib",)}),
             Request((NodePart(2, 4), NodePart(1, 2, None, frozenset({"ib"})))))):
        busy = [running("x", "bob", "atlas", "wn03", cores=2)] if len(nodes) == 3 else []
        for policy in ("mysched", "easy", "fifo"):
            p = plan(snap(busy + [want("a", req)], nodes), CFG, Usage(), 1000, policy=policy)
            assert [s.job_id for s in p.starts] == ["a"], (policy, req, p.waits)
            got = next(s.placement for s in p.starts)
            assert len({n for n, _ in got}) == len(got) == req.nodes
            if len(nodes) == 2:
                assert got == (("wn01", 2), ("gpu01", 2))  # pbs_runjob gets them in the request's order


def test_a_host_part_and_a_part_only_that_host_serves_never_fit_and_say_so():
    nodes = farm(2, 4, props={"wn01": ("gpu",)})
    p = plan(snap([want("a", Request((NodePart(1, 1, "wn01"), NodePart(1, 1, None, frozenset({"gpu"})))))], nodes),
             CFG, Usage(), 1000)
    assert p.waits["a"].reason == "never_fits" and "cannot each have a node of its own" in p.waits["a"].detail


def test_a_host_named_twice_is_its_cores_on_that_host_as_torque_runs_it():
    from mysched.backends.torque.values import parse_node_parts
    # TORQUE 6.1: nodes=node01+node01 ran as exec_host node01/0+node01/1
    parts = parse_node_parts("wn01+wn02:ppn=2+wn01:ppn=2:ib", frozenset({"wn01", "wn02"}))
    assert parts == (NodePart(1, 3, "wn01", frozenset({"ib"})), NodePart(1, 2, "wn02"))
    p = plan(snap([want("a", Request(parse_node_parts("wn01+wn01", frozenset({"wn01"}))))], farm()), CFG, Usage(), 1000)
    assert where(p, "a") == {"wn01": 2}
