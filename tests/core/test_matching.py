"""Distinct nodes for the parts of a request (a matching, not part by part), and the earliest
of a series of times at which a request fits."""

from __future__ import annotations

from mysched.core.place.matching import earliest, match_parts
from mysched.core.model.request import NodePart

GPU = frozenset({"gpu"})


def test_a_node_only_one_part_can_use_is_left_to_that_part():
    # nodes=1:ppn=2+1:ppn=2:gpu -- part by part, the plain part would take gpu01 (first in its list)
    parts = [NodePart(1, 2), NodePart(1, 2, None, GPU)]
    got = match_parts(parts, [["gpu01", "wn01"], ["gpu01"]], {"gpu01": 2, "wn01": 2})
    assert got == ["wn01", "gpu01"]  # in the parts' order, as pbs_runjob gets them


def test_parts_are_moved_along_a_chain_to_make_room_for_the_last():
    parts = [NodePart(), NodePart(), NodePart()]
    got = match_parts(parts, [["a", "b", "c"], ["a", "b"], ["a"]], {"a": 1, "b": 1, "c": 1})
    assert got == ["c", "b", "a"]


def test_a_part_of_several_nodes_gets_that_many_distinct_nodes():
    got = match_parts([NodePart(2, 1), NodePart(1, 1)], [["a", "b", "c"], ["a"]], {"a": 1, "b": 1, "c": 1})
    assert got == ["b", "c", "a"]


def test_nodes_without_the_parts_free_cores_are_not_used():
    free = {"a": 3, "b": 4}
    assert match_parts([NodePart(1, 4)], [["a", "b"]], free) == ["b"]
    assert match_parts([NodePart(2, 4)], [["a", "b"]], free) is None
    assert match_parts([NodePart(1, 1)], [["ghost"]], free) is None  # a node not in `free` has none


def test_no_matching_when_parts_need_more_distinct_nodes_than_they_can_share():
    # each part alone fits; together they need two nodes where only one serves both
    assert match_parts([NodePart(1, 1), NodePart(1, 1)], [["a"], ["a"]], {"a": 8}) is None
    assert match_parts([NodePart(1, 1), NodePart(1, 1, "a")], [["a", "b"], ["a"]], {"a": 8, "b": 1}) == ["b", "a"]


def test_the_earliest_time_that_fits_and_its_nodes():
    def fits(t):
        return [f"n{t:g}"] if t >= 30 else None

    assert earliest([10.0, 20.0, 30.0, 40.0, 50.0], fits) == (30.0, ["n30"])
    assert earliest([30.0, 40.0], fits) == (30.0, ["n30"])
    assert earliest([50.0], fits) == (50.0, ["n50"])


def test_no_time_when_even_the_last_does_not_fit():
    assert earliest([10.0, 20.0], lambda t: None) is None
    assert earliest([], lambda t: ["a"]) is None
