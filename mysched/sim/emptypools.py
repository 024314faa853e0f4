"""Why a guarantee pool guarantees nothing on a simulated farm, said instead of guessed: its
host patterns, node types or properties select none of the simulated nodes (named by
farm.name_format, not like the site's), another pool took them first, they have too few slots
for min_slots or a package, or memory is asked for that simulated nodes have only from a
node type's mem."""

from __future__ import annotations

from mysched.core.settings import Config, PoolConfig
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.batch import Node

_ANY = 1 << 62
"""Slots or memory no criterion refuses: to test a pool's selection by name, type and properties alone."""
NO_MEM = "simulated nodes have memory only from a node type's mem"


def pool_causes(config: Config, index: NodeIndex) -> dict[str, str]:
    """Pool name -> why it can guarantee no package on the farm of `index` (pools that can: absent)."""
    hosts: dict[str, list[Node]] = {}
    for name, pool in index.pool_of.items():
        hosts.setdefault(pool.name, []).append(index.by_name[name].node)
    entries = [(e.node, e.ntype) for e in index.entries]
    out = {}
    for pool in config.pools:
        why = _cause(pool, hosts.get(pool.name, []), entries, index)
        if why:
            out[pool.name] = why
    return out


def _farm(entries: list[tuple[Node, str | None]]) -> str:
    names = [n.name for n, _ in entries]
    shown = ", ".join(names[:2]) + (f", ..., {names[-1]}" if len(names) > 2 else "")
    return f"the {len(names)} simulated nodes ({shown}, named by farm.name_format)"


def _cause(pool: PoolConfig, mine: list[Node], entries: list[tuple[Node, str | None]], index: NodeIndex) -> str:
    if not mine:
        named = [(n, t) for n, t in entries if pool.selects(n.name, t, n.properties, _ANY, _ANY)]
        if not named:
            what = "; ".join(x for x in (
                f"hosts {', '.join(pool.hosts)}" if pool.hosts else "",
                f"node_types {', '.join(pool.node_types)}" if pool.node_types else "",
                f"properties {', '.join(pool.properties)}" if pool.properties else "") if x)
            return (f"its {what} match none of {_farm(entries)}: set farm.name_format to the site's node names, "
                    "or select the simulated ones")
        taken = sorted({index.pool_of[n.name].name for n, _ in named if n.name in index.pool_of})
        if taken:
            return f"its nodes joined pool(s) {', '.join(taken)} first (a host joins the first pool that selects it)"
        fit = [(n, t) for n, t in named if pool.selects(n.name, t, n.properties, n.slots, _ANY)]
        if not fit:
            return f"min_slots {pool.min_slots}: its simulated nodes have {max(n.slots for n, _ in named)} slots"
        return f"min_mem selects no host: {_mem_of([n for n, _ in fit], pool.min_mem or 0)}"
    if not any(pool.fit(n.slots, n.mem) for n in mine):
        if pool.slots and all(n.slots < pool.slots for n in mine):
            return (f"a package of {pool.slots} slots does not fit on its hosts of "
                    f"{max(n.slots for n in mine)} slots")
        return f"a package of {pool.mem >> 20} MB does not fit its hosts: {_mem_of(mine, pool.mem)}"
    return ""


def _mem_of(nodes: list[Node], need: int) -> str:
    """What the nodes' memory is against `need` bytes: the largest a node has, or that they have
    none (the simulated farm's nodes have memory only from a node type's mem)."""
    have = [n.mem for n in nodes if n.mem is not None]
    if not have:
        return NO_MEM
    return f"{need >> 20} MB needed, the largest simulated node has {max(have) >> 20} MB"
