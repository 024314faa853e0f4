"""Random small farms for the agreement properties (`test_admission_agreement`).

A `Case` is what one scheduling cycle sees: nodes (of different sizes, states, properties
and node types), the jobs running on them (with start times and walltimes), queued jobs
(cores on one node, sometimes whole requests), a configuration (VO shares and guarantees,
queues restricted to nodes or node types, exclusive queues; on request per-node limits,
packing classes, a drain partition, a guarantee pool, a scheduled downtime) and what the
last plan left (reservations, drains, pool gates). Everything goes in through public
surfaces: the configuration is written as text and read by `config_from_text`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from hypothesis import strategies as st

from mysched.config import config_from_text
from mysched.core.settings import Config
from mysched.core.hold.drains import Drain
from mysched.core.model.batch import Job, JobState, Node, NodeState, Queue, Snapshot
from mysched.core.model.request import NodePart, Request
from mysched.core.hold.reservations import Reservation

EPOCH = datetime(2026, 12, 1, tzinfo=timezone.utc)
NOW = EPOCH.timestamp()
"""The cycle's time: downtimes are written as ISO dates around it."""

EVERYWHERE = "x86"
"""A property every node has (a request naming it asks nothing more than cores)."""

GROUPS = ("atlas", "atlsgm", "cms", "lhcb", "other")
"""atlas and atlsgm are VO atlas, cms and lhcb their own VOs, other the default VO."""
QUEUES = ("grid", "grid", "short", "sw", "ded", "mpi")
PROPS = ("ib", "gpu", "ssd")
WALLTIMES = (None, 600.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 48 * 3600.0)


@dataclass(frozen=True)
class Features:
    """Which of the planner's rules a case may switch on."""

    limits: bool = True
    """Per-node VO/group limits and total limits."""
    packing: bool = True
    drain: bool = True
    pools: bool = True
    downtimes: bool = True
    reservations: bool = True
    requests: bool = True
    """Whole requests among the queued jobs (nodes=N:ppn=M, properties, memory)."""
    request_every: int = 4
    """About one queued job in this many is a whole request (when `requests`)."""


ALL = Features()
PLAIN = Features(limits=False, packing=False, drain=False, pools=False, reservations=False, requests=False)
"""The rules a start estimate knows: node access (types, queues) and downtimes."""


@dataclass
class Case:
    config: Config
    text: str
    nodes: tuple[Node, ...]
    running: tuple[Job, ...]
    queued: tuple[Job, ...]
    reservations: dict[str, Reservation] = field(default_factory=dict)
    drains: dict[str, Drain] = field(default_factory=dict)
    pool_gates: dict[str, tuple[str, str]] = field(default_factory=dict)
    now: float = NOW

    def snapshot(self, queued: tuple[Job, ...] | None = None) -> Snapshot:
        """The farm with `queued` waiting (default: the case's queued jobs)."""
        jobs = self.running + (self.queued if queued is None else queued)
        qs = tuple(Queue(q) for q in sorted(set(QUEUES)))
        return Snapshot(self.now, jobs, self.nodes, qs, "sim://")

    def vo_of(self, job: Job) -> str:
        return job.vo or self.config.vo_of(job.group)

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        nodes = ", ".join(f"{n.name}:{n.slots}{'' if n.state is NodeState.FREE else '/' + n.state.value}"
                          f"{'[' + ','.join(sorted(n.properties - {EVERYWHERE})) + ']' if n.properties - {EVERYWHERE} else ''}"
                          for n in self.nodes)
        run = ", ".join(f"{j.id}({j.group}/{j.queue} {j.cores}c on {j.placement[0][0]} "
                        f"start {j.start_time - self.now:+.0f} wall {j.walltime})" for j in self.running)
        q = ", ".join(f"{j.id}({j.group}/{j.user}/{j.queue} {j.cores}c{' ' + str(j.request) if j.request else ''}"
                      f"{'' if j.state is JobState.QUEUED else ' ' + j.state.value} wall {j.walltime})"
                      for j in self.queued)
        return (f"Case(\n  config:\n{self.text}\n  nodes: {nodes}\n  running: {run}\n  queued: {q}\n"
                f"  reservations: {self.reservations}\n  drains: {self.drains}\n  pool_gates: {self.pool_gates})")


def _iso(offset_h: float) -> str:
    return (EPOCH + timedelta(hours=offset_h)).strftime("%Y-%m-%dT%H:%M")


def cases(features: Features = ALL, min_nodes: int = 2, max_nodes: int = 12, max_queued: int = 20
          ) -> st.SearchStrategy[Case]:
    """Random cycles (see the module's docstring). Hypothesis draws the sizes, which rules are
    on, and a seed for the rest: drawing every detail through it made a case 80 ms, the whole
    suite minutes (hypothesis still shrinks the sizes and switches rules off)."""
    on = (lambda f: st.booleans() if f else st.just(False))
    return st.builds(make_case, st.integers(min_nodes, max_nodes), st.integers(0, max_queued),
                     on(features.limits), on(features.packing), on(features.drain), on(features.pools),
                     on(features.downtimes), on(features.reservations), on(features.requests),
                     st.integers(0, 2**32 - 1), st.just(features.request_every))


def make_case(n: int, nq: int, limits: bool, packing: bool, drain: bool, pools: bool, downtimes: bool,
          reservations: bool, requests: bool, seed: int, request_every: int = 4) -> Case:
    """One cycle (the arguments are what `cases` draws; a failing example names them)."""
    rnd = random.Random(seed)
    choice = rnd.choice
    names = [f"wn{i:02d}" for i in range(1, n + 1)]
    quoted = (lambda xs: ", ".join(f'"{x}"' for x in xs))
    nodes = []
    for name in names:
        slots = choice((1, 2, 4, 4, 8, 8))
        state = choice((NodeState.FREE,) * 6 + (NodeState.DOWN, NodeState.OFFLINE))
        props = frozenset(rnd.sample(PROPS, rnd.choice((0, 0, 1, 2)))) | {EVERYWHERE}
        nodes.append(Node(name, slots, state, props))

    def sub() -> list[str]:
        return rnd.sample(names, rnd.randint(1, max(1, n // 2)))

    big, ded, mpi = sub(), sub(), sub()
    # --- configuration ---------------------------------------------------------------------
    guarantee = choice(("share = 40;", "share = 10;", "slots = 6;", "slots = 1;", "share = 0;"))
    vo_lim = ""
    grp = 'atlsgm = { max_per_node = 1; };' if limits and rnd.random() < 0.5 else ""
    if limits:
        vo_lim = choice(("", "max_per_node = 2;", "max_per_node = 1;", "max_running = 6;",
                                       "max_cores = 9;"))
    text = (f'vos = {{ atlas = {{ groups = ["atlas", "atlsgm"]; {guarantee} {vo_lim} }};\n'
            f'        cms = {{ groups = ["cms"]; {choice(("share = 30;", "slots = 4;", "share = 5;"))} }};\n'
            f'        lhcb = {{ groups = ["lhcb"]; share = {choice((10, 20, 0))}; }}; }};\n')
    if grp:
        text += f"groups = {{ {grp} }};\n"
    excl = "exclusive = true;" if rnd.random() < 0.5 else ""
    text += (f'queues = {{ grid = {{}}; short = {{}}; sw = {{ node_types = ["big"]; }};\n'
             f'  ded = {{ nodes = [{quoted(ded)}]; {excl} }};\n'
             f'  mpi = {{ nodes = [{quoted(mpi)}]; }}; }};\n')
    types = [f'big = {{ nodes = [{quoted(big)}]; groups = ["atlsgm", "cms"]; }};']
    if rnd.random() < 0.5:
        types.append('gpu = { properties = ["gpu"]; vos = ["cms", "lhcb"]; };')
    text += f"node_types = {{ {' '.join(types)} }};\n"
    depth = choice((0, 1, 2)) if reservations else 0
    text += f"scheduler = {{ reservation_depth = {depth}; }};\n"
    if packing and rnd.random() < 0.5:
        pol = choice(("none", "relaxed", "exclusive"))
        ttl = ' ttl = "1h";' if pol == "exclusive" else ""
        text += f'packing = {{ mc = {{ policy = "{pol}"; groups = ["lhcb"];{ttl} }}; }};\n'
    mc_min = 2
    drain_on = drain and rnd.random() < 0.5
    if drain_on:
        mc_min = choice((2, 4))
        text += f'drain = {{ rate = 4; max_draining = 2; keep = "30m"; min_cores = {mc_min}; }};\n'
    pool_on = pools and rnd.random() < 0.5
    if pool_on:
        hosts = sub()
        loan = choice(('loan = { queues = ["all"]; };', 'loan = { queues = ["short"]; };',
                                     'loan = { queues = ["all"]; max_walltime = "2:00:00"; restricted = true; };',
                                     ""))
        pct = choice(('"50%"', "2", '"100%"'))
        text += (f'pools = {{ mc = {{ hosts = [{quoted(hosts)}]; '
                 f'package = {{ slots = {choice((1, 2, 4))}; }}; vos = {{ cms = {pct}; }}; {loan} }}; }};\n')
    if downtimes and rnd.random() < 0.5:
        begin = choice((-1.0, 0.5, 1.0, 3.0, 10.0))
        length = choice((1.0, 4.0))
        where = ""
        if rnd.random() < 0.5:
            where = f' hosts = [{quoted(sub())}];'
        text += f'downtimes = {{ dt = {{ start = "{_iso(begin)}"; end = "{_iso(begin + length)}";{where} }}; }};\n'
    config = config_from_text(text, "<case>")
    # --- running jobs ------------------------------------------------------------------------
    running: list[Job] = []
    k = 0
    for node in nodes:
        if not node.state.usable:
            continue
        used = choice((0, node.slots, node.slots, node.slots // 2, max(0, node.slots - 1)))
        while used > 0:
            c = rnd.randint(1, used)
            used -= c
            k += 1
            g = choice(GROUPS)
            start = NOW - choice((60.0, 1800.0, 3 * 3600.0, 20 * 3600.0))
            running.append(Job(f"r{k}", choice(QUEUES), f"{g}{rnd.randint(1, 3)}", g, c,
                               JobState.RUNNING, start - 100, start, choice(WALLTIMES),
                               placement=((node.name, c),)))
    # --- queued jobs -----------------------------------------------------------------------
    queued: list[Job] = []
    largest = max(nd.slots for nd in nodes)
    for i in range(nq):
        g = choice(GROUPS)
        cores = rnd.randint(1, largest + (1 if rnd.randint(0, 9) == 0 else 0))
        req = None
        if requests and rnd.randint(1, request_every) == 1:
            count = rnd.randint(1, 3)
            ppn = rnd.randint(1, min(largest, 8))
            props = frozenset(rnd.sample(PROPS + (EVERYWHERE,), rnd.choice((0, 0, 1))))
            mem = choice((None, None, 0, 2**30))
            req = Request(parts=(NodePart(count, ppn, None, props),), mem=mem)
            cores = req.cores
        state = JobState.QUEUED if rnd.randint(0, 9) else JobState.HELD
        queued.append(Job(f"q{i}", choice(QUEUES), f"{g}{rnd.randint(1, 3)}", g, cores, state,
                          NOW - 10_000 + i * 7, None, choice(WALLTIMES), request=req))
    # --- what the last plan left ---------------------------------------------------------------
    up = [nd.name for nd in nodes if nd.state.usable]
    resv: dict[str, Reservation] = {}
    if reservations and depth and up:
        for j in queued:
            if (j.cores > 1 and j.request is None and j.state is JobState.QUEUED and rnd.randint(0, 2) == 0):
                resv[j.id] = Reservation(j.id, NOW + choice((0.0, 600.0, 7200.0)),
                                                 (choice(up),))
    drains: dict[str, Drain] = {}
    if drain_on and up:
        for name in rnd.sample(up, min(len(up), rnd.randint(0, 2))):
            drains[name] = Drain(name, NOW - 600, choice((None, NOW - 60)))
    gates: dict[str, tuple[str, str]] = {}
    if pool_on and up:
        for name in rnd.sample(up, min(len(up), rnd.randint(0, 2))):
            gates[name] = ("mc", choice(("guarded", "held")))
    return Case(config, text, tuple(nodes), tuple(running), tuple(queued), resv, drains, gates)
