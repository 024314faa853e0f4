"""Nodes kept sorted by placement score: putting and dropping keep the keys sorted and the
node's one key, and a plan's view copies on its first change, leaving the tally's alone."""

from __future__ import annotations

from mysched.core.place.ranking import Ranking


def _ranked(*pairs: tuple[int, str]) -> Ranking:
    r = Ranking()
    for score, name in pairs:
        r.put(name, (score, name))
    return r


def test_put_keeps_the_keys_sorted_whatever_the_order_they_come_in():
    r = _ranked((3, "c"), (1, "a"), (2, "b"))
    assert r.keys == [(1, "a"), (2, "b"), (3, "c")]
    assert r.of == {"a": (1, "a"), "b": (2, "b"), "c": (3, "c")}


def test_putting_a_node_again_moves_it_and_keeps_one_key():
    r = _ranked((1, "a"), (2, "b"), (3, "c"))
    r.put("a", (9, "a"))
    assert r.keys == [(2, "b"), (3, "c"), (9, "a")]


def test_drop_removes_the_node_and_ignores_one_not_ranked():
    r = _ranked((1, "a"), (2, "b"), (3, "c"))
    r.drop("b")
    r.drop("zz")
    assert (r.keys, r.of) == ([(1, "a"), (3, "c")], {"a": (1, "a"), "c": (3, "c")})


def test_changing_a_view_leaves_the_original_as_it_was():
    base = _ranked((1, "a"), (2, "b"))
    v = base.view()
    v.put("c", (0, "c"))
    v.drop("a")
    v.put("b", (5, "b"))
    assert v.keys == [(0, "c"), (5, "b")]
    assert (base.keys, base.of) == ([(1, "a"), (2, "b")], {"a": (1, "a"), "b": (2, "b")})


def test_dropping_from_a_view_leaves_the_original_as_it_was():
    base = _ranked((1, "a"), (2, "b"))
    v = base.view()
    v.drop("a")
    assert (v.keys, base.keys, base.of) == ([(2, "b")], [(1, "a"), (2, "b")], {"a": (1, "a"), "b": (2, "b")})


def test_a_view_copies_on_its_first_real_change_not_on_a_no_op():
    base = _ranked((1, "a"))
    v = base.view()
    v.put("a", (1, "a"))  # the same key: no change, no copy needed
    v.drop("zz")
    v.put("b", (2, "b"))
    assert base.keys == [(1, "a")] and "b" not in base.of
