"""Accounting lines and store read-outs shared by the store and ingestion tests."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from mysched.history.store import Store, ingest_positions

APEL = "apel-test_pbs-torque-accounting-E-records.log"

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
both = pytest.mark.parametrize("db_url", BACKENDS, indirect=True)
"""Run a test on SQLite and on PostgreSQL (the `db_url` fixture of conftest.py)."""

LINE = ("{d} 10:00:{s:02d};E;{jid}.srv;user=u{u} group=atlas jobname=j queue=atlas ctime=1 qtime=1 etime=1 "
        "start={start} owner=u@ce exec_host=wn01/0-1 Resource_List.nodes=1:ppn=2 end={end} Exit_status=0 "
        "resources_used.cput=01:00:00 resources_used.walltime=00:10:00\n")


def lines(n: int, first: int = 0, day: str = "11/22/2026") -> str:
    """`n` E records of distinct jobs `first`..`first+n-1`."""
    return "".join(LINE.format(d=day, s=i % 60, jid=first + i, u=i % 3, start=1000 + first + i,
                               end=1600 + first + i) for i in range(n))


def positions(s: Store) -> dict[str, dict]:
    with s.engine.connect() as c:
        return {r.path: dict(r._mapping) for r in c.execute(select(ingest_positions))}


def with_starts(text: str) -> str:
    """Each `E` line of `text` preceded by the `S` record of its start (same job, owner and
    start), as pbs_server writes them: what an `E` record must match to be charged."""
    out = []
    for ln in text.splitlines(keepends=True):
        head, sep, attrs = ln.partition(";E;")
        if sep:
            jid, _, rest = attrs.partition(";")
            keep = " ".join(kv for kv in rest.split() if kv.split("=")[0] in ("user", "group", "queue", "start",
                                                                               "owner", "exec_host"))
            out.append(f"{head};S;{jid};{keep}\n")
        out.append(ln)
    return "".join(out)
