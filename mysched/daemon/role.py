"""The daemon's side of leadership: lead (start jobs) or stand by, and say which.

The lock itself is `mysched.history.leader`. A standby reads nothing from pbs_server and
writes nothing to the history; it tries the lock every quarter of the leader timeout and
publishes `standby.json` beside the status file (so the status commands on its host can
say who leads). A daemon that becomes leader settles the intents its predecessor left
(`Daemon._reconcile`) before it starts anything.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable

from mysched.daemon.metrics import CycleMetrics
from mysched.daemon.statusfile import load_json, write_json
from mysched.core.model.batch import Snapshot
from mysched.errors import MyschedError, StoreError
from mysched.history.leader import Leadership, LeadershipLost, identity

log = logging.getLogger("mysched")

STANDBY_FILE = "standby.json"


class Role:
    """Leader or standby, with the transitions logged, counted and published."""

    def __init__(self, lead: Leadership | None, metrics: CycleMetrics, state_dir: str | None,
                 wall: Callable[[], float] = time.time, dry_run: bool = False) -> None:
        self.lead = lead
        self.metrics = metrics
        self.state_dir = state_dir
        self.wall = wall
        self.name = "leader" if lead is None else ""
        """"leader", "standby", or "" before the first try."""
        self.error = ""
        self._holder: dict[str, Any] | None = None
        self._holder_read = 0.0
        self._standby_since: float | None = None
        if lead is None and not dry_run:  # no lock to take: it leads (starts jobs) from the start
            metrics.set_role(True)

    @property
    def poll(self) -> float:
        """Wall seconds between a standby's tries of the lock."""
        return max(0.25, self.lead.timeout / 4) if self.lead is not None else 0.0

    def leading(self) -> tuple[bool, bool]:
        """(this daemon leads now, it has just become leader)."""
        lead = self.lead
        if lead is None:
            return True, False
        if lead.leader and lead.confirm():
            return True, False
        try:
            got = lead.acquire()
            self.error = ""
        except StoreError as exc:
            got = False
            if str(exc) != self.error:
                log.error("leadership: %s (retrying every %.1f s)", exc, self.poll)
            self.error = str(exc)
        if got:
            was = self.name
            self.name = "leader"
            self._standby_since = None
            # A takeover from a standby is news; leading from the start is the normal case.
            log.log(logging.WARNING if was else logging.INFO, "leader now (%s): starting jobs; intents left by %s "
                    "are settled first", _what(lead), "the previous leader" if was else "an earlier run")
            self.metrics.set_role(True)
            self._drop_standby_file()
            return True, True
        if self.name != "standby":
            if self.name == "leader":
                log.error("leadership lost: starting nothing from now on; standing by")
            self.name = "standby"
            self._standby_since = self.wall()
            self.metrics.set_role(False)
            self._holder_read = 0.0
            holder = self.holder()
            log.warning("standing by: %s leads; taking over within %.1f s of its end", _who(holder),
                        lead.timeout + self.poll)
        self._publish_standby()
        return False, False

    def fence(self, store: Any, intents: list[dict[str, Any]], planned: float) -> None:
        """Record the intents, proving leadership in the same step (`LeadershipLost` if not)."""
        if self.lead is None:
            if store is not None:
                store.record_intents(intents, planned)
            return
        if store is None:
            if not self.lead.confirm():
                raise LeadershipLost("leadership not held")
            return
        self.lead.record_intents(store, intents, planned)

    def may_start(self) -> bool:
        """Leadership proved within its lease (checked before each pbs_runjob)."""
        return self.lead is None or self.lead.confirm()

    def holder(self) -> dict[str, Any] | None:
        """Who leads (read at most every 10 s)."""
        if self.lead is None:
            return None
        now = time.monotonic()
        if now - self._holder_read > 10.0:
            self._holder = self.lead.holder()
            self._holder_read = now
        return self._holder

    def doc(self) -> dict[str, Any]:
        """The role for the status file."""
        return {"role": self.name or "leader", **identity(),
                "since": self.lead.since if self.lead is not None else None,
                # the kind of lock ("file", "database"), null without one: no class name of ours
                "lock": self.lead.kind if self.lead is not None else None}

    def _publish_standby(self) -> None:
        if not self.state_dir:
            return
        doc = {"role": "standby", **identity(), "since": self._standby_since, "checked": self.wall(),
               "leader": self.holder(), "error": self.error or None}
        try:
            write_json(self.state_dir, STANDBY_FILE, doc)
        except OSError as exc:
            log.debug("cannot write %s in %s: %s", STANDBY_FILE, self.state_dir, exc)

    def _drop_standby_file(self) -> None:
        if not self.state_dir:
            return
        path = os.path.join(self.state_dir, STANDBY_FILE)
        try:
            mine = load_json(path, "standby note").get("pid") == os.getpid()
            if mine:
                os.unlink(path)
        except (OSError, MyschedError, AttributeError):
            pass

    def release(self) -> None:
        """Give up leadership at exit, so a standby takes over at its next try."""
        if self.lead is not None:
            try:
                self.lead.release()
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
        self._drop_standby_file()


def _who(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another daemon (not known which)"
    return f"the daemon pid {holder.get('pid')} on {holder.get('host')}"


def _what(lead: Leadership) -> str:
    path = getattr(lead, "path", None)
    return f"lock file {path}" if path else "PostgreSQL advisory lock"


def settle(intents: list[dict[str, Any]], snapshot: Snapshot) -> list[dict[str, Any]]:
    """The outcome of starts planned by a daemon that stopped (or lost leadership) before
    recording them, as the server shows it: "ok" (it runs), "gone" (finished or deleted since;
    the accounting log has its record) or "not_started" (still queued: planned anew)."""
    jobs = {j.id: j for j in snapshot.jobs}
    starts = []
    for i in intents:
        job = jobs.get(i["job_id"])
        if job is None:
            result = "gone"
        elif job.state.holds_slots:
            result = "ok"
        else:
            result = "not_started"
        where = "+".join(f"{n}:ppn={c}" for n, c in job.placement) if job is not None and job.placement else ""
        log.warning("start of %s planned before the daemon stopped (%s): %s%s", i["job_id"], i["placement"],
                    {"ok": "it runs", "gone": "the server no longer knows the job",
                     "not_started": "it did not start; planned again"}[result], f" on {where}" if where else "")
        starts.append({"job_id": i["job_id"], "placement": where or i["placement"], "reason": i["reason"],
                       "result": result, "user": job.user if job is not None else None})
    return starts
