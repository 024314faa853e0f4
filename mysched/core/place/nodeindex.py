"""What the planner derives from the configuration and the node list, kept between cycles.

Node types, queue assignments and the pools of alike nodes change only when the
configuration or the node list does; the `Tally` of running jobs changes a little every
cycle. A `NodeIndex` holds both, so a caller that plans again and again on one farm (the
daemon, the simulator) pays for what changed.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from mysched.core.rules.access import NodeKey, admits, consumer_admits, node_key, node_type
from mysched.core.settings import Config, PackingClass
from mysched.core.model.windows import windows_by_node
from mysched.core.model.batch import Node, NodeState
from mysched.core.place.score import empty_key
from mysched.core.place.ranking import Ranking
from mysched.core.place.tally import Tally


class NodeEntry(NamedTuple):
    """What the index knows of one node."""

    node: Node
    ntype: str | None
    key: NodeKey
    """Its node group's key (type and queue assignment)."""
    usable: bool
    """Up, and not offline: it may take jobs."""
    counted: bool
    """Not down or offline: its slots count in the farm."""


class KindRules(NamedTuple):
    """What the configuration says of a (queue, VO, group)."""

    queue_max: int | None
    vo_max: int | None
    group_max: int | None
    vo_node_max: int | None
    group_node_max: int | None
    keys: tuple[NodeKey, ...]
    """Keys of the node groups it may use (queue assignment and node type)."""


def _same_facts(a: tuple[Node, ...], b: tuple[Node, ...] | None) -> bool:
    """Do two node lists agree on all the index reads (name, slots, state, properties)?"""
    if b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is not y and (x.name != y.name or x.slots != y.slots or x.state is not y.state
                           or x.properties != y.properties):
            return False
    return True


class NodeIndex:
    """What the planner derives from the configuration and the node list (node types,
    queue assignments, pools), plus the `Tally` of running jobs. Callers that plan again
    and again on the same farm (the daemon, the simulator) keep one and pass it in; it
    starts afresh when the configuration is another object or a node's name, slots, state
    or properties changed."""

    def __init__(self) -> None:
        self._config: Config | None = None
        self._nodes: tuple[Node, ...] | None = None

    def get(self, config: Config, nodes: tuple[Node, ...]) -> "NodeIndex":
        if config is self._config and nodes is self._nodes:
            return self
        if config is self._config and _same_facts(nodes, self._nodes):
            self._nodes = nodes  # a server's new node list saying the same: keep the tally
            return self
        self._build(config, nodes)
        return self

    def _build(self, config: Config, nodes: tuple[Node, ...]) -> None:
        entries = []
        keys: dict[tuple, None] = {}
        total = 0
        max_slots = 0
        type_mem = {nt.name: nt.mem for nt in config.node_types if nt.mem is not None}
        pool_of: dict[str, object] = {}
        guardable: set[str] = set()
        for node in nodes:
            usable = node.state in (NodeState.FREE, NodeState.FULL)
            counted = node.state not in (NodeState.DOWN, NodeState.OFFLINE)
            ntype = node_type(config, node.name, node.properties)
            if ntype in type_mem:  # the site's figure for this kind of node, not pbs_mom's
                node = dataclasses.replace(node, mem=type_mem[ntype])
            key = node_key(config, node.name, ntype)
            for pool in config.pools:  # LSF: the first pool whose criteria the host meets
                if pool.selects(node.name, ntype, node.properties, node.slots, node.mem):
                    pool_of[node.name] = pool
                    if any(consumer_admits(config, key, c.kind, c.name) for c in pool.consumers):
                        guardable.add(node.name)
                    break
            keys[key] = None
            entries.append(NodeEntry(node, ntype, key, usable, counted))
            if counted:
                total += node.slots
            if usable:
                max_slots = max(max_slots, node.slots)
        self.config = config
        self.entries = entries
        self.by_name: dict[str, NodeEntry] = {e.node.name: e for e in entries}
        self.pool_of = pool_of
        """Host -> the guarantee pool (`PoolConfig`) it belongs to."""
        self.pool_guardable = guardable
        """Pool hosts some consumer of their pool may use (only these are guarded for it)."""
        self.group_keys = list(keys)
        self.key_max: dict[NodeKey, int] = {}
        """Node group key -> the most slots of its nodes that are not down or offline."""
        for e in entries:
            if e.counted and e.node.slots > self.key_max.get(e.key, 0):
                self.key_max[e.key] = e.node.slots
        self.total_slots = total
        self.max_slots = max_slots
        self.usable_free = {e.node.name: e.node.slots for e in entries if e.usable and e.node.state is NodeState.FREE}
        self.idle_free = sum(self.usable_free.values())
        """Free slots of the farm if no job ran."""
        self.packing = {pc.name: pc for pc in config.packing}
        if config.downtimes:  # kept while the windows and the node names and types are (not their states)
            typed = tuple((e.node.name, e.ntype) for e in entries)
            dkey = (config.downtimes, typed)
            if getattr(self, "_dt_key", None) != dkey:
                self._dt_key, self._dt = dkey, windows_by_node(config.downtimes, typed)
            self.downtimes = self._dt
        else:
            self.downtimes = {}
        """Node -> its scheduled downtimes, soonest first (`mysched.core.model.windows`)."""
        limited = (*config.queues.values(), *config.vos.values(), *config.groups.values())
        self.core_limits = any(x.max_cores is not None for x in limited)
        """Whether the configuration caps running cores per queue, VO or group anywhere."""
        self.total_limits = (any(x.max_running is not None for x in limited) or self.core_limits
                             or bool(config.users))
        """Whether the configuration caps running jobs or cores per queue, VO, group or user anywhere."""
        self._pclass: dict[tuple[str, str, str, str], PackingClass | None] = {}
        self._rules: dict[tuple[str, str, str], KindRules] = {}
        self.group_vo: dict[str, str] = {}
        self.vo_fixed: dict[str, tuple[float, int]] = {}
        """VO -> (share fraction, guaranteed slots) on this farm."""
        self._tallies: dict[str, Tally] = {}
        self._config, self._nodes = config, nodes

    def clear(self) -> None:
        """Forget everything (the tally refers back to its index: a cycle to break)."""
        self._tallies.clear()
        self._config = self._nodes = None

    def rules(self, queue: str, vo: str, group: str) -> KindRules:
        """What the configuration says of a (queue, VO, group): (queue max running, VO max
        running, group max running, VO per-node max, group per-node max, keys of the pools
        it may use -- by queue assignment and node type)."""
        k = (queue, vo, group)
        got = self._rules.get(k)
        if got is None:
            cfg = self.config
            qc = cfg.queues.get(queue)
            v = cfg.vos.get(vo)
            g = cfg.groups.get(group)
            keys = [key for key in self.group_keys if admits(cfg, key, queue, vo, group)]
            got = self._rules[k] = KindRules(qc.max_running if qc else None, v.max_running if v else None,
                                             g.max_running if g else None, v.max_per_node if v else None,
                                             g.max_per_node if g else None, tuple(keys))
        return got

    def job_class(self, queue: str, vo: str, group: str, user: str) -> PackingClass | None:
        """The packing class a job belongs to (None: default jobs)."""
        k = (queue, vo, group, user)
        try:
            return self._pclass[k]
        except KeyError:
            pc = self._pclass[k] = next((p for p in self.config.packing if p.matches(queue, vo, group, user)), None)
            return pc

    def vo_of(self, group: str) -> str:
        try:
            return self.group_vo[group]
        except KeyError:
            vo = self.group_vo[group] = self.config.vo_of(group)
            return vo

    def tally(self, policy: str) -> "Tally":
        t = self._tallies.get(policy)
        if t is None:
            t = self._tallies[policy] = Tally(self, policy)
        return t

    def empty_ranking(self, policy: str, group_key: tuple, whole: bool) -> Ranking:
        """The pool's usable nodes ranked as if no job ran anywhere (`whole`: empty nodes
        last, `keeps_whole`)."""
        items = [empty_key(policy, e.node, whole) for e in self.entries
                 if e.key == group_key and e.node.name in self.usable_free and e.node.slots > 0]
        return Ranking(sorted(items), {k[-1]: k for k in items})
