"""The configuration as the planner sees it: immutable, validated values.

Reading and checking a file is `mysched.config`'s job; this module holds only the values
and the rules they answer (which VO a group belongs to, what a VO is guaranteed), so the
pure core does not depend on the libconfig parser.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, replace

from mysched.core.model.windows import Downtime

PACKING_POLICIES = ("none", "relaxed", "exclusive")


@dataclass(frozen=True)
class VOConfig:
    """A virtual organisation: its unix groups, its guaranteed share and its limits."""

    name: str
    groups: tuple[str, ...] = ()
    share: float = 0.0
    """Guaranteed fraction of the online slots (0..1); ignored when `slots` is set."""
    slots: int | None = None
    """Guarantee as an absolute number of slots."""
    max_running: int | None = None
    max_per_node: int | None = None
    max_cores: int | None = None
    """Running cores (slots) of the VO in total, as MAUI's MAXPROC (max_running counts jobs)."""

    def guarantee(self, total_slots: int) -> int:
        """Slots this VO is guaranteed on a farm of `total_slots` usable slots."""
        if self.slots is not None:
            return min(self.slots, total_slots)
        return int(math.floor(self.share * total_slots + 1e-9))

    def share_fraction(self, total_slots: int) -> float:
        """The share as a fraction, whichever way it was written."""
        if self.slots is not None:
            return self.slots / total_slots if total_slots else 0.0
        return self.share


@dataclass(frozen=True)
class GroupConfig:
    """Limits on one unix group (in total and per node), and its share within its VO."""

    name: str
    max_running: int | None = None
    max_per_node: int | None = None
    share: float = 1.0
    """Weight among the groups of its VO (LSF's share tree: the VO's share divided among its
    groups, e.g. production 80 and analysis 20); 1 unless set, so groups weigh alike."""
    max_cores: int | None = None


@dataclass(frozen=True)
class QueueConfig:
    """Site-side settings of a TORQUE queue."""

    name: str
    max_running: int | None = None
    nodes: tuple[str, ...] = ()
    """Node name patterns this queue's jobs may use (empty: every node)."""
    node_types: tuple[str, ...] = ()
    """Node types this queue's jobs may use (empty: every type)."""
    exclusive: bool = False
    """If true, the nodes assigned to this queue take no other queue's jobs."""
    max_cores: int | None = None

    @property
    def restricted(self) -> bool:
        return bool(self.nodes or self.node_types)


@dataclass(frozen=True)
class UserLimits:
    """Limits on each user's running jobs and cores (MAUI's USERCFG MAXJOB, MAXPROC)."""

    max_running: int | None = None
    max_cores: int | None = None


@dataclass(frozen=True)
class NodeType:
    """A class of worker nodes and who may use it (e.g. nodes with software-area write access)."""

    name: str
    nodes: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    vos: tuple[str, ...] = ()
    mem: int | None = None
    """Memory in bytes that jobs may ask for on each of these nodes, in place of what pbs_mom
    reports as physmem (None: pbs_mom's figure)."""

    def matches(self, node_name: str, properties: frozenset[str]) -> bool:
        if any(fnmatch.fnmatchcase(node_name, p) for p in self.nodes):
            return True
        return bool(self.properties) and set(self.properties) <= properties

    @property
    def closed(self) -> bool:
        """Open only to the VOs and groups it names (a type that names none is open to all)."""
        return bool(self.groups or self.vos)

    def allows(self, vo: str, group: str) -> bool:
        if not self.closed:
            return True
        return group in self.groups or vo in self.vos


@dataclass(frozen=True)
class HotLists:
    """Jobs matching any list bypass the share ordering and go first."""

    queues: frozenset[str] = frozenset()
    vos: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.queues or self.vos or self.groups or self.users)


@dataclass(frozen=True)
class PackingClass:
    """A job class with a packing policy (INFN-T1 study): chosen by queue, VO, group or user."""

    name: str
    policy: str = "none"
    queues: frozenset[str] = frozenset()
    vos: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    users: frozenset[str] = frozenset()
    ttl: float = math.inf
    """For `exclusive`: a reserved node with no new class job for `ttl` seconds is released."""

    def matches(self, queue: str, vo: str, group: str, user: str) -> bool:
        return queue in self.queues or vo in self.vos or group in self.groups or user in self.users


LOAD_KINDS = ("prometheus", "file", "command")
STALE_ACTIONS = ("ignore", "stop")


@dataclass(frozen=True)
class LoadSource:
    """An external load value (a storage element's load, a site probe), refreshed on its
    own interval by `mysched.backends.loads`."""

    name: str
    kind: str
    url: str = ""
    """prometheus: the server's base URL."""
    query: str = ""
    """prometheus: an instant PromQL query whose single result is the value."""
    path: str = ""
    """file: a number, or a JSON document holding it at `key`."""
    key: str = ""
    """file: dotted path to the number in a JSON document (empty: the whole file)."""
    command: tuple[str, ...] = ()
    """command: argv whose standard output is a number."""
    interval: float = 60.0
    timeout: float = 10.0
    max_age: float = 300.0
    """A value older than this is stale."""
    on_stale: str = "ignore"
    """"ignore": a stale source throttles nothing; "stop": its rules start nothing new."""


@dataclass(frozen=True)
class LoadRule:
    """Tie a load source to VOs, groups and queues: above `high` nothing new starts for them,
    between `low` and `high` their max_running shrinks linearly; `hysteresis` keeps a value
    hovering at a threshold from flapping."""

    name: str
    source: str
    vos: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    queues: frozenset[str] = frozenset()
    low: float = 0.0
    high: float = 1.0
    hysteresis: float = 0.0

    def applies(self, queue: str, vo: str, group: str) -> bool:
        return vo in self.vos or group in self.groups or queue in self.queues


@dataclass(frozen=True)
class NodeLoadLimits:
    """LSF's loadSched: skip a node whose pbs_mom reports more load per core, or less free
    memory, than this (None: no limit)."""

    max_load_per_core: float | None = None
    min_free_mem: int | None = None
    """bytes"""

    def __bool__(self) -> bool:
        return self.max_load_per_core is not None or self.min_free_mem is not None


@dataclass(frozen=True)
class DrainConfig:
    """The dynamic multi-core partition (`mysched.core.hold.drains`): on by default, sized by
    the waiting multi-core jobs; `rate` and `max_draining` are overrides (rate 0: off)."""

    rate: float | None = None
    """Nodes that may start draining per hour (None: as many as the demand asks)."""
    max_draining: int | None = None
    """Nodes in the partition at most (None: as the demand asks, draining at most half the nodes)."""
    keep: float = 1800.0
    """Seconds a drained node is kept for multi-core jobs."""
    min_cores: int = 2
    """Jobs of at least this many cores are multi-core."""
    backfill: str = "expected"
    """How long a draining node's jobs are taken to run, for backfill there: as long again as
    each has run (`mysched.core.hold.drains.HORIZON_SPAN` times that on a node draining for at
    most half its cores), at most to its requested walltime ("expected"), or to it ("requested")."""

    @property
    def on(self) -> bool:
        """Is the partition on (not switched off by a rate or a maximum of 0)?"""
        return self.rate != 0 and self.max_draining != 0

    @property
    def auto(self) -> bool:
        """Neither override set: the partition follows the demand alone."""
        return self.rate is None and self.max_draining is None


DRAIN_BACKFILL = ("requested", "expected")


CONSUMER_KINDS = ("vo", "group", "queue")


@dataclass(frozen=True)
class Consumer:
    """Who a package guarantee is for (a VO, a unix group or a queue) and how much: a number
    of packages, or a percentage of the pool's total packages."""

    kind: str
    name: str
    packages: int | None = None
    percent: float | None = None

    def guarantee(self, total: int) -> int:
        if self.packages is not None:
            return self.packages
        return int(math.floor((self.percent or 0.0) * total / 100 + 1e-9))

    def matches(self, queue: str, vo: str, group: str) -> bool:
        return self.name == (vo if self.kind == "vo" else group if self.kind == "group" else queue)

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class LoanPolicy:
    """Who may borrow guaranteed packages their owners leave idle (LSF's LOAN_POLICIES).
    The default loans nothing."""

    queues: frozenset[str] = frozenset()
    """Queues whose jobs may borrow; "all" for every queue."""
    max_walltime: float | None = None
    """Longest requested walltime a borrower may have (None: any; a job without one never borrows
    when this is set): the owners get their packages back within it."""
    restricted: bool = False
    """Loan only while no owner of the pool is owed packages for waiting work."""

    def refuses(self, queue: str, walltime: float | None) -> str | None:
        """Why a job of `queue` asking for `walltime` may not borrow (None: it may)."""
        if "all" not in self.queues and queue not in self.queues:
            return f"queue {queue} may not borrow" if self.queues else "the pool loans nothing"
        if self.max_walltime is not None and (walltime is None or walltime > self.max_walltime):
            asked = "no walltime" if walltime is None else f"walltime {walltime / 3600:g} h"
            return f"loans only to jobs of at most {self.max_walltime / 3600:g} h, the job asks {asked}"
        return None


@dataclass(frozen=True)
class PoolConfig:
    """A guaranteed resource pool (LSF's package guarantees): hosts, the package (slots and/or
    memory on one host) and the packages each consumer is guaranteed there."""

    name: str
    hosts: tuple[str, ...] = ()
    """Host name patterns; with `node_types` and `properties`: a host matching any is a candidate
    (none of the three given: every host)."""
    node_types: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    min_mem: int | None = None
    """Selection on node facts: at least this much memory (bytes) ..."""
    min_slots: int | None = None
    """... and this many slots."""
    slots: int = 0
    """Slots in a package (0: packages of memory only)."""
    mem: int = 0
    """Bytes in a package (0: packages of slots only)."""
    consumers: tuple[Consumer, ...] = ()
    loan: LoanPolicy = LoanPolicy()

    def selects(self, name: str, ntype: str | None, properties: frozenset[str], slots: int,
                mem: int | None) -> bool:
        """Does a host meet this pool's criteria (the first such pool gets it)?"""
        if self.hosts or self.node_types or self.properties:
            if not (any(fnmatch.fnmatchcase(name, p) for p in self.hosts) or (ntype in self.node_types)
                    or (bool(self.properties) and set(self.properties) <= properties)):
                return False
        if self.min_slots is not None and slots < self.min_slots:
            return False
        return self.min_mem is None or (mem is not None and mem >= self.min_mem)

    def fit(self, slots: int, mem: float | None) -> int:
        """Packages that fit into `slots` and `mem` bytes (None: memory unknown, not limiting)."""
        n = slots // self.slots if self.slots else None
        if self.mem and mem is not None and mem != math.inf:
            m = max(0, int(mem)) // self.mem
            n = m if n is None else min(n, m)
        return max(0, n) if n is not None else 0

    def packages(self, cores: int, mem: int) -> int:
        """Packages a job's share of one host occupies: a whole multiple, at least one."""
        n = -(-cores // self.slots) if self.slots else 1
        if self.mem and mem:
            n = max(n, -(-mem // self.mem))
        return max(1, n)

    def consumer_of(self, queue: str, vo: str, group: str) -> Consumer | None:
        return next((c for c in self.consumers if c.matches(queue, vo, group)), None)


@dataclass(frozen=True)
class FarmSpec:
    """Farm shape for the simulator (ignored by the daemon, which reads the real farm)."""

    nodes: int = 50
    slots_per_node: int = 8
    name_format: str = "wn{index:04d}"


@dataclass(frozen=True)
class Config:
    """Everything the planner and the daemon need, validated."""

    vos: dict[str, VOConfig] = field(default_factory=dict)
    default_vo: str = "others"
    groups: dict[str, GroupConfig] = field(default_factory=dict)
    queues: dict[str, QueueConfig] = field(default_factory=dict)
    users: dict[str, UserLimits] = field(default_factory=dict)
    """users.NAME, and "default" for every user without a block of their own."""
    node_types: tuple[NodeType, ...] = ()
    hot: HotLists = HotLists()
    packing: tuple[PackingClass, ...] = ()
    interval: float = 60.0
    min_interval: float = 5.0
    max_starts_per_cycle: int = 1000
    reservation_depth: int = 1
    """How many waiting multi-core jobs get a reservation (EASY backfill); 0: none."""
    reservation_wait_factor: float = 0.0
    """A job gets a reservation only once it has waited this many times its requested walltime
    (selective reservation); 0: at once."""
    max_walltime: float | None = None
    """Requested walltimes above this are taken as unknown, and no reservation lies further
    ahead (`mysched.core.rules.walltimes`); None: each queue's resources_max.walltime, else a year."""
    drain: DrainConfig = DrainConfig()
    downtimes: tuple[Downtime, ...] = ()
    """Scheduled maintenance windows (`mysched.core.model.windows`)."""
    pools: tuple[PoolConfig, ...] = ()
    """Package guarantees, in configuration order (a host belongs to the first that selects it)."""
    history_window: float = 2 * 86400.0
    half_life: float = 86400.0
    keep_cycles: float = 30 * 86400.0
    """How long the history store keeps its cycle log (cycles and start attempts); inf: for ever."""
    keep_jobs: float = math.inf
    """How long it keeps finished jobs (at least `history_window`); inf: for ever."""
    fairshare_eps: float = 0.01
    database: str = "sqlite:////var/lib/mysched/history.db"
    accounting_dir: str = "/var/spool/torque/server_priv/accounting"
    server: str = "torque://localhost"
    libtorque: str = ""
    libpbs: str = ""
    """OpenPBS's client library (libpbs.so) for a pbs:// server; empty: found where OpenPBS installs it."""
    server_timeout: float = 30.0
    state_dir: str = "/var/lib/mysched"
    metrics_address: str = "127.0.0.1:9720"
    event_address: str = ""
    event_allow: tuple[str, ...] = ()
    """Who may contact the event port: host names, addresses, networks; empty: pbs_server's
    host (and loopback when it is this host)."""
    event_reserved_port: bool | None = None
    """Contacts only from a port below 1024, as pbs_server sends them as root; None: decided
    at start-up (`mysched.backends.torque.schedproto.contact_rule`)."""
    load_sources: dict[str, LoadSource] = field(default_factory=dict)
    load_rules: tuple[LoadRule, ...] = ()
    node_load: NodeLoadLimits = NodeLoadLimits()
    leader_timeout: float = 0.0
    """How long a leader cut off from the history database keeps leadership at most; 0:
    half the interval, at most 30 s (`leadership_timeout`)."""
    farm: FarmSpec = FarmSpec()
    source: str = "<defaults>"
    group_vo: dict[str, str] = field(default_factory=dict)

    def leadership_timeout(self, scale: float = 1.0) -> float:
        """The leader timeout in wall seconds (`scale`: wall seconds per configured second,
        below 1 on a fast simulated clock): a standby takes over within it and a quarter more."""
        if self.leader_timeout > 0:
            return self.leader_timeout
        return min(30.0, max(2.0, self.interval * scale / 2))

    def vo_of(self, group: str) -> str:
        """The VO a unix group belongs to (the default VO for unmapped groups)."""
        return self.group_vo.get(group, self.default_vo)

    def user_limits(self, user: str) -> tuple[str, UserLimits] | None:
        """A user's limits and the block that sets them: their own (users.NAME, which replaces
        the default, as MAUI's USERCFG), else users.default; None: none."""
        key = user if user in self.users else "default" if "default" in self.users else None
        return (f"users.{key}", self.users[key]) if key is not None else None

    def vo(self, name: str) -> VOConfig:
        """A VO's settings; an undeclared VO (e.g. the default) has no share and no limits."""
        return self.vos.get(name) or VOConfig(name)


def auto_vos(config: Config, group_vo: dict[str, str]) -> Config:
    """Declare the VOs a replayed trace needs that the configuration lacks.

    `group_vo` maps each group of the trace to its VO (itself when there is no mapping, so
    each SWF group becomes a VO named after it). Groups the configuration already maps keep
    their VO; new VOs share equally what the configured shares leave free -- nothing when
    the configured shares add up to 100 % (they then run only on what others leave, as the
    daemon's `default_vo` would; `mysched simulate` says so).
    """
    new_map = {g: v for g, v in group_vo.items() if g not in config.group_vo}
    new_vos = sorted({v for v in new_map.values() if v not in config.vos})
    if not new_map:
        return config
    vos = dict(config.vos)
    if new_vos:
        left = max(0.0, 1.0 - sum(v.share for v in config.vos.values() if v.slots is None))
        share = left / len(new_vos)
        for v in new_vos:
            vos[v] = VOConfig(name=v, groups=tuple(sorted(g for g, x in new_map.items() if x == v)), share=share)
    gv = dict(config.group_vo)
    gv.update(new_map)
    return replace(config, vos=vos, group_vo=gv)
