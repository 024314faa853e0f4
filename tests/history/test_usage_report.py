"""`mysched usage` as an admin reads it: against a hand count of the accounting log, and day by
day -- consecutive intervals must add up to the whole, jobs and hours alike."""

from __future__ import annotations

import json

import pytest

from mysched.cli.main import main
from mysched.core.model.batch import FinishedJob
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store

DAY = 86400.0
D2 = 20 * DAY  # a midnight


@pytest.fixture
def boundary_store(tmp_path):
    s = Store(f"sqlite:///{tmp_path}/h.db")
    s.add_finished([
        FinishedJob("a", "alice", "atlas", "q", D2 - 3600, D2 + 3600, 2, cput=7200.0),  # across midnight
        FinishedJob("b", "bob", "atlas", "q", D2 - 7200, D2, 1),  # ends at midnight exactly
        FinishedJob("c", "carol", "cms", "q", D2, D2 + 3600, 1),  # starts at midnight exactly
        FinishedJob("d", "dave", "cms", "q", D2, D2, 1, cput=5.0),  # no time at all, at midnight
    ])
    yield s
    s.close()


def _sum(rows: list[dict]) -> tuple[int, float, float]:
    return (sum(r["jobs"] for r in rows), round(sum(r["wall_hours"] for r in rows), 9),
            round(sum(r["cpu_hours"] for r in rows), 9))


def test_consecutive_days_add_up_to_the_whole(boundary_store):
    """Was: a job ending or starting at midnight, and any job running across it, counted in
    both days (8 jobs for 4), 'd' and its CPU time twice."""
    whole = _sum(boundary_store.usage_summary(by="user"))
    day1 = boundary_store.usage_summary(D2 - DAY, D2, by="user")
    day2 = boundary_store.usage_summary(D2, D2 + DAY, by="user")
    assert whole == pytest.approx((4, 2 * 2 + 2 + 1, 2 + 5 / 3600))
    assert tuple(a + b for a, b in zip(_sum(day1), _sum(day2))) == pytest.approx(whole)
    # jobs by their end, as the E lines of each day's accounting file (one ending at 00:00:00 is
    # in the new day's): all four on day 2, whose hours are mostly day 1's
    assert {r["key"]: r["jobs"] for r in day1} == {"alice": 0, "bob": 0}
    assert {r["key"]: r["jobs"] for r in day2} == {"alice": 1, "bob": 1, "carol": 1, "dave": 1}
    assert {r["key"]: r["wall_hours"] for r in day1} == {"alice": 2.0, "bob": 2.0}


def test_a_vo_mapping_that_knows_no_group_falls_back_to_the_group(boundary_store):
    rows = boundary_store.usage_summary(by="vo", vo_of={"atlas": "ATLAS"}.get)
    assert {r["key"] for r in rows} == {"ATLAS", "cms"}  # was None for cms


def test_usage_matches_a_hand_count_of_the_log(tmp_path, capsys):
    """Per user: E lines and sum of (end - start) x total_execution_slots, as awk would count."""
    log = tmp_path / "20261125"
    rows, want = [], {}
    for i in range(40):
        user, cores, start = f"u{i % 3}", 1 + i % 4, 1795600000 + 97 * i
        end = start + 600 + 31 * i
        rows.append(f"11/25/2026 10:00:00;E;{i}.srv;user={user} group=g{i % 2} queue=q start={start} end={end} "
                    f"total_execution_slots={cores} exec_host=wn1/0 resources_used.cput={i}\n")
        jobs, secs = want.get(user, (0, 0))
        want[user] = (jobs + 1, secs + (end - start) * cores)
    log.write_text("".join(rows))
    db = f"sqlite:///{tmp_path}/h.db"
    assert ingest_accounting(Store(db), [str(log)], trust_all=True).records_added == 40
    assert main(["usage", "--db", db, "--by", "user", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {r["key"]: (r["jobs"], r["wall_hours"]) for r in doc["rows"]}
    assert got == {u: (jobs, round(secs / 3600, 3)) for u, (jobs, secs) in want.items()}
    assert doc["total"]["jobs"] == 40


def test_without_a_configuration_groups_are_not_put_into_the_example_vos(tmp_path, capsys):
    """The embedded example maps 'atlas' and 'cms' but not a site's 'alice' or 'belle2', which
    were summed into "others" as if that were the site's VO."""
    db = f"sqlite:///{tmp_path}/h.db"
    Store(db).add_finished([FinishedJob(str(i), "u", g, "q", 0.0, 3600.0, 1)
                            for i, g in enumerate(("atlas", "alice", "belle2", "atlasprd"))])
    assert main(["usage", "--db", db, "--noheader"]) == 0
    out, err = capsys.readouterr()
    assert sorted(ln.split()[0] for ln in out.splitlines()) == ["alice", "atlas", "atlasprd", "belle2"]
    assert "no -c FILE: one row per unix group (no job has a VO recorded)" in err
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas", "atlasprd"]; share = 50; }; };\ndefault_vo = "others";\n')
    assert main(["usage", "--db", db, "-c", str(cfg), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["key"]: r["jobs"] for r in doc["rows"]} == {"atlas": 2, "others": 2}


def test_without_a_configuration_the_table_says_what_its_rows_are(tmp_path, capsys):
    # The daemon on sim:// records each job's VO; accounting logs name none. Said: "each group is
    # its own VO" above a table headed VO -- whichever it was.
    db = f"sqlite:///{tmp_path}/h.db"
    Store(db).add_finished([FinishedJob("1", "u", "atlasprd", "q", 0.0, 3600.0, 1, vo="atlas"),
                            FinishedJob("2", "u", "belle", "q", 0.0, 3600.0, 1, cput=1800.0)])
    assert main(["usage", "--db", db]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ["VO/GROUP", "JOBS", "WALL(h)", "CPU(h)", "EFFICIENCY"]
    assert "one row per VO recorded with the jobs, and per unix group for the jobs without one (1 group(s))" in err
    assert {ln.split()[0] for ln in out.splitlines()[1:3]} == {"atlas", "belle"}
    db2 = f"sqlite:///{tmp_path}/h2.db"
    Store(db2).add_finished([FinishedJob("1", "u", "atlasprd", "q", 0.0, 3600.0, 1, vo="atlas")])
    assert main(["usage", "--db", db2]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split()[0] == "VO" and "one row per VO recorded with the jobs" in err


def test_cpu_columns_are_left_out_where_no_cpu_time_was_recorded(tmp_path, capsys):
    # A simulated farm's jobs have no CPU time: the table showed "0.0" CPU hours and "0%"
    # efficiency for every VO, as if every job had hung.
    db = f"sqlite:///{tmp_path}/h.db"
    Store(db).add_finished([FinishedJob(str(i), "u", "atlas", "q", 0.0, 3600.0, 2, vo="atlas") for i in range(3)])
    assert main(["usage", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["VO", "JOBS", "WALL(h)"]
    assert out.splitlines()[1].split() == ["atlas", "3", "6.0"]
    assert "0%" not in out and "no CPU time recorded" in out
    assert main(["usage", "--db", db, "--json"]) == 0  # the JSON keeps its keys
    assert json.loads(capsys.readouterr().out)["rows"][0]["cpu_hours"] == 0.0
