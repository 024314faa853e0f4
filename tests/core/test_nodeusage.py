"""What runs on one node: adding and removing a job are symmetric, a job that asked for its
node alone leaves no room, memory asked for is counted, and when the node has room for a
number of cores by the ends of what runs there."""

from __future__ import annotations

import math

from mysched.core.model.batch import Node, NodeState
from mysched.core.place.nodeusage import NodeUsage

GB = 2**30


def _usage(slots: int = 8, state: NodeState = NodeState.FREE, usable: bool = True, **kw) -> NodeUsage:
    return NodeUsage(Node("wn01", slots, state, **kw), ("key",), usable)


def _state(ld: NodeUsage) -> tuple:
    """Its counts, copied (a later change must not show through)."""
    return (ld.free, ld.used, ld.njobs, dict(ld.users), dict(ld.vos), dict(ld.groups), dict(ld.classes),
            {c: list(t) for c, t in ld.class_times.items()}, ld.mem_used, ld.vmem_used, ld.excl)


def test_add_counts_a_job_and_remove_with_the_same_arguments_undoes_it():
    ld = _usage(8, mem=16 * GB)
    ld.add("u1", "atlas", "atl", "mc", 2, 100.0, mem=GB)
    before = _state(ld)
    ld.add("u2", "cms", "cms", "sc", 3, 200.0, mem=2 * GB, vmem=4 * GB)
    assert (ld.free, ld.users, ld.classes, ld.class_times, ld.mem_used) == \
        (3, {"u1": 1, "u2": 1}, {"mc": 1, "sc": 1}, {"mc": [100.0], "sc": [200.0]}, 3 * GB)
    ld.remove("u2", "cms", "cms", "sc", 3, 200.0, mem=2 * GB, vmem=4 * GB)
    assert _state(ld) == before


def test_a_none_user_vo_group_or_class_is_not_counted():
    ld = _usage()
    ld.add(None, None, None, None, 1, 100.0)
    assert (ld.free, ld.njobs, ld.users, ld.vos, ld.groups, ld.classes, ld.class_times) == (7, 1, {}, {}, {}, {}, {})


def test_a_job_that_asked_for_its_node_alone_leaves_no_room_until_it_is_removed():
    ld = _usage(8)
    ld.add("u", "v", "g", None, 1, 0.0, excl=True)
    ld.add("u", "v", "g", None, 2, 0.0)
    assert ld.free == 0
    ld.remove("u", "v", "g", None, 2, 0.0)
    assert ld.free == 0
    ld.remove("u", "v", "g", None, 1, 0.0, excl=True)
    assert ld.free == 8


def test_a_node_taking_no_jobs_has_no_free_cores():
    assert _usage(8, NodeState.FULL).free == 0
    assert _usage(8, NodeState.FREE).free == 8


def test_memory_free_is_what_was_not_asked_for_and_unknown_memory_never_runs_out():
    ld = _usage(8, mem=8 * GB, vmem=12 * GB)
    ld.add("u", "v", "g", None, 1, 0.0, mem=3 * GB, vmem=5 * GB)
    assert (ld.mem_free(), ld.vmem_free()) == (5 * GB, 7 * GB)
    assert (_usage(8).mem_free(), _usage(8).vmem_free()) == (math.inf, math.inf)


def test_free_after_counts_the_nodes_slots_and_waits_for_an_exclusive_job():
    full = _usage(8, NodeState.FULL)  # job-exclusive: frees cores as its jobs end all the same
    full.add("u", "v", "g", None, 8, 0.0)
    assert [full.free_after(n) for n in (0, 3, 8)] == [0, 3, 8]
    excl = _usage(8)
    excl.add("u", "v", "g", None, 2, 0.0, excl=True)
    excl.add("u", "v", "g", None, 1, 0.0)
    assert [excl.free_after(n) for n in (2, 3)] == [0, 8]
    assert _usage(8, usable=False).free_after(0) == 0


def test_room_at_is_now_the_end_that_frees_enough_or_never():
    ld = _usage(8)
    ld.add("u", "v", "g", None, 4, 0.0)
    ld.add("u", "v", "g", None, 2, 0.0)
    ends = [(500.0, 2), (900.0, 4)]
    assert ld.room_at(2, ends, 100.0) == 100.0
    assert ld.room_at(4, ends, 100.0) == 500.0
    assert ld.room_at(8, ends, 100.0) == 900.0
    assert ld.room_at(9, ends, 100.0) == math.inf         # wider than the node
    assert ld.room_at(8, ends[:1], 100.0) == math.inf     # the rest never ends, by what is known
    assert _usage(8, usable=False).room_at(1, [], 100.0) == math.inf


def test_a_class_started_last_when_its_latest_job_started():
    ld = _usage(8)
    ld.add("u", "v", "g", "mc", 1, 700.0)
    ld.add("u", "v", "g", "mc", 1, 300.0)
    ld.add("u", "v", "g", "sc", 1, 500.0)
    assert (ld.class_start("mc"), ld.class_start("sc"), ld.class_start("none")) == (700.0, 500.0, None)
    ld.remove("u", "v", "g", "mc", 1, 700.0)
    assert ld.class_start("mc") == 300.0
