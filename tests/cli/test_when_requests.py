"""`mysched when` for jobs with a request on one node: grid pilots carry mem/pmem and node
properties, and got no estimate at all; several nodes, a host or procs still get none."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model import Job, JobState, Node
from mysched.core.planner import plan
from mysched.core.request import NodePart, Request
from mysched.core.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\nscheduler = { reservation_depth = 0; };')


def _when(tmp_path, capsys, request: Request, cores: int) -> dict:
    # wn01 (ib) is full until 1000 + 3600 s; wn02 (no ib) is free; wn03 (ib) full until 1000 + 7200 s
    nodes = [Node("wn01", 4, properties=frozenset({"ib"})), Node("wn02", 4), Node("wn03", 4, properties=frozenset({"ib"}))]
    running = [Job(f"r{n}{i}", "q", "x", "atlas", 1, JobState.RUNNING, 0.0, 1000.0, wall, placement=((n, 1),))
               for n, wall in (("wn01", 3600.0), ("wn03", 7200.0)) for i in range(4)]
    target = Job("1.srv", "q", "u", "atlas", cores, JobState.QUEUED, 0.0, None, 3600.0, request=request)
    s = snap(running + [target], nodes)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    assert main(["when", "--state-dir", str(tmp_path), "1.srv", "--json", "--max-age", "9999999999"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_one_node_request_with_properties_and_memory_gets_an_estimate(tmp_path, capsys):
    doc = _when(tmp_path, capsys, Request((NodePart(1, 2, None, frozenset({"ib"})),), mem=4 << 30), 2)
    assert doc["start"] == 1000.0 + 3600 and not doc["exact"]  # wn01 frees first of the ib nodes
    assert "its memory (mem=4gb) is not counted" in doc["why"]


def test_several_nodes_still_get_none(tmp_path, capsys):
    doc = _when(tmp_path, capsys, Request((NodePart(2, 2),)), 4)
    assert doc["start"] is None and "no estimate for this request (nodes=2:ppn=2)" in doc["why"]
