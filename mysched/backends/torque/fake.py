"""A scripted stand-in for libtorque: the TORQUE adapter runs against it without a pbs_server.

Like httpx's MockTransport it sits exactly where the real thing does -- behind the `IFL`
protocol -- and answers as libtorque 6.1 does: a stat call that fails returns no rows and
sets pbs_errno; `runjob` returns the error code and, when it succeeds, the job runs where it
was told (state R, exec_host from the location), so a daemon cycle against it behaves like
one against a server. Tests, `mysched bench` and site scripts use it alike.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from mysched.backends.torque.ifl import PackedRows, StatResult, pack
from mysched.backends.torque.values import array_parent, parse_slot_limit

ERRORS = {15001: "Unknown Job Id Error", 15046: "Resource temporarily unavailable", 15007: "Unauthorized Request"}
STRERRORS = {15033: "Batch protocol error", 15010: "Access from host not allowed, or unknown host"}


class FakeIFL:
    """Holds `jobs`, `nodes`, `queues` and `server` as (name, attributes) rows.

    Scripting: `connect_rc` (connection handles to hand out first, e.g. -1 for a refused
    connect), `fail_stat` (pbs_errno of the next failing stat calls), `run_rc` / `run_errno`
    (per job id: runjob's return code and the pbs_errno it leaves). Records: `runs`
    (job id, location), `selects` (the attribute lists asked for), `connects`, `disconnects`.
    A run of an array's sub-job past its slot limit is refused as pbs_server refuses it."""

    def __init__(self, jobs: Iterable[tuple[str, dict[str, str]]] = (),
                 nodes: Iterable[tuple[str, dict[str, str]]] = (),
                 queues: Iterable[tuple[str, dict[str, str]]] = (),
                 server: dict[str, str] | None = None, *, start_jobs: bool = True,
                 arrays: Iterable[tuple[str, dict[str, str]]] = ()) -> None:
        self.jobs = list(jobs)
        self.arrays = list(arrays)
        """Job arrays' parents (``7[].s``, with ``job_array_request``): listed with ``summarize_arrays`` only."""
        self.nodes = list(nodes)
        self.queues = list(queues)
        self.server = dict(server or {"server_state": "Active", "scheduling": "False"})
        self.start_jobs = start_jobs
        """Whether a successful runjob marks the job running where it was told."""
        self.err = 0
        self.connect_rc: list[int] = []
        self.fail_stat: list[int] = []
        self.runs: list[tuple[str, str | None]] = []
        self.run_rc: dict[str, int] = {}
        self.run_errno: dict[str, int] = {}
        self.connects = 0
        self.disconnects = 0
        self.selects: list[tuple[str, ...]] = []
        self.msg = ""

    def connect(self, server: str | None) -> int:
        self.connects += 1
        return self.connect_rc.pop(0) if self.connect_rc else 1

    def disconnect(self, conn: int) -> None:
        self.disconnects += 1

    def _stat(self, rows: list, attrs: Sequence[str]) -> StatResult:
        self.selects.append(tuple(attrs))
        if self.fail_stat:
            self.err = self.fail_stat.pop(0)
            return []
        self.err = 0
        return rows

    def statjob(self, conn: int, attrs: Sequence[str], extend: str | None = None) -> StatResult:
        """With ``extend="summarize_arrays"``: the arrays' parents and the plain jobs, no sub-job."""
        if extend == "summarize_arrays":
            return self._stat(self.arrays + [(jid, a) for jid, a in self.jobs if array_parent(jid) is None], attrs)
        return self._stat(self.jobs, attrs)

    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult:
        res = self._stat([j for j in self.jobs if j[0] == job_id], attrs)
        if not res and not self.err:
            self.err = 15001  # Unknown Job Id
        return res

    def statjob_packed(self, conn: int, attrs: Sequence[str], queue: str = "") -> PackedRows:
        """As libtorque: with a `queue`, that queue's jobs (15020 for an unknown queue)."""
        rows = self.jobs
        if queue:
            if self.queues and queue not in {name for name, _ in self.queues}:
                self.selects.append(tuple(attrs))
                self.err = 15020  # PBSE_UNKQUE
                return []
            rows = [(jid, a) for jid, a in rows if a.get("queue", "") == queue]
        return [(jid.encode(), pack(a)) for jid, a in self._stat(rows, attrs)]

    def statnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.nodes, attrs)


    def statque(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.queues, attrs)

    def statserver(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat([("fake", self.server)], attrs)

    def runjob(self, conn: int, job_id: str, location: str | None) -> int:
        self.runs.append((job_id, location))
        code = self.run_rc.get(job_id, 0) or self._slot_limit(job_id)
        self.err = self.run_errno.get(job_id, code)
        if code == 0 and self.start_jobs:
            for i, (jid, attrs) in enumerate(self.jobs):
                if jid == job_id:
                    self.jobs[i] = (jid, {**attrs, "job_state": "R", "exec_host": _exec_host(location or "")})
        return code

    def _slot_limit(self, job_id: str) -> int:
        """15004 (PBSE_IVALREQ) for a sub-job whose array runs its slot limit, as req_runjob.c."""
        parent = array_parent(job_id)
        request = next((a.get("job_array_request", "") for jid, a in self.arrays if jid == parent), "")
        limit = parse_slot_limit(request) if parent else None
        if limit is None:
            return 0
        running = sum(1 for jid, a in self.jobs if array_parent(jid) == parent and a.get("job_state") in ("R", "E"))
        if running < limit:
            return 0
        self.msg = f"Cannot run job. Array slot limit is {limit} and there are already {running} jobs running"
        return 15004

    def errno(self) -> int:
        return self.err

    def errmsg(self, conn: int) -> str:
        if self.err == 15004 and self.msg:
            return self.msg
        return ERRORS.get(self.err, "")

    def strerror(self, code: int) -> str:
        return STRERRORS.get(code, "")


def _exec_host(location: str) -> str:
    """``node03:ppn=2+node04`` -> ``node03/0-1+node04/0`` (slot numbers from 0 per node)."""
    parts = []
    for part in location.split("+"):
        name, _, rest = part.partition(":")
        n = int(rest[4:]) if rest.startswith("ppn=") and rest[4:].isdigit() else 1
        parts.append(f"{name}/0-{n - 1}" if n > 1 else f"{name}/0")
    return "+".join(p for p in parts if not p.startswith("/"))
