"""TORQUE accounting logs as a workload: what of each record's request is replayed."""

from __future__ import annotations

from mysched.backends.sim.farm import make_nodes
from mysched.config import config_from_text
from mysched.core.model.batch import NodePart
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.workloads.acctrace import read_accounting_trace

REC = ("11/25/2026 16:48:36;E;{id}.vm;user=alice group=atlas queue=atlas qtime=1795624735 start=1795624748 "
       "exec_host={hosts} Resource_List.nodes={nodes} Resource_List.walltime=00:30:00 total_execution_slots={n} "
       "end=1795625316\n")


def test_a_request_of_several_nodes_keeps_its_shape(tmp_path):
    # nodes=2:ppn=4 ran as 4 cores on each of 2 nodes; it was replayed as 8 cores on one node,
    # which an 8-slot node takes and a farm of 4-slot nodes spreads anyhow.
    log = tmp_path / "20261125"
    log.write_text(REC.format(id=1, hosts="node03/0-3+node04/0-3", nodes="2:ppn=4", n=8)
                   + REC.format(id=2, hosts="node01/0-3", nodes="1:ppn=4:bigmem", n=4)
                   + REC.format(id=3, hosts="node02/0+node01/1", nodes="1:ppn=1:bigmem+1:ppn=1", n=2)
                   + REC.format(id=4, hosts="node04/0-1", nodes="node04:ppn=2", n=2))
    jobs, _ = read_accounting_trace(str(log))
    req = {tj.job.id: tj.job.request for tj in jobs}
    assert req["1.vm"].parts == (NodePart(2, 4),)
    assert req["2.vm"] is None and req["4.vm"] is None  # one node: its cores on any node
    assert req["3.vm"].parts == (NodePart(1, 1), NodePart(1, 1))  # properties the farm lacks left out
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; };')
    r = simulate(jobs[:1], cfg, make_nodes(1, 8), SimOptions())
    assert r.started == 0 and r.unplaceable == {"never_fits": 1} and r.too_large_jobs == 1
    assert simulate(jobs[:1], cfg, make_nodes(2, 4), SimOptions()).started == 1
