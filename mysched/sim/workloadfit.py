"""How a workload fits the farm it is replayed on, said before the figures: nodes that its
jobs may not use at all (node types, queues' nodes) count as available slots in every figure
and keep them idle, which a site configuration written for other node names does silently."""

from __future__ import annotations

from typing import Callable

from mysched.core.rules.access import admits, node_key, node_type, type_admits
from mysched.core.settings import Config
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.model.windows import utc, when
from mysched.core.model.batch import Job, Node, TraceJob
from mysched.core.model.request import Request
from mysched.core.place.requests import unfit


def closed_nodes(config: Config, nodes: tuple[Node, ...], workload: list[TraceJob]) -> dict[str, str]:
    """Node name -> why no job of `workload` may use it ("node type T", "queues Q"); only
    nodes that are closed to every job."""
    kinds = {(tj.job.queue, tj.job.vo or config.vo_of(tj.job.group), tj.job.group) for tj in workload}
    out: dict[str, str] = {}
    verdict: dict = {}
    for n in nodes:
        key = node_key(config, n.name, node_type(config, n.name, frozenset(n.properties)))
        if key not in verdict:
            verdict[key] = (None if any(admits(config, key, q, vo, g) for q, vo, g in kinds)
                            else f"node type {key.ntype}" if not any(type_admits(config, key.ntype, vo, g)
                                                                      for _, vo, g in kinds)
                            else "the queues' nodes")
        if verdict[key] is not None:
            out[n.name] = verdict[key]
    return out


def larger_than_farm(nodes: tuple[Node, ...]) -> Callable[[Job], bool]:
    """A test of whether no set of the farm's nodes, empty, could ever run a job: more cores
    than all of them, a node part wider than the widest node, more nodes than there are, or
    more memory on a node than any node that fits it has -- the planner's own test
    (`mysched.core.place.requests.unfit`), so a job left out here is one it reports
    `never_fits`. `nodes` as the planner sees them (a node type's `mem` applied)."""
    total = sum(n.slots for n in nodes)
    widest = max((n.slots for n in nodes), default=0)
    listed = list(nodes)
    memo: dict[Request, bool] = {}

    def test(job: Job) -> bool:
        if job.cores > total:
            return True
        req = job.request
        if req is None or req.simple:
            return job.cores > widest
        if req not in memo:
            memo[req] = unfit(req, listed) is not None
        return memo[req]

    return test


def closed_spans(index: NodeIndex, nodes: tuple[Node, ...]) -> list[tuple[float, float, int]]:
    """(start, end, slots) the farm's scheduled downtimes close, overlapping windows of a node
    counted once: slot-seconds that are not available to any job."""
    slots = {n.name: n.slots for n in nodes}
    spans: dict[tuple[float, float], int] = {}
    for name, windows in index.downtimes.items():
        merged: list[tuple[float, float]] = []
        for w in windows:  # soonest first; from its begin (its start less its margin) nothing runs
            if merged:
                begin, end = merged[-1]
                if w.begin <= end:
                    merged[-1] = (begin, max(end, w.end))
                    continue
            merged.append((w.begin, w.end))
        for s, e in merged:
            spans[(s, e)] = spans.get((s, e), 0) + slots.get(name, 0)
    return [(s, e, n) for (s, e), n in sorted(spans.items())]


def idle_settings(config: Config, workload: list[TraceJob]) -> list[str]:
    """Settings that no job of `workload` can bring into play, each as a sentence: a what-if
    run of them would print the same figures as without them."""
    kinds = {(tj.job.queue, tj.job.vo or config.vo_of(tj.job.group), tj.job.group, tj.job.user) for tj in workload}
    out = []
    # the partition that follows the demand is the default, not a setting: it stays idle
    # unseen on a single-core workload, as the planner's own default should
    if config.drain.on and not config.drain.auto:
        widest = max((tj.job.cores for tj in workload), default=0)
        if widest < config.drain.min_cores:
            out.append(f"drain is on, but no job asks for drain.min_cores = {config.drain.min_cores} cores or more "
                       f"(the widest asks for {widest}): the partition never drains a node")
    if config.packing:
        hit = {next((pc.name for pc in config.packing if pc.matches(*k)), None) for k in kinds}
        for pc in config.packing:
            if pc.name not in hit:
                out.append(f"packing class {pc.name} ({pc.policy}) takes no job of the workload: it packs nothing and "
                           "its figures are '-'")
    if config.downtimes and workload:
        first = min(tj.job.submit_time for tj in workload)
        for d in config.downtimes:
            if d.end <= first:
                out.append(f"downtime {when(d)} ends before the workload's first submission ({utc(first)} UTC): "
                           "it closes no node in this replay")
    for pool in config.pools:
        for c in pool.consumers:
            if not any(c.matches(q, vo, g) for q, vo, g, _ in kinds):
                out.append(f"pool {pool.name}: no job of the workload belongs to its consumer {c}: its guarantee "
                           "is never asked for")
    return out
