"""`mysched pools`, `why` on a pool wait, `check-config` on pools, and the pool metrics."""

from __future__ import annotations

import json
import time

from prometheus_client import generate_latest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage
from mysched.daemon.metrics import Metrics, publish_farm
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import snap

GB = 1024**3
NOW = 1_000_000.0
TEXT = '''
vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };
scheduler = { reservation_depth = 0; };
farm = { nodes = 3; slots_per_node = 8; name_format = "wn{index:02d}"; };
node_types = { wn = { nodes = ["wn*"]; mem = "32gb"; }; };
pools = { mc = { hosts = ["wn0[12]"]; package = { slots = 8; mem = "16gb"; }; vos = { atlas = 1; };
                 loan = { queues = ["all"]; max_walltime = "6:00:00"; }; }; };
'''
CFG = config_from_text(TEXT, "pools.cfg")


def make_status(tmp_path):
    jobs = [Job(f"r{n}{i}", "cms", "c1", "cms", 1, JobState.RUNNING, 0.0, NOW - 60, 3600.0, placement=((n, 1),))
            for n, k in (("wn01", 3), ("wn02", 2), ("wn03", 2)) for i in range(k)]
    jobs += [Job(f"q{i}", "cms", "c2", "cms", 1, JobState.QUEUED, NOW - 100 + i, None, 90 * 3600.0)
             for i in range(20)]
    jobs.append(Job("m1", "atlas", "a1", "atlas", 8, JobState.QUEUED, NOW - 50, None, 48 * 3600.0,
                    request=Request(parts=(NodePart(1, 8),), mem=16 * GB)))
    nodes = [Node(f"wn0{i}", 8) for i in (1, 2, 3)]
    s = snap(jobs, nodes)
    s = s.__class__(NOW, s.jobs, s.nodes, s.queues)
    p = plan(s, CFG, Usage(), NOW)
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time()))
    return p


def test_pools_shows_packages_per_pool_and_consumer(tmp_path, capsys):
    p = make_status(tmp_path)
    # atlas is owed 1 package (its 8-core job fits nowhere yet): wn01, first by name, is held
    # for it; the cms jobs fill wn02 and wn03 and the rest wait
    assert p.pool_gates == {"wn01": ("mc", "held")}
    assert sorted({s.placement[0][0] for s in p.starts}) == ["wn02", "wn03"] and len(p.starts) == 12
    assert main(["pools", "--state-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["pools"]["mc"]
    assert (doc["hosts"], doc["total"], doc["guaranteed"], doc["status"]) == (2, 2, 1, "ok")
    assert doc["held_hosts"] == ["wn01"]
    assert doc["consumers"] == [{"consumer": "atlas", "kind": "vo", "guaranteed": 1, "allocated": 0, "owner_use": 0,
                                 "loaned": 0, "pending": 1, "owed": 1}]
    assert main(["pools", "--state-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "POOL mc: package 8 slot(s) + 16 GB; 2 host(s); status ok" in out and "held for owners: wn01" in out
    assert main(["pools", "--state-dir", str(tmp_path), "nosuch"]) == 1
    assert "no pool 'nosuch'" in capsys.readouterr().err


def test_why_names_the_pool_and_its_figures(tmp_path, capsys):
    p = make_status(tmp_path)
    held = [j for j, w in p.waits.items() if w.reason == "pool_held"]
    assert held, p.reasons()
    assert main(["why", "--state-dir", str(tmp_path), held[0]]) == 0
    out = capsys.readouterr().out
    assert "pool_held" in out and "pool mc" in out and "vo atlas owed 1" in out


def test_pool_metrics_follow_the_plan(tmp_path):
    p = make_status(tmp_path)
    m = Metrics()
    publish_farm(m, p, p.starts)
    text = generate_latest(m.registry).decode()
    assert 'mysched_pool_packages{figure="total",pool="mc"} 2.0' in text
    assert 'mysched_pool_consumer_packages{consumer="vo:atlas",figure="owed",pool="mc"} 1.0' in text
    assert 'mysched_pool_packages{figure="held_hosts",pool="mc"} 1.0' in text


def test_check_config_reports_pools_overcommitted_and_hosts_in_no_pool(tmp_path, capsys):
    site = tmp_path / "site.cfg"  # a TORQUE site: its pools select pbs_server's hosts, not the farm section's
    site.write_text(TEXT.replace("atlas = 1;", "atlas = 3;"))
    assert main(["check-config", "-c", str(site)]) == 0
    assert "pools: not checked against a farm (server.url is torque://localhost)" in capsys.readouterr().out
    ok = tmp_path / "ok.cfg"
    ok.write_text(TEXT + 'server = { url = "sim://"; };\n')
    assert main(["check-config", "-c", str(ok)]) == 0
    out = capsys.readouterr().out
    assert "pool mc: 2 host(s), 2 package(s) of 8 slot(s) + 16 GB; guaranteed 1 (vo atlas 1 = 1)" in out
    assert "hosts in no pool (1): wn03" in out
    over = tmp_path / "over.cfg"
    over.write_text(TEXT.replace("atlas = 1;", "atlas = 3;") + 'server = { url = "sim://"; };\n')
    assert main(["check-config", "-c", str(over)]) == 1
    out = capsys.readouterr().out
    assert "pools.mc: overcommitted: guarantees 3 package(s), its 2 host(s) hold 2" in out
    bad = tmp_path / "bad.cfg"
    bad.write_text(TEXT.replace("vos = { atlas = 1; }", "vos = { atlsa = 1; }"))
    assert main(["check-config", "-c", str(bad)]) != 0
    err = capsys.readouterr().err
    assert "pools.mc.vos.atlsa: no such vo" in err and "bad.cfg:" in err
