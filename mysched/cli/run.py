"""`mysched run`: the scheduler daemon (what systemd starts)."""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import threading

from mysched.cli.main import command
from mysched.config.parse import clip
from mysched.config.servers import openpbs_host, scheme, server_problem, torque_host
from mysched.core.settings import Config
from mysched.config.guarantees import farm_slots, overpromised
from mysched.errors import ConfigError, MyschedError, ServerError, StoreError, UsageError
from mysched.cli.common import address_arg, config_or_default, non_empty

log = logging.getLogger("mysched")


@command("run", "run the scheduler daemon against pbs_server (or sim://)")
def fill(p: argparse.ArgumentParser) -> None:
    """Run the scheduler: every scheduler.interval seconds (and soon after pbs_server reports a
    job event, when daemon.event_address is set, or when the last plan changes by itself --
    a reservation's start, a drain's keep running out, a downtime's end -- before the next
    interval; never closer than scheduler.min_interval) read queues, jobs and nodes, plan, start jobs
    with pbs_runjob, record the cycle in the history store, publish the status file and
    Prometheus metrics. SIGHUP reloads the configuration; SIGTERM finishes the cycle and exits.

    --server sim:// runs a simulated farm at an accelerated clock with the synthetic workload
    (parameters: sim://?nodes=50&slots=8&speed=60&seed=1&hours=48&backlog=6: backlog hours of
    jobs are waiting at the start; at most 1,000,000 slots, a year of jobs and speed 1e6), so the
    daemon, its metrics and the status commands can be tried without TORQUE.

    A second daemon on the same history store (PostgreSQL, or the same SQLite file on one
    host) waits as standby and takes over within daemon.leader_timeout and a quarter more of
    the leader's end; only the leader starts jobs. --once exits 1 when another daemon leads."""
    p.add_argument("-c", "--config", type=non_empty, metavar="FILE",
                   help="configuration file (default: the embedded example, for sim:// and --dry-run only; a "
                        "production daemon names its file, so SIGHUP can reload it)")
    p.add_argument("--server", type=non_empty, metavar="URL",
                   help="torque://HOST, pbs://HOST[:PORT] (OpenPBS) or sim:// (default: server.url of the config)")
    p.add_argument("--once", action="store_true", help="run one cycle and exit (status 1 if it failed, or if pbs_server refused "
                   "its starts for lack of privilege)")
    p.add_argument("--dry-run", action="store_true", help="plan and log what would start; start nothing")
    p.add_argument("--db", type=non_empty, metavar="URL", help="history database URL (default: history.database)")
    p.add_argument("--no-db", action="store_true", help="keep no history (usage then counts running jobs only)")
    p.add_argument("--state-dir", type=non_empty, metavar="DIR",
                   help="where to write status.json (default: daemon.state_dir)")
    p.add_argument("--metrics-address", type=address_arg, metavar="HOST:PORT",
                   help="Prometheus endpoint (default: daemon.metrics_address; 'off' disables)")
    p.add_argument("--event-address", type=address_arg, metavar="HOST:PORT",
                   help="listen for pbs_server scheduler contacts (default: daemon.event_address; 'off' disables)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.set_defaults(run=run)


def make_server(url: str, config: Config):
    """A `BatchServer` for a URL: torque://HOST, pbs://HOST or sim://... (`server_problem` says which
    URLs are refused, for check-config as for here)."""
    problem = server_problem(url, config.farm)
    if problem:
        raise UsageError(f"server URL {clip(url)!r}: {problem}")
    if url.startswith("sim:"):
        from mysched.backends.sim.server import sim_server_from_url

        return sim_server_from_url(url, config)
    if scheme(url) == "openpbs":
        from mysched.backends.openpbs.backend import OpenPBSServer

        return OpenPBSServer(openpbs_host(url), libpbs=config.libpbs or None, timeout=config.server_timeout)
    from mysched.backends.torque.backend import TorqueServer

    return TorqueServer(torque_host(url), libtorque=config.libtorque or None, timeout=config.server_timeout)


def _guarantees_fit(config: Config, server) -> None:
    """Refuse to start with guarantees the farm cannot give, as check-config and a reload
    refuse them (read from one snapshot; a server not answering yet is the first cycle's
    business, and a reload checks them on the farm it reads)."""
    try:
        snap = server.snapshot()
    except ServerError as exc:
        log.warning("VO guarantees not checked against the farm at start: %s", exc)
        return
    why = overpromised(config, farm_slots(n.slots for n in snap.nodes))
    if why:
        server.close()
        raise ConfigError(why)


def _address(text: str) -> str | None:
    return None if text.strip().lower() in ("", "off", "none") else text


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    if threading.current_thread() is threading.main_thread():
        # Until the service takes over: a stop during start-up (a slow store or server) says so.
        def early_stop(signum: int, frame: object) -> None:
            log.info("signal %s during start-up: exiting", signal.Signals(signum).name)
            raise SystemExit(0)
        signal.signal(signal.SIGTERM, early_stop)
        signal.signal(signal.SIGINT, early_stop)
    if args.no_db and args.db:
        raise UsageError("--db and --no-db exclude each other")
    config = config_or_default(args.config)
    url = args.server or config.server
    if not args.config and not url.startswith("sim:") and not args.dry_run:
        # The embedded example is DESY's farm: against a real server it would schedule by its
        # shares, beside (and against) the site's own daemon if one runs on another store.
        raise UsageError(f"run against {clip(url)} starts jobs: name the site's configuration with -c FILE "
                         "(the embedded example is for sim:// and --dry-run)")
    state_dir = args.state_dir or config.state_dir
    server = make_server(url, config)
    _guarantees_fit(config, server)

    store = None
    ingest = None
    if not args.no_db:
        from mysched.history.accountingfeed import AccountingFeed
        from mysched.history.ingest import path_kind
        from mysched.history.dbchoice import database_url
        from mysched.history.store import Store
        from mysched.history.urls import make_sqlite_dir

        chosen = database_url(args.db, args.config)
        db = chosen.url
        log.info("%s", chosen.note())
        make_sqlite_dir(db)
        store = Store(db)
        if not url.startswith("sim:") and config.accounting_dir:
            from mysched.backends.torque.home import accounting_dir

            acct, why = accounting_dir(config.accounting_dir, Config.accounting_dir,
                                       openpbs=scheme(url) == "openpbs")
            kind = path_kind(acct)
            if kind == "dir":
                log.info("accounting logs: %s (%s)", acct, why)
                ingest = AccountingFeed(store, acct, config.history_window, on_problem=log.warning)
            else:
                log.warning("accounting directory %s: %s: usage history comes from nothing but "
                            "running jobs (set history.accounting_dir)", acct,
                            "not a directory" if kind == "file" else kind)

    metrics = None
    maddr = _address(args.metrics_address if args.metrics_address is not None else config.metrics_address)
    if maddr:
        from mysched.daemon.endpoint import serve_metrics
        from mysched.daemon.metrics import Metrics
        from prometheus_client import CollectorRegistry

        metrics = Metrics(CollectorRegistry())
        if ingest is not None:
            ingest.on_suspicious = metrics.accounting_suspicious
        serve_metrics(metrics.registry, maddr, retry=math.inf if args.once else 30.0)  # logs where, or that the address is in use

    from mysched.daemon.cycle import Daemon
    from mysched.daemon.service import Service

    from mysched.daemon.statusfile import ensure_state_dir
    from mysched.history.leader import leadership_for

    if state_dir:
        ensure_state_dir(state_dir)
    scale = 1.0 / float(getattr(server, "speed", 1.0) or 1.0)
    try:
        lead = leadership_for(store, state_dir, config.leadership_timeout(scale))
    except StoreError:
        if not args.dry_run:
            raise
        lead = None
    if args.dry_run:  # a dry run starts nothing, so it needs no leadership ...
        holder = lead.holder() if lead is not None and state_dir else None
        # ... but must not overwrite the status a running daemon publishes: in the configured
        # directory, or in one whose status file names it
        if holder and (not args.state_dir or _publishes_to(state_dir, holder)):
            log.warning("a daemon leads (pid %s on %s): this dry run writes no status file to %s "
                        "(give it --state-dir of its own to see its plan with the status commands)",
                        holder.get("pid"), holder.get("host"), state_dir)
            state_dir = ""
        lead = None
    from mysched.backends.loads import LoadSources

    loads = LoadSources(config.load_sources)  # empty: no threads; a reload may add sources
    if config.load_sources:
        log.info("load sources: %s", ", ".join(f"{n} ({s.kind}, every {s.interval:g} s)"
                                               for n, s in config.load_sources.items()))
        loads.wait_first(min(10.0, max(s.timeout for s in config.load_sources.values()) + 0.5))
    daemon = Daemon(config, server, store=store, metrics=metrics, config_path=args.config, dry_run=args.dry_run,
                    state_dir=state_dir, ingest=ingest, lead=lead, loads=loads)
    listener_factory = None
    eaddr = _address(args.event_address if args.event_address is not None else config.event_address)
    if eaddr and not args.once:
        if url.startswith("sim:"):
            listener_factory = _sim_events(server)
        else:
            listener_factory = _torque_events(eaddr, url, config, daemon.metrics)
    log.info("mysched starting: server %s, config %s, state dir %s%s", url, config.source, state_dir,
             " (dry run)" if args.dry_run else "")
    return Service(daemon, listener_factory=listener_factory, once=args.once).run()


def _publishes_to(state_dir: str, holder: dict) -> bool:
    """Does the leading daemon (`holder`) publish its status in `state_dir`? Its status file
    there names it (a dry run given a directory of its own, beside a daemon leading on the same
    history store, wrote nothing there)."""
    from mysched.daemon.statusfile import FILENAME, load_json

    try:
        role = load_json(os.path.join(state_dir, FILENAME))["role"]
        return role["pid"] == holder.get("pid") and role["host"] == holder.get("host")
    except (OSError, MyschedError, LookupError, TypeError):
        return False  # none (yet), or unreadable: the leader's own next cycle rewrites it


def _torque_events(address: str, url: str, config: Config, metrics):
    """The listener for pbs_server's scheduler contacts: from the server's host (or
    daemon.event_allow), from a reserved port as daemon.event_reserved_port says, each counted
    in `metrics`. Started by the service; a failure leaves cycles on the fixed interval."""
    from mysched.backends.torque.schedproto import SchedulerListener, contact_rule

    host, _, port = address.rpartition(":")
    try:
        port_n = int(port)
    except ValueError:
        raise UsageError(f"event address must be HOST:PORT, got {address!r}") from None
    # make_server has refused a URL naming no host; OpenPBS's contacts come from a server hook
    server_host = openpbs_host(url) if scheme(url) == "openpbs" else torque_host(url)
    if server_host.count(":") == 1:  # HOST:PORT names pbs_server's port, not an address
        server_host = server_host.split(":")[0]

    def factory(on_event):
        rule = contact_rule(server_host, config.event_allow, config.event_reserved_port)
        listener = SchedulerListener((host.strip("[]") or "127.0.0.1", port_n), on_event=on_event, rule=rule,
                                     on_contact=metrics.event_contact)
        listener.start()
        return listener
    return factory


def _sim_events(server):
    """The simulated farm reports arrivals and ends as pbs_server would."""
    def factory(on_event):
        farm = server.farm
        previous = farm.on_change

        class _Hook:
            def close(self):
                farm.on_change = previous

        def changed(ta, tb):
            if previous is not None:
                previous(ta, tb)
            on_event("sim")
        farm.on_change = changed
        return _Hook()
    return factory
