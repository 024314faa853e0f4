"""Active/standby on the live farm with a real PostgreSQL (marked `torque`; skipped without
pbs_server or MYSCHED_TEST_PG_URL).

Two `mysched run` daemons share one history schema and one pbs_server, in the style of
HTCondor's HA tests: the leader is killed (-9), cut off from PostgreSQL (a black-holed
proxy) or stopped, at random, again and again, while invariant checkers watch that the
standby takes over within two cycle intervals, that no daemon starts a job while another
leads, and that pbs_server starts every job once (its accounting S records).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
import zlib
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from mysched.backends.torque.home import find_server_home
from mysched.core.model.batch import JobState
from mysched.history.leader import PG_LEADER_LOCK
from mysched.history.store import Store

from ..history.conftest import PG_URL, _with_schema
from ..netcut import BlackHole
from .test_torque_live import cleanup, qsub, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque

INTERVAL = 4.0
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")


@pytest.fixture
def pg_schema():
    if not PG_URL:
        pytest.skip("MYSCHED_TEST_PG_URL not set (bash .ci/postgres.sh prints one)")
    eng = create_engine(PG_URL, connect_args={"connect_timeout": 5})
    schema = "ha_" + uuid.uuid4().hex[:8]
    try:
        with eng.begin() as c:
            c.execute(text(f"CREATE SCHEMA {schema}"))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL not reachable: {str(exc).splitlines()[0]}")
    yield schema
    with eng.begin() as c:
        c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    eng.dispose()


class Daemon:
    """One `mysched run` process, its log, and its own path to PostgreSQL."""

    def __init__(self, name: str, tmp: Path, cfg: Path, url: str) -> None:
        self.name, self.tmp, self.cfg = name, tmp, cfg
        u = make_url(url)
        self.proxy = BlackHole(u.host or "127.0.0.1", u.port or 5432)
        self.url = u.set(host="127.0.0.1", port=self.proxy.port).render_as_string(hide_password=False)
        self.proc: subprocess.Popen | None = None
        self.logs: list[Path] = []

    def start(self) -> None:
        log = self.tmp / f"{self.name}-{len(self.logs)}.log"
        self.logs.append(log)
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).parent / "mysched"), "run", "-c", str(self.cfg), "--db", self.url,
             "--state-dir", str(self.tmp / self.name), "--metrics-address", "off", "--event-address", "off"],
            stdout=subprocess.DEVNULL, stderr=open(log, "w"))

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else -1

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)


def _events(logs: list[Path]) -> list[tuple[float, str, str]]:
    """(time, kind, job) from a daemon's logs: "lead", "lost", "start"."""
    out = []
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            m = STAMP.match(line)
            if not m:
                continue
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1000
            if " leader now " in line:
                out.append((t, "lead", ""))
            elif "leadership lost" in line or "leadership not proved" in line:
                out.append((t, "lost", ""))
            elif " INFO started " in line:
                out.append((t, "start", line.split(" INFO started ")[1].split()[0]))
    return out


def test_active_standby_takes_over_and_never_starts_twice(server, cleanup, pg_schema, tmp_path):  # noqa: F811
    acct = find_server_home().accounting_dir
    if not os.path.isdir(acct):
        pytest.skip(f"{acct} not on this host")
    if any(j.state in (JobState.QUEUED, JobState.RUNNING) for j in server.snapshot().jobs):
        pytest.skip("the farm runs or queues other jobs")
    rounds = int(os.environ.get("MYSCHED_HA_ROUNDS", "6"))
    ids = [qsub(("alice", "bob", "carol")[i % 3], "atlas" if i % 3 < 2 else "cms",
                "nodes=1:ppn=1,walltime=00:05:00", seconds=3 + i % 5) for i in range(40 + 12 * rounds)]
    cleanup.extend(ids)
    cfg = tmp_path / "m.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                   f'scheduler = {{ interval = {INTERVAL:g}; min_interval = 1; }};\n')
    url = _with_schema(PG_URL, pg_schema)
    Store(url).close()  # the schema's tables, before two daemons race to create them
    daemons = [Daemon(n, tmp_path, cfg, url) for n in ("a", "b")]
    watcher = create_engine(url)

    def holder() -> int | None:
        with watcher.connect() as c:
            name = c.execute(text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.granted AND CAST(l.classid AS bigint) = :hi "
                "AND CAST(l.objid AS bigint) = :lo"), {"hi": PG_LEADER_LOCK, "lo": zlib.crc32(pg_schema.encode())}
            ).scalar()
        return int(name.rpartition(":")[2]) if name else None

    samples: list[tuple[float, int | None]] = []
    stop = threading.Event()

    def watch() -> None:  # the invariant checker's view of who holds the lock
        while not stop.is_set():
            try:
                samples.append((time.time(), holder()))
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.1)

    def wait_leader(exclude: int | None, limit: float) -> tuple[int | None, float]:
        t0 = time.time()
        while time.time() - t0 < limit:
            h = holder()
            if h is not None and h != exclude:
                return h, time.time() - t0
            time.sleep(0.05)
        return None, limit

    rng = random.Random(11)
    takeovers: dict[str, list[float]] = {"kill": [], "cut": [], "stop": []}
    threading.Thread(target=watch, daemon=True).start()
    try:
        for d in daemons:
            d.start()
        leader, _ = wait_leader(None, 30)
        assert leader is not None, "no daemon became leader"
        for _ in range(rounds):
            time.sleep(rng.uniform(1.0, 2 * INTERVAL))  # let it start jobs
            old = next(d for d in daemons if d.pid == leader)
            how = rng.choice(("kill", "kill", "cut", "stop"))
            if how == "cut":
                old.proxy.cut.set()
            else:
                old.stop(signal.SIGKILL if how == "kill" else signal.SIGTERM)
            leader, took = wait_leader(old.pid, 4 * INTERVAL)
            assert leader is not None, f"no takeover within {4 * INTERVAL:g} s after {how}"
            takeovers[how].append(took)
            if how == "cut":
                time.sleep(1.0)
                old.proxy.cut.clear()  # it comes back: it must stand by now
            else:
                old.start()  # restarted, as systemd would: it stands by
        # let the last leader start what is left
        t_end = time.time() + 90
        while time.time() < t_end and any(j.id in ids and j.state == JobState.QUEUED for j in server.snapshot().jobs):
            time.sleep(1)
    finally:
        for d in daemons:
            d.proxy.cut.clear()
            d.stop()
            d.proxy.close()
        stop.set()
        watcher.dispose()
    # 1. pbs_server started every job at most once, and all of them
    starts: dict[str, int] = {}
    for name in sorted(os.listdir(acct)):
        with open(os.path.join(acct, name), errors="replace") as f:
            for line in f:
                parts = line.split(";")
                if len(parts) > 2 and parts[1] == "S" and parts[2] in ids:
                    starts[parts[2]] = starts.get(parts[2], 0) + 1
    assert max(starts.values()) == 1, {j: n for j, n in starts.items() if n > 1}
    assert len(starts) == len(ids)
    # 2. never two leaders starting jobs: each start by a daemon falls in its own term, after
    #    its "leader now" and before any later leader's; no term overlaps another's starts
    terms = []
    for d in daemons:
        for log in d.logs:
            ev = _events([log])
            lead_times = [t for t, k, _ in ev if k == "lead"]
            for i, t in enumerate(lead_times):
                end = min([t2 for t2, k, _ in ev if k == "lost" and t2 > t] + lead_times[i + 1:] + [float("inf")])
                js = [(t3, j) for t3, k, j in ev if k == "start" and t <= t3 <= end]
                terms.append((t, end, log.name, js))
    terms.sort()
    for (t1, _e1, n1, js1), (t2, _e2, n2, _js2) in zip(terms, terms[1:]):
        late = [j for t, j in js1 if t > t2]
        assert not late, f"{n1} started {late} after {n2} became leader"
    logged = sorted(j for *_x, js in terms for _t, j in js)
    assert len(logged) == len(set(logged))
    # 3. always one leader within the bound: the watcher never saw a gap longer than the bound
    gap, last = 0.0, None
    for t, h in samples:
        if h is None:
            last = last or t
        else:
            if last is not None:
                gap = max(gap, t - last)
            last = None
    allt = sorted(x for v in takeovers.values() for x in v)
    print(f"HA rounds {rounds}: takeovers {dict((k, [round(x, 2) for x in v]) for k, v in takeovers.items())}; "
          f"max {max(allt):.2f} s, p50 {allt[len(allt) // 2]:.2f} s; longest leaderless gap {gap:.2f} s; "
          f"jobs {len(ids)} started once each")
    assert max(allt) <= 2 * INTERVAL and gap <= 2 * INTERVAL
