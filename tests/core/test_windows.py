"""Scheduled downtimes: which nodes a window covers (exact host names, globs, node types, or
all), the window in force or next, when a job of a walltime can start clear of them, and how
a window is written to users."""

from __future__ import annotations

import calendar

from mysched.core.model.windows import Downtime, clear_start, current, utc, when, windows_by_node

T0 = float(calendar.timegm((2026, 11, 28, 6, 0, 0)))  # 2026-11-28 06:00 UTC
H = 3600.0


def test_a_window_keeps_its_nodes_empty_from_its_margin_before_its_start():
    assert Downtime("kernel", T0, T0 + H, margin=600).begin == T0 - 600
    assert Downtime("kernel", T0, T0 + H).begin == T0


def test_a_window_covers_its_hosts_its_node_types_or_with_neither_every_node():
    everything = Downtime("all", T0, T0 + H)
    some = Downtime("rack", T0, T0 + H, hosts=("wn1*",), node_types=("gpu",))
    assert everything.covers("anything", None)
    assert [some.covers(n, t) for n, t in (("wn12", None), ("gpu01", "gpu"), ("wn02", None), ("wn02", "big"))] \
        == [True, True, False, False]


def test_windows_by_node_matches_exact_names_globs_and_types_soonest_first():
    exact = Downtime("reboot-wn01", T0 + 2 * H, T0 + 3 * H, hosts=("wn01",))
    glob = Downtime("rack1", T0, T0 + H, hosts=("wn0[1-2]",))
    typed = Downtime("gpus", T0 + H, T0 + 2 * H, node_types=("gpu",))
    got = windows_by_node([exact, glob, typed], [("wn01", None), ("wn02", None), ("wn03", None), ("g1", "gpu")])
    assert got == {"wn01": (glob, exact), "wn02": (glob,), "g1": (typed,)}


def test_an_exact_host_name_is_not_a_prefix_or_a_pattern():
    exact = Downtime("reboot", T0, T0 + H, hosts=("wn1",))
    assert windows_by_node([exact], [("wn1", None), ("wn10", None), ("xwn1", None)]) == {"wn1": (exact,)}


def test_the_current_window_is_the_one_in_force_ending_last_else_the_next():
    a = Downtime("a", T0, T0 + H, margin=600)
    b = Downtime("b", T0 + 0.5 * H, T0 + 2 * H)
    c = Downtime("c", T0 + 5 * H, T0 + 6 * H)
    ws = (a, b, c)
    assert current(ws, T0 - 601) is a         # next one, not yet in force
    assert current(ws, T0 - 600) is a         # in force from its margin
    assert current(ws, T0 + 0.75 * H) is b    # both in force: b ends last
    assert current(ws, T0 + 3 * H) is c
    assert current(ws, T0 + 6 * H) is None


def test_a_job_starts_clear_of_the_windows_it_would_run_into():
    a = Downtime("a", T0, T0 + H, margin=600)
    b = Downtime("b", T0 + 2 * H, T0 + 3 * H)
    ws = (a, b)
    assert clear_start(ws, T0 - H, 3000.0) == T0 - H         # ends just as a's margin begins
    assert clear_start(ws, T0 - H, 3001.0) == T0 + H         # after a, fits before b
    assert clear_start(ws, T0 - H, H + 1) == T0 + 3 * H      # after a, too long for the gap: after b
    assert clear_start(ws, T0 + H, H) == T0 + H             # between them, it fits
    assert clear_start(ws, T0 - H, None) == T0 + 3 * H       # no walltime: only after the last


def test_a_window_is_written_in_utc_with_its_margin_in_minutes():
    assert utc(T0) == "2026-11-28 06:00"
    assert when(Downtime("kernel", T0, T0 + 90 * 60)) == "kernel (2026-11-28 06:00 to 2026-11-28 07:30 UTC)"
    assert when(Downtime("fw", T0, T0 + H, margin=900)) == \
        "fw (2026-11-28 06:00 to 2026-11-28 07:00 UTC; jobs end 15 min before)"
