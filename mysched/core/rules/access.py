"""Which nodes a job may use at all, whatever runs on them: node types and queue assignment.

These are the static rules -- they depend on the configuration and a node's name and
properties, not on load -- and they live here once. The planner groups nodes by their
`NodeKey` and asks `admits` per key; start estimates and `mysched free` ask the same
functions about the nodes in the status file.
"""

from __future__ import annotations

import fnmatch
from typing import NamedTuple

from mysched.core.settings import Config, NodeType
from mysched.core.model.reasons import Reason


class NodeKey(NamedTuple):
    """What the static rules read of a node; nodes with equal keys are alike for admission."""

    ntype: str | None
    """The first configured node type the node matches (None: untyped)."""
    queues: frozenset[str]
    """Restricted queues (with `nodes` or `node_types`) that list the node."""
    owners: frozenset[str]
    """Those of `queues` that are exclusive: the node takes no other queue's jobs."""


def node_type(config: Config, name: str, properties: frozenset[str]) -> str | None:
    """The node's type: the first in configuration order whose names or properties match."""
    return next((nt.name for nt in config.node_types if nt.matches(name, properties)), None)


def node_key(config: Config, name: str, ntype: str | None) -> NodeKey:
    """The node's key, given its type (see `node_type`)."""
    qs = frozenset(q.name for q in config.queues.values() if q.restricted and (
        any(fnmatch.fnmatchcase(name, p) for p in q.nodes) or (ntype is not None and ntype in q.node_types)))
    return NodeKey(ntype, qs, frozenset(q for q in qs if config.queues[q].exclusive))


def queue_admits(config: Config, key: NodeKey, queue: str) -> bool:
    """May jobs of `queue` use such a node? A restricted queue uses only the nodes it lists; any
    other queue uses every node that no exclusive queue owns."""
    qc = config.queues.get(queue)
    if qc is not None and qc.restricted:
        return queue in key.queues
    return not key.owners


def _type_named(config: Config, ntype: str | None) -> NodeType | None:
    """The configured node type of that name (None: untyped)."""
    return next((t for t in config.node_types if t.name == ntype), None) if ntype is not None else None


def type_admits(config: Config, ntype: str | None, vo: str, group: str) -> bool:
    """May the VO or group use nodes of this type? Untyped nodes and types that name no VO or
    group are open to everyone."""
    nt = _type_named(config, ntype)
    return nt is None or nt.allows(vo, group)


def type_closed(config: Config, ntype: str | None) -> bool:
    """Is the node type open only to the VOs and groups it names? The jobs that may use such a
    node go there before open nodes (`mysched.core.place.placement`): what they leave on open
    nodes every job may use, where a typed node they leave idle serves no one else."""
    nt = _type_named(config, ntype)
    return nt is not None and nt.closed


def admits(config: Config, key: NodeKey, queue: str, vo: str, group: str) -> bool:
    """May a job of (queue, VO, group) use such a node at all?"""
    return queue_admits(config, key, queue) and type_admits(config, key.ntype, vo, group)


def consumer_admits(config: Config, key: NodeKey, kind: str, name: str) -> bool:
    """May some job of a guarantee consumer (a VO, group or queue) use such a node? A pool
    guards only such hosts for it: a node type closed to the consumer, or a node an exclusive
    queue owns (for a VO or group, which may submit anywhere), would hold packages it can
    never use."""
    if kind == "queue":
        return queue_admits(config, key, name)
    if key.owners:
        return False
    nt = _type_named(config, key.ntype)
    if nt is None or not nt.closed:
        return True
    if kind == "vo":
        return name in nt.vos or any(config.vo_of(g) == name for g in nt.groups)
    return name in nt.groups or config.vo_of(name) in nt.vos


def refusal(config: Config, key: NodeKey, queue: str) -> Reason:
    """The wait reason for a node `admits` refused: its queue assignment, else its type."""
    return Reason.NODE_TYPE if queue_admits(config, key, queue) else Reason.QUEUE_NODES
