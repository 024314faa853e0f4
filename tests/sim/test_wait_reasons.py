"""The simulation report names what kept jobs waiting: the job-hours waited, split by the
planner's wait reasons, and -- when it was not a free slot -- what that reason means and the
caps behind it (a site's VO max_running left 400 slots 1.3 % used with no word about why)."""

from __future__ import annotations

import json

from mysched.backends.sim.farm import make_nodes
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.report import format_result

from .test_report_meaning import contended

CAPPED = 'vos = { a = { groups = ["a"]; share = 70; max_running = 1; }; b = { groups = ["b"]; share = 30; max_running = 1; }; };'
OPEN = 'vos = { a = { groups = ["a"]; share = 70; }; b = { groups = ["b"]; share = 30; }; };'


def test_vo_caps_are_named_as_what_jobs_waited_for():
    r = simulate(contended(400), config_from_text(CAPPED), make_nodes(2, 4), SimOptions())
    assert r.occupancy < 0.3
    report = format_result(r)
    assert "  mostly           vo_limit (" in report
    assert "the VO runs its maximum number of jobs (vos.NAME.max_running: a 1, b 1)" in report
    waited = r.to_json()["wait_reasons"]
    assert waited["vo_limit"]["fraction"] > 0.9
    # the job-hours split are the job-hours waited
    assert abs(sum(v["job_h"] for v in waited.values()) - sum(r.wait) / 3600) < 0.02 * sum(r.wait) / 3600


def test_a_busy_farm_waits_for_free_slots_and_says_no_more():
    r = simulate(contended(), config_from_text(OPEN), make_nodes(2, 4), SimOptions())
    report = format_result(r)
    line = next(line for line in report.splitlines() if line.startswith("  waited for "))
    assert "job-hours: no_free_slot " in line
    assert "mostly" not in report
    assert next(iter(r.to_json()["wait_reasons"])) == "no_free_slot"


def test_simulate_json_has_wait_reasons(tmp_path, capsys):
    cfg = tmp_path / "site.cfg"
    cfg.write_text(CAPPED.replace('"a"', '"atlas"').replace('"b"', '"cms"').replace("a =", "atlas =")
                   .replace("b =", "cms ="))
    out = tmp_path / "r.json"
    assert main(["simulate", "-c", str(cfg), "--duration", "2", "--nodes", "4", "--slots-per-node", "4",
                 "--json", str(out)]) == 0
    assert "waited for" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["wait_reasons"] and all(set(v) == {"job_h", "fraction"} for v in doc["wait_reasons"].values())


def test_waits_on_a_farm_that_is_seldom_full_keep_their_reason():
    # LPC-EGEE on 70 x 2: the ~200 samples seldom caught a full farm, and 57 % of the job-hours
    # waited had no reason ("unsampled"); now the first cycle with waits after a sample that saw
    # none is sampled: what remains is the wait for the next cycle, which started them
    from mysched.core.model.batch import Job, TraceJob
    t0 = 1_700_000_000.0
    wl = []
    for k in range(60):  # every 2 h a burst of 5 one-hour jobs on 4 slots: one waits an hour
        wl += [TraceJob(Job(f"j{k}.{i}", "q", f"u{i}", "a", submit_time=t0 + 7200 * k + 30 * i, walltime=3600.0),
                        3600.0) for i in range(5)]
    r = simulate(wl, config_from_text(OPEN), make_nodes(1, 4), SimOptions())
    waited = r.to_json()["wait_reasons"]
    assert waited["no_free_slot"]["fraction"] > 0.85, waited
    assert "unsampled" not in waited and waited.get("next_cycle", {"fraction": 0})["fraction"] < 0.15
