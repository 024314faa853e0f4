"""The farm's slots as every status command counts them, and says them.

The planner's farm (docs/scheduling.md, Priority): the slots of nodes that are not down or offline, plus
the slots jobs still use on down or offline nodes until they end -- so a VO's running slots
and the farm's total are counted alike. The idle slots of down or offline nodes are not part
of it; the commands say how many there are instead of counting them."""

from __future__ import annotations

from typing import Any, Iterable

OUT = frozenset({"down", "offline"})
"""Node states whose idle slots are no part of the farm."""


def counted(node: dict[str, Any]) -> int:
    """A node row's slots in the farm: all of them, or a down or offline node's busy ones."""
    return min(node["used"], node["slots"]) if node["state"] in OUT else node["slots"]


def closed(nodes: Iterable[dict[str, Any]]) -> int:
    """Idle slots of down or offline nodes: not in the farm."""
    return sum(max(0, n["slots"] - n["used"]) for n in nodes if n["state"] in OUT)


def slots_text(used: int, total: int, closed_: int) -> str:
    """'slots used U of T (P%)', with the idle slots of down or offline nodes left out."""
    text = f"slots used {used} of {total}" + (f" ({used / total:.1%})" if total else "")
    if closed_:
        text += f"; {closed_} idle slot(s) on down or offline nodes not counted"
    return text
