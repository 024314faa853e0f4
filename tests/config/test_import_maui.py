"""`mysched import-maui`'s mapping: each row of docs/import-maui.md's table gives the mysched
value it promises for a grid site's maui.cfg, the result validates, and what is not carried
over is named with its line."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.config import config_from_text, validate
from mysched.config.mauiimport import import_maui
from mysched.config.mauinotes import MAPPED
from mysched.config.parse import parse_text
from mysched.core.settings import Config

MAUI_CFG = """\
# /var/spool/maui/maui.cfg -- ce01.example.org, a WLCG Tier-2
SERVERHOST            ce01.example.org
ADMIN1                root
ADMIN3                edginfo rgma
RMCFG[ce01]           TYPE=PBS HOST=ce01.example.org
RMPOLLINTERVAL        00:00:30
LOGFILE               /var/log/maui.log
LOGLEVEL              1
DEFERTIME             0
NODEALLOCATIONPOLICY  MINRESOURCE
BACKFILLPOLICY        FIRSTFIT
RESERVATIONPOLICY     CURRENTHIGHEST
RESERVATIONDEPTH      10

# fair share: a week of 12-hour windows
FSPOLICY              DEDICATEDPS
FSDEPTH               7
FSINTERVAL            12:00:00
FSDECAY               0.80
FSWEIGHT              1
FSGROUPWEIGHT         100
FSUSERWEIGHT          10
QUEUETIMEWEIGHT       1
XFACTORWEIGHT         1

# VOs' pool-account groups
GROUPCFG[atlas]       FSTARGET=30 MAXPROC=2000
GROUPCFG[atlasprd]    FSTARGET=20 MAXJOB=1500 MAXPROC=1800
GROUPCFG[atlassgm]    FSTARGET=1  MAXJOB=10 PRIORITY=1000
GROUPCFG[cms]         FSTARGET=30 MAXJOB=4000
GROUPCFG[ops]         FSTARGET=1  QDEF=ops
ACCOUNTCFG[lhcb]      FSTARGET=10 MAXJOB=400 MAXPROC=800

USERCFG[DEFAULT]      MAXJOB=200 MAXPROC=400
USERCFG[prdatlas]     MAXJOB=1000 MAXPROC=4000
USERCFG[sgmatlas]     MAXJOB=5
CLASSCFG[short]       MAXJOB=400 MAXPROC=600
CLASSCFG[long]        MAXJOB=2000
QOSCFG[ops]           PRIORITY=100000 MAXJOB=50

# SAM tests keep two nodes; rack 7's disks are swapped on Tuesday mornings
SRCFG[sam]            HOSTLIST=wn001,wn002 PERIOD=INFINITY GROUPLIST=ops,dteam
SRCFG[rack7]          HOSTLIST=wn0[70-72] PERIOD=WEEK
SRCFG[rack7]          STARTTIME=2:08:00:00 ENDTIME=2:12:00:00 DEPTH=3
SRCFG[nightly]        HOSTLIST=wn100 STARTTIME=02:00:00 ENDTIME=03:00:00 DAYS=Mon,Thu
"""

NOW = dt.datetime(2026, 11, 28, 4, 0, tzinfo=dt.timezone.utc).timestamp()
"""A Saturday."""
HOUR, DAY = 3600.0, 86400.0


def run(text: str = MAUI_CFG, **kw):
    return import_maui(text, "maui.cfg", now=NOW, tz=dt.timezone.utc, **kw)


@pytest.fixture(scope="module")
def site() -> Config:
    return config_from_text(run().text, "imported.cfg")


@pytest.fixture(scope="module")
def notes() -> str:
    return "\n".join(run().notes)


def _at(day: int, hour: int) -> float:
    return dt.datetime(2026, 11, day, hour, tzinfo=dt.timezone.utc).timestamp() if day > 3 else \
        dt.datetime(2026, 12, day, hour, tzinfo=dt.timezone.utc).timestamp()


def _downtimes(c: Config, prefix: str) -> list:
    return [d for d in c.downtimes if d.name.startswith(prefix)]


ROWS = {
    "ACCOUNTCFG[x] FSTARGET": (lambda c: c.vos["lhcb"].share, 0.10),
    "ACCOUNTCFG[x] MAXJOB": (lambda c: c.vos["lhcb"].max_running, 400),
    "ACCOUNTCFG[x] MAXPROC": (lambda c: c.vos["lhcb"].max_cores, 800),
    "GROUPCFG[x] FSTARGET": (lambda c: (round(c.vos["atlas"].share, 4), c.groups["atlas"].share,
                                        c.groups["atlasprd"].share, c.groups["atlassgm"].share,
                                        round(c.vos["cms"].share, 4)), (0.51, 30, 20, 1, 0.30)),
    "GROUPCFG[x] MAXJOB": (lambda c: (c.groups["atlasprd"].max_running, c.groups["cms"].max_running), (1500, 4000)),
    "GROUPCFG[x] MAXPROC": (lambda c: (c.groups["atlas"].max_cores, c.groups["atlasprd"].max_cores), (2000, 1800)),
    "USERCFG[DEFAULT] MAXJOB": (lambda c: c.users["default"].max_running, 200),
    "USERCFG[DEFAULT] MAXPROC": (lambda c: c.users["default"].max_cores, 400),
    "USERCFG[x] MAXJOB": (lambda c: (c.users["prdatlas"].max_running, c.users["sgmatlas"].max_running), (1000, 5)),
    # sgmatlas sets no MAXPROC: USERCFG[DEFAULT]'s is written into its block, which replaces the default
    "USERCFG[x] MAXPROC": (lambda c: (c.users["prdatlas"].max_cores, c.users["sgmatlas"].max_cores), (4000, 400)),
    "CLASSCFG[x] MAXJOB": (lambda c: (c.queues["short"].max_running, c.queues["long"].max_running), (400, 2000)),
    "CLASSCFG[x] MAXPROC": (lambda c: (c.queues["short"].max_cores, c.queues["long"].max_cores), (600, None)),
    "FSDEPTH": (lambda c: c.history_window, 7 * 12 * HOUR),
    # 12 h x ln 0.5 / ln 0.8 = 37.28 h (written to 4 digits)
    "FSINTERVAL": (lambda c: c.half_life, pytest.approx(12 * HOUR * math.log(0.5) / math.log(0.8), rel=1e-3)),
    "FSDECAY": (lambda c: c.half_life / HOUR, pytest.approx(37.28, abs=0.01)),
    "RESERVATIONDEPTH": (lambda c: c.reservation_depth, 10),
    "RMPOLLINTERVAL": (lambda c: c.interval, 30.0),
    "RMCFG[x] HOST": (lambda c: c.server, "torque://ce01.example.org"),
    "SRCFG[x] HOSTLIST": (lambda c: {d.hosts for d in c.downtimes}, {("wn070", "wn071", "wn072"), ("wn100",)}),
    "SRCFG[x] PERIOD": (lambda c: [d.start for d in _downtimes(c, "rack7")],
                        [_at(1, 8), _at(1, 8) + 7 * DAY, _at(1, 8) + 14 * DAY]),
    "SRCFG[x] STARTTIME": (lambda c: _downtimes(c, "rack7")[0].start, _at(1, 8)),
    "SRCFG[x] ENDTIME": (lambda c: _downtimes(c, "rack7")[0].end, _at(1, 12)),
    # Mon 30 Nov and Thu 3 Dec, 02:00 to 03:00
    "SRCFG[x] DAYS": (lambda c: [(d.start, d.end) for d in _downtimes(c, "nightly")],
                      [(_at(30, 2), _at(30, 3)), (_at(3, 2), _at(3, 3))]),
    "SRCFG[x] DEPTH": (lambda c: (len(_downtimes(c, "rack7")), len(_downtimes(c, "nightly"))), (3, 2)),
}


def test_every_mapping_row_has_a_test():
    assert set(ROWS) == set(MAPPED)


@pytest.mark.parametrize("row", sorted(ROWS))
def test_mapping_row(site, row):
    get, expected = ROWS[row]
    assert get(site) == expected


def test_the_output_validates_and_names_its_source_lines():
    got = run()
    parsed = parse_text(got.text, "imported.cfg")
    _, problems = validate(parsed)
    assert problems == []
    assert "# GROUPCFG[atlas] line 27, GROUPCFG[atlasprd] line 28, GROUPCFG[atlassgm] line 29" in got.text


@pytest.mark.parametrize("param", ["QOSCFG[ops]", "FSWEIGHT 1", "FSGROUPWEIGHT 100", "QUEUETIMEWEIGHT 1",
                                   "XFACTORWEIGHT 1", "NODEALLOCATIONPOLICY MINRESOURCE", "BACKFILLPOLICY FIRSTFIT",
                                   "DEFERTIME 0", "SERVERHOST", "LOGFILE", "GROUPCFG[atlassgm] PRIORITY=1000",
                                   "GROUPCFG[ops] QDEF=ops"])
def test_what_is_not_carried_over_is_named_with_its_line_and_what_mysched_does(notes, param):
    lines = [n for n in notes.splitlines() if param in n and "not carried over: " in n]
    assert len(lines) == 1, notes
    assert lines[0].startswith("maui.cfg:") and lines[0].split(": not carried over: ")[1]


def test_a_standing_reservation_for_groups_is_no_downtime(site, notes):
    assert not _downtimes(site, "sam")
    line = next(n for n in notes.splitlines() if "SRCFG[sam]" in n)
    assert line.startswith("maui.cfg:42: SRCFG[sam] GROUPLIST=ops,dteam: not carried over: a standing reservation")


def test_pool_account_groups_join_the_vo_of_the_name_they_begin_with(site, notes):
    assert site.vos["atlas"].groups == ("atlas", "atlasprd", "atlassgm")
    assert "maui.cfg:28: note: GROUPCFG[atlasprd]: in VO atlas" in notes


def test_a_vo_map_chooses_the_vos_of_groups():
    c = config_from_text(run(vo_map={"atlassgm": "sgm", "ops": "atlas", "dteam": "ops2"}).text)
    assert c.group_vo["atlassgm"] == "sgm" and c.group_vo["ops"] == "atlas" and c.group_vo["dteam"] == "ops2"
    assert round(c.vos["sgm"].share, 4) == 0.01 and round(c.vos["atlas"].share, 4) == 0.51


def test_an_account_with_no_group_gets_the_group_of_its_name(site, notes):
    assert site.vos["lhcb"].groups == ("lhcb",)
    assert "maui.cfg:32: note: ACCOUNTCFG[lhcb]: mysched knows a job's VO by its unix group" in notes


def test_shares_over_100_percent_are_scaled_to_100():
    got = run("GROUPCFG[atlas] FSTARGET=60\nGROUPCFG[cms] FSTARGET=60\nGROUPCFG[lhcb] FSTARGET=30\n")
    c = config_from_text(got.text)
    assert sum(v.share for v in c.vos.values()) == pytest.approx(1.0, abs=1e-3)
    assert c.vos["atlas"].share == c.vos["cms"].share == pytest.approx(0.40, abs=1e-3)
    assert any("add up to 150 %" in n for n in got.notes)


def test_soft_and_hard_limits_keep_the_hard_one_and_zero_is_no_limit():
    got = run("GROUPCFG[cms] FSTARGET=30 MAXJOB=2,4000 MAXPROC=0\n")
    c = config_from_text(got.text)
    assert c.groups["cms"].max_running == 4000 and c.groups["cms"].max_cores is None
    assert any("maui.cfg:1: note: GROUPCFG[cms] MAXJOB=2,4000: the hard limit 4000" in n for n in got.notes)


def test_default_is_mauis_keyword_in_any_case():
    c = config_from_text(run("USERCFG[default] MAXJOB=7\nGROUPCFG[Default] MAXJOB=3\nGROUPCFG[a1] FSTARGET=5\n").text)
    assert c.users["default"].max_running == 7 and "Default" not in c.groups


def test_no_decay_is_an_infinite_half_life_and_a_long_history_is_cut_to_a_year():
    c = config_from_text(run("FSDEPTH 24\nFSINTERVAL 30:00:00:00\nFSDECAY 1.0\nGROUPCFG[a1] FSTARGET=5\n").text)
    assert c.half_life == math.inf and c.history_window == 366 * DAY


def test_a_maintenance_for_ever_or_of_every_hour_is_not_a_downtime():
    got = run("SRCFG[off] HOSTLIST=wn9 PERIOD=INFINITY\nSRCFG[all] HOSTLIST=wn8\nGROUPCFG[a1] FSTARGET=5\n")
    assert config_from_text(got.text).downtimes == ()
    assert sum("not carried over: not a maintenance window with an end" in n for n in got.notes) == 1
    assert any(n.startswith("maui.cfg:1: SRCFG[off] PERIOD=INFINITY") and "(and 1 more alike: line 2)" in n
               for n in got.notes)


def test_unknown_and_garbled_lines_are_located_warnings():
    got = run("FOOBAR 12\nGROUPCFG[atlas FSTARGET=3\nGROUPCFG[cms] FSTARGET\nFSDEPTH seven\n"
              "GROUPCFG[cms] FSTARGET=lots\nSRCFG[x] HOSTLIST=wn1 STARTTIME=8am\nGROUPCFG FSTARGET=5\n"
              "FSDECAY[0] 0.5\nGROUPCFG[a1] FSTARGET=5\n")
    warned = [n for n in got.notes if ": warning: " in n]
    assert [n.split(":")[1] for n in warned] == ["1", "2", "3", "4", "5", "6", "7", "8"], got.notes
    config_from_text(got.text)


def test_names_that_make_one_setting_name_stay_apart():
    got = run("GROUPCFG[a.b] FSTARGET=5\nGROUPCFG[a_b] FSTARGET=6\nGROUPCFG[9lives] FSTARGET=7\n"
              "SRCFG[m.1] HOSTLIST=wn1 STARTTIME=1:00:00 ENDTIME=2:00:00 DEPTH=1\n"
              "SRCFG[m_1] HOSTLIST=wn2 STARTTIME=1:00:00 ENDTIME=2:00:00 DEPTH=1\n")
    c = config_from_text(got.text)
    assert {v: c.vos[v].groups for v in c.vos} == {"a_b": ("a.b",), "a_b_2": ("a_b",), "vo_9lives": ("9lives",)}
    assert {d.name: d.hosts for d in c.downtimes} == {"m_1": ("wn1",), "m_1_2": ("wn2",)}


def test_a_weekly_reservation_ignores_days_and_a_bad_depth_takes_mauis_two():
    got = run("SRCFG[w] HOSTLIST=wn1 PERIOD=WEEK STARTTIME=1:00:00:00 ENDTIME=1:04:00:00 DAYS=Fri DEPTH=lots\n")
    c = config_from_text(got.text)
    assert [d.start for d in c.downtimes] == [_at(30, 0), _at(30, 0) + 7 * DAY]  # Mondays
    assert any("maui.cfg:1: note: SRCFG[w] DAYS: a weekly reservation's days" in n for n in got.notes)
    assert any("maui.cfg:1: warning: SRCFG[w] DEPTH: expected a number of windows" in n for n in got.notes)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_word = st.sampled_from(["GROUPCFG[atlas]", "ACCOUNTCFG[x-1]", "USERCFG[DEFAULT]", "CLASSCFG[q]", "SRCFG[m]",
                         "FSDEPTH", "FSDECAY", "FSINTERVAL", "RESERVATIONDEPTH", "RMPOLLINTERVAL", "RMCFG[a]",
                         "FSTARGET=", "MAXJOB=", "MAXPROC=", "HOSTLIST=", "PERIOD=", "STARTTIME=", "DAYS=", "0",
                         "-1", "2,8", "101", "0.5", "1:00:00:00", "WEEK", "[", "]", "=", ",", "#", "\t", "é",
                         "USERCFG[9x]", "GROUPCFG[a b]", "HOST=", "DEPTH="])


@SETTINGS
@given(st.lists(st.one_of(st.text(max_size=30), st.lists(_word, max_size=6).map(" ".join)), max_size=8))
def test_any_text_imports_without_an_exception_to_a_valid_configuration(lines):
    got = import_maui("\n".join(lines), "maui.cfg", now=NOW, tz=dt.timezone.utc)
    assert all(n.startswith("maui.cfg") for n in got.notes)
    _, problems = validate(parse_text(got.text, "imported.cfg"))
    assert problems == [] or problems == [p for p in problems if "sets nothing" in p], problems


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table under `heading` in docs/import-maui.md, cells unmarked."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "import-maui.md").read_text()
    part = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("| ")][2:]
    return [[c.strip().strip("`").replace("\\*", "*") for c in row.strip("| ").split(" | ")] for row in rows]


def test_the_doc_table_of_what_is_carried_over_is_the_importers():
    assert {row[0]: row[1] for row in _table("Carried over")} == MAPPED
    assert all(len(row) == 3 and row[2] for row in _table("Carried over")), "a row without notes"


def test_the_doc_table_of_what_is_not_carried_over_is_the_importers():
    from mysched.config.mauinotes import ATTRS, PARAMS

    assert [tuple(row) for row in _table("Not carried over")] == [(label, why) for label, _, why in PARAMS + ATTRS]
