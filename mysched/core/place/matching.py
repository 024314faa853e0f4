"""Distinct nodes for the parts of a request: a bipartite matching (augmenting paths), so a
node only one part can use is not taken by another that could go elsewhere. Start estimates,
placement and reservations all use it."""

from __future__ import annotations

from typing import Callable, Sequence

from mysched.core.model.request import NodePart


def match_parts(parts: Sequence[NodePart], serve: list[list[str]], free: dict[str, int]) -> list[str] | None:
    """Distinct nodes for every part -- `count` of those in its `serve` list with `ppn` of
    their `free` cores -- part by part, or None (a matching: a node only one part can use is
    not taken by another that could go elsewhere)."""
    fit = [[n for n in names if free.get(n, 0) >= p.ppn] for p, names in zip(parts, serve)]
    owner: dict[str, int] = {}
    for i, p in enumerate(parts):
        if len(fit[i]) < p.count:
            return None
        for _ in range(p.count):
            if not augment(i, fit, owner):
                return None
    return [n for _, n in sorted((i, n) for n, i in owner.items())]


def augment(start: int, fit: list[list[str]], owner: dict[str, int]) -> bool:
    """One more node for part `start`, moving other parts to other nodes if need be."""
    via: dict[int, str | None] = {start: None}  # part -> the node it would give up
    came: dict[str, int] = {}  # node -> the part that would take it
    queue = [start]
    for p in queue:
        for n in fit[p]:
            if n in came:
                continue
            came[n] = p
            q = owner.get(n)
            if q is None:
                while True:  # shift along the path back to `start`
                    taker = came[n]
                    owner[n] = taker
                    given = via[taker]
                    if given is None:
                        return True
                    n = given
            if q not in via:
                via[q] = n
                queue.append(q)
    return False


def earliest(times: Sequence[float], fits: Callable[[float], list[str] | None]) -> tuple[float, list[str]] | None:
    """The first of the sorted `times` at which `fits` finds nodes, and those nodes, by
    bisection: room only grows along them (a farm frees thousands of cores); None if none does."""
    if not times or fits(times[-1]) is None:
        return None
    a, b = 0, len(times) - 1  # times[b] fits
    while a < b:
        m = (a + b) // 2
        if fits(times[m]) is None:
            a = m + 1
        else:
            b = m
    return times[b], fits(times[b]) or []
