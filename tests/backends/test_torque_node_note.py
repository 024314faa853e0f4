"""A node's admin note (``pbsnodes -N TEXT NODE``) is read from pbs_server into the model: the
status commands show it where a node is out. The live test is marked `torque` and skips when
no pbs_server answers (as tests/backends/test_torque_live.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest

from mysched.backends.torque.backend import TorqueServer
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.mapping import node_from_attrs
from mysched.core.model.batch import NodeState
from mysched.errors import MyschedError

NOTE = "disk broken, ticket 1234"


def test_the_note_is_asked_for_and_read_into_the_node():
    ifl = FakeIFL(nodes=[("node03", {"state": "offline", "np": "4", "note": NOTE}),
                         ("node04", {"state": "free", "np": "4"})])
    s = TorqueServer("batch", ifl=ifl, clock=lambda: 5.0).snapshot()
    nodes = {n.name: n for n in s.nodes}
    assert nodes["node03"].note == NOTE and nodes["node03"].state == NodeState.OFFLINE
    assert nodes["node04"].note == ""
    # pbs_server sends only the attributes asked for (the attrl select list)
    assert any("note" in sel and "np" in sel for sel in ifl.selects), ifl.selects


def test_a_note_is_kept_on_one_line_and_survives_a_bad_np():
    warnings: list[str] = []
    assert node_from_attrs("n1", {"np": "4", "note": "  reboot\n after\tkernel  "}, warnings).note == \
        "reboot after kernel"  # a table row stays one row
    n = node_from_attrs("n2", {"np": "x", "note": NOTE}, warnings)
    assert n.state == NodeState.OFFLINE and n.note == NOTE and any("bad np" in w for w in warnings)


HOST = os.environ.get("MYSCHED_TORQUE_SERVER") or None


@pytest.mark.torque
def test_live_note_is_read_from_pbs_server():
    """Sets a note on one node, reads it through the adapter, and puts the old note back: a note
    changes nothing the scheduler does, so a daemon running on the same farm is not disturbed."""
    try:
        socket.create_connection((HOST or "127.0.0.1", 15001), timeout=1).close()
    except OSError:
        pytest.skip(f"no pbs_server answers on {HOST or '127.0.0.1'}:15001")
    pbsnodes = shutil.which("pbsnodes") or "/opt/torque/bin/pbsnodes"
    if not os.path.exists(pbsnodes):
        pytest.skip("pbsnodes not found")
    try:
        srv = TorqueServer(HOST, timeout=20)
        before = srv.snapshot().nodes
    except MyschedError as exc:
        pytest.skip(f"pbs_server not usable: {exc}")
    if not before:
        pytest.skip("the server has no nodes")
    node = before[-1]
    server = [f"-s{HOST}"] if HOST else []
    res = subprocess.run([pbsnodes, *server, "-N", NOTE, node.name], capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"cannot set a node note (needs a manager or operator): {res.stderr.strip()}")
    try:
        after = {n.name: n for n in srv.snapshot().nodes}
        assert after[node.name].note == NOTE
    finally:
        subprocess.run([pbsnodes, *server, "-N", node.note, node.name], check=True, capture_output=True)
        srv.close()
    srv = TorqueServer(HOST, timeout=20)
    try:
        assert {n.name: n.note for n in srv.snapshot().nodes}[node.name] == node.note
    finally:
        srv.close()
