"""Values as OpenPBS writes them in its server replies: ``select`` and ``place`` requests,
``exec_vnode`` locations, a vnode's job list and the limit lists of ``max_run``. One parser
each; malformed values raise `ValueError` (the mapping turns them into warnings).

OpenPBS asks for chunks, ``select=2:ncpus=4:mem=8gb:bigmem=True+1:ncpus=1:vnode=node-a``:
each chunk lands on one vnode, and its resources are of three kinds here -- the consumables
mysched places (``ncpus``, ``mem``), the chunk's whereabouts (``vnode``, ``host``) and the
rest, which a vnode either has or has not: a boolean asked True, or a string value. Those
become node properties (``bigmem``, ``arch=linux``, ``host=wn01``) on both sides, so the
planner's one property check serves them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mysched.core.model.batch import Placement
from mysched.core.model.sizes import digits, parse_mem

PLACED = frozenset({"ncpus", "mem", "mpiprocs", "ompthreads", "vnode", "host"})
"""Chunk resources with a meaning of their own here (the rest are properties or unplaced)."""
TRUE = frozenset({"true", "t", "y", "yes", "1"})
FALSE = frozenset({"false", "f", "n", "no", "0"})
ARRANGEMENTS = frozenset({"free", "pack", "scatter", "vscatter"})
SHARINGS = frozenset({"shared", "excl", "exclhost"})


class Chunk(NamedTuple):
    """``count`` chunks of one kind: ``ncpus`` cores and ``mem`` bytes each on one vnode,
    which must have every one of `properties` (and be `vnode`, where named)."""

    count: int = 1
    ncpus: int = 1
    mem: int | None = None
    mpiprocs: int | None = None
    vnode: str | None = None
    properties: frozenset[str] = frozenset()
    unplaced: tuple[str, ...] = ()
    """Consumables asked for that mysched does not count (``ngpus=1``): named, never checked."""


class Place(NamedTuple):
    """``place=scatter:excl``: how chunks spread over hosts, and whether they share them."""

    arrangement: str = "free"
    sharing: str = "shared"


def _number(text: str) -> bool:
    """A consumable's value: a count or a size (``4``, ``1.5``, ``16gb``)."""
    return bool(re.fullmatch(r"\d+(\.\d+)?([kmgtpe]?[bw])?", text.strip().lower()))


def bool_value(text: str) -> bool | None:
    """An OpenPBS boolean (True, false, y, 1 ...), None if the text is none."""
    t = text.strip().lower()
    return True if t in TRUE else False if t in FALSE else None


def _unquote(text: str) -> str:
    t = text.strip()
    return t[1:-1] if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"" else t


def parse_select(text: str) -> tuple[Chunk, ...]:
    """``2:ncpus=4:mem=8gb:bigmem=True+ncpus=1:arch=linux`` -> its chunks, in order."""
    out: list[Chunk] = []
    if not text.strip():
        raise ValueError("empty select")
    for raw in text.split("+"):
        fields = raw.strip().split(":")
        count = 1
        if fields and digits(fields[0].strip()):
            count = int(fields[0])
            fields = fields[1:]
        if count < 1:
            raise ValueError(f"bad select {text[:200]!r}: a chunk count must be positive")
        ncpus, mem, mpiprocs, vnode = 1, None, None, None
        props: set[str] = set()
        unplaced: list[str] = []
        for f in fields:
            name, eq, value = f.partition("=")
            name, value = name.strip(), _unquote(value)
            if not eq or not name or not value or not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
                raise ValueError(f"bad select {text[:200]!r}: {f[:80]!r} is not resource=value")
            if name == "ncpus":
                if not digits(value):
                    raise ValueError(f"bad select {text[:200]!r}: ncpus={value[:40]}")
                ncpus = int(value)
            elif name == "mem":
                mem = parse_mem(value)
            elif name == "mpiprocs":
                if not digits(value):
                    raise ValueError(f"bad select {text[:200]!r}: mpiprocs={value[:40]}")
                mpiprocs = int(value)
            elif name == "vnode":
                vnode = value
            elif name == "host":
                props.add(f"host={value}")
            elif name in PLACED:
                continue
            elif (b := bool_value(value)) is not None and not digits(value):
                if b:
                    props.add(name)
            elif _number(value):
                unplaced.append(f"{name}={value}")
            else:
                props.add(f"{name}={value}")
        out.append(Chunk(count, ncpus, mem, mpiprocs, vnode, frozenset(props), tuple(unplaced)))
    return tuple(out)


def parse_place(text: str | None) -> Place:
    """``scatter:excl`` -> Place("scatter", "excl"); empty: OpenPBS's default, free and shared."""
    arrangement, sharing = "free", "shared"
    for f in (text or "").split(":"):
        f = f.strip().lower()
        if not f or f.startswith("group="):
            continue
        if f in ARRANGEMENTS:
            arrangement = f
        elif f in SHARINGS:
            sharing = f
        else:
            raise ValueError(f"bad place {text[:200]!r}: {f[:40]!r} is none of free, pack, scatter, vscatter, "
                             "shared, excl, exclhost, group=")
    return Place(arrangement, sharing)


def parse_exec_vnode(text: str) -> Placement:
    """``(node-a:ncpus=2)+(node-b:ncpus=2:mem=4gb)`` -> (("node-a", 2), ("node-b", 2)): the
    cores each vnode gives the job, its chunks added up (parentheses optional, as the server
    keeps whatever pbs_runjob was given)."""
    out: dict[str, int] = {}
    for piece in text.replace("(", "").replace(")", "").split("+"):
        piece = piece.strip()
        if not piece:
            continue
        fields = piece.split(":")
        vnode = fields[0].strip()
        if not vnode or "=" in vnode:
            raise ValueError(f"bad exec_vnode {text[:200]!r}")
        n = 0
        for f in fields[1:]:
            k, _, v = f.partition("=")
            if k.strip() == "ncpus":
                if not digits(v.strip()):
                    raise ValueError(f"bad exec_vnode {text[:200]!r}")
                n += int(v)
        out[vnode] = out.get(vnode, 0) + n
    if not out:
        raise ValueError(f"bad exec_vnode {text[:200]!r}")
    return tuple(out.items())


def parse_vnode_jobs(text: str) -> tuple[str, ...]:
    """A vnode's ``jobs`` (``17.vm/0, 17.vm/1, 18.vm/2``: one entry per assigned cpu) ->
    its job ids once each, in order."""
    seen: dict[str, None] = {}
    for part in text.split(","):
        jid = part.strip().rpartition("/")[0] or part.strip()
        if jid:
            seen[jid] = None
    return tuple(seen)


_LIMIT = re.compile(r"\[\s*([ougp])\s*:\s*([^=\]\s]+)\s*=\s*([^\]\s]+)\s*\]")


def parse_limits(text: str) -> dict[tuple[str, str], str]:
    """``[o:PBS_ALL=10], [u:PBS_GENERIC=2], [u:alice=1]`` -> {("o", "PBS_ALL"): "10", ...}."""
    out: dict[tuple[str, str], str] = {}
    rest = text
    for m in _LIMIT.finditer(text):
        out[(m.group(1), m.group(2))] = m.group(3)
        rest = rest.replace(m.group(0), "", 1)
    if rest.replace(",", "").strip() or not out:
        raise ValueError(f"bad limit {text[:200]!r}: expected [o:PBS_ALL=N], [u:PBS_GENERIC=N] ...")
    return out


def location(chunks: tuple[Chunk, ...], placement: Placement,
             properties: dict[str, frozenset[str]] | None = None) -> str | None:
    """The pbs_runjob location for a placement: one ``(vnode:ncpus=N[:mem=M][:mpiprocs=P])``
    per chunk of the request (OpenPBS fails a job at its mom when the location has fewer
    chunks than its select), each on a vnode of the placement that has its properties and
    cores left. Without the chunks (or when they cannot be laid out on the placement) one
    chunk per vnode of the placement. None: no placement."""
    if not placement:
        return None
    laid = _lay_out(chunks, placement, properties or {}) if chunks else None
    if laid is None:
        return "+".join(f"({node}:ncpus={cores})" for node, cores in placement)
    return "+".join(laid)


def _lay_out(chunks: tuple[Chunk, ...], placement: Placement,
             properties: dict[str, frozenset[str]]) -> list[str] | None:
    """Each chunk on a vnode of the placement (depth-first, largest chunks first), using up
    exactly the placement's cores; None if there is no such layout."""
    single: list[Chunk] = []
    for c in chunks:
        single += [c] * c.count
    if sum(c.ncpus for c in single) != sum(n for _, n in placement) or len(single) > 4096:
        return None
    order = sorted(range(len(single)), key=lambda i: -single[i].ncpus)
    left = {node: n for node, n in placement}
    where: list[str | None] = [None] * len(single)

    def fits(c: Chunk, node: str) -> bool:
        return (left[node] >= c.ncpus and (c.vnode is None or c.vnode == node)
                and c.properties <= properties.get(node, c.properties))

    def place(k: int) -> bool:
        if k == len(order):
            return True
        c = single[order[k]]
        tried: set[tuple] = set()
        for node in left:
            same = (left[node], properties.get(node))  # vnodes alike so far: trying one is trying all
            if fits(c, node) and same not in tried:
                tried.add(same)
                left[node] -= c.ncpus
                where[order[k]] = node
                if place(k + 1):
                    return True
                left[node] += c.ncpus
        return False

    if len(single) > 64 and len({(c.ncpus, c.vnode, c.properties) for c in single}) == 1:
        ok = _greedy(single, left, where, fits)  # many chunks of one kind: no search needed
    else:
        ok = place(0)
    if not ok:
        return None
    out = []
    for c, node in zip(single, where):
        res = [f"ncpus={c.ncpus}"] + ([f"mem={_size(c.mem)}"] if c.mem is not None else []) + \
              ([f"mpiprocs={c.mpiprocs}"] if c.mpiprocs is not None else [])
        out.append(f"({node}:{':'.join(res)})")
    return out


def _greedy(single: list[Chunk], left: dict[str, int], where: list[str | None], fits) -> bool:  # noqa: ANN001
    for i, c in enumerate(single):
        node = next((n for n in left if fits(c, n)), None)
        if node is None:
            return False
        left[node] -= c.ncpus
        where[i] = node
    return True


def _size(n: int) -> str:
    """Bytes as OpenPBS reads a size: in kb where that is exact."""
    return f"{n >> 10}kb" if n % 1024 == 0 else f"{n}b"
