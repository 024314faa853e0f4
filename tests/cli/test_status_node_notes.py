"""The admin's node note (``pbsnodes -N "disk broken, ticket 1234" node03``) reaches the status
file and is shown by `mysched nodes` and by `mysched why` where it names a node that is out,
as pbsnodes and MAUI's checknode show it: an admin sees why a node is out."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node, NodeState
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status

from ..conftest import queued, running, snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
NOTE = "disk broken, ticket 1234"


def _status(tmp_path) -> None:
    # wn03, the only 8-core node, is offline with a note; a job still runs there (pbsnodes -o
    # lets running jobs end) and an 8-core job waits for it; wn04 is down without a note.
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 8, NodeState.OFFLINE, note=NOTE),
             Node("wn04", 4, NodeState.DOWN)]
    jobs = [running("1.srv", "alice", "atlas", "wn03"), queued("2.srv", "bob", "atlas", cores=8),
            queued("3.srv", "bob", "atlas")]
    s = snap(jobs, nodes)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))


def _run(capsys, *argv: str) -> str:
    assert main([*argv, "--max-age", "99999"]) == 0
    return capsys.readouterr().out


def test_nodes_shows_the_note_in_text_and_json(tmp_path, capsys):
    _status(tmp_path)
    out = _run(capsys, "nodes", "--state-dir", str(tmp_path))
    header, *lines = out.splitlines()
    assert header.split()[-1] == "NOTE"
    row = next(line for line in lines if line.startswith("wn03"))
    assert row.endswith(NOTE) and row.split()[1] == "offline"
    # every other cell filled: --noheader lines split on blanks into the same ten columns
    for line in _run(capsys, "nodes", "--state-dir", str(tmp_path), "--noheader").splitlines():
        cells = line.split(None, 9)
        assert len(cells) == 10, line
        assert cells[9] == (NOTE if cells[0] == "wn03" else "-"), line
    doc = json.loads(_run(capsys, "nodes", "--state-dir", str(tmp_path), "--json"))
    assert {n["name"]: n["note"] for n in doc["nodes"]} == {"wn01": None, "wn02": None, "wn03": NOTE, "wn04": None}


def test_why_gives_the_note_of_an_offline_node_it_names(tmp_path, capsys):
    _status(tmp_path)
    out = _run(capsys, "why", "--state-dir", str(tmp_path), "2.srv")  # waits for wn03: nodes_down
    assert "wn03" in out and f'wn03 is offline: note "{NOTE}"' in out, out
    doc = json.loads(_run(capsys, "why", "--state-dir", str(tmp_path), "2.srv", "--json"))
    assert doc["job"]["reason"] == "nodes_down"
    assert doc["nodes_out"] == [{"name": "wn03", "state": "offline", "note": NOTE}]
    out = _run(capsys, "why", "--state-dir", str(tmp_path), "1.srv")  # runs on the offline node
    assert f'wn03 is offline: note "{NOTE}"' in out, out
    doc = json.loads(_run(capsys, "why", "--state-dir", str(tmp_path), "3.srv", "--json"))
    assert doc["nodes_out"] == []  # names no node that is out: nothing said about them


def test_nodes_lists_each_draining_node_on_a_line_of_its_own(tmp_path, capsys):
    """A site drains dozens of nodes at once: one line a node, greppable, like node_load's."""
    _status(tmp_path)
    path = tmp_path / "status.json"
    doc = json.loads(path.read_text())
    doc["drains"] = {f"wn{i:02d}.grid.example.org": {"since": 1000.0, "ready": None if i % 2 else 1500.0}
                     for i in range(30)}
    path.write_text(json.dumps(doc))
    lines = [line for line in _run(capsys, "nodes", "--state-dir", str(tmp_path)).splitlines() if "draining" in line]
    assert len(lines) == 30 and all(len(line) < 160 for line in lines), lines[:2]
    assert lines[0].startswith("wn00.grid.example.org: draining for multi-core jobs (since ") and "ready since" in lines[0]
    assert lines[1].startswith("wn01.grid.example.org: draining") and "ready" not in lines[1]
