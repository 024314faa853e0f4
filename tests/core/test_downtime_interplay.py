"""Downtimes beside the rest of the planner: the drain partition, reservations (EASY, kept
from cycle to cycle, ``procs``), guarantee pools, whole requests and down nodes -- a window
must close its own nodes and leave everything else as it was."""

from __future__ import annotations

import calendar
import time

from mysched.config import config_from_text
from mysched.core.model.windows import Downtime, clear_start, current
from mysched.core.model.batch import Job, JobState, Node, Snapshot
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage

START = float(calendar.timegm(time.strptime("2026-12-01T08:00", "%Y-%m-%dT%H:%M")))
END = START + 4 * 3600
# reservations from walltimes are what these tests are about: the multi-core partition,
# which would serve one-node jobs instead (`Drains.serves`), is off
VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
OFF = 'drain = { rate = 0; };\n'


def config(hosts: str = "", extra: str = "", start: str = "2026-12-01T08:00", end: str = "2026-12-01T12:00"):
    where = f" hosts = [{hosts}];" if hosts else ""
    return config_from_text(VOS + ("" if "drain" in extra else OFF) + extra + f'downtimes = {{ gocdb_1 = {{ start = "{start}"; end = "{end}";{where} }}; }};\n')


def q(jid, walltime=3600.0, cores=1, request=None, group="atlas"):
    return Job(jid, "q", "u", group, cores, JobState.QUEUED, 0.0, None, walltime, request=request)


def run(jid, node, cores, start, walltime, group="cms"):
    return Job(jid, "q", "x", group, cores, JobState.RUNNING, 0.0, start, walltime, placement=((node, cores),))


def snap(jobs, nodes, t=1000.0):
    return Snapshot(t, tuple(jobs), tuple(nodes), ())


def test_clear_start_steps_over_every_window_in_the_way():
    a = Downtime("a", 100.0, 200.0)
    b = Downtime("b", 250.0, 400.0)
    assert clear_start((a, b), 0.0, 50.0) == 0.0  # ends before a
    assert clear_start((a, b), 0.0, 150.0) == 400.0  # into a; after a, 150 s would run into b
    assert clear_start((a, b), 0.0, 40.0 + 0.0) == 0.0
    assert clear_start((a, b), 210.0, 30.0) == 210.0  # between them
    assert clear_start((a, b), 0.0, None) == 400.0  # no walltime: after the last
    # overlapping windows: the one in force that ends last
    assert current((Downtime("w1", 0.0, 100.0), Downtime("w2", 50.0, 300.0)), 60.0).name == "w2"


def test_an_empty_node_before_a_window_keeps_no_drain_from_the_rest_of_the_farm():
    # wn05 is empty, its firmware window tomorrow: the 90-hour multi-core jobs wait "downtime"
    # there, and the partition still drains other nodes for them.
    now = START - 86400
    cfg = config('"wn05"', 'scheduler = { reservation_depth = 0; };\n'
                 'drain = { rate = 2; max_draining = 2; keep = "30m"; min_cores = 4; };\n')
    jobs = [run(f"a{i}", "wn01", 1, now - 100, 700, "atlas") for i in range(3)]
    jobs += [run(f"b{i}", "wn02", 1, now - 100, 9100, "atlas") for i in range(3)]
    jobs += [q("mc", 90 * 3600.0, 4), q("mc2", 90 * 3600.0, 4)]
    p = plan(snap(jobs, [Node(f"wn0{i}", 4) for i in (1, 2, 5)], now), cfg, Usage(), now)
    assert p.waits["mc"].reason == "downtime"
    assert set(p.drains) == {"wn01", "wn02"}  # wn05 is no candidate: they would run into its window


def test_a_wide_job_kept_off_by_a_window_gets_its_reservation_under_every_policy():
    now = START - 3600
    nodes = [Node("wn01", 4), Node("wn02", 4)]  # wn01 empty, its window in an hour
    running = [run(f"r{i}", "wn02", 1, now - 600, 600 + 1800) for i in range(4)]  # wn02 frees in 30 min
    for policy in ("easy", "least-loaded", "mysched"):
        p = plan(snap(running + [q("wide", 3 * 3600.0, 4)], nodes), config('"wn01"'), Usage(), now, policy=policy)
        assert p.waits["wide"].reason == "downtime"
        assert p.reservations["wide"].nodes == ("wn02",) and p.reservations["wide"].start == now + 1800, policy


def test_a_procs_job_keeps_its_reservation_while_a_window_is_a_week_ahead():
    now = START - 7 * 86400
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [run(f"r{i}", "wn01" if i < 4 else "wn02", 1, now - 600, 3600) for i in range(8)]
    mpi = q("mpi", 2 * 3600.0, 6, Request(procs=6))
    p = plan(snap(running + [mpi], nodes), config(), Usage(), now)
    assert p.reservations["mpi"].start == now + 3000
    # the same job right before the window runs into it: reserved after the window
    p = plan(snap([run(f"r{i}", "wn01" if i < 4 else "wn02", 1, START - 7200, 3600) for i in range(8)] + [mpi],
                  nodes), config(), Usage(), START - 5400)
    assert p.reservations["mpi"].start == END  # (it found none: the nodes it runs into the window on were left out)
    assert p.waits["mpi"].reason == "no_free_slot" and "reserved wn01+wn02 in" in p.waits["mpi"].detail


def test_a_kept_reservation_moves_to_other_nodes_when_a_window_comes_in_its_way():
    now = START - 3 * 3600
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [run(f"a{i}", "wn01", 1, now - 600, 600 + 3600) for i in range(4)]  # wn01 frees in 1 h
    running += [run(f"b{i}", "wn02", 1, now - 600, 600 + 2 * 3600) for i in range(4)]  # wn02 in 2 h
    s = snap(running + [q("wide", 4 * 3600.0, 4)], nodes)
    first = plan(s, config_from_text(VOS + OFF), Usage(), now)
    assert first.reservations["wide"].nodes == ("wn01",)
    again = plan(s, config('"wn01"'), Usage(), now + 60, reservations=first.reservations)  # window added, reloaded
    assert again.reservations["wide"].nodes == ("wn02",) and again.reservations["wide"].start == now + 2 * 3600


def test_during_a_window_a_job_that_needs_its_node_is_reserved_its_end():
    p = plan(snap([q("h1", 3600.0, 1, Request((NodePart(1, 1, "wn01"),)))], [Node("wn01", 4), Node("wn02", 4)]),
             config('"wn01"'), Usage(), START + 60)
    assert p.waits["h1"].reason == "downtime" and p.reservations["h1"].start == END


def test_a_whole_request_that_could_never_use_the_closed_node_waits_for_room_not_for_it():
    nodes = [Node("wn01", 4), Node("wn02", 4, properties=frozenset({"ib"})), Node("wn03", 4, properties=frozenset({"ib"}))]
    running = [run(f"r{n}{i}", n, 1, START - 600, 600 + 3600) for n in ("wn02", "wn03") for i in range(4)]
    for req in (Request((NodePart(1, 2, "wn02"),)), Request((NodePart(2, 2, None, frozenset({"ib"})),))):
        p = plan(snap(running + [q("j", 1800.0, req.cores, req)], nodes), config('"wn01"'), Usage(), START + 60)
        assert p.waits["j"].reason == "no_free_slot"
    req = Request((NodePart(1, 2),))  # any node: wn01 could serve it but for its window
    p = plan(snap(running + [q("j", 1800.0, 2, req)], nodes), config('"wn01"'), Usage(), START + 60)
    assert p.waits["j"].reason == "downtime"


def test_an_offline_node_in_a_window_is_counted_down():
    from mysched.core.model.batch import NodeState

    nodes = [Node("wn01", 4, NodeState.OFFLINE), Node("wn02", 4)]
    running = [run(f"r{i}", "wn02", 1, START - 600, 9000) for i in range(3)]
    p = plan(snap(running + [q("two", 1800.0, 2)], nodes), config('"wn01"'), Usage(), START + 60)
    assert p.waits["two"].nodes_rejected == {"node_down": 1, "no_free_slot": 1}


def test_a_guarantee_pool_holds_no_host_in_a_window():
    gb = 1 << 30
    cfg = config('"wn01"', 'scheduler = { reservation_depth = 0; };\n'
                 'pools = { mc = { hosts = ["wn*"]; package = { slots = 8; mem = "16gb"; }; vos = { atlas = "50%"; }; }; };\n',
                 end="2026-12-03T08:00")
    nodes = [Node(f"wn0{i}", 8, mem=32 * gb) for i in (1, 2, 3)]
    now = START + 3600
    mc = Job("m1", "q", "a1", "atlas", 8, JobState.QUEUED, 100.0, None, 48 * 3600.0,
             request=Request((NodePart(1, 8),), mem=16 * gb))
    p = plan(snap([mc], nodes, now), cfg, Usage(), now)
    assert "wn01" not in p.pool_gates
    assert [s.placement[0][0] for s in p.starts] == ["wn02"]  # wn02 and wn03 alike: the name decides


def test_windows_naming_hosts_are_found_by_name_and_by_pattern():
    from mysched.core.model.windows import windows_by_node

    dts = [Downtime(f"reboot_{i}", 100.0 * i, 100.0 * i + 50, hosts=(f"wn{i:04d}",)) for i in range(300)]
    dts.append(Downtime("rack", 0.0, 10.0, hosts=("wn001*",)))
    dts.append(Downtime("gpu", 0.0, 10.0, node_types=("gpu",)))
    got = windows_by_node(dts, [(f"wn{i:04d}", "gpu" if i == 5 else None) for i in range(300)])
    assert [w.name for w in got["wn0007"]] == ["reboot_7"]
    assert [w.name for w in got["wn0012"]] == ["rack", "reboot_12"]
    assert [w.name for w in got["wn0005"]] == ["gpu", "reboot_5"]
    assert len(got) == 300
