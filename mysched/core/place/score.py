"""A node's placement score: which of the nodes a job may use it goes to (lower is better)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from mysched.core.model.batch import Node

if TYPE_CHECKING:
    from mysched.core.settings import Config
    from mysched.core.place.nodeusage import NodeUsage


def keeps_whole(cfg: Config, multicore: bool = True) -> bool:
    """With the multi-core partition on, a job goes to a node that already runs something
    before an empty one (HTCondor's depth-first filling): single-core work spread over empty
    nodes leaves no node whole for a multi-core job but by draining. Diversity ranks next,
    among busy nodes. A partition that follows the demand fills depth-first only while
    multi-core jobs run or wait (`multicore`): a farm of single-core work keeps the
    diversity ranking it always had. Measured alternatives: docs/design/placement-score.md."""
    return cfg.drain.on and (multicore or not cfg.drain.auto)


def key_fn(policy: str, whole: bool = False) -> Callable[[NodeUsage], tuple]:
    """A node's placement score (lower is better); the last item is always the name.
    `whole`: empty nodes last (`keeps_whole`)."""
    if policy in ("fifo", "easy"):
        return lambda ld: (ld.name,)
    if policy == "least-loaded":
        return lambda ld: (-ld.free, ld.name)
    # For a user with no job on the node: highest diversity after placement, then fewest
    # used slots, then name.
    if whole:
        return lambda ld: (ld.used == 0, -(len(ld.users) + 1) / (ld.njobs + 1), ld.used, ld.name)
    return lambda ld: (-(len(ld.users) + 1) / (ld.njobs + 1), ld.used, ld.name)


def empty_key(policy: str, node: Node, whole: bool = False) -> tuple:
    """`key_fn` of a node that runs nothing."""
    if policy in ("fifo", "easy"):
        return (node.name,)
    if policy == "least-loaded":
        return (-node.slots, node.name)
    return (True, -1.0, 0, node.name) if whole else (-1.0, 0, node.name)
