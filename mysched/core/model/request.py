"""What a job asks for, whole: the parts of its nodes request, memory, exclusivity.

TORQUE's ``-l nodes=2:ppn=4:ib+wn05:ppn=1,mem=16gb,naccesspolicy=singlejob`` means two nodes
with the ``ib`` property and 4 free cores each, plus 1 core on wn05, 16 GB in all, and nodes
that run nothing else. A `Job` without a `Request` (or with one that names no part) asks for
`Job.cores` cores on any one node -- the common single-node case the planner serves fastest.
"""

from __future__ import annotations

from typing import NamedTuple


class NodePart(NamedTuple):
    """``count`` nodes with ``ppn`` free cores each, having every property, or the named host."""

    count: int = 1
    ppn: int = 1
    host: str | None = None
    properties: frozenset[str] = frozenset()

    def __str__(self) -> str:
        head = self.host or str(self.count)
        return ":".join([head, f"ppn={self.ppn}", *sorted(self.properties)])


class Request(NamedTuple):
    """A job's whole resource request (immutable)."""

    parts: tuple[NodePart, ...] = ()
    """Node parts (``+``-joined in TORQUE); empty: `Job.cores` on one node of any kind."""
    procs: int | None = None
    """Cores anywhere, spread over as many nodes as it takes (``procs``: MPI jobs)."""
    mem: int | None = None
    """Bytes for the whole job (``mem``): on one node, or split evenly over its cores."""
    pmem: int | None = None
    """Bytes per core (``pmem``); wins over `mem` where both are given."""
    exclusive: bool = False
    """Nodes that run nothing else (``naccesspolicy=singlejob``, ``qsub -n``)."""
    vmem: int | None = None
    """Virtual memory (RAM plus swap) in bytes for the whole job (``vmem``), split like `mem`;
    checked against the nodes' totmem."""
    pvmem: int | None = None
    """Virtual memory per core (``pvmem``); wins over `vmem` where both are given."""

    @property
    def cores(self) -> int:
        return sum(p.count * p.ppn for p in self.parts) + (self.procs or 0)

    @property
    def nodes(self) -> int:
        return sum(p.count for p in self.parts)

    @property
    def simple(self) -> bool:
        """Cores on one node of any kind, no memory or exclusivity: the planner's fast path."""
        # the plain fields first: the planner asks this of every waiting job's request, and
        # most requests that are not simple say so there
        return (not self.procs and not self.exclusive and self.mem is None and self.pmem is None and self.vmem is None
                and self.pvmem is None and self.nodes <= 1 and not any(p.host or p.properties for p in self.parts))

    def mem_for(self, cores: int, total_cores: int) -> int:
        """Bytes the job needs on a node where it gets `cores` of its `total_cores`."""
        return _share(self.mem, self.pmem, cores, total_cores)

    def vmem_for(self, cores: int, total_cores: int) -> int:
        """Bytes of virtual memory the job needs on such a node."""
        return _share(self.vmem, self.pvmem, cores, total_cores)

    def __str__(self) -> str:
        out = ["nodes=" + "+".join(map(str, self.parts))] if self.parts else []
        if self.procs:
            out.append(f"procs={self.procs}")
        if self.mem is not None:
            out.append(f"mem={_size(self.mem)}")
        if self.pmem is not None:
            out.append(f"pmem={_size(self.pmem)}")
        if self.vmem is not None:
            out.append(f"vmem={_size(self.vmem)}")
        if self.pvmem is not None:
            out.append(f"pvmem={_size(self.pvmem)}")
        if self.exclusive:
            out.append("naccesspolicy=singlejob")
        return ",".join(out)


def _size(n: int) -> str:
    """Bytes in TORQUE's notation, in the largest unit that keeps them exact (``16gb``)."""
    for unit, shift in (("tb", 40), ("gb", 30), ("mb", 20), ("kb", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}b"


def _share(whole: int | None, per_core: int | None, cores: int, total_cores: int) -> int:
    """A job's memory on a node where it gets `cores` of its `total_cores`: the per-core figure
    times the cores, else that part of the whole (rounded up), else nothing."""
    if per_core is not None:
        return per_core * cores
    if whole is not None:
        return -(-whole * cores // max(1, total_cores))
    return 0
