"""The admission of one plan, bound to its components -- by the planner as it plans, and by a
check after the fact (`as_planned`) from what the plan reports, so both ask the same rules."""

from __future__ import annotations

from mysched.core.cycle import Cycle
from mysched.core.hold.downtimes import Downtimes
from mysched.core.hold.drains import Drains
from mysched.core.hold.ends import Ends
from mysched.core.hold.pools import Pools
from mysched.core.hold.reservations import Reservations
from mysched.core.model.batch import Snapshot
from mysched.core.model.plan import Plan
from mysched.core.place.admission import Admission, Gates
from mysched.core.place.board import Board
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.rules.access import refusal
from mysched.core.rules.runtimes import RecentRuns, RunTimes
from mysched.core.settings import Config
from mysched.core.share.usage import Usage


def admission_for(cfg: Config, board: Board, dt: Downtimes, resv: Reservations, drains: Drains,
                  pools: Pools) -> Admission:
    """The checks bound to these components (they read them live as the plan goes on)."""
    return Admission(Gates(
        board.index.by_name, board.overloaded, dt.closed, dt.ahead, dt.shuts, resv.nodes, resv.refuses,
        drains.draining, drains.blocks, pools.gate, pools.refuses, lambda key, queue: refusal(cfg, key, queue)))


def cycle_of(snapshot: Snapshot, config: Config, usage: Usage, now: float, policy: str, index: NodeIndex,
             runs: RecentRuns | None = None) -> Cycle:
    """A plan's read-only context, around the index's tally (synced to `snapshot` first: the
    farm's slots count what runs on nodes down or offline); `runs`: recent run times, for
    estimates of jobs without a walltime (`mysched.core.rules.runtimes`)."""
    t = index.tally(policy)
    return Cycle(snapshot, config, usage, now, policy, index, t, index.packing,
                 any(pc.policy == "exclusive" and pc.ttl > 0 for pc in config.packing),
                 index.total_slots + t.off_used, index.max_slots,
                 runs=RunTimes(runs, snapshot.queues, config.max_walltime))


def as_planned(out: Plan, snapshot: Snapshot, config: Config, index: NodeIndex,
               runs: RecentRuns | None = None) -> tuple[Admission, Board]:
    """The admission `out` planned with, as at its start: the nodes as `snapshot` had them
    (`index` synced to it by the plan), closed where the plan closed them, and the
    reservations, drains, pool gates and downtimes the plan reports. The caller books starts
    on the board (`Board.take`) to ask about the moments between them."""
    index = index.get(config, snapshot.nodes)
    tally = index.tally(out.policy)
    if snapshot.token is None or tally.token is not snapshot.token:
        tally.sync(snapshot)  # (the plan synced it already, as a rule): before the cycle counts the farm
    cy = cycle_of(snapshot, config, Usage(), out.now, out.policy, index, runs)
    board = Board(index, cy.tally, out.now)
    for name, cls in out.node_classes.items():
        if name in index.by_name:
            board.usages[name].reserved = cls
    for name, why in out.node_load.items():
        if name in index.by_name:
            board.overloaded[name] = why
            board.close(name)
    dt = Downtimes(cy, board)
    ends = Ends(snapshot, out.now, cy.runs)
    resv = Reservations(cy, board, dt, ends, out.policy == "mysched", None)
    resv.as_planned(out.holds)
    drains = Drains(cy, board, ends, resv, dt, None)
    drains.as_planned(out.draining_now, out.drain_horizons, out.drain_wants)
    pools = Pools(cy, board, ends, dt, None)
    pools.as_planned(out)
    return admission_for(config, board, dt, resv, drains, pools), board
