"""The simulate report tells the admin how long each job size waited."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from mysched.cli.main import main
from mysched.core.planner import POLICIES
from mysched.sim.report import _hms as hms, format_comparison
from mysched.sim.result import SimResult

from ..conftest import REPO

BASE = (REPO / "etc" / "mysched.cfg").read_text()
# seed 2, 6 h on 10 x 8: four 8-core jobs among 467 single-core ones, waiting hours for whole nodes
RUN = ["--duration", "6", "--seed", "2", "--nodes", "10", "--slots-per-node", "8", "--progress", "never"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """--compare with the partition off (drain.rate = 0), 8-core jobs in the workload."""
    tmp = tmp_path_factory.mktemp("compare")
    cfg = tmp / "off.cfg"
    cfg.write_text(BASE + "drain = { rate = 0; };\n")
    out = tmp / "out.json"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["simulate", "-c", str(cfg), *RUN, "--mcore-fraction", "0.5", "--compare", "--json", str(out)]) == 0
    return text.getvalue(), json.loads(out.read_text())


def _row(text: str, label: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith(label + " ")]
    assert len(lines) == 1, (label, text)
    return lines[0][len(label):].split()


def test_compare_shows_each_size_classes_waits_per_policy(compared):
    text, docs = compared
    head = list(POLICIES)
    assert any(line.split() == head for line in text.splitlines())  # the table's columns
    for cls, label in (("1", "1 core"), ("2-8", "2-8 cores")):
        for k in ("mean", "p95", "max"):
            cells = _row(text, f"{label} wait {k}")
            assert cells == [hms(docs[p]["by_size"][cls][f"wait_{k}"]) for p in head]
    assert "> 8 cores" not in text  # no job of more than 8 cores in this workload
    assert docs["mysched"]["by_size"]["2-8"]["wait_mean"] > 4 * docs["mysched"]["by_size"]["1"]["wait_mean"]


def _result(policy: str = "mysched", mc_cores: int = 16) -> SimResult:
    r = SimResult(policy=policy, nodes=10, slots=80)
    r.by_size = {"1": [(60.0, 100.0)] * 10, ("2-8" if mc_cores <= 8 else ">8"): [(7200.0, 100.0)] * 2}
    return r


def test_compare_rows_follow_the_classes_present():
    text = format_comparison([_result(), _result("fifo")])
    assert "> 8 cores wait max" in text and "2-8 cores" not in text
    assert _row(text, "> 8 cores wait mean") == ["2h00m", "2h00m"]