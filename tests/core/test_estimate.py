"""Start estimates from requested walltimes, on the planner's own admission rules."""

from __future__ import annotations

import math

from mysched.config import config_from_text
from mysched.core.estimate import estimate_start
from mysched.core.model.batch import Job, JobState, Node, NodeState

NOW = 10_000.0
CFG = config_from_text('''
vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };
node_types = { big = { nodes = ["big*"]; vos = ["cms"]; }; };
queues = { short = { nodes = ["wn01"]; }; };
''')


def run(jid, node, cores, start, walltime):
    return Job(jid, "q", "u", "atlas", cores, JobState.RUNNING, 0.0, start, walltime, placement=((node, cores),))


def want(cores=1, queue="q", group="atlas", walltime=3600.0):
    return Job("t", queue, "u", group, cores, JobState.QUEUED, 0.0, None, walltime)


NODES = [Node("wn01", 2), Node("wn02", 2), Node("big01", 8), Node("wn03", 2, NodeState.DOWN)]


def test_earliest_end_on_an_admitted_node():
    running = [run("a", "wn01", 2, NOW - 100, 1000), run("b", "wn02", 2, NOW - 500, 1000),
               run("c", "big01", 8, NOW, 10)]
    # atlas may not use big01 (cms only), wn03 is down: the first core frees on wn02
    est = estimate_start(want(), "atlas", running, [], NODES, CFG, NOW)
    assert est.start == NOW + 500 and est.exact and est.ahead == 0
    # two cores: wn02 frees both at NOW + 500, wn01 at NOW + 900
    est = estimate_start(want(2), "atlas", running, [], NODES, CFG, NOW)
    assert est.start == NOW + 500
    # cms may use big01, which frees at NOW + 10
    est = estimate_start(want(group="cms"), "cms", running, [], NODES, CFG, NOW)
    assert est.start == NOW + 10


def test_jobs_ahead_take_the_earliest_cores_and_queue_assignment_counts():
    running = [run("a", "wn01", 2, NOW, 100), run("b", "wn02", 2, NOW, 200)]
    ahead = [(Job("x", "q", "v", "atlas", 1, walltime=1000.0), "atlas")]
    est = estimate_start(want(), "atlas", running, ahead, NODES, CFG, NOW)
    assert est.ahead == 1 and est.start == NOW + 100  # x takes wn01's first core, the target its second
    # queue "short" may only use wn01
    est = estimate_start(want(queue="short"), "atlas", [run("a", "wn01", 2, NOW, 300)], [], NODES, CFG, NOW)
    assert est.start == NOW + 300


def test_no_estimate_without_walltimes_or_nodes():
    est = estimate_start(want(), "atlas", [run("a", "wn01", 2, NOW, None), run("b", "wn02", 2, NOW, None)], [],
                         NODES, CFG, NOW)
    assert est.start is None and "no requested walltime" in est.why
    est = estimate_start(want(4), "atlas", [], [], NODES, CFG, NOW)
    assert est.start is None and "no usable node" in est.why
    # a node free now: starts now, even if other jobs lack walltimes
    est = estimate_start(want(), "atlas", [run("a", "wn01", 2, NOW, None)], [], NODES, CFG, NOW)
    assert est.start == NOW and not math.isinf(est.start)


def test_a_node_running_a_job_that_asked_for_it_alone_has_no_free_core_until_that_job_ends():
    from mysched.core.model.request import Request
    alone = run("x", "wn01", 1, NOW - 100, 1000)._replace(request=Request(exclusive=True))
    other = run("y", "wn02", 2, NOW, 2000)
    est = estimate_start(want(), "atlas", [alone, other], [], NODES, CFG, NOW)
    assert est.start == NOW + 900  # not now: wn01's second core is not free while x runs


# -- whole requests: several nodes, named hosts, procs -------------------------------------------

def _part(count, ppn, host=None, props=()):
    from mysched.core.model.request import NodePart
    return NodePart(count, ppn, host, frozenset(props))


def test_a_part_only_one_node_can_serve_keeps_it_from_the_other_parts():
    from mysched.core.estimate import estimate_request
    # gpu01 comes first and is free now; wn01 frees at NOW + 300: a part without properties that
    # took gpu01 would leave the gpu part nothing until the other ended
    nodes = [Node("gpu01", 2, properties=frozenset({"gpu"})), Node("wn01", 2)]
    est = estimate_request(want(), "atlas", (_part(1, 2), _part(1, 2, props={"gpu"})), 0,
                           [run("a", "wn01", 2, NOW, 300)], [], nodes, CFG, NOW)
    assert est.start == NOW + 300 and est.nodes == ("wn01", "gpu01")
    # when both are free the matching still gives each part its own node
    est = estimate_request(want(), "atlas", (_part(1, 1), _part(1, 1, props={"gpu"})), 0, [], [], nodes, CFG, NOW)
    assert est.start == NOW and est.nodes == ("wn01", "gpu01") and not est.exact


def test_a_downtime_on_one_node_moves_a_two_node_estimate_to_another():
    from mysched.core.model.windows import Downtime
    from mysched.core.settings import Config
    from mysched.core.estimate import estimate_request
    nodes = [Node("wn01", 2), Node("wn02", 2), Node("wn03", 2)]
    running = [run("a", "wn01", 2, NOW, 100), run("b", "wn02", 2, NOW, 200), run("c", "wn03", 2, NOW, 5000)]
    # wn01 is closed from NOW + 1000 to NOW + 4000: a 1-hour job starting at NOW + 200 would run into it
    cfg = Config(downtimes=(Downtime("fw", NOW + 1000, NOW + 4000, ("wn01",)),))
    est = estimate_request(want(walltime=3600.0), "atlas", (_part(2, 2),), 0, running, [], nodes, cfg, NOW)
    assert est.start == NOW + 4000 and est.nodes == ("wn01", "wn02")  # wn01 again after the window, before wn03
    est = estimate_request(want(walltime=600.0), "atlas", (_part(2, 2),), 0, running, [], nodes, cfg, NOW)
    assert est.start == NOW + 200  # a short job ends before it


def test_procs_and_hosts_that_can_never_be_served_say_why():
    from mysched.core.estimate import estimate_request
    est = estimate_request(want(), "atlas", (), 9, [], [], NODES, CFG, NOW)  # atlas: wn01 + wn02, 4 cores
    assert est.start is None and est.why == ("too few usable cores may run it (procs=9: the nodes it may use "
                                             "have 4 core(s) in all)")
    est = estimate_request(want(), "atlas", (_part(1, 1, "wn03"),), 0, [], [], NODES, CFG, NOW)
    assert est.start is None and est.why == "no usable node may run it (host wn03 is down)"
    est = estimate_request(want(), "atlas", (_part(1, 1, "big01"),), 0, [], [], NODES, CFG, NOW)
    assert est.why == "no usable node may run it (host big01 is not open to its queue, VO or group)"
    est = estimate_request(want(), "atlas", (_part(3, 1),), 0, [], [], NODES, CFG, NOW)
    assert est.why == ("too few usable nodes may run it (3:ppn=1: 2 node(s) it may use, up, have 1 core(s); "
                       "it needs 3)")


def test_procs_spread_over_the_nodes_it_may_use_and_jobs_ahead_take_cores_first():
    from mysched.core.estimate import estimate_request
    running = [run("a", "wn01", 2, NOW, 100), run("b", "wn02", 1, NOW, 300)]
    est = estimate_request(want(), "atlas", (), 3, running, [], NODES, CFG, NOW)
    assert est.start == NOW + 100 and set(est.nodes) == {"wn01", "wn02"}  # 2 on wn01, 1 free now on wn02
    ahead = [(Job("x", "q", "v", "atlas", 1, walltime=1000.0), "atlas")]
    est = estimate_request(want(), "atlas", (), 3, running, ahead, NODES, CFG, NOW)
    assert est.start == NOW + 300 and est.ahead == 1  # x takes wn02's free core


def test_jobs_ahead_of_a_named_host_job_may_run_on_the_other_nodes():
    # s3 of the review: four 1-h jobs ahead could start on wn01 (free at +100) and wn02; a job
    # asking for wn03 (free at +600) was told +3600 after that, as if they all queued on wn03
    from mysched.core.estimate import estimate_request
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4)]
    running = [run("a", "wn01", 4, NOW, 100), run("b", "wn02", 4, NOW, 100), run("c", "wn03", 4, NOW, 600)]
    ahead = [(Job(f"h{i}", "q", "v", "atlas", 1, JobState.QUEUED, 0.0, None, 3600.0), "atlas") for i in range(4)]
    est = estimate_request(want(4), "atlas", (_part(1, 4, "wn03"),), 0, running, ahead, nodes, CFG, NOW)
    assert est.start == NOW + 600 and est.nodes == ("wn03",)


def test_parts_that_cannot_each_have_a_node_are_said_so_not_blamed_on_walltimes():
    from mysched.core.estimate import estimate_request
    est = estimate_request(want(2), "atlas", (_part(1, 1, "wn01"), _part(1, 1, "wn01")), 0, [], [], NODES, CFG, NOW)
    assert est.start is None and "cannot each have a node of its own" in est.why


def test_jobs_without_walltime_are_counted_once_each():
    ahead = [(Job(f"h{i}", "q", "v", "atlas", 2, JobState.QUEUED, 0.0, None, None), "atlas") for i in range(2)]
    est = estimate_start(want(), "atlas", [run("a", "wn01", 2, NOW, None), run("b", "wn02", 2, NOW, 50)], ahead,
                         NODES, CFG, NOW)
    assert est.start is None and "3 running or earlier job(s)" in est.why
