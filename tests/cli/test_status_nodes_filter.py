"""`mysched nodes --type/--state` says below its table only what concerns the listed nodes --
reservations, drains, downtimes -- and counts what it left out; no match says so."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, snap

# snapshot time 1000 s after 1970: "now" in force on wn01, "later" ahead on wn02 and wn03; the
# partition off, so that the waiting 4-core job takes a reservation (on, the partition serves it)
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'
                       'node_types = { a = { nodes = ["wn01", "wn02"]; }; b = { nodes = ["wn03", "wn04"]; }; };\n'
                       'downtimes = { now = { start = "1970-01-01T00:00"; end = "1970-01-01T02:00"; hosts = ["wn01"]; };\n'
                       '  later = { start = "1970-01-01T01:00"; end = "1970-01-01T03:00"; hosts = ["wn02", "wn03"]; }; };')


def _status(tmp_path) -> None:
    ns = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4), Node("wn04", 2)]
    s = snap([queued("1.srv", "bob", "atlas", cores=4)._replace(walltime=4 * 3600.0)], ns)
    p = plan(s, CFG, Usage(), 1000.0)
    assert p.reservations["1.srv"].nodes == ("wn01",)
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time()))


def _out(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "9999999999"]) == 0
    return capsys.readouterr().out


def test_a_type_no_node_has_lists_nothing_about_other_nodes(tmp_path, capsys):
    _status(tmp_path)
    out = _out(capsys, "nodes", "--type", "nosuch", "--state-dir", str(tmp_path))
    assert "downtime" not in out.replace("under a scheduled downtime", "") and "reserved for" not in out, out
    assert "0 nodes ()" not in out and "slots used 0 of 0" not in out
    assert "no node matches --type nosuch (the farm's 4 nodes are of node type(s) a, b)" in out
    assert "not shown, on nodes not listed: 1 reservation(s), 3 node(s) under a scheduled downtime" in out
    doc = json.loads(_out(capsys, "nodes", "--type", "nosuch", "--json", "--state-dir", str(tmp_path)))
    assert (doc["nodes"], doc["reservations"], doc["downtimes"]) == ([], {}, {})


def test_a_type_shows_its_own_nodes_windows_and_reservations(tmp_path, capsys):
    _status(tmp_path)
    out = _out(capsys, "nodes", "--type", "a", "--state-dir", str(tmp_path))
    assert "reserved for 1.srv: wn01 from " in out
    assert "in force: no new jobs, on 1 node(s): wn01" in out
    assert "on 1 node(s): wn02" in out and "wn03" not in out  # later's other node is of type b
    assert "not shown, on nodes not listed: 1 node(s) under a scheduled downtime" in out
    doc = json.loads(_out(capsys, "nodes", "--type", "b", "--json", "--state-dir", str(tmp_path)))
    assert set(doc["downtimes"]) == {"wn03"} and doc["reservations"] == {}


def test_no_filter_shows_everything_and_leaves_nothing_out(tmp_path, capsys):
    _status(tmp_path)
    out = _out(capsys, "nodes", "--state-dir", str(tmp_path))
    assert "reserved for 1.srv" in out and "on 2 node(s): wn02, wn03" in out and "not shown" not in out
