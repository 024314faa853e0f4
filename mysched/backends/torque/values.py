"""Values as TORQUE writes them (server replies and accounting logs): sizes, nodes specs
exec_host and node job lists (durations: `mysched.core.model.durations`). One parser each, shared by the IFL adapter and the
accounting reader; malformed values raise `ValueError`."""

from __future__ import annotations

import re

from mysched.core.model.batch import Placement
from mysched.core.model.request import NodePart
from mysched.core.model.sizes import digits, parse_mem

__all__ = ["parse_mem"]  # sizes are parsed in the core (the config reads them too)


def parse_nodes(text: str) -> int:
    """Cores requested by a nodes spec: ``2:ppn=4`` -> 8, ``node03:ppn=2`` -> 2, ``1`` -> 1,
    ``a:ppn=2+b:ppn=2`` -> 4; ``1pn=4`` (a typo seen in real logs for ``1:ppn=4``) -> 4."""
    total = 0
    for part in text.split("+"):
        part = part.strip()
        typo = re.match(r"^(\d+)pn=(\d+)$", part)
        if typo:
            total += int(typo.group(1)) * int(typo.group(2))
            continue
        fields = part.split(":")
        if not fields[0]:
            raise ValueError(f"bad nodes spec {text!r}")
        count = int(fields[0]) if digits(fields[0]) else 1
        ppn = 1
        for f in fields[1:]:
            if f.startswith("ppn="):
                if not digits(f[4:]):
                    raise ValueError(f"bad nodes spec {text!r}")
                ppn = int(f[4:])
        total += count * ppn
    if total < 1:
        raise ValueError(f"bad nodes spec {text!r}")
    return total


def parse_exec_host(text: str) -> Placement:
    """``node03/0-1+node04/2`` -> ``(("node03", 2), ("node04", 1))``. OpenPBS writes a chunk's
    cores after a ``*`` (``vm/0*2+vm/1*2`` -> ``(("vm", 4),)``; ``vm/0`` is one core), so its
    accounting lines count the same way."""
    out: dict[str, int] = {}
    for part in text.split("+"):
        part = part.strip()
        if not part:
            continue
        node, _, slots = part.partition("/")
        slots, star, times = slots.partition("*")
        if not node or star and not digits(times):
            raise ValueError(f"bad exec_host {text!r}")
        n = 0
        for rng in (slots.split(",") if slots else ["0"]):
            a, _, b = rng.partition("-")
            if not digits(a) or (b and not digits(b)):
                raise ValueError(f"bad exec_host {text!r}")
            n += int(b) - int(a) + 1 if b else 1
        out[node] = out.get(node, 0) + (n * int(times) if star else n)
    return tuple(out.items())


def parse_node_parts(text: str, node_names: frozenset[str] | set[str] = frozenset()) -> tuple[NodePart, ...]:
    """A nodes spec as parts: ``2:ppn=4:ib+wn05:ppn=1`` -> 2 nodes with 4 cores and property
    ``ib``, and 1 core on wn05. A first field that is no number names a node when the server
    has one of that name, else it is a property (TORQUE's own rule). ``gpus=``/``mics=`` and
    other ``key=value`` fields are not scheduled here and are left out. A host named in
    several parts is one part with all their cores: TORQUE 6.1 runs ``nodes=wn01+wn01`` as 2
    cores on wn01 (``exec_host = wn01/0+wn01/1``; pbs_runjob takes ``wn01:ppn=2`` for it)."""
    parts: list[NodePart] = []
    for raw in text.split("+"):
        raw = raw.strip()
        typo = re.match(r"^(\d+)pn=(\d+)$", raw)
        if typo:
            parts.append(NodePart(int(typo.group(1)), int(typo.group(2))))
            continue
        fields = raw.split(":")
        if not fields[0]:
            raise ValueError(f"bad nodes spec {text!r}")
        count, host, props = 1, None, set()
        if digits(fields[0]):
            count = int(fields[0])
        elif fields[0] in node_names or not node_names and "=" not in fields[0]:
            host = fields[0]
        else:
            props.add(fields[0])
        ppn = 1
        for f in fields[1:]:
            if f.startswith("ppn="):
                if not digits(f[4:]) or int(f[4:]) < 1:
                    raise ValueError(f"bad nodes spec {text!r}")
                ppn = int(f[4:])
            elif f and "=" not in f:
                props.add(f)
        if count < 1:
            raise ValueError(f"bad nodes spec {text!r}")
        parts.append(NodePart(count, ppn, host, frozenset(props)))
    return _merge_hosts(parts)


def _merge_hosts(parts: list[NodePart]) -> tuple[NodePart, ...]:
    out: list[NodePart] = []
    at: dict[str, int] = {}
    for p in parts:
        i = at.get(p.host) if p.host is not None else None
        if i is None:
            if p.host is not None:
                at[p.host] = len(out)
            out.append(p)
        else:
            q = out[i]
            out[i] = q._replace(ppn=q.ppn + p.ppn, properties=q.properties | p.properties)
    return tuple(out)


def status_field(status: str, key: str) -> str | None:
    """One ``key=value`` of a pbs_mom ``status`` attribute (``...,physmem=16318924kb,...``)."""
    for item in status.split(","):
        k, eq, v = item.partition("=")
        if eq and k.strip() == key:
            return v.strip()
    return None


def parse_node_jobs(text: str) -> tuple[str, ...]:
    """Node ``jobs`` attribute ``0-1/12.srv, 2/13.srv`` -> unique job ids in order."""
    seen: dict[str, None] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        _, _, jid = part.partition("/")
        seen[jid or part] = None
    return tuple(seen)


_SUB_JOB = re.compile(r"^(\d+)\[\d+\](.*)$")


def array_parent(job_id: str) -> str | None:
    """The array a sub-job belongs to: ``2007[5].vm`` -> ``2007[].vm`` (None: no sub-job)."""
    m = _SUB_JOB.match(job_id)
    return f"{m.group(1)}[]{m.group(2)}" if m else None


def parse_slot_limit(request: str) -> int | None:
    """The slot limit of an array request, ``0-400%1`` -> 1 (None: no ``%N``); as pbs_server
    reads it (job_array::set_slot_limit: the number after the last ``%``)."""
    _, pct, limit = request.rpartition("%")
    if not pct:
        return None
    limit = limit.strip()
    if not digits(limit):
        raise ValueError(f"bad array slot limit in job_array_request {request[:200]!r}")
    return int(limit)
