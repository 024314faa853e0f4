"""Replaying a load series: a rule crossing `high` for two hours holds exactly its VO for
those two hours, and the other VOs keep their shares."""

from __future__ import annotations

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.errors import InputError
from mysched.sim.loadseries import read_load_series
from mysched.sim.replay import simulate
from mysched.sim.result import SimOptions
from mysched.sim.workloads.synthetic import SyntheticSpec, generate
from mysched.core.model.batch import Node

from ..conftest import REPO

CFG = (REPO / "etc" / "mysched.cfg").read_text() + '''
load_sources = { se = { type = "file"; path = "/unused"; interval = 60; max_age = 86400; on_stale = "stop"; }; };
load_rules = { atlas_se = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; hysteresis = 0.05; }; };
'''
H = 3600.0


def test_two_hours_over_high_hold_exactly_the_tied_vo_for_two_hours(tmp_path):
    cfg = config_from_text(CFG)
    series = tmp_path / "se.csv"
    series.write_text(f"time,source,value\n0,se,0.3\n{6 * H:.0f},se,0.95\n{7 * H:.0f},se,0.88\n{8 * H:.0f},se,0.2\n")
    wl = generate(SyntheticSpec(duration=16 * H, slots=160, seed=3))
    nodes = tuple(Node(f"wn{i:04d}", 8) for i in range(1, 21))
    r = simulate(wl, cfg, nodes, SimOptions(interval=60.0, load_series=read_load_series(str(series), cfg)))
    t0 = r.t0
    closed = [(t - t0, lv["atlas_se"]) for t, lv in r.level_log]
    # closed at 6 h; 0.88 is within the hysteresis band under high: still closed; open at 8 h
    assert closed[:3] == [(0.0, "open"), (6 * H, "closed"), (8 * H, "open")]  # (stale a day after the last)
    held = [(t - t0, h) for t, h in r.throttle_log]
    first = next(t for t, h in held if h)
    last = next(t for t, h in held if t > first and not h)
    assert abs(first - 6 * H) <= 60 and abs(last - 8 * H) <= 60, (first, last)
    assert {vo for _, h in held for vo in h} == {"atlas"}  # nobody else was held
    assert r.share_violations == 0
    assert 0 < r.throttled_s["atlas"] / 3600 <= 2 * 160


def test_a_bad_series_is_refused_with_file_and_line(tmp_path):
    cfg = config_from_text(CFG)
    bad = tmp_path / "bad.csv"
    bad.write_text("time,source,value\n0,se,0.3\n60,sf,0.4\nsoon,se,1\n120,se,lots\n")
    with pytest.raises(InputError) as exc:
        read_load_series(str(bad), cfg)
    msg = str(exc.value).splitlines()
    assert msg[0] == f"{bad}:3: unknown load source 'sf' (the configuration has se)"
    assert msg[1].startswith(f"{bad}:4: bad time 'soon'") and msg[2] == f"{bad}:5: value 'lots' is not a number"


def test_simulate_reports_the_slot_hours_held_back(tmp_path, capsys):
    cfgf = tmp_path / "m.cfg"
    cfgf.write_text(CFG)
    series = tmp_path / "se.csv"
    series.write_text(f"0,se,0.95\n{2 * H:.0f},se,0.1\n")
    assert main(["simulate", "-c", str(cfgf), "--duration", "6", "--load-series", str(series),
                 "--progress", "never"]) == 0
    out = capsys.readouterr().out
    assert "slot-hours held back by external load: atlas" in out
