"""May this job start on this node now? One ordered list of named checks, asked by every
caller: the fast scan, the explanation of a wait, whole-request placement, the simulator's
share-violation check and `mysched free`.

Each check is a reason and a condition over one node's usage (`ld`), the job's ask (`a`) and
the plan's gates (`g`: the components that keep room back). The first check whose condition
holds is the node's reason; a node none refuses admits the job. The fast scan and the
explanation are compiled from the same list once per process (a scan over thousands of nodes
cannot afford a call per check), so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from mysched.core.model.reasons import Reason
from mysched.core.model.batch import Job
from mysched.core.place.nodeusage import NodeUsage


class Check(NamedTuple):
    """One rule: `reason` is the reason it gives (`why`, an expression, where it depends on the
    node or the job), `refuses` the condition under which the node is refused."""

    reason: Reason
    refuses: str
    why: str = ""
    """An expression for the reason where it is not `reason` itself."""


CHECKS: tuple[Check, ...] = (
    Check(Reason.NODE_NAME, "host is not None and ld.name != host"),
    Check(Reason.NODE_LOAD, "overloaded and ld.name in overloaded",
          "R.NODE_LOAD if ld.free >= cores else R.NO_FREE_SLOT"),
    Check(Reason.NODE_DOWN, "not ld.usable and (ld.name not in dt_closed or not by_name[ld.name].usable)"),
    Check(Reason.NO_FREE_SLOT, "ld.free < cores or (excl and ld.njobs)"),
    Check(Reason.QUEUE_NODES, "ld.group not in groups", "access(ld.key, job.queue)"),
    Check(Reason.DOWNTIME, "dt_on and (ld.name in dt_ahead or ld.name in dt_closed) and shuts(ld.name, wall)"),
    Check(Reason.PACKING, "ld.reserved is not None and ld.reserved != cls"),
    Check(Reason.RESERVED, "resv_nodes and ld.name in resv_nodes and resv_refuses(job, ld, cores)"),
    Check(Reason.DRAINING, "draining and ld.name in draining and blocks(job, ld.name)"),
    Check(Reason.POOL_HELD, "gate and ld.name in gate and (pr := pool_refuses(job, vo, ld.name, cores, mem)) is not None",
          "pr"),
    Check(Reason.VO_NODE_LIMIT, "vmax is not None and ld.vos.get(vo, 0) >= vmax"),
    Check(Reason.GROUP_NODE_LIMIT, "gmax is not None and ld.groups.get(group, 0) >= gmax"),
    Check(Reason.NODE_PROPERTIES, "props and not props <= by_name[ld.name].node.properties"),
    Check(Reason.NODE_MEMORY, "(mem or vmem) and (ld.mem_free() < mem or ld.vmem_free() < vmem)"),
)
"""In the order a wait is explained: a node's first refusal is its reason."""


class Ask(NamedTuple):
    """What a job asks of one node."""

    job: Job
    vo: str
    cls: str | None
    """Its packing class (None: default jobs, or no packing)."""
    cores: int
    groups: Any
    """The node groups (`NodeGroup`) it may use: a set, or anything `in` works on."""
    vmax: int | None = None
    gmax: int | None = None
    mem: int = 0
    vmem: int = 0
    excl: bool = False
    props: frozenset = frozenset()
    host: str | None = None
    """The host a request's part names (None: any)."""


class Gates(NamedTuple):
    """What the checks read besides the node and the ask: the plan's components."""

    by_name: dict
    overloaded: dict[str, str]
    dt_closed: dict
    dt_ahead: dict
    shuts: Callable[[str, float | None], bool]
    resv_nodes: dict
    resv_refuses: Callable[[Job, NodeUsage, int], bool]
    draining: dict
    blocks: Callable[[Job, str], bool]
    gate: dict
    pool_refuses: Callable[..., str | None]
    access: Callable[[Any, str], str]
    """The reason a node group the job may not use gives (queue_nodes or node_type)."""


_UNPACK = ("    job, vo, cls, cores, groups, vmax, gmax, mem, vmem, excl, props, host = a\n"
           "    group, wall = job.group, job.walltime\n")


def _source(checks: tuple[Check, ...]) -> str:
    names = ", ".join(Gates._fields)
    refused = "\n                or ".join(f"({c.refuses})" for c in checks)
    firsts = "".join(f"        if {c.refuses}:\n            return {c.why or 'R.' + c.reason.name}\n" for c in checks)
    return f'''
def bind(g):
    {names} = g
    dt_on = bool(dt_closed) or bool(dt_ahead)

    def admits(ld, a):
{_UNPACK.replace("    ", "        ")}        return not ({refused})

    def scan(keys, usages, a, held_only, avoid, only, diverse):
{_UNPACK.replace("    ", "        ")}        user = job.user
        fallback = None
        for key in keys:
            ld = usages[key[-1]]
            if held_only and ld.reserved != cls:
                continue
            if only is not None and ld.name not in only:
                continue
            if avoid is not None and ld.classes.get(avoid, 0) > 0:
                continue
            if ({refused}):
                continue
            if not diverse:
                return (key, ld)
            uj = ld.users.get(user, 0)
            if uj == 0:
                return ((0,) + key, ld)
            fk = (uj, -len(ld.users) / (ld.njobs + 1), ld.used, ld.name)
            if fallback is None or fk < fallback[0]:
                fallback = (fk, ld)
        return fallback

    def first(ld, a):
{_UNPACK.replace("    ", "        ")}{firsts}        return None

    return admits, scan, first
'''


def _compile(checks: tuple[Check, ...]) -> Callable[[Gates], tuple[Callable, Callable, Callable]]:
    space: dict[str, Any] = {"R": Reason}
    exec(compile(_source(checks), "<mysched.core.place.admission>", "exec"), space)  # noqa: S102
    return space["bind"]


_BIND = _compile(CHECKS)


class Admission:
    """The checks bound to one plan's gates.

    `admits(ld, ask)`: does the node take the job? `first(ld, ask)`: the first check that
    refuses it (None: it admits). `scan(keys, usages, ask, held_only, avoid, only, diverse)`:
    the best admitted node along a ranking, as (sort key, usage) -- with `diverse` the first
    node without a job of the user, else the one with the fewest; `held_only` keeps to nodes
    reserved for the ask's class, `avoid` skips nodes running that class, `only` keeps to
    those nodes (preferences, not admission)."""

    __slots__ = ("gates", "admits", "scan", "first")

    def __init__(self, gates: Gates) -> None:
        self.gates = gates
        self.admits, self.scan, self.first = _BIND(gates)


def _never(*_a: object) -> bool:
    return False


class IdleAdmission:
    """The checks asked of nodes as if they ran nothing and nothing held them: whether a node
    could ever take the job (up, open to its queue and kind, wide enough, with the properties
    it asks) -- what start estimates and reservations ask of a node before asking when. Given
    the cores free now, what `mysched free` asks: up, with room, open to a queue."""

    def __init__(self, entries: dict[str, Any], access: Callable[[Any, str], str],
                 free: dict[str, int] | None = None) -> None:
        """`entries`: node name -> its `NodeEntry` (node, type, key, usable, counted); `free`:
        the cores each node has free now, to ask of the nodes as they are (else as if idle)."""
        self.entries = entries
        self.free = free
        _, _, self._first = _BIND(Gates(entries, {}, {}, {}, _never, {}, _never, {}, _never, {}, _never, access))
        self._idle: dict[str, NodeUsage] = {}

    def _usage(self, name: str) -> NodeUsage:
        ld = self._idle.get(name)
        if ld is None:
            e = self.entries[name]
            ld = self._idle[name] = NodeUsage(e.node, e.key, e.usable)
            ld.free = ld.slots if self.free is None else self.free.get(name, 0)  # idle: whatever pbs_server says
            ld.group = e.key  # an ask's `groups` here are node group keys
        return ld

    def first(self, name: str, ask: Ask) -> str | None:
        """The first check that would refuse the job on node `name` were it idle (None: none)."""
        return self._first(self._usage(name), ask)
