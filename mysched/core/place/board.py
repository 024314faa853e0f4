"""One plan's view of the nodes: what runs on each (copied from the tally on first use), the
node groups' rankings (copy-on-write views of the tally's), the free slots left, and the
bookings of the jobs the plan starts. The tally itself is never changed by a plan."""

from __future__ import annotations

from typing import Iterable

from mysched.core.model.batch import Job, JobState, Node
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.place.nodeusage import NodeUsage
from mysched.core.place.ranking import NodeGroup, Ranking
from mysched.core.place.tally import DEFAULT_CLASS, Tally
from mysched.core.rules.throttle import overloaded
from mysched.core.settings import NodeLoadLimits, PackingClass


class NodeUsages(dict):
    """This plan's `NodeUsage` per node, made on first use: a copy of the tally's for a node
    that runs jobs, a fresh one for an idle node."""

    def __init__(self, index: NodeIndex, base: dict[str, NodeUsage], groups: dict[tuple, NodeGroup]) -> None:
        super().__init__()
        self.index = index
        self.base = base
        self.groups = groups

    def __missing__(self, name: str) -> NodeUsage:
        b = self.base.get(name)
        if b is not None:
            ld = b.copy()
        else:
            e = self.index.by_name[name]
            ld = NodeUsage(e.node, e.key, e.usable)
        ld.group = self.groups[ld.key]
        self[name] = ld
        return ld

    def peek(self, name: str) -> NodeUsage:
        """The node's usage to read, without copying it for this plan."""
        return self.get(name) or self.base.get(name) or self[name]


class Board:
    """The nodes as this plan changes them."""

    def __init__(self, index: NodeIndex, tally: Tally, now: float) -> None:
        self.index = index
        self.tally = tally
        self.now = now
        self.keyf = tally.keyf
        self.track = tally.track
        self.packing = index.packing
        groups = tally.groups
        for k, g in groups.items():  # this plan's scratch rankings
            g.ranking = tally.rankings[k].view()
            classes = tally.by_class[k]
            g.by_class = {c: r.view() for c, r in classes.items()} if classes else {}
        self.groups = groups
        """Node group key -> `NodeGroup` (its rankings are this plan's)."""
        self.usages = NodeUsages(index, tally.loads, groups)
        self.free_total = tally.free
        """Free slots on usable nodes, less what this plan started."""
        self.overloaded: dict[str, str] = {}
        """Nodes whose pbs_mom reports too much load or too little memory -> why."""
        self.node_classes: dict[str, str] = {}
        """Node -> the exclusive packing class holding it."""

    def close(self, name: str) -> None:
        """Take node `name` out of this plan: unusable, and out of every ranking (overloaded
        nodes, nodes in a scheduled downtime)."""
        ld = self.usages[name]
        ld.usable = False
        ld.group.ranking.drop(name)
        for r in ld.group.by_class.values():
            r.drop(name)

    def skip_loaded(self, nodes: Iterable[Node], limits: NodeLoadLimits) -> None:
        """Nodes whose pbs_mom reports too much load or too little free memory take no new
        job this cycle (LSF's loadSched)."""
        by_name = self.index.by_name
        for node in nodes:  # the snapshot's: the index may keep an older report's node objects
            why = overloaded(node, limits)
            if why is None or node.name not in by_name:
                continue
            self.overloaded[node.name] = why
            self.close(node.name)

    def hold_classes(self, queued: list[tuple[Job, str]]) -> list[float]:
        """Exclusive packing: a node running jobs of an exclusive class, the latest started
        within the class TTL, is reserved for that class -- but only as many such nodes as
        the class needs: fullest of the class first, until their free slots cover the class's
        waiting jobs. The others are released at once (their class jobs run on; other jobs
        may fill their free slots), so the class never holds room it has no job for.
        Returns the times at which a hold runs out."""
        packing = self.packing
        held: dict[str, list[tuple[int, float, str]]] = {}
        for name, base in self.tally.loads.items():
            best: str | None = None  # the class holding the node: the latest to start there
            best_start = 0.0
            for cls in base.class_times:
                pc = packing.get(cls)
                if pc is None or pc.policy != "exclusive" or not base.classes.get(cls):
                    continue
                start = base.class_start(cls)
                if start + pc.ttl > self.now and (best is None or (start, cls) > (best_start, best)):
                    best, best_start = cls, start
            if best is not None:
                held.setdefault(best, []).append((base.classes[best], best_start, name))
        if not held:
            return []
        waiting: dict[str, int] = {}
        job_class = self.index.job_class
        for job, vo in queued:
            if job.state is JobState.QUEUED:
                pc = job_class(job.queue, vo, job.group, job.user)
                if pc is not None and pc.name in held:
                    waiting[pc.name] = waiting.get(pc.name, 0) + job.cores
        ends = []
        for cls, nodes in held.items():
            want = waiting.get(cls, 0)
            room = 0
            for _n, start, name in sorted(nodes, key=lambda x: (-x[0], -x[1], x[2])):
                if room >= want:
                    break  # the class has room enough for what waits: release the rest
                ld = self.usages[name]
                ld.reserved = cls
                self.node_classes[name] = cls
                room += max(0, ld.free)
                ends.append(start + packing[cls].ttl)
        return ends

    def take(self, job: Job, vo: str, pc: PackingClass | None, ld: NodeUsage, cores: int, mem: int = 0,
             excl: bool = False, vmem: int = 0) -> float | None:
        """Book `cores` of node `ld` for the job: its counts, packing hold and rank. Returns
        when an exclusive class's hold on the node runs out, if the start made one."""
        packing = self.packing
        cls = (pc.name if pc else DEFAULT_CLASS) if packing else None
        t_users, t_vos, t_groups = self.track
        before = ld.free
        ld.add(job.user if t_users else None, vo if t_vos else None, job.group if t_groups else None, cls, cores,
               self.now, mem, excl, vmem)
        self.free_total -= before - ld.free
        name = ld.name
        ttl_end = None
        if pc is not None and pc.policy == "exclusive" and pc.ttl > 0:
            ld.reserved = cls
            self.node_classes[name] = cls
            ttl_end = self.now + pc.ttl
        group = ld.group
        if ld.free > 0:
            k = self.keyf(ld)
            group.ranking.put(name, k)
            if packing:
                for c, n in ld.classes.items():
                    if n and c in packing:
                        group.by_class.setdefault(c, Ranking()).put(name, k)
        else:
            group.ranking.drop(name)
            if packing:
                for c in ld.classes:
                    r = group.by_class.get(c)
                    if r is not None:
                        r.drop(name)
        return ttl_end
