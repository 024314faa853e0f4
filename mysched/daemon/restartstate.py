"""What a restarted daemon carries over from its last status file: the reservations, the drain
partition and the guarantee pools' gates -- the planner's state from plan to plan.

Without them a restart (an upgrade, a crash, `systemctl restart`) chose afresh: the depth went
to another job submitted in the same second, and a 40-minute job took the slot a reservation
had kept free for an hour (seen on the live farm). MAUI keeps its reservations in its
checkpoint file for the same reason. The planner checks what it is given (jobs still waiting,
nodes still there and usable), so a stale entry costs nothing; a file older than `max_age`,
one of a dry run or of a simulated farm (another clock) is not read.
"""

from __future__ import annotations

from typing import Any

from mysched.core.hold.drains import Drain
from mysched.core.hold.reservations import Reservation
from mysched.core.model.plan import PoolGate
from mysched.daemon.statusfile import FORMAT, read_status
from mysched.errors import MyschedError


CARRIED_FORMATS = (3, FORMAT)
"""Formats whose reservations, drains and pool gates read alike: format 4 changed only how
absent values are written, so the restart that upgrades a daemon of format 3 keeps them."""


def carried(state_dir: str, now: float, max_age: float) -> tuple[dict, dict, dict]:
    """(reservations, drains, pool gates) of the last status file in `state_dir`, as the
    planner's `plan()` takes them; empty when there is none to trust."""
    if not state_dir:
        return {}, {}, {}
    try:
        doc = read_status(state_dir, max_age=max_age, now=now, formats=CARRIED_FORMATS)
        if doc.get("dry_run") or str(doc.get("server", "")).startswith("sim:"):
            return {}, {}, {}
        return _reservations(doc), _drains(doc), _gates(doc)
    except (MyschedError, OSError, KeyError, TypeError, ValueError):  # not there, stale or not ours
        return {}, {}, {}


def _reservations(doc: dict[str, Any]) -> dict[str, Reservation]:
    return {j: Reservation(j, float(r["start"]), tuple(r["nodes"])) for j, r in (doc.get("reservations") or {}).items()}


def _drains(doc: dict[str, Any]) -> dict[str, Drain]:
    return {n: Drain(n, float(d["since"]), None if d["ready"] is None else float(d["ready"]), int(d.get("want") or 0))
            for n, d in (doc.get("drains") or {}).items()}


def _gates(doc: dict[str, Any]) -> dict[str, PoolGate]:
    return {h: PoolGate(g[0], g[1]) for h, g in (doc.get("pool_gates") or {}).items()}
