"""Validation: a parsed libconfig tree becomes the core's immutable `Config`.

Every problem is reported at once as ``FILE:LINE: key.path: message`` so an admin can fix a
file in one go; `load_config` raises `ConfigError` with all of them. The resulting `Config`
is immutable and is what the pure planner receives.
"""

from __future__ import annotations

import math
from typing import Any

from mysched.core.settings import (Config, DrainConfig, FarmSpec, GroupConfig, HotLists, NodeType, PackingClass,
                                 QueueConfig, VOConfig)
from mysched.config import schema
from mysched.config.loads import build_loads
from mysched.config.downtimes import build_downtimes
from mysched.config.guarantees import overpromised, sim_farm_slots
from mysched.config.pools import build_pools
from mysched.config.servers import database_problem, server_problem
from mysched.config.users import build_users
from mysched.config.parse import ParsedConfig, Path, at, clip_long, dotted, in_file_order, parse_file, parse_text
from mysched.config.values import (DAY, keep_problems, check_name_format, close_key, kind, MAX_FARM_SLOTS,
                                    parse_address)
from mysched.errors import ConfigError

MIN_CYCLE_GAP = 1.0
"""The shortest scheduler.interval and min_interval, in seconds: a cycle reads every job and
node from pbs_server, and a farm of 10,000 slots takes about a second to read."""

# ---------------------------------------------------------------------------------------
# Validation

class _Checker:
    """Collects problems while walking the raw settings tree."""

    def __init__(self, parsed: ParsedConfig) -> None:
        self.parsed = parsed
        self.problems: list[str] = []

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(clip_long(f"{self.parsed.where(path)}: {dotted(path)}: {message}"))

    def group(self, value: Any, path: Path, allowed: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check a settings group against its allowed keys (the schema's, unless a group of
        named blocks gives its own names); return it (or {})."""
        if allowed is None:
            allowed = schema.allowed(path)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(path, f"expected a group {{ ... }}, got {kind(value)}")
            return {}
        for key in value:
            if key not in allowed:
                hint = close_key(key, allowed)
                self.problem(path + (key,), "unknown setting" + (f" (did you mean '{hint}'?)" if hint else ""))
        return value

    def get(self, grp: dict, path: Path, key: str) -> Any:
        """A setting of the group at `path`, converted as the schema says; its default when it
        is left out or has a problem."""
        spec = schema.setting(path, key)
        if key not in grp or spec.conv is None:
            return spec.default
        try:
            return spec.conv(grp[key])
        except (ValueError, TypeError) as exc:
            self.problem(path + (key,), str(exc))
            return spec.default


def _sets_anything(value: Any) -> bool:
    """Does a settings tree hold any value? An empty file -- or one of empty groups -- is
    refused by check-config, run and a reload alike: on a running daemon it is a file cut
    short while being written far more often than a wish to drop every VO and limit, and a
    daemon started with it would start every job by the defaults."""
    if isinstance(value, dict):
        return any(_sets_anything(v) for v in value.values())
    return True


def build_config(parsed: ParsedConfig) -> Config:
    """Validate a parsed tree and build a `Config`; raise `ConfigError` with every problem,
    in the order of the file's lines."""
    config, problems = validate(parsed)
    if problems:
        raise ConfigError(problems)
    return config


def validate(parsed: ParsedConfig) -> tuple[Config, list[str]]:
    """Every problem of a parsed tree, in the order of the file's lines (`in_file_order`), and
    the `Config` of the rest: a setting with a problem keeps its default, a downtime, pool or
    rule with one may be left out. `mysched check-config` goes on with it to what the settings
    say of the farm, so that one mistake does not hide the others."""
    c = _Checker(parsed)
    for path, first, again in parsed.duplicates:
        c.problems.append(
            f"{at(again)}: {dotted(path)}: duplicate setting (first set "
            f"{'on line ' + str(first[1]) if first[0] == again[0] else 'at ' + at(first)}; "
            "libconfig would silently keep only the last one)"
        )
    if not _sets_anything(parsed.data):
        c.problems.append(f"{parsed.filename}: the file sets nothing (empty, only comments or empty groups): "
                          "a configuration names at least its VOs (etc/mysched.cfg is an example); a file cut "
                          "short while being written looks the same")
    top = c.group(parsed.data, ())

    sch = c.group(top.get("scheduler"), ("scheduler",))
    p = ("scheduler",)
    interval = c.get(sch, p, "interval")
    min_interval = c.get(sch, p, "min_interval")
    max_starts = c.get(sch, p, "max_starts_per_cycle")
    resv_depth = c.get(sch, p, "reservation_depth")
    resv_factor = c.get(sch, p, "reservation_wait_factor")
    max_walltime = c.get(sch, p, "max_walltime")
    if max_walltime is not None and not 0 < max_walltime < math.inf:
        c.problem(p + ("max_walltime",), "must be a positive, finite duration")
        max_walltime = None
    if not MIN_CYCLE_GAP <= interval <= DAY:
        c.problem(p + ("interval",), f"must be a duration from {MIN_CYCLE_GAP:g} s to a day (each cycle reads every "
                  f"job and node from pbs_server), got {interval:g}")
    if min_interval < MIN_CYCLE_GAP:
        c.problem(p + ("min_interval",), f"must be at least {MIN_CYCLE_GAP:g} s (each job event would start a cycle "
                  f"that reads every job and node from pbs_server), got {min_interval:g}")
    elif min_interval > interval:
        c.problem(p + ("min_interval",), "cannot be longer than scheduler.interval")

    hist = c.group(top.get("history"), ("history",))
    p = ("history",)
    window = c.get(hist, p, "window")
    half_life = c.get(hist, p, "half_life")
    database = c.get(hist, p, "database")
    accounting_dir = c.get(hist, p, "accounting_dir")
    if not 0 < window <= 366 * DAY:
        c.problem(p + ("window",), "must be a positive duration of at most a year")
    if "database" in hist and (why := database_problem(database)):
        c.problem(p + ("database",), why)
    if half_life <= 0:
        c.problem(p + ("half_life",), "must be positive (use \"inf\" for no decay)")
    keep_cycles = c.get(hist, p, "keep_cycles")
    keep_jobs = c.get(hist, p, "keep_jobs")
    for key, what in keep_problems(keep_cycles, keep_jobs, window):
        c.problem(p + (key,), what)

    fs = c.group(top.get("fairshare"), ("fairshare",))
    eps = c.get(fs, ("fairshare",), "eps")

    srv = c.group(top.get("server"), ("server",))
    server = c.get(srv, ("server",), "url")
    libtorque = c.get(srv, ("server",), "libtorque")
    libpbs = c.get(srv, ("server",), "libpbs")
    server_timeout = c.get(srv, ("server",), "timeout")
    if not 0 < server_timeout <= 3600:
        c.problem(("server", "timeout"), "must be a positive duration of at most an hour")

    dmn = c.group(top.get("daemon"), ("daemon",))
    state_dir = c.get(dmn, ("daemon",), "state_dir")
    metrics_address = c.get(dmn, ("daemon",), "metrics_address")
    event_address = c.get(dmn, ("daemon",), "event_address")
    event_allow = c.get(dmn, ("daemon",), "event_allow")
    event_reserved_port = c.get(dmn, ("daemon",), "event_reserved_port")
    if "event_allow" in dmn and isinstance(dmn["event_allow"], list) and not dmn["event_allow"]:
        c.problem(("daemon", "event_allow"), "an empty list would refuse every pbs_server contact: leave the "
                  "setting out for pbs_server's own host, or turn events off with event_address = \"off\"")
    leader_timeout = c.get(dmn, ("daemon",), "leader_timeout")
    if leader_timeout != 0 and not 1 <= leader_timeout <= interval:
        c.problem(("daemon", "leader_timeout"), "must be 0 (automatic: half the interval, at most 30 s) or "
                  "between 1 s and scheduler.interval (a standby takes over within it and a quarter more)")
    for key, value in (("metrics_address", metrics_address), ("event_address", event_address)):
        if key in dmn:
            try:
                parse_address(value)
            except ValueError as exc:
                c.problem(("daemon", key), str(exc))

    farm_raw = c.group(top.get("farm"), ("farm",))
    farm = FarmSpec(
        nodes=c.get(farm_raw, ("farm",), "nodes"),
        slots_per_node=c.get(farm_raw, ("farm",), "slots_per_node"),
        name_format=c.get(farm_raw, ("farm",), "name_format"),
    )

    if farm.nodes * farm.slots_per_node > MAX_FARM_SLOTS:
        c.problem(("farm",), f"nodes x slots_per_node is {farm.nodes * farm.slots_per_node}: a simulated farm has "
                  f"at most {MAX_FARM_SLOTS} slots")
    try:
        check_name_format(farm.name_format, farm.nodes)
    except ValueError as exc:
        c.problem(("farm", "name_format"), str(exc))
    if "url" in srv and (why := server_problem(server, farm)):
        c.problem(("server", "url"), why)

    # VOs and groups ------------------------------------------------------------------
    vos: dict[str, VOConfig] = {}
    group_vo: dict[str, str] = {}
    group_where: dict[str, str] = {}
    vos_raw = c.group(top.get("vos"), ("vos",), {k: None for k in (top.get("vos") or {})}
                      if isinstance(top.get("vos"), dict) else {})
    total_share = 0.0
    for name, raw in vos_raw.items():
        p = ("vos", name)
        g = c.group(raw, p)
        groups = c.get(g, p, "groups")
        share = c.get(g, p, "share")
        slots = c.get(g, p, "slots")
        if "share" in g and "slots" in g:
            c.problem(p, "give either share (percent) or slots (absolute), not both")
        total_share += share
        for grp in groups:
            if grp in group_vo and group_vo[grp] != name:
                c.problem(p + ("groups",), f"group '{grp}' is already in VO '{group_vo[grp]}' "
                          f"({group_where[grp]}); a group belongs to one VO")
            else:
                group_vo[grp] = name
                group_where[grp] = parsed.where(p + ("groups",))
        vos[name] = VOConfig(
            name=name, groups=groups, share=share / 100.0, slots=slots,
            max_running=c.get(g, p, "max_running"),
            max_per_node=c.get(g, p, "max_per_node"),
            max_cores=c.get(g, p, "max_cores"),
        )
    if total_share > 100.0 + 1e-9:
        c.problem(("vos",), f"shares add up to {total_share:g} %, more than 100 %")

    # The default VO need not be declared (it then has no share and no limits), whether it is
    # named here or left at "others"; `mysched check-config` says which.
    default_vo = c.get(top, (), "default_vo")

    groups_cfg: dict[str, GroupConfig] = {}
    graw = top.get("groups")
    graw = c.group(graw, ("groups",), {k: None for k in graw} if isinstance(graw, dict) else {})
    for name, raw in graw.items():
        p = ("groups", name)
        g = c.group(raw, p)
        if "vo" in g:
            vo = c.get(g, p, "vo")
            if vo is not None:
                if vo not in vos:
                    c.problem(p + ("vo",), f"'{vo}' is not a VO declared under vos")
                elif name in group_vo and group_vo[name] != vo:
                    c.problem(p + ("vo",), f"group '{name}' is already in VO '{group_vo[name]}' "
                              f"({group_where[name]}); a group belongs to one VO")
                else:
                    group_vo[name] = vo
        groups_cfg[name] = GroupConfig(
            name=name,
            max_running=c.get(g, p, "max_running"),
            max_per_node=c.get(g, p, "max_per_node"),
            share=c.get(g, p, "share"),
            max_cores=c.get(g, p, "max_cores"),
        )
        if groups_cfg[name].share <= 0:
            c.problem(p + ("share",), "must be above 0: a weight among the groups of its VO (1 unless set)")

    for name in vos:
        if name != default_vo and not vos[name].groups and name not in group_vo.values():
            c.problem(("vos", name), f"no unix group belongs to VO '{name}': list its groups (groups = [\"...\"]) "
                      f"or set groups.GROUP.vo; without any, its jobs count as the default VO '{default_vo}'")

    # Node types -------------------------------------------------------------------------
    node_types: list[NodeType] = []
    nraw = top.get("node_types")
    nraw = c.group(nraw, ("node_types",), {k: None for k in nraw} if isinstance(nraw, dict) else {})
    for name, raw in nraw.items():
        p = ("node_types", name)
        g = c.group(raw, p)
        nt = NodeType(
            name=name,
            nodes=c.get(g, p, "nodes"),
            properties=c.get(g, p, "properties"),
            groups=c.get(g, p, "groups"),
            vos=c.get(g, p, "vos"),
            mem=c.get(g, p, "mem"),
        )
        if nt.mem == 0:
            c.problem(p + ("mem",), "must be positive: no job asking for memory could run on the type's nodes")
        if not nt.nodes and not nt.properties:
            c.problem(p, "a node type needs node name patterns (nodes) or node properties (properties)")
        for vo in nt.vos:
            if vo not in vos:
                c.problem(p + ("vos",), f"'{vo}' is not a VO declared under vos")
        node_types.append(nt)
    type_names = {nt.name for nt in node_types}

    # Queues -----------------------------------------------------------------------------
    queues: dict[str, QueueConfig] = {}
    qraw = top.get("queues")
    qraw = c.group(qraw, ("queues",), {k: None for k in qraw} if isinstance(qraw, dict) else {})
    for name, raw in qraw.items():
        p = ("queues", name)
        g = c.group(raw, p)
        q = QueueConfig(
            name=name,
            max_running=c.get(g, p, "max_running"),
            nodes=c.get(g, p, "nodes"),
            node_types=c.get(g, p, "node_types"),
            exclusive=c.get(g, p, "exclusive"),
            max_cores=c.get(g, p, "max_cores"),
        )
        for t in q.node_types:
            if t not in type_names:
                c.problem(p + ("node_types",), f"unknown node type '{t}'")
        if q.exclusive and not q.restricted:
            c.problem(p + ("exclusive",), "an exclusive queue needs nodes or node_types to own")
        queues[name] = q

    def known_queues(path: Path, names: tuple[str, ...]) -> None:
        if not queues:
            return
        for qn in names:
            if qn not in queues:
                c.problem(path, f"unknown queue '{qn}' (not declared under queues)")

    def known_vos(path: Path, names: tuple[str, ...]) -> None:
        for vn in names:
            if vn not in vos:
                c.problem(path, f"unknown VO '{vn}' (not declared under vos)")

    # Hot lists -----------------------------------------------------------------------------
    h = c.group(top.get("hot"), ("hot",))
    hq = c.get(h, ("hot",), "queues")
    hv = c.get(h, ("hot",), "vos")
    known_queues(("hot", "queues"), hq)
    known_vos(("hot", "vos"), hv)
    hot = HotLists(frozenset(hq), frozenset(hv), frozenset(c.get(h, ("hot",), "groups")),
                   frozenset(c.get(h, ("hot",), "users")))

    # Packing classes ------------------------------------------------------------------------
    packing: list[PackingClass] = []
    praw = top.get("packing")
    if praw is not None and not isinstance(praw, dict):
        c.problem(("packing",), f"expected a group of job classes {{ name: {{ ... }}; }}, got {kind(praw)}")
        praw = {}
    for name, raw in (praw or {}).items():
        p = ("packing", name)
        g = c.group(raw, p)
        policy = c.get(g, p, "policy")
        ttl = c.get(g, p, "ttl")
        if "ttl" in g and policy != "exclusive":
            c.problem(p + ("ttl",), "ttl applies only to the exclusive policy")
        pq = c.get(g, p, "queues")
        pv = c.get(g, p, "vos")
        known_queues(p + ("queues",), pq)
        known_vos(p + ("vos",), pv)
        pc = PackingClass(name, policy, frozenset(pq), frozenset(pv),
                          frozenset(c.get(g, p, "groups")),
                          frozenset(c.get(g, p, "users")), ttl)
        if not (pc.queues or pc.vos or pc.groups or pc.users):
            c.problem(p, "a job class needs at least one of queues, vos, groups, users")
        if name == "default":
            c.problem(p, "'default' is the name of the class of all other jobs; choose another name")
        packing.append(pc)

    load_sources, load_rules, node_load = build_loads(c, top, vos, queues)
    dr = c.group(top.get("drain"), ("drain",))
    # neither rate nor max_draining: the partition follows the demand (each is an override;
    # either at 0 switches it off, so that a sweep of drain.rate=0,12 has an "off" cell)
    drain = DrainConfig(rate=c.get(dr, ("drain",), "rate"),
                        max_draining=c.get(dr, ("drain",), "max_draining"),
                        keep=c.get(dr, ("drain",), "keep"),
                        min_cores=c.get(dr, ("drain",), "min_cores"),
                        backfill=c.get(dr, ("drain",), "backfill"))
    if not 0 <= drain.keep <= DAY:
        c.problem(("drain", "keep"), "must be a duration of at most a day")

    pools = build_pools(c, top, vos, set(group_vo) | set(groups_cfg), queues, type_names)
    downtimes = build_downtimes(c, top, type_names)
    users = build_users(c, top)

    config = Config(
        vos=vos, default_vo=default_vo, groups=groups_cfg, queues=queues, users=users,
        node_types=tuple(node_types), hot=hot, packing=tuple(packing), interval=interval,
        min_interval=min_interval, max_starts_per_cycle=max_starts, reservation_depth=resv_depth,
        reservation_wait_factor=resv_factor, max_walltime=max_walltime, history_window=window,
        half_life=half_life, keep_cycles=keep_cycles, keep_jobs=keep_jobs, fairshare_eps=eps, database=database, accounting_dir=accounting_dir,
        server=server, libtorque=libtorque, libpbs=libpbs, server_timeout=server_timeout, state_dir=state_dir, metrics_address=metrics_address,
        event_address=event_address, event_allow=event_allow, event_reserved_port=event_reserved_port,
        leader_timeout=leader_timeout, load_sources=load_sources,
        load_rules=load_rules, node_load=node_load, drain=drain, pools=pools, downtimes=downtimes, farm=farm, source=parsed.filename, group_vo=group_vo,
    )
    slots = sim_farm_slots(config)  # a sim:// server.url: the farm is known here
    if slots is not None and (why := overpromised(config, slots, parsed.where)):
        c.problems.append(why)
    return config, in_file_order(c.problems, parsed)


def load_config(path: str) -> Config:
    """Read, parse and validate a configuration file."""
    return build_config(parse_file(path))


def config_from_text(text: str, filename: str = "<config>") -> Config:
    """Parse and validate configuration text (tests, embedded defaults)."""
    return build_config(parse_text(text, filename))
