"""Placement of plain jobs (N cores on one node): which node a job goes to, and, when none
will do, why each node refused it.

The node groups keep their nodes ranked by score (`mysched.core.place.tally`), so a placement
scans from the best node and usually stops at the first: for mysched the first node without a
job of the user (highest diversity after placement, then fewest used slots); failing that,
the node with the fewest of the user's jobs. For mysched, a job that may use nodes of a type
closed to other VOs or groups (`mysched.core.rules.access.type_closed`, e.g. software-manager
nodes) takes one of those first if any has room: room it leaves on open nodes every job may use,
where room it leaves on a closed node idles while other jobs wait (measured:
docs/design/placement-score.md). Whether a node takes the job at all is asked of the one list of
checks (`mysched.core.place.admission`).
"""

from __future__ import annotations

from typing import Callable

from mysched.core.model.batch import Job
from mysched.core.model.plan import Wait
from mysched.core.model.reasons import NODE_REJECTIONS, Reason
from mysched.core.place.admission import Admission, Ask
from mysched.core.place.board import Board
from mysched.core.place.nodeusage import NodeUsage
from mysched.core.rules.limits import JobRules
from mysched.core.settings import PackingClass


_NO_ROOM = frozenset({Reason.NODE_DOWN, Reason.NODE_NAME, Reason.NO_FREE_SLOT, Reason.NODE_PROPERTIES,
                      Reason.NODE_MEMORY})
"""A node's refusals that say it has no room for the job (not that a rule keeps it off room it has)."""


class Explainer:
    """Why a job waits: every node's first refusal (`Admission.first`), counted by reason,
    and the reason that kept it off most nodes with room."""

    def __init__(self, board: Board, admission: Admission, details: dict[str, Callable[[Job, str, list[str]], str]],
                 resv_holder: Callable[[str], str | None]) -> None:
        self.board = board
        self.admission = admission
        self.details = details
        """Reason -> what to add to the wait's detail (pools, downtimes: the component's figures)."""
        self.resv_holder = resv_holder

    def explain(self, job: Job, vo: str, ask: Ask) -> Wait:
        """Count, over all nodes, why each one was rejected for this job."""
        first = self.admission.first
        usages = self.board.usages
        counts: dict[str, int] = {}
        hit: dict[str, list[str]] = {}  # reason -> nodes it refused (for the detail)
        for name in self.board.index.by_name:
            r = first(usages.peek(name), ask) or Reason.NO_FREE_SLOT
            counts[r] = counts.get(r, 0) + 1
            if r in self.details or r == Reason.RESERVED:
                hit.setdefault(r, []).append(name)
        roomy = {k: v for k, v in counts.items() if k not in _NO_ROOM}
        cores = ask.cores
        if roomy:
            reason = max(sorted(roomy), key=lambda k: roomy[k])
            detail = f"{roomy[reason]} node(s) with room rejected: {NODE_REJECTIONS.get(reason, reason)}"
            more = self.details.get(reason)
            if more is not None:
                detail += f" ({more(job, vo, hit[reason])})"
            elif reason == Reason.RESERVED:
                held_for = {h for n in hit["reserved"] if (h := self.resv_holder(n)) is not None}
                detail += f" (for {', '.join(sorted(held_for)[:3])}{', ...' if len(held_for) > 3 else ''})"
        else:
            reason = Reason.NO_FREE_SLOT
            detail = f"no usable node has {cores} free core(s)"
            for r, what in ((Reason.NODE_PROPERTIES, "lack a property it asks for"),
                            (Reason.NODE_MEMORY, "lack the memory it asks for")):
                if counts.get(r):
                    detail += f"; {counts[r]} node(s) with the cores {what}"
        return Wait(job.id, reason, 0, 0.0, detail, counts)


def place(admission: Admission, usages: dict[str, NodeUsage], ask: Ask, pc: PackingClass | None, rules: JobRules,
          diverse: bool, only: set[str] | None = None) -> NodeUsage | None:
    """The node a plain job goes to, or None. Default jobs have no preference; a spreading
    class (packing "none") prefers nodes without the class; relaxed and exclusive classes
    prefer nodes already running the class -- exclusive first those held for it."""
    cls = pc.name if pc else None
    groups = rules.groups
    scan = admission.scan
    if pc is None and len(groups) == 1:
        got = scan(groups[0].ranking.keys, usages, ask, False, None, only, diverse)
        if got is None:
            return None
        _key, ld = got
        return ld
    if diverse and pc is None and rules.tiers is not None:  # closed types first
        for tier in rules.tiers:
            ld = _best(scan, [g.ranking.keys for g in tier], usages, ask, False, None, only, diverse)
            if ld is not None:
                return ld
        return None
    ranked = [g.ranking.keys for g in groups]
    if pc is None or pc.policy == "none":
        for avoid in ((cls, None) if pc is not None else (None,)):
            ld = _best(scan, ranked, usages, ask, False, avoid, only, diverse)
            if ld is not None:
                return ld
        return None
    held = [g.by_class[cls].keys for g in groups if cls in g.by_class]
    for held_only in ((True, False) if pc.policy == "exclusive" else (False,)):
        ld = _best(scan, held, usages, ask, held_only, None, only, diverse)
        if ld is not None:
            return ld
    return _best(scan, ranked, usages, ask, False, None, only, diverse)


def _best(scan: Callable, rankings: list[list[tuple]], usages: dict[str, NodeUsage], ask: Ask, held_only: bool,
          avoid: str | None, only: set[str] | None, diverse: bool) -> NodeUsage | None:
    """The admitted node of the lowest sort key along several rankings, or None."""
    best: NodeUsage | None = None
    best_key: tuple = ()
    for keys in rankings:
        got = scan(keys, usages, ask, held_only, avoid, only, diverse)
        if got is not None:
            key, ld = got
            if best is None or key < best_key:
                best, best_key = ld, key
    return best
