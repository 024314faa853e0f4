"""What runs on one node, as a plan reads it: `NodeUsage`."""

from __future__ import annotations

import math
from typing import Iterable

from mysched.core.model.batch import Node, NodeState


class NodeUsage:
    """What runs on one node: counts of its jobs by user, VO, group and class, its used and
    free cores and memory. A None user, VO, group or class is one nothing
    reads in this plan (no diversity score, no per-node limit, no packing): not counted."""

    __slots__ = ("name", "slots", "cap", "free", "used", "njobs", "users", "vos", "groups", "classes",
                 "class_times", "key", "group", "reserved", "usable", "mem", "mem_used", "excl", "vmem", "vmem_used")

    def __init__(self, node: Node, key: tuple, usable: bool) -> None:
        self.name = node.name
        self.slots = node.slots
        self.cap = node.slots if node.state is NodeState.FREE else 0
        """Slots the scheduler may fill when the node runs nothing."""
        self.free = self.cap
        self.used = 0
        self.njobs = 0
        self.users: dict[str, int] = {}
        self.vos: dict[str, int] = {}
        self.groups: dict[str, int] = {}
        self.classes: dict[str, int] = {}
        self.class_times: dict[str, list[float]] = {}
        """Start times of the class jobs (exclusive packing reservations follow the latest)."""
        self.key = key
        self.group = None
        """Its `NodeGroup` (type and queue assignment): what the checks ask about access."""
        self.reserved: str | None = None
        self.usable = usable
        self.mem = node.mem
        """Physical memory in bytes (None: unknown, not checked)."""
        self.mem_used = 0
        """Memory the jobs here asked for."""
        self.excl = 0
        """Jobs here that asked for their nodes alone: while one runs, nothing else fits."""
        self.vmem = node.vmem
        """Memory plus swap in bytes (None: unknown, not checked)."""
        self.vmem_used = 0

    def copy(self) -> "NodeUsage":
        c = NodeUsage.__new__(NodeUsage)
        c.name, c.slots, c.cap, c.free, c.used, c.njobs = self.name, self.slots, self.cap, self.free, self.used, self.njobs
        c.users, c.vos, c.groups, c.classes = dict(self.users), dict(self.vos), dict(self.groups), dict(self.classes)
        c.class_times = {k: list(v) for k, v in self.class_times.items()} if self.class_times else {}
        c.key, c.group, c.reserved, c.usable = self.key, self.group, None, self.usable
        c.mem, c.mem_used, c.excl = self.mem, self.mem_used, self.excl
        c.vmem, c.vmem_used = self.vmem, self.vmem_used
        return c

    def mem_free(self) -> float:
        """Memory not yet asked for (infinite where the node's memory is unknown)."""
        return float("inf") if self.mem is None else self.mem - self.mem_used

    def vmem_free(self) -> float:
        """Virtual memory not yet asked for (infinite where unknown)."""
        return float("inf") if self.vmem is None else self.vmem - self.vmem_used

    def add(self, user: str | None, vo: str | None, group: str | None, cls: str | None, cores: int,
            start: float | None, mem: int = 0, excl: bool = False, vmem: int = 0) -> None:
        self.used += cores
        self.njobs += 1
        if mem:
            self.mem_used += mem
        if vmem:
            self.vmem_used += vmem
        if excl:
            self.excl += 1
        self.free = 0 if self.excl else max(0, self.cap - self.used)
        if user is not None:
            self.users[user] = self.users.get(user, 0) + 1
        if vo is not None:
            self.vos[vo] = self.vos.get(vo, 0) + 1
        if group is not None:
            self.groups[group] = self.groups.get(group, 0) + 1
        if cls is not None:
            self.classes[cls] = self.classes.get(cls, 0) + 1
            if start is not None:
                self.class_times.setdefault(cls, []).append(start)

    def remove(self, user: str | None, vo: str | None, group: str | None, cls: str | None, cores: int,
               start: float | None, mem: int = 0, excl: bool = False, vmem: int = 0) -> None:
        """Undo an `add` with the same arguments."""
        self.used -= cores
        self.njobs -= 1
        if mem:
            self.mem_used -= mem
        if vmem:
            self.vmem_used -= vmem
        if excl:
            self.excl -= 1
        self.free = 0 if self.excl else max(0, self.cap - self.used)
        for d, k in ((self.users, user), (self.vos, vo), (self.groups, group), (self.classes, cls)):
            if k is not None:
                _take(d, k, 1)
        if cls is not None and start is not None:
            times = self.class_times[cls]
            times.remove(start)
            if not times:
                del self.class_times[cls]

    def free_after(self, ended: int) -> int:
        """Cores free once jobs holding `ended` of its used cores have ended. The node's
        slots count, whatever TORQUE's state says now: a node it reports ``job-exclusive``
        (every core assigned, `cap` 0) frees its cores as its jobs end like any other; one
        running a job that asked for its node alone frees them only when all have ended."""
        left = self.used - ended
        if self.excl and left > 0:
            return 0
        return max(0, self.slots - left) if self.usable else 0

    def room_at(self, cores: int, ends: Iterable[tuple[float, int]], now: float) -> float:
        """The earliest time it has `cores` free, by `ends` -- (end, cores) of what runs here,
        soonest first (inf: never, by what is known)."""
        if not self.usable or self.slots < cores:
            return math.inf
        if self.free >= cores:
            return now
        ended = 0
        for end, c in ends:
            ended += c
            if self.free_after(ended) >= cores:
                return end
        return math.inf

    def class_start(self, cls: str) -> float | None:
        times = self.class_times.get(cls)
        return max(times) if times else None


def _take(d: dict[str, int], k: str, n: int) -> None:
    """Subtract, dropping keys that reach zero (a fresh count would not have them)."""
    v = d[k] - n
    if v:
        d[k] = v
    else:
        del d[k]
