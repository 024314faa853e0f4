"""Reservations and EASY backfill: the first multi-core job that does not fit is promised the
nodes that free up first; later jobs use those nodes only if they end before."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.hold.reservations import Reservation
from mysched.core.share.usage import Usage

from ..conftest import snap

NOW = 1000.0
# reservations from walltimes are what these tests are about: the multi-core partition,
# which would serve one-node jobs instead (`Drains.serves`), is off
CFG = 'vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'


def run(jid, node, end, cores=1):
    return Job(jid, "q", "u", "atlas", cores, JobState.RUNNING, 0.0, NOW - 10, end - (NOW - 10),
               placement=((node, cores),))


def q(jid, cores=1, walltime=None, submit=0.0, user="u"):
    return Job(jid, "q", user, "atlas", cores, JobState.QUEUED, submit, None, walltime)


def farm():
    # wn01: 3 of 4 busy until NOW+100; wn02: 2 of 4 busy until NOW+1000
    running = [run(f"a{i}", "wn01", NOW + 100) for i in range(3)] + [run(f"b{i}", "wn02", NOW + 1000) for i in range(2)]
    return running, [Node("wn01", 4), Node("wn02", 4)]


def test_the_big_job_gets_the_node_that_frees_first_and_only_short_jobs_backfill_there():
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))  # wn02: one slot left
    jobs = running + [q("big", cores=4, walltime=500, submit=1), q("long", walltime=5000, submit=2),
                      q("long2", walltime=5000, submit=3), q("short", walltime=50, submit=4)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    r = p.reservations["big"]
    assert r.nodes == ("wn01",) and r.start == NOW + 100
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where["short"] == "wn01"  # ends before the reservation starts
    assert where["long"] == "wn02"  # would delay it: kept off wn01
    # long2 was kept off wn01 by the reservation when tried; short took wn01's free cores after
    # it, so at the end of the cycle it waits for a free slot (the reason in force then)
    assert "long2" not in where and p.waits["long2"].reason == "no_free_slot"
    w = p.waits["big"]
    assert w.reason == "no_free_slot" and "reserved wn01 in 100 s" in w.detail


def test_without_reservations_the_long_job_may_take_the_node():
    running, nodes = farm()
    jobs = running + [q("big", cores=4, walltime=500, submit=1), q("long", walltime=5000, submit=3, user="v")]
    cfg = config_from_text(CFG + "scheduler = { reservation_depth = 0; };\n")
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW)
    assert not p.reservations
    assert {s.job_id for s in p.starts} == {"long"}


def test_a_job_without_walltime_never_backfills_on_reserved_nodes():
    running, nodes = farm()
    nodes = [Node("wn01", 4)]
    jobs = running[:3] + [q("big", cores=4, walltime=500, submit=1), q("nowall", submit=2)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    assert not p.starts and p.waits["nowall"].reason == "reserved"


def test_a_kept_reservation_holds_its_nodes_against_higher_ranked_jobs():
    running, nodes = farm()
    first = plan(snap(running + [q("big", cores=4, walltime=500, submit=1)], nodes), config_from_text(CFG),
                 Usage(), NOW)
    # next cycle a long job submitted earlier than big (ranked higher) arrives
    jobs = running + [q("early", walltime=5000, submit=0.5), q("big", cores=4, walltime=500, submit=1)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW + 1, reservations=first.reservations)
    assert p.reservations["big"].nodes == ("wn01",)
    assert [s.placement[0][0] for s in p.starts if s.job_id == "early"] == ["wn02"]


def test_the_reserved_job_starts_on_its_nodes_when_they_free():
    _, nodes = farm()
    first = plan(snap(farm()[0] + [q("big", cores=4, walltime=500, submit=1)], nodes), config_from_text(CFG),
                 Usage(), NOW)
    later = [run(f"b{i}", "wn02", NOW + 1000) for i in range(2)]  # wn01's jobs ended
    jobs = later + [q("other", walltime=9000, submit=0.5, user="v"), q("big", cores=4, walltime=500, submit=1)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW + 100, reservations=first.reservations)
    where = {s.job_id: s.placement[0][0] for s in p.starts}
    assert where["big"] == "wn01" and where.get("other") == "wn02"


def test_jobs_running_past_their_walltime_ask_for_no_cycle_now():
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))
    jobs = running + [q("big", cores=4, walltime=500, submit=1)]
    cfg = config_from_text(CFG)
    first = plan(snap(jobs, nodes), cfg, Usage(), NOW)
    assert first.reservations["big"].start == NOW + 100 and first.wake_at == NOW + 100
    # at NOW+200 wn01's jobs still run, past their walltime: they may end any moment, but a
    # cycle asked for "now" (and again every min_interval) would change nothing
    later = plan(snap(jobs, nodes), cfg, Usage(), NOW + 200, reservations=first.reservations)
    assert later.wake_at is None  # nothing else in this plan changes with time alone


def mpi(jid, procs, walltime, submit, user="u"):
    return Job(jid, "q", user, "atlas", procs, JobState.QUEUED, submit, None, walltime, request=Request(procs=procs))


def ones(n):
    return [Node(f"wn{i:02d}", 1) for i in range(1, n + 1)]


def test_a_procs_reservation_leaves_the_cores_free_now_to_backfill_as_easy_extra_nodes():
    # wn01-02 free; wn03-06 run one 4-core job until NOW+100: at that time 6 cores are free,
    # big needs 4, so 2 are extra -- the free ones, however long the job that takes them
    wide = Job("r", "q", "u", "atlas", 4, JobState.RUNNING, 0.0, NOW - 10, 110.0,
               placement=tuple((f"wn0{i}", 1) for i in range(3, 7)))
    jobs = [wide, mpi("big", 4, 500, 1), mpi("long", 2, 5000, 2)]
    p = plan(snap(jobs, ones(6)), config_from_text(CFG), Usage(), NOW, policy="easy")
    assert p.reservations["big"].start == NOW + 100
    assert set(p.reservations["big"].nodes) == {"wn03", "wn04", "wn05", "wn06"}
    assert [s.job_id for s in p.starts] == ["long"]


def test_a_reserved_job_that_starts_hands_the_reservation_to_the_next_in_the_same_cycle():
    busy = [Job(f"r{i}", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, NOW - 10, 110.0, placement=((f"wn0{i}", 1),))
            for i in range(1, 4)]
    queue = [mpi("a", 2, 1000, 1), mpi("b", 4, 1000, 2)]
    cfg = config_from_text(CFG)
    first = plan(snap(busy + queue, ones(4)), cfg, Usage(), NOW, policy="easy")
    assert set(first.reservations) == {"a"}
    # the farm is empty: a starts, b (the new head) does not fit and is promised the farm at
    # a's end, so long must not take the two cores left
    queue.append(q("long", walltime=5000, submit=3))
    p = plan(snap(queue, ones(4)), cfg, Usage(), NOW + 100, policy="easy", reservations=first.reservations)
    assert [s.job_id for s in p.starts] == ["a"]
    assert p.reservations["b"].start == NOW + 1100 and p.waits["long"].reason == "reserved"


def test_a_kept_procs_reservation_moves_to_cores_that_start_it_even_a_second_earlier():
    # last cycle big was promised wn03+wn04 at NOW+101; now wn01 is free and wn02 frees at
    # NOW+100: EASY's shadow time is NOW+100, with no extra core for the long job
    run_ = [run("x", "wn02", NOW + 100), run("y", "wn03", NOW + 101), run("z", "wn04", NOW + 101)]
    jobs = run_ + [mpi("big", 2, 500, 1), q("long", walltime=5000, submit=2)]
    kept = {"big": Reservation("big", NOW + 101, ("wn03", "wn04"))}
    p = plan(snap(jobs, ones(4)), config_from_text(CFG), Usage(), NOW, policy="easy", reservations=kept)
    assert p.reservations["big"].start == NOW + 100 and set(p.reservations["big"].nodes) == {"wn01", "wn02"}
    assert not p.starts and p.waits["long"].reason == "reserved"


def test_the_reserved_job_starts_on_its_nodes_when_a_job_of_its_class_ranks_before_it():
    # Waits are cached per job class (queue, VO, group, cores, walltime): the refusal of a job
    # ranked before the owner -- "reserved" -- must not stand for the owner, which may use them.
    _, nodes = farm()
    cfg = config_from_text(CFG)
    first = plan(snap(farm()[0] + [q("big", cores=4, walltime=500, submit=1)], nodes), cfg, Usage(), NOW)
    assert first.reservations["big"].nodes == ("wn01",)
    later = [run(f"b{i}", "wn02", NOW + 1000) for i in range(2)]  # wn01's jobs ended
    jobs = later + [q("twin", cores=4, walltime=500, submit=0.5), q("big", cores=4, walltime=500, submit=1)]
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW + 100, reservations=first.reservations)
    assert {s.job_id: s.placement[0][0] for s in p.starts} == {"big": "wn01"}
    assert p.waits["twin"].reason == "no_free_slot"  # big took wn01: the farm is full at the end


def test_a_released_node_stays_closed_when_the_next_reservation_takes_it():
    # big was promised wn01 but starts on wn02, which emptied; wn01 is closed for the rest of
    # the cycle, and big2's new reservation there must not open it to a job ranked after one
    # it refused (a share violation between VOs)
    wn01 = [run(f"a{i}", "wn01", NOW + 100) for i in range(3)]
    cfg = config_from_text(CFG)
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    on02 = [run(f"b{i}", "wn02", NOW + 1000) for i in range(4)]
    first = plan(snap(wn01 + on02 + [q("big", cores=4, walltime=500, submit=1)], nodes), cfg, Usage(), NOW)
    assert first.reservations["big"].nodes == ("wn01",)
    jobs = wn01 + [q("big", cores=4, walltime=500, submit=1), q("s1", walltime=50, submit=2),
                   q("big2", cores=4, walltime=500, submit=3), q("s2", walltime=60, submit=4)]
    p = plan(snap(jobs, nodes), cfg, Usage(), NOW + 1, reservations=first.reservations)
    assert {s.job_id: s.placement[0][0] for s in p.starts} == {"big": "wn02"}
    assert p.reservations["big2"].nodes == ("wn01",)
    assert p.waits["s1"].reason == p.waits["s2"].reason == "reserved"


# -- the share order and the depth (issue #10) -------------------------------------------------

TWO_VOS = ('vos = { atlas = { groups = ["atlas"]; share = 10; }; cms = { groups = ["cms"]; share = 10; }; };\n'
           'drain = { rate = 0; };\n')
"""Equal shares, too small for a guarantee on 8 slots: the fair-share order alone (no partition)."""


def vq(jid, vo, cores=1, walltime=None, submit=0.0):
    return Job(jid, "q", f"u-{vo}", vo, cores, JobState.QUEUED, submit, None, walltime)


def vrun(jid, vo, node, end, cores=1):
    return Job(jid, "q", f"u-{vo}", vo, cores, JobState.RUNNING, 0.0, NOW - 10, end - (NOW - 10),
               placement=((node, cores),))


def test_the_reservation_goes_to_the_wide_job_that_waited_longest_not_to_the_lighter_vo():
    """A VO far above its share (atlas) comes last in the fair-share order. Its wide job has
    waited longest: it gets the reservation, not the wide job the lighter VO (cms) submitted
    later -- else each new wide job of a lighter VO would take the depth before it, and it
    would wait until none is left (74 days on SDSC-SP2)."""
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [vrun(f"a{i}", "atlas", "wn01", NOW + 100) for i in range(4)] + [
        vrun(f"c{i}", "cms", "wn02", NOW + 2000) for i in range(3)]  # one core free on wn02
    jobs = running + [vq("old-wide", "atlas", cores=4, walltime=500, submit=1),
                      vq("new-wide", "cms", cores=4, walltime=500, submit=50)]
    heavy = Usage(vo={"atlas": 9e6, "cms": 1e3}, group={"atlas": 9e6, "cms": 1e3},
                  user={"u-atlas": 9e6, "u-cms": 1e3})
    cfg = config_from_text(TWO_VOS + CFG_DEPTH_1)
    p = plan(snap(jobs, nodes), cfg, heavy, NOW)
    assert p.waits["new-wide"].rank < p.waits["old-wide"].rank  # the share order is unchanged
    assert set(p.reservations) == {"old-wide"} and p.reservations["old-wide"].start == NOW + 100
    assert "reserved wn01 in 100 s" in p.waits["old-wide"].detail
    # Kept from cycle to cycle while the lighter VO's wide jobs keep coming.
    jobs.append(vq("newer-wide", "cms", cores=4, walltime=500, submit=60))
    p2 = plan(snap(jobs, nodes), cfg, heavy, NOW + 10, reservations=p.reservations)
    assert set(p2.reservations) == {"old-wide"}


def test_on_a_full_farm_the_wide_job_that_waited_longest_is_promised_its_nodes():
    """No core free: nothing is tried, yet the reservation is made (after the cycle's starts)."""
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [vrun(f"a{i}", "atlas", "wn01", NOW + 100) for i in range(4)] + [
        vrun(f"c{i}", "cms", "wn02", NOW + 2000) for i in range(4)]
    jobs = running + [vq("old-wide", "atlas", cores=4, walltime=500, submit=1),
                      vq("new-wide", "cms", cores=4, walltime=500, submit=50)]
    p = plan(snap(jobs, nodes), config_from_text(TWO_VOS + CFG_DEPTH_1), Usage(), NOW)
    assert set(p.reservations) == {"old-wide"} and p.reservations["old-wide"].nodes == ("wn01",)


def test_a_reserved_job_starts_as_soon_as_it_fits_ahead_of_the_share_order():
    """A reserved job that fits now (here on a node that freed early, not the one reserved for
    it) starts now, before the jobs of a VO with more priority take that room (EASY tries its
    head first); it does not wait for its reservation to come due."""
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4)]
    running = [vrun(f"a{i}", "atlas", "wn01", NOW + 100) for i in range(4)] + [
        vrun(f"c{i}", "cms", "wn02", NOW + 2000) for i in range(4)]  # wn03's jobs ended early
    before = {"old-wide": Reservation("old-wide", NOW + 100, ("wn01",))}
    jobs = running + [vq("old-wide", "atlas", cores=4, walltime=500, submit=1),
                      vq("long", "cms", cores=1, walltime=5000, submit=2)]
    heavy = Usage(vo={"atlas": 9e6, "cms": 1e3}, group={"atlas": 9e6, "cms": 1e3},
                  user={"u-atlas": 9e6, "u-cms": 1e3})
    p = plan(snap(jobs, nodes), config_from_text(TWO_VOS + CFG_DEPTH_1), heavy, NOW, reservations=before)
    assert [(s.job_id, s.placement) for s in p.starts] == [("old-wide", (("wn03", 4),))]
    assert p.waits["long"].reason == "no_free_slot"  # wn01 and wn02 full, wn03 taken by old-wide


CFG_DEPTH_1 = "scheduler = { reservation_depth = 1; };\n"


SELECTIVE = "scheduler = { reservation_wait_factor = 1.0; };\n"


def test_with_a_wait_factor_a_wide_job_is_reserved_only_once_it_has_waited_its_walltime():
    """Selective reservation: until the wide job has waited its requested walltime (500 s),
    backfill is free to take its node and `why` says when the reservation comes; from then on
    it is promised the node that frees first, as without the factor."""
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))  # wn02: one slot left

    def jobs(big_submit):
        return running + [q("big", cores=4, walltime=500, submit=big_submit),
                          q("long", walltime=5000, submit=NOW - 50), q("long2", walltime=5000, submit=NOW - 40)]
    cfg = config_from_text(CFG + SELECTIVE)
    p = plan(snap(jobs(NOW - 100), nodes), cfg, Usage(), NOW)
    assert not p.reservations
    assert {s.job_id for s in p.starts} == {"long", "long2"}  # one of them on wn01
    assert "no reservation for 400 s yet" in p.waits["big"].detail
    p2 = plan(snap(jobs(NOW - 500), nodes), cfg, Usage(), NOW)
    assert p2.reservations["big"].nodes == ("wn01",)
    assert {s.job_id for s in p2.starts} == {"long"} and p2.waits["long2"].reason == "reserved"


def test_a_wide_job_not_yet_due_does_not_take_the_depth_from_one_that_is():
    """Under the share order the depth goes to the longest-waiting wide job that is due: an
    older one with a long walltime (not due) does not keep the shorter one from its reservation."""
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [vrun(f"a{i}", "atlas", "wn01", NOW + 100) for i in range(4)] + [
        vrun(f"c{i}", "cms", "wn02", NOW + 2000) for i in range(3)]
    jobs = running + [vq("old-long", "atlas", cores=4, walltime=50_000, submit=1),
                      vq("new-short", "cms", cores=4, walltime=300, submit=500)]
    p = plan(snap(jobs, nodes), config_from_text(TWO_VOS + "scheduler = { reservation_depth = 1; reservation_wait_factor = 1.0; };\n"), Usage(), NOW)
    assert set(p.reservations) == {"new-short"} and p.reservations["new-short"].nodes == ("wn01",)


def test_nodes_torque_reports_job_exclusive_are_reserved_as_their_jobs_end():
    # pbs_server flags every node whose cores are all assigned `job-exclusive`: on a full farm
    # that is every node, and the wide job must still be promised the one that frees first.
    running = [run(f"a{i}", "wn01", NOW + 100) for i in range(4)] + [run(f"b{i}", "wn02", NOW + 1000) for i in range(4)]
    nodes = [Node("wn01", 4, NodeState.FULL), Node("wn02", 4, NodeState.FULL)]
    cfg = config_from_text(CFG)
    p = plan(snap(running + [q("big", cores=4, walltime=500, submit=1)], nodes), cfg, Usage(), NOW)
    assert p.reservations["big"].nodes == ("wn01",) and p.reservations["big"].start == NOW + 100
    mpi = Job("mpi", "q", "u", "atlas", 6, JobState.QUEUED, 1.0, None, 500, request=Request(procs=6))
    p = plan(snap(running + [mpi], nodes), cfg, Usage(), NOW)
    assert p.reservations["mpi"].start == NOW + 1000 and set(p.reservations["mpi"].nodes) == {"wn01", "wn02"}


def test_a_node_running_a_job_that_asked_for_it_alone_is_whole_again_when_that_job_ends():
    alone = Job("x", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, NOW - 10, 110, placement=(("wn01", 1),),
                request=Request(exclusive=True))
    p = plan(snap([alone, q("big", cores=4, walltime=500, submit=1)], [Node("wn01", 4, NodeState.FULL)]),
             config_from_text(CFG), Usage(), NOW)
    assert p.reservations["big"].nodes == ("wn01",) and p.reservations["big"].start == NOW + 100


def test_a_kept_reservation_is_named_in_the_wait_every_cycle():
    running, nodes = farm()
    big = Job("big", "q", "u", "atlas", 4, JobState.QUEUED, 1.0, None, 500, request=Request(procs=4))
    cfg = config_from_text(CFG)
    first = plan(snap(running + [big], nodes), cfg, Usage(), NOW)
    assert "reserved" in first.waits["big"].detail
    again = plan(snap(running + [big], nodes), cfg, Usage(), NOW + 1, reservations=first.reservations)
    assert again.reservations["big"].nodes == first.reservations["big"].nodes
    assert "reserved " + "+".join(first.reservations["big"].nodes) in again.waits["big"].detail


def test_the_status_drops_a_reservation_in_the_cycle_its_job_starts():
    from mysched.daemon.statusfile import build_status

    _, nodes = farm()
    cfg = config_from_text(CFG)
    first = plan(snap(farm()[0] + [q("big", cores=4, walltime=500, submit=1)], nodes), cfg, Usage(), NOW)
    later = snap([run(f"b{i}", "wn02", NOW + 1000) for i in range(2)] + [q("big", cores=4, walltime=500, submit=1)],
                 nodes)
    p = plan(later, cfg, Usage(), NOW + 100, reservations=first.reservations)
    assert "big" in {s.job_id for s in p.starts} and "big" in p.reservations  # the plan keeps it this cycle
    assert build_status(later, p, cfg)["reservations"] == {}  # `nodes` no longer lists it as reserved
    assert build_status(later, p, cfg, dry_run=True)["reservations"]  # a dry run started nothing


def test_a_kept_reservation_is_named_in_its_jobs_wait_while_the_farm_is_full():
    # The farm full, the next cycle left the job waiting without a try: the reservation it kept
    # showed in `when` and `nodes` but its wait no longer said "reserved ..." (why).
    from mysched.config import config_from_text
    from mysched.core.model.batch import Job, JobState, Node, Snapshot
    from mysched.core.planner import plan
    from mysched.core.share.usage import Usage

    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };'
                           'drain = { rate = 0; };')
    now = 100_000.0
    running = [Job(f"{n}{i}", "q", "x", "cms", 1, JobState.RUNNING, 0.0, now - 600, wall, placement=((n, 1),))
               for n, wall in (("wn01", 4200.0), ("wn02", 7800.0)) for i in range(4)]
    wide = Job("wide", "q", "u", "atlas", 4, JobState.QUEUED, 0.0, None, 4 * 3600.0)
    s = Snapshot(now, tuple(running + [wide]), (Node("wn01", 4), Node("wn02", 4)), ())
    first = plan(s, cfg, Usage(), now)
    assert first.waits["wide"].detail == "reserved wn01 in 3600 s"
    again = plan(s, cfg, Usage(), now + 60, reservations=first.reservations)
    assert again.reservations["wide"].nodes == ("wn01",)
    assert again.waits["wide"].detail == "reserved wn01 in 3540 s"


def test_cores_a_reservation_leaves_on_its_node_take_long_jobs():
    # wn01 (8 cores): 5 busy until NOW+100; wn02 full for long. "big" (6 cores) is reserved
    # wn01 from NOW+100, when it has 8 free: 2 of them are not needed, so a long 1-core job and a
    # long 2-core one may run there meanwhile (MAUI reserves tasks, not nodes); a long 3-core job
    # would leave big 5 and waits.
    running = [run("a", "wn01", NOW + 100, cores=5), run("b", "wn02", NOW + 9000, cores=8)]
    nodes = [Node("wn01", 8), Node("wn02", 8)]
    jobs = running + [q("big", cores=6, walltime=500, submit=1), q("long3", cores=3, walltime=5000, submit=2),
                      q("long1", walltime=5000, submit=3), q("long1b", walltime=5000, submit=4),
                      q("long1c", walltime=5000, submit=5)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    assert p.reservations["big"].nodes == ("wn01",) and p.reservations["big"].start == NOW + 100
    assert {s.job_id for s in p.starts} == {"long1", "long1b"}
    # at the end of the cycle wn01 has 1 core free: too few for long3; long1c would leave big 5
    assert p.waits["long3"].reason == "no_free_slot" and p.waits["long1c"].reason == "reserved"
    # and the reservation still holds next cycle, with the two long jobs running there
    started = [run(s.job_id, "wn01", NOW + 5001) for s in p.starts]
    nxt = plan(snap(running + started + [q("big", cores=6, walltime=500, submit=1)], nodes), config_from_text(CFG),
               Usage(), NOW + 1, reservations=p.reservations)
    assert nxt.reservations["big"].start == NOW + 100


def test_a_reservation_asking_memory_or_a_node_alone_keeps_the_whole_node():
    running = [run("a", "wn01", NOW + 100, cores=5), run("b", "wn02", NOW + 9000, cores=8)]
    nodes = [Node("wn01", 8), Node("wn02", 8)]
    for req in (Request(parts=(NodePart(1, 6),), mem=4 << 30), Request(parts=(NodePart(1, 6),), exclusive=True)):
        big = q("big", cores=6, walltime=500, submit=1)._replace(request=req)
        p = plan(snap(running + [big, q("long1", walltime=5000, submit=3)], nodes), config_from_text(CFG),
                 Usage(), NOW)
        assert "big" in p.reservations and not p.starts and p.waits["long1"].reason == "reserved"


def test_a_moving_procs_reservation_does_not_take_the_nodes_another_one_keeps():
    # "p" (procs=2) was reserved wn01 from +100, "n" (nodes=2:ppn=2) wn02+wn03 from +500, where a
    # core is free now on each. Restored first (the earlier start), p moved onto wn02+wn03 (it
    # could start there now), n lost its reservation for the cycle, and p, running 5000 s,
    # pushed n back.
    nodes = [Node("wn01", 2), Node("wn02", 2), Node("wn03", 2)]
    running = [run("a", "wn01", NOW + 100, cores=2), run("b", "wn02", NOW + 500), run("c", "wn03", NOW + 500)]
    p_job = q("p", cores=2, walltime=5000, submit=1)._replace(request=Request(procs=2))
    n_job = q("n", cores=4, walltime=500, submit=2)._replace(request=Request(parts=(NodePart(2, 2),)))
    prev = {"p": Reservation("p", NOW + 100, ("wn01",)), "n": Reservation("n", NOW + 500, ("wn02", "wn03"))}
    p = plan(snap(running + [p_job, n_job], nodes), config_from_text(CFG + "scheduler = { reservation_depth = 2; };\n"),
             Usage(), NOW + 1, reservations=prev)
    assert p.reservations["n"] == Reservation("n", NOW + 500, ("wn02", "wn03"))
    assert not p.starts and p.reservations["p"].nodes == ("wn01",)


def test_a_job_kept_off_reserved_nodes_is_told_whose_reservation():
    # the holder is the job that waited longest, not necessarily a higher-ranked one: name it
    running, nodes = farm()
    running.append(run("b2", "wn02", NOW + 1000))
    jobs = running + [q("big", cores=4, walltime=500, submit=1), q("long", walltime=5000, submit=2),
                      q("long2", walltime=5000, submit=3)]
    p = plan(snap(jobs, nodes), config_from_text(CFG), Usage(), NOW)
    w = p.waits["long2"]
    assert w.reason == "reserved" and w.detail.endswith("(for big)") and "higher-ranked" not in w.detail


def _cycle(jobs, nodes, cfg, t, resv):
    p = plan(snap(jobs, nodes), cfg, Usage(), t, reservations=resv)
    st = {s.job_id: s for s in p.starts}
    return p, [j._replace(state=JobState.RUNNING, start_time=t, placement=st[j.id].placement) if j.id in st else j
               for j in jobs]


def test_a_job_that_could_bar_the_reserved_one_gets_none_of_its_nodes_extra_cores():
    # (review) wn01 has 8 cores, x (7) ends at +1000; big (6, cms) is reserved wn01 from then, 2
    # cores to spare. A long 1-core job of cms under max_per_node = 1, or of an exclusive packing
    # class, took them -- and big, at its start, found wn01 at its VO's per-node limit, or held
    # for the class, and waited on
    for extra, group in (("cms = { groups = [\"cms\"]; share = 50; max_per_node = 1; };", "cms"),
                         ('packing = { mc = { policy = "exclusive"; groups = ["atlasprd"]; ttl = "10h"; }; };',
                          "atlasprd")):
        text = ('vos = { atlas = { groups = ["atlas", "atlasprd"]; share = 50; }; '
                + (extra if group == "cms" else 'cms = { groups = ["cms"]; share = 50; };') + " };\n"
                + (extra if group != "cms" else "") + "drain = { rate = 0; };\n")
        cfg = config_from_text(text)
        nodes = [Node("wn01", 8)]
        x = Job("x", "q", "c", "cms", 7, JobState.RUNNING, 0.0, NOW, 1000.0, placement=(("wn01", 7),))
        big = Job("big", "q", "c2", "cms", 6, JobState.QUEUED, 1.0, None, 3600.0)
        p, jobs = _cycle([x, big], nodes, cfg, NOW, None)
        assert p.reservations["big"].start == NOW + 1000
        jobs.append(Job("small", "q", "b", group, 1, JobState.QUEUED, 2.0, None, 100000.0))
        p, jobs = _cycle(jobs, nodes, cfg, NOW + 10, p.reservations)
        assert not p.starts and p.waits["small"].reason == "reserved", group
        p, jobs = _cycle([j for j in jobs if j.id != "x"], nodes, cfg, NOW + 1001, p.reservations)
        assert [s.job_id for s in p.starts] == ["big"], group
    # a job of another VO, with no per-node limit of big's to count against, may take them
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; '
                           'share = 50; max_per_node = 1; }; };drain = { rate = 0; };')
    x = Job("x", "q", "c", "cms", 7, JobState.RUNNING, 0.0, NOW, 1000.0, placement=(("wn01", 7),))
    p, jobs = _cycle([x, Job("big", "q", "c2", "cms", 6, JobState.QUEUED, 1.0, None, 3600.0)], [Node("wn01", 8)],
                     cfg, NOW, None)
    jobs.append(Job("small", "q", "b", "atlas", 1, JobState.QUEUED, 2.0, None, 100000.0))
    p, jobs = _cycle(jobs, [Node("wn01", 8)], cfg, NOW + 10, p.reservations)
    assert [s.job_id for s in p.starts] == ["small"]


def test_a_request_of_several_parts_is_reserved_nodes_of_their_own():
    # (review) gpu01 frees first, wn01 later; nodes=1:ppn=2+1:ppn=2:gpu. Part by part, the plain
    # part took gpu01, the gpu part found nothing, and mpi got no reservation
    nodes = [Node("wn01", 4), Node("gpu01", 4, properties=frozenset({"gpu"}))]
    running = [run("r1", "gpu01", NOW + 100, cores=4), run("r2", "wn01", NOW + 5000, cores=4)]
    mpi = q("mpi", cores=4, walltime=3600, submit=1)._replace(
        request=Request((NodePart(1, 2), NodePart(1, 2, None, frozenset({"gpu"})))))
    p = plan(snap(running + [mpi], nodes), config_from_text(CFG), Usage(), NOW)
    assert p.reservations["mpi"] == Reservation("mpi", NOW + 5000, ("wn01", "gpu01"))


def test_a_due_reservation_leaves_its_nodes_spare_cores_to_other_jobs_in_the_same_cycle():
    # (live walk-through) 4 x 4 cores, node04 busy; wide (nodes=2:ppn=2+1:ppn=1) holds a kept
    # reservation on node01-03, due now; small (1 core, ranked first, ending after the
    # reservation's start) waited a cycle on 7 spare cores, 'reserved for another job'
    cfg = config_from_text(CFG)
    nodes = [Node(f"node0{i}", 4) for i in range(1, 5)]
    busy = run("busy", "node04", NOW + 3600, cores=4)
    wide = q("wide", cores=5, walltime=300, submit=900)._replace(request=Request((NodePart(2, 2), NodePart(1, 1))))
    small = q("small", walltime=180, submit=950, user="v")
    kept = {"wide": Reservation("wide", NOW + 150, ("node01", "node02", "node03"))}
    p = plan(snap([busy, wide, small], nodes), cfg, Usage(), NOW, reservations=kept)
    assert {s.job_id for s in p.starts} == {"wide", "small"}, p.waits


def test_a_due_reservation_keeps_the_cores_its_job_needs_from_a_job_past_its_walltime():
    # wn01 (4 cores): a job past its requested walltime still holds 2; big (4 cores) is reserved
    # wn01, due now -- the 2 free cores are big's, a long job may not take them
    cfg = config_from_text(CFG)
    over = Job("over", "q", "u", "atlas", 2, JobState.RUNNING, 0.0, NOW - 500, 100.0, placement=(("wn01", 2),))
    big = q("big", cores=4, walltime=600, submit=1)
    long = q("long", walltime=5000, submit=2, user="v")
    p = plan(snap([over, big, long], [Node("wn01", 4)]), cfg, Usage(), NOW,
             reservations={"big": Reservation("big", NOW, ("wn01",))})
    assert not p.starts and p.waits["long"].reason == "reserved", p.waits
