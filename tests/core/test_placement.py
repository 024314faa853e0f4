"""Which node a job goes to: for mysched the node without a job of the user that is most
diverse after placement (then fewest used cores, then name), failing that the one with the
fewest of the user's jobs; packing classes and the multi-core partition add a preference."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

VOS = 'vos = { atlas = { groups = ["atlas", "mc"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
CFG = config_from_text(VOS)


def where(p, jid: str) -> str:
    return next(s.placement[0][0] for s in p.starts if s.job_id == jid)


def test_the_most_diverse_node_after_placement_wins_over_the_emptier_one():
    # wn01: x and y, 4 cores used (alice makes 3 users of 3 jobs); wn02: z twice, 2 cores (2 of 3)
    run = [running("r1", "x", "cms", "wn01"), running("r2", "y", "cms", "wn01", cores=3),
           running("r3", "z", "cms", "wn02"), running("r4", "z", "cms", "wn02")]
    p = plan(snap(run + [queued("j", "alice", "atlas")], nodes(2, 8)), CFG, Usage(), 1000)
    assert where(p, "j") == "wn01"


def test_among_equally_diverse_nodes_the_fewest_used_cores_then_the_name():
    run = [running("r1", "x", "cms", "wn01", cores=3), running("r2", "y", "cms", "wn02", cores=2),
           running("r3", "z", "cms", "wn03", cores=2)]
    p = plan(snap(run + [queued("j", "alice", "atlas")], nodes(3, 8)), CFG, Usage(), 1000)
    assert where(p, "j") == "wn02"


def test_when_every_node_runs_the_user_the_one_with_fewest_of_the_users_jobs_then_most_diverse():
    # alice: 2 jobs on wn01, 1 on wn02 (alone) and 1 on wn03 (with bob)
    run = [running("a1", "alice", "atlas", "wn01"), running("a2", "alice", "atlas", "wn01"),
           running("a3", "alice", "atlas", "wn02"), running("a4", "alice", "atlas", "wn03"),
           running("b1", "bob", "cms", "wn03")]
    p = plan(snap(run + [queued("j", "alice", "atlas")], nodes(3, 8)), CFG, Usage(), 1000)
    assert where(p, "j") == "wn03"


def test_a_job_goes_to_the_best_node_whatever_node_type_it_has():
    # wn01 is typed (open to all), wn02 untyped: the nodes are ranked apart, the best of both wins
    cfg = config_from_text(VOS + 'node_types = { big = { nodes = ["wn01"]; }; };')
    busy1 = [running("r1", "x", "cms", "wn01"), running("r2", "x", "cms", "wn01")]
    busy2 = [running("r1", "x", "cms", "wn02"), running("r2", "x", "cms", "wn02")]
    assert where(plan(snap(busy1 + [queued("j", "alice", "atlas")], nodes(2, 4)), cfg, Usage(), 1000), "j") == "wn02"
    assert where(plan(snap(busy2 + [queued("j", "alice", "atlas")], nodes(2, 4)), cfg, Usage(), 1000), "j") == "wn01"


def test_a_job_that_may_use_a_node_closed_to_others_goes_there_before_a_more_diverse_open_node():
    # wn01 is open only to atlas (software-manager nodes): bob's two atlas jobs there make it the
    # less diverse node for alice, but an open core she leaves is one cms may use, one she leaves
    # on wn01 serves no one else
    sw = 'node_types = { swmgr = { nodes = ["wn01"]; groups = ["atlas"]; }; };'
    run = [running("r1", "bob", "atlas", "wn01"), running("r2", "bob", "atlas", "wn01"),
           running("r3", "x", "cms", "wn02")]
    jobs = run + [queued("j", "alice", "atlas"), queued("k", "carol", "cms")]
    p = plan(snap(jobs, nodes(2, 3)), config_from_text(VOS + sw), Usage(), 1000)
    assert where(p, "j") == "wn01" and where(p, "k") == "wn02"
    # the plain score where the type is open to all, and the open node once wn01 is full
    p = plan(snap(jobs, nodes(2, 3)), config_from_text(VOS + sw.replace('groups = ["atlas"]; ', '')), Usage(), 1000)
    assert where(p, "j") == "wn02"
    full = run + [running("r4", "bob", "atlas", "wn01"), queued("j", "alice", "atlas")]
    assert where(plan(snap(full, nodes(2, 3)), config_from_text(VOS + sw), Usage(), 1000), "j") == "wn02"


def test_with_the_multicore_partition_on_a_small_job_fills_a_busy_node_before_an_empty_one():
    run = [running("r1", "x", "cms", "wn02"), running("r2", "x", "cms", "wn02")]
    job = [queued("j", "alice", "atlas")]
    assert where(plan(snap(run + job, nodes(3, 8)), CFG, Usage(), 1000), "j") == "wn01"
    on = config_from_text(VOS + 'drain = { rate = 12; max_draining = 1; };')
    assert where(plan(snap(run + job, nodes(3, 8)), on, Usage(), 1000), "j") == "wn02"


def test_a_spreading_class_avoids_nodes_running_the_class_while_it_can():
    cfg = config_from_text(VOS + 'packing = { mc = { policy = "none"; groups = ["mc"]; }; };')
    # wn01 would win on diversity (2 of 2 against 2 of 4), but runs the class already
    run = [running("m1", "m", "mc", "wn01"), running("x1", "x", "cms", "wn02"), running("x2", "x", "cms", "wn02"),
           running("x3", "x", "cms", "wn02")]
    p = plan(snap(run + [queued("j", "n", "mc")], nodes(2, 8)), cfg, Usage(), 1000)
    assert where(p, "j") == "wn02"
    both = run + [running("m2", "m", "mc", "wn02")]  # every node runs it: by score again
    p = plan(snap(both + [queued("j", "n", "mc")], nodes(2, 8)), cfg, Usage(), 1000)
    assert where(p, "j") == "wn01"


def test_a_relaxed_class_job_goes_elsewhere_when_its_class_nodes_are_full():
    cfg = config_from_text(VOS + 'packing = { mc = { policy = "relaxed"; groups = ["mc"]; }; };')
    run = [running("m1", "m", "mc", "wn01", cores=4), running("x1", "x", "cms", "wn02"),
           running("x2", "y", "cms", "wn03"), running("x3", "y", "cms", "wn03")]
    p = plan(snap(run + [queued("j", "n", "mc")], nodes(3, 4)), cfg, Usage(), 1000)
    assert where(p, "j") == "wn02"


def test_least_loaded_takes_the_node_with_most_free_cores_and_fifo_the_first_by_name():
    run = [running("r1", "x", "cms", "wn01", cores=2), running("r2", "y", "cms", "wn03", cores=1)]
    farm = [Node("wn01", 4), Node("wn02", 2), Node("wn03", 4)]
    job = [queued("j", "alice", "atlas")]
    assert where(plan(snap(run + job, farm), CFG, Usage(), 1000, policy="least-loaded"), "j") == "wn03"
    assert where(plan(snap(run + job, farm), CFG, Usage(), 1000, policy="fifo"), "j") == "wn01"
    # mysched: the highest diversity -- the empty wn02 -- while no multi-core work is there
    # to keep nodes whole for; with a 2-core job running, busy nodes are filled first
    assert where(plan(snap(run + job, farm), config_from_text(VOS + "drain = { rate = 0; };"), Usage(), 1000),
                 "j") == "wn02"
    assert where(plan(snap(run + job, farm), CFG, Usage(), 1000), "j") == "wn03"
