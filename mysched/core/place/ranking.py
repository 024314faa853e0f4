"""Nodes kept sorted by placement score: `Ranking`, and the `NodeGroup`s of alike nodes that
rank on them."""

from __future__ import annotations

import bisect


class Ranking:
    """Node names kept sorted by a score tuple whose last item is the node name.

    A plan ranks on a `view` of the tally's ranking and copies it only when it changes it."""

    __slots__ = ("keys", "of", "owned")

    def __init__(self, keys: list[tuple] | None = None, of: dict[str, tuple] | None = None,
                 owned: bool = True) -> None:
        self.keys: list[tuple] = keys if keys is not None else []
        self.of: dict[str, tuple] = of if of is not None else {}
        self.owned = owned

    def view(self) -> "Ranking":
        return Ranking(self.keys, self.of, owned=False)

    def _own(self) -> None:
        self.keys = list(self.keys)
        self.of = dict(self.of)
        self.owned = True

    def put(self, name: str, key: tuple) -> None:
        old = self.of.get(name)
        if old == key:
            return
        if not self.owned:
            self._own()
        if old is not None:
            del self.keys[bisect.bisect_left(self.keys, old)]
        self.of[name] = key
        bisect.insort(self.keys, key)

    def drop(self, name: str) -> None:
        if name not in self.of:
            return
        if not self.owned:
            self._own()
        old = self.of.pop(name)
        del self.keys[bisect.bisect_left(self.keys, old)]


class NodeGroup:
    """Nodes alike for eligibility: same type, same queue assignment (not a guarantee pool). A plan ranks its
    nodes on views of the tally's rankings (`ranking`, `by_class` are its scratch)."""

    __slots__ = ("ntype", "queues", "owners", "closed", "ranking", "by_class")

    def __init__(self, key: tuple, closed: bool = False) -> None:
        self.ntype, self.queues, self.owners = key
        self.closed = closed
        """Its node type is open only to the VOs and groups it names (`type_closed`)."""
        self.ranking = Ranking()
        self.by_class: dict[str, Ranking] = {}
