"""What a server URL may be -- ``torque://HOST`` (or a bare host name), ``pbs://HOST[:PORT]``
(OpenPBS; ``openpbs://`` alike) or ``sim://?...`` --
and a history database URL: one rule each that `mysched check-config`, `mysched run` and a
reload all ask, so that a URL the daemon would refuse (or read as "the local pbs_server", as an
empty one was) never passes a check first.

``sim://?nodes=50&slots=8&speed=60&seed=1&hours=48&backlog=6``: each parameter is read and
checked on its own (NaN and infinity included) and named when refused; what is not given
comes from the configuration's ``farm`` section and the defaults below.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlparse

from mysched.config.parse import clip
from mysched.config.values import MAX_FARM_SLOTS, MAX_WORKLOAD_HOURS
from mysched.core.settings import FarmSpec

MAX_SPEED = 1e6
"""The fastest virtual clock (a year in about half a minute); an infinite one would jump past every event."""

_HOST = re.compile(r"(?P<host>[A-Za-z0-9_.\-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::(?P<port>[0-9]{1,5}))?")
"""A host name, IPv4 or [IPv6] address, with pbs_server's port if not the default."""


@dataclass(frozen=True)
class SimParams:
    """A ``sim://`` farm: its size, clock and synthetic workload."""

    nodes: int
    slots: int
    speed: float = 60.0
    seed: int = 1
    hours: float = 48.0
    backlog: float = 6.0


def _whole(v: str) -> int:
    return int(v.strip()) if re.fullmatch(r"\s*[-+]?\d{1,18}\s*", v, re.A) else math.nan  # type: ignore[return-value]


def _real(v: str) -> float:
    try:
        return float(v) if len(v) <= 40 else math.nan
    except ValueError:
        return math.nan


def sim_params(url: str, farm: FarmSpec) -> SimParams:
    """The parameters of a ``sim://`` URL; `ValueError` naming the first that is refused."""
    parts = urlparse(url)
    if parts.scheme != "sim":
        raise ValueError(f"not a sim:// URL: {clip(url)}")
    if parts.netloc or parts.path.strip("/"):
        raise ValueError(f"a sim:// URL names no host or path, only parameters (sim://?nodes=50&slots=8), "
                         f"got {clip(url)!r}")
    given = parse_qs(parts.query, keep_blank_values=True)
    twice = sorted(k for k, v in given.items() if len(v) > 1)
    if twice:
        raise ValueError(f"parameter(s) given twice: {clip(', '.join(twice))}")
    q = {k: v[-1] for k, v in given.items()}
    known = ("backlog", "hours", "nodes", "seed", "slots", "speed")
    unknown = sorted(set(q) - set(known))
    if unknown:
        raise ValueError(f"unknown parameter(s) {clip(', '.join(unknown))}; known: {', '.join(known)}")
    d = SimParams(farm.nodes, farm.slots_per_node)
    got = {k: (_whole if k in ("nodes", "slots", "seed") else _real)(q[k]) if k in q else getattr(d, k) for k in known}
    # each checked on its own, NaN included (every comparison with it is false), so that the
    # message names the parameter; an infinite speed would move the clock to infinity
    for name, ok, rule in (
            ("nodes", got["nodes"] >= 1, "a positive whole number"),
            ("slots", got["slots"] >= 1, "a positive whole number"),
            ("speed", 0 < got["speed"] <= MAX_SPEED, f"a positive number of at most {MAX_SPEED:g}"),
            ("seed", got["seed"] == got["seed"], "a whole number"),
            ("hours", 0 < got["hours"] <= MAX_WORKLOAD_HOURS,
             f"a positive number of at most {MAX_WORKLOAD_HOURS} (a year)"),
            ("backlog", 0 <= got["backlog"] <= MAX_WORKLOAD_HOURS, f"a number of hours from 0 to {MAX_WORKLOAD_HOURS}")):
        if not ok:
            raise ValueError(f"{name} must be {rule}, got {clip(q.get(name, str(got[name])))}")
    p = SimParams(**got)
    if p.nodes * p.slots > MAX_FARM_SLOTS:
        raise ValueError(f"nodes x slots is {p.nodes * p.slots}: a farm of at most {MAX_FARM_SLOTS} slots")
    return p


def torque_host(url: str) -> str:
    """The pbs_server host of ``torque://HOST`` or of a bare host name; `ValueError` if it
    names none (an empty URL would be read as "the server of this host's TORQUE set-up")."""
    host = url[len("torque://"):] if url.startswith("torque://") else url
    if not host.strip():
        raise ValueError("names no pbs_server host: use torque://HOST (e.g. torque://localhost) or sim://")
    m = _HOST.fullmatch(host)
    if not m or (m["port"] is not None and not 1 <= int(m["port"]) <= 65535):
        raise ValueError(f"expected torque://HOST or torque://HOST:PORT (a port from 1 to 65535) or sim://, "
                         f"got {clip(url)!r}")
    return host


OPENPBS_SCHEMES = ("pbs", "openpbs")
"""URL schemes of an OpenPBS server."""


def scheme(url: str) -> str:
    """A server URL's kind: ``sim``, ``torque`` (also a bare host name), ``openpbs``, or the
    unknown scheme as written."""
    s = url.split("://", 1)[0] if "://" in url else ("sim" if url.startswith("sim:") else "")
    return "openpbs" if s in OPENPBS_SCHEMES else "torque" if s == "" else s


def openpbs_host(url: str) -> str:
    """The server host (and port) of ``pbs://HOST[:PORT]`` or ``openpbs://...``; `ValueError`
    if it names none."""
    host = url.split("://", 1)[1] if "://" in url else ""
    if not host.strip():
        raise ValueError("names no OpenPBS server host: use pbs://HOST or pbs://HOST:PORT (e.g. pbs://localhost)")
    m = _HOST.fullmatch(host)
    if not m or (m["port"] is not None and not 1 <= int(m["port"]) <= 65535):
        raise ValueError(f"expected pbs://HOST or pbs://HOST:PORT (a port from 1 to 65535), got {clip(url)!r}")
    return host


def server_problem(url: str, farm: FarmSpec) -> str | None:
    """What is wrong with a server URL (None: nothing): an unknown scheme, no host, a sim://
    parameter out of range."""
    kind = scheme(url)
    try:
        if kind == "sim":
            sim_params(url, farm)
        elif kind == "torque":
            torque_host(url)
        elif kind == "openpbs":
            openpbs_host(url)
        else:
            return f"unknown server scheme '{clip(kind)}': use torque://HOST, pbs://HOST (OpenPBS) or sim://"
    except ValueError as exc:
        return str(exc)
    return None


DRIVER_EXTRAS = {("postgresql", "psycopg2"): "postgresql"}
"""The extra of mysched that installs a database driver (pyproject.toml: ``mysched[postgresql]``
brings psycopg2-binary, SQLAlchemy's default driver of postgresql://)."""


def missing_driver(backend: str, driver: str, exc: ImportError) -> str:
    """What to install for a database driver that failed to import: the extra that brings it,
    where there is one -- said by `mysched check-config`, a reload and the store alike."""
    module = getattr(exc, "name", None) or "its driver"
    said = f"the {driver} driver of {backend} is not installed here (Python module {module})"
    extra = DRIVER_EXTRAS.get((backend, driver))
    if extra:
        return f"{said}: pip install 'mysched[{extra}]'"
    extras = [f"{b}+{d}:// with pip install 'mysched[{e}]'" for (b, d), e in DRIVER_EXTRAS.items() if b == backend]
    return f"{said}: install it, or use {extras[0]}" if extras else f"{said}: install it, or name an installed driver"


def database_problem(url: str) -> str | None:
    """What is wrong with a history database URL (None: nothing): not a URL, a kind of
    database SQLAlchemy does not know, or a driver not installed here -- found by loading the
    dialect and its driver module as `create_engine` would, without connecting."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    example = "sqlite:////var/lib/mysched/history.db or postgresql+psycopg2://USER:PASSWORD@HOST/DB"
    if re.search(r"[\x00-\x1f\x7f]", url):  # no file or host name holds one; the OS refuses a NUL outright
        return f"a database URL holds no control characters (e.g. {example})"
    try:
        u = make_url(url)
    except (ArgumentError, ValueError):
        return f"not a database URL (e.g. {example})"
    try:
        dialect = u.get_dialect()
    except ArgumentError:
        return f"unknown kind of database '{clip(u.drivername)}': use {example}"
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        return missing_driver(u.get_backend_name(), u.get_driver_name(), exc)
    except Exception:  # noqa: BLE001 - a driver broken on import: what an admin can act on
        return f"the {u.get_driver_name()} driver of {u.get_backend_name()} fails to load: reinstall it"
    return None
