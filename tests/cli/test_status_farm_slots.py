"""`jobs` and `nodes` count the farm alike: the slots of nodes not down or offline, plus the
slots jobs still use on those that are; the idle slots of an offline node are said apart."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node, NodeState
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
SAID = "slots used 15 of 15 (100.0%); 1 idle slot(s) on down or offline nodes not counted"


def _status(tmp_path) -> None:
    # pbsnodes -o node03 while it runs 3 jobs; the other nodes are full
    ns = [Node(f"node0{i}", 4, NodeState.OFFLINE if i == 3 else NodeState.FREE) for i in range(1, 5)]
    jobs = [running(f"{n}.{i}", "alice", "atlas", f"node0{n}") for n in range(1, 5) for i in range(3 if n == 3 else 4)]
    s = snap(jobs, ns)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _out(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "9999999999"]) == 0
    return capsys.readouterr().out


def test_jobs_and_nodes_say_the_same_farm(tmp_path, capsys):
    _status(tmp_path)
    jobs = _out(capsys, "jobs", "--state-dir", str(tmp_path))
    nodes = _out(capsys, "nodes", "--state-dir", str(tmp_path))
    assert SAID in jobs, jobs
    assert SAID in nodes, nodes  # said "slots used 15 of 16"
    j = json.loads(_out(capsys, "jobs", "--json", "--state-dir", str(tmp_path)))["farm"]
    n = json.loads(_out(capsys, "nodes", "--json", "--state-dir", str(tmp_path)))["summary"]
    assert (j["total_slots"], j["used_slots"], j["closed_slots"]) == (15, 15, 1)
    assert (n["slots"], n["used_slots"], n["closed_slots"]) == (15, 15, 1)


def test_the_offline_node_alone(tmp_path, capsys):
    _status(tmp_path)
    out = _out(capsys, "nodes", "--state", "offline", "--state-dir", str(tmp_path))
    assert "1 nodes (1 offline); slots used 3 of 3 (100.0%); 1 idle slot(s) on down or offline nodes not counted" in out
