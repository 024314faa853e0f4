"""A job's whole request: the cores and nodes it counts, which requests take the planner's
plain one-node path, the memory it needs on each node, and how it reads back to a user."""

from __future__ import annotations

import pytest

from mysched.core.model.request import NodePart, Request

MB, GB = 1 << 20, 1 << 30
IB = frozenset({"ib"})


def test_cores_and_nodes_add_up_every_part_and_the_procs():
    # nodes=2:ppn=4:ib+wn05:ppn=1,procs=3
    r = Request((NodePart(2, 4, None, IB), NodePart(1, 1, "wn05")), procs=3)
    assert (r.cores, r.nodes) == (12, 3)
    assert (Request().cores, Request().nodes) == (0, 0)


@pytest.mark.parametrize("req, simple", [
    (Request(), True),
    (Request((NodePart(1, 8),)), True),                        # cores on one node of any kind
    (Request((NodePart(2, 1),)), False),                       # two nodes
    (Request((NodePart(1, 1), NodePart(1, 1))), False),
    (Request((NodePart(1, 1, "wn01"),)), False),               # a named host
    (Request((NodePart(1, 1, None, IB),)), False),             # a property
    (Request(procs=2), False),
    (Request(mem=GB), False), (Request(pmem=GB), False), (Request(vmem=GB), False), (Request(pvmem=GB), False),
    (Request(exclusive=True), False),
    (Request(mem=0), False),                                   # mem=0 is still a memory request
])
def test_only_cores_on_one_node_of_any_kind_is_a_simple_request(req, simple):
    assert req.simple is simple


def test_memory_per_core_wins_over_the_whole_and_is_counted_per_core_on_a_node():
    r = Request((NodePart(2, 4),), mem=64 * GB, pmem=2 * GB, vmem=100 * GB, pvmem=3 * GB)
    assert r.mem_for(4, 8) == 8 * GB
    assert r.vmem_for(4, 8) == 12 * GB


def test_the_whole_memory_is_split_by_cores_rounding_up():
    r = Request((NodePart(1, 3), NodePart(1, 1)), mem=10, vmem=7)
    assert [r.mem_for(3, 4), r.mem_for(1, 4)] == [8, 3]  # 7.5 and 2.5 bytes, never too little
    assert [r.vmem_for(3, 4), r.vmem_for(1, 4)] == [6, 2]
    assert Request(mem=16 * GB).mem_for(1, 1) == 16 * GB


def test_no_memory_asked_is_none_needed():
    r = Request((NodePart(2, 4),))
    assert (r.mem_for(4, 8), r.vmem_for(4, 8)) == (0, 0)


def test_a_request_reads_back_as_torque_writes_it():
    r = Request((NodePart(2, 4, None, frozenset({"ib", "avx"})), NodePart(1, 1, "wn05")), procs=2,
                mem=16 * GB, pvmem=1536 * MB, exclusive=True)
    assert str(r) == "nodes=2:ppn=4:avx:ib+wn05:ppn=1,procs=2,mem=16gb,pvmem=1536mb,naccesspolicy=singlejob"


def test_sizes_read_back_in_the_largest_unit_that_keeps_them_exact():
    assert str(Request(mem=1 << 40)) == "mem=1tb"
    assert str(Request(mem=2048 * MB)) == "mem=2gb"
    assert str(Request(mem=1536 * (1 << 10))) == "mem=1536kb"
    assert str(Request(mem=1025)) == "mem=1025b"
    assert str(Request(mem=0)) == "mem=0b"
    assert str(Request()) == ""
