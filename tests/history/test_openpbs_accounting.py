"""OpenPBS accounting logs read as TORQUE's are, with no option: a site moving to OpenPBS
imports its /var/spool/pbs/server_priv/accounting and `usage` reports each job's cores.

`data/openpbs/20261127` is a day of a small farm as OpenPBS 23 writes it (the format of
src/server/accounting.c, and the lines of ../shared/openpbs-farm/RECIPE.md): multi-chunk and
multi-vnode exec_vnode, a job array, a job requeued by qrerun, two deleted jobs, license and
alter records, and three damaged lines. Its jobs, as a hand count gives them:

=========  =====  =====  =====  =====================================================
job        group  cores  secs   why
=========  =====  =====  =====  =====================================================
100        atlas  1      3600   exec_vnode=(cn01:ncpus=1)
101        atlas  8      1800   select=2:ncpus=4, exec_host=cn02/0*4+cn03/0*4
102        cms    16     600    one chunk over two vnodes: big01[0] and big01[1]
103[1,2]   cms    2      900    subjobs; the array 103[] as a whole charges nothing
104        lhcb   4      1200   the run its R record (qrerun) ends ...
104        lhcb   4      2400   ... and the run after it, to its E
106        dteam  1      300    deleted while running (Exit_status=271)
108        dteam  2      1800   exec_vnode garbled: cores from exec_host, said
=========  =====  =====  =====  =====================================================

105 was deleted while queued (no run), 107's E line has a garbled start= (said, skipped).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from sqlalchemy import select

from mysched.backends.torque.home import ServerHome, accounting_dir, find_server_home
from mysched.backends.torque.values import parse_exec_host
from mysched.cli.main import main
from mysched.history.accounting import NotRun, parse_line, to_finished_job
from mysched.history.accountingfeed import AccountingFeed
from mysched.history.ingest import ingest_accounting
from mysched.history.openpbs import charged_run, parse_exec_vnode, select_cores
from mysched.history.store import Store, finished_jobs

DATA = os.path.join(os.path.dirname(__file__), "data", "openpbs")
T0 = 1795795200  # 2026-11-27 16:00:00 UTC, the day of the fixture
WANT = {  # (job id, start) -> (user, group, cores, seconds)
    ("100.pbs01", T0 + 10): ("alice", "atlas", 1, 3600),
    ("101.pbs01", T0 + 30): ("bob", "atlas", 8, 1800),
    ("102.pbs01", T0 + 60): ("carol", "cms", 16, 600),
    ("103[1].pbs01", T0 + 100): ("carol", "cms", 2, 900),
    ("103[2].pbs01", T0 + 100): ("carol", "cms", 2, 900),
    ("104.pbs01", T0 + 300): ("dave", "lhcb", 4, 1200),
    ("104.pbs01", T0 + 1600): ("dave", "lhcb", 4, 2400),
    ("106.pbs01", T0 + 500): ("eve", "dteam", 1, 300),
    ("108.pbs01", T0 + 930): ("eve", "dteam", 2, 1800),
}
LOG = os.path.join(DATA, "20261127")
SAID = [f"{LOG}:19: expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;attributes'",
        f"{LOG}:29: E record without a valid start=",
        f"{LOG}:34: garbled exec_vnode='(cn08:ncpus=two)' ignored; the wall-clock record is kept"]

E = ("11/27/2026 17:00:10;E;100.pbs01;user=alice group=atlas project=_pbs_project_default jobname=evgen "
     "queue=atlas ctime=1795795200 qtime=1795795200 etime=1795795200 start=1795795210 {placed}"
     "Resource_List.ncpus=1 Resource_List.nodect=1 Resource_List.place=pack {select}"
     "Resource_List.walltime=01:00:00 session=4000 end=1795798810 Exit_status=0 resources_used.cpupercent=97 "
     "resources_used.cput=00:58:30 resources_used.mem=1048576kb {used}resources_used.vmem=2097152kb "
     "resources_used.walltime=01:00:00 run_count=1")


def _e(placed: str = "exec_host=cn01/0 exec_vnode=(cn01:ncpus=1) ", select: str = "Resource_List.select=1:ncpus=1 ",
       used: str = "resources_used.ncpus=1 ", **swap: str):
    """The E record of job 100 with its placement, request and usage as given, and any other
    text replaced (``**{old: new}``)."""
    line = E.format(placed=placed, select=select, used=used)
    for old, new in swap.items():
        line = line.replace(old, new)
    return to_finished_job(parse_line(line))


def _stored(store: Store) -> dict[tuple[str, float], tuple[str, str, int, float]]:
    with store.engine.connect() as c:
        return {(r.job_id, r.start): (r.user, r.grp, r.cores, r.end - r.start)
                for r in c.execute(select(finished_jobs))}


# -- a record's cores and nodes ------------------------------------------------------------------

def test_cores_of_a_multi_chunk_job_and_its_vnodes():
    fj = _e(placed="exec_host=cn02/0*4+cn03/0*4 exec_vnode=(cn02:ncpus=4)+(cn03:ncpus=4) ")
    assert (fj.cores, fj.nodes) == (8, ("cn02", "cn03"))
    # one chunk over two vnodes of one host: the host once in exec_host, each vnode in exec_vnode
    fj = _e(placed="exec_host=big01/0*16 exec_vnode=(big01[0]:ncpus=8:mem=16gb+big01[1]:ncpus=8:mem=16gb) ")
    assert (fj.cores, fj.nodes) == (16, ("big01[0]", "big01[1]"))


@pytest.mark.parametrize("placed, select, used, cores", [
    ("exec_vnode=(cn01:ncpus=3)+(cn02:ncpus=3) ", "", "", 6),  # no exec_host: the vnodes' cores
    ("", "Resource_List.select=1:ncpus=1 ", "resources_used.ncpus=5 ", 5),  # nothing placed: what it used
    ("", "", "", 1),  # Resource_List.ncpus=1 of the template
    ("", "Resource_List.select=2:ncpus=8:mpiprocs=8+1:ncpus=2 ", "", 1),  # ncpus before select ...
])
def test_cores_where_the_placement_is_missing(placed, select, used, cores):
    assert _e(placed=placed, select=select, used=used).cores == cores


def test_the_select_request_when_nothing_else_says():
    fj = _e(placed="", select="Resource_List.select=2:ncpus=8:mpiprocs=8+1:mem=2gb ", used="",
            **{"Resource_List.ncpus=1 ": ""})
    assert fj.cores == 17  # a chunk without ncpus is one core, as OpenPBS's default
    assert select_cores("3") == 3 and select_cores("1:ncpus=4:host=cn01") == 4
    with pytest.raises(ValueError, match="bad select"):
        select_cores("1:ncpus=four")


def test_exec_host_counts_openpbs_chunks():
    assert parse_exec_host("vm/0*2+vm/1*2") == (("vm", 4),)
    assert parse_exec_host("cn01/0") == (("cn01", 1),)  # ncpus=1 is written without *1
    with pytest.raises(ValueError, match="bad exec_host"):
        parse_exec_host("cn01/0*x")


def test_exec_vnode_as_openpbs_writes_it_with_or_without_parentheses():
    assert parse_exec_vnode("node-a:ncpus=2+node-b:ncpus=2") == (("node-a", 2), ("node-b", 2))
    assert parse_exec_vnode("(node-c:ncpus=1:bigmem=True)") == (("node-c", 1),)
    assert parse_exec_vnode("(vm:mem=1gb)") == (("vm", 0),)
    for bad in ("(cn01:ncpus=two)", "(:ncpus=1)", "(cn01:ncpus)"):
        with pytest.raises(ValueError, match="bad exec_vnode"):
            parse_exec_vnode(bad)


def test_a_key_forged_in_the_quoted_account_string_is_overwritten_by_the_servers():
    """OpenPBS writes account="..." as the user typed it; user and group come before it (the
    first kept), the placement and usage after it (the last kept): the job is charged as run."""
    fj = _e(**{"project=_pbs_project_default": 'account="x user=root group=cms exec_host=cn01/0*1 '
                                               'exec_vnode=(cn01:ncpus=1) resources_used.ncpus=1" '
                                               "project=_pbs_project_default"},
            placed="exec_host=cn02/0*4+cn03/0*4 exec_vnode=(cn02:ncpus=4)+(cn03:ncpus=4) ", used="resources_used.ncpus=8 ")
    assert (fj.user, fj.group, fj.cores, fj.nodes) == ("alice", "atlas", 8, ("cn02", "cn03"))


def test_quoted_values_are_read_without_their_quotes():
    rec = parse_line(E.format(placed="", select="", used="").replace(
        "project=_pbs_project_default", "account=\"grid ops\" project='say \"hi\" there'"))
    assert (rec.attrs["account"], rec.attrs["project"], rec.attrs["jobname"]) == ("grid ops", 'say "hi" there', "evgen")
    # OpenPBS quotes only values with blanks: a name that merely looks quoted is a name
    rec = parse_line("11/22/2026 10:00:00;E;1.s;user='ab' group=g queue=\"q\" jobname=x start=1 end=2")
    assert (rec.attrs["user"], rec.attrs["queue"]) == ("'ab'", '"q"')


def test_the_array_as_a_whole_charges_nothing_its_subjobs_do():
    with pytest.raises(NotRun, match=r"job array 103\[\]\.pbs01 as a whole"):
        _e(**{"100.pbs01": "103[].pbs01"}, placed="array_indices=1-2 ")
    assert _e(**{"100.pbs01": "103[7].pbs01"}).id == "103[7].pbs01"


def test_an_r_record_is_charged_when_it_says_when_its_run_ended():
    rec = parse_line(E.format(placed="", select="", used="").replace(";E;", ";R;"))
    assert charged_run(rec.type, rec.attrs) and rec.time == 1795798810  # its end=, as an E's
    fj = to_finished_job(rec)
    assert (fj.start, fj.end) == (1795795210, 1795798810)
    # requeued before any usage came from the node: OpenPBS writes no resources_used at all
    rec = parse_line(E.format(placed="", select="", used="").replace(";E;", ";R;").split(" resources_used.")[0])
    assert charged_run(rec.type, rec.attrs) and to_finished_job(rec).end == 1795798810
    bare = parse_line("11/27/2026 17:00:10;R;100.srv;")  # TORQUE's (req_rerun.c): nothing to charge
    assert bare is not None and not charged_run(bare.type, bare.attrs)


@pytest.mark.parametrize("line", [
    "11/27/2026 17:00:00;L;license;floating license hour:0 day:0 month:0 max:0",
    "11/27/2026 16:20:00;a;104.pbs01;Resource_List.walltime=02:00:00",
    "11/27/2026 16:20:00;s;104.pbs01;user=dave group=lhcb start=1795795500 exec_vnode=(cn05:ncpus=4)",
    "11/27/2026 16:20:00;u;104.pbs01;user=dave group=lhcb start=1795795500 resources_used.walltime=00:10:00",
    "11/27/2026 16:20:00;B;R12.pbs01;owner=dave@login01 name=NULL queue=R12 start=1795795500",
])
def test_openpbs_records_torque_lacks_are_skipped(line):
    assert parse_line(line) is None


# -- the log, imported and reported ------------------------------------------------------------

def test_the_fixture_imports_as_counted_by_hand(tmp_path):
    store = Store(f"sqlite:///{tmp_path}/h.db")
    said: list[str] = []
    rep = ingest_accounting(store, [DATA], on_problem=said.append)
    assert _stored(store) == WANT  # every E/R charged once, with its S record matched (no --trust-all)
    assert (rep.records_added, rep.malformed, rep.repaired, rep.suspicious) == (9, 2, 1, 0)
    assert said == SAID  # each damaged line once, one line, FILE:LINE
    assert all("\n" not in s and len(s) < 300 for s in said)


def test_history_import_then_usage_end_to_end(tmp_path, capsys):
    db = f"sqlite:///{tmp_path}/h.db"
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 40; }; cms = { groups = ["cms"]; share = 40; };\n'
                   '        lhcb = { groups = ["lhcb"]; share = 20; }; };\ndefault_vo = "others";\n')
    assert main(["history", "import", DATA, "--db", db]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("1 file(s), 37 new line(s): 9 job record(s) added, 0 already known, "
                          "2 malformed line(s) skipped, 1 kept without a garbled field, 26 other record(s), "
                          "0 suspicious record(s) not charged")
    assert err.splitlines() == [f"mysched: warning: {s}" for s in SAID]
    assert main(["usage", "--db", db, "-c", str(cfg), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["key"]: (r["jobs"], r["wall_hours"]) for r in doc["rows"]}
    assert rows == {"atlas": (2, 5.0), "cms": (3, round((16 * 600 + 2 * 2 * 900) / 3600, 3)),
                    "lhcb": (2, 4.0), "others": (2, round((300 + 2 * 1800) / 3600, 3))}
    assert doc["suspicious"]["count"] == 0
    # imported again: nothing new, nothing counted twice
    assert main(["history", "import", DATA, "--db", db]) == 0
    assert "0 new line(s)" in capsys.readouterr().out
    assert main(["usage", "--db", db, "--by", "user", "--json"]) == 0
    assert {r["key"]: r["jobs"] for r in json.loads(capsys.readouterr().out)["rows"]} == {
        "alice": 1, "bob": 1, "carol": 3, "dave": 2, "eve": 2}


def test_the_daemon_reads_a_growing_log_once(tmp_path):
    """As pbs_server appends: the first half, then the rest, then nothing new -- every run
    charged once, however often the cycle reads the directory."""
    acct = tmp_path / "accounting"
    acct.mkdir()
    text = open(LOG).read()
    cut = text.index("\n", len(text) // 2) + 1
    (acct / "20261127").write_text(text[:cut])
    store = Store(f"sqlite:///{tmp_path}/h.db")
    said: list[str] = []
    feed = AccountingFeed(store, str(acct), 2 * 86400.0, on_problem=said.append, wall=lambda: T0 + 7200)
    first = feed()
    assert 0 < first < 9
    with open(acct / "20261127", "a") as f:
        f.write(text[cut:])
    assert first + feed() == 9
    assert feed() == 0 and feed() == 0
    assert _stored(store) == WANT
    copy = os.path.realpath(acct / "20261127")
    assert said == [s.replace(LOG, copy) for s in SAID]  # each damaged line said once


def test_a_copy_of_the_log_elsewhere_charges_nothing_twice(tmp_path):
    """An admin imports the server's directory and a copy of a day (an inode of its own): the
    runs are known by job id and start."""
    store = Store(f"sqlite:///{tmp_path}/h.db")
    ingest_accounting(store, [DATA])
    shutil.copy(LOG, tmp_path / "20261127")
    rep = ingest_accounting(store, [str(tmp_path / "20261127")])
    assert (rep.records_added, rep.duplicates) == (0, 9) and len(_stored(store)) == 9


REAL = [  # verbatim, of OpenPBS 23.06.06 on the loopback farm of RECIPE.md (jobs deleted 2 s after their start)
    ('11/28/2026 05:14:32;S;4.vm;user=alice group=atlas project=_pbs_project_default jobname=STDIN '
     'queue=atlas ctime=1795842865 qtime=1795842865 etime=1795842865 start=1795842872 '
     'exec_host=vm/0*2+vm/1*2 exec_vnode=(node-a:ncpus=2)+(node-b:ncpus=2) Resource_List.ncpus=4 '
     'Resource_List.nodect=2 Resource_List.place=scatter Resource_List.select=2:ncpus=2 '
     'resource_assigned.ncpus=4 '),
    ('11/28/2026 05:14:32;S;6.vm;user=carol group=cms project=_pbs_project_default jobname=STDIN '
     'queue=cms ctime=1795842866 qtime=1795842866 etime=1795842866 start=1795842872 exec_host=vm/2 '
     'exec_vnode=(node-c:ncpus=1) Resource_List.ncpus=1 Resource_List.nodect=1 '
     'Resource_List.place=free Resource_List.select=1:ncpus=1:bigmem=True resource_assigned.ncpus=1 '),
    ('11/28/2026 05:14:34;D;6.vm;requestor=root@localhost'),
    ('11/28/2026 05:14:34;E;6.vm;user=carol group=cms project=_pbs_project_default jobname=STDIN '
     'queue=cms ctime=1795842866 qtime=1795842866 etime=1795842866 start=1795842872 exec_host=vm/2 '
     'exec_vnode=(node-c:ncpus=1) Resource_List.ncpus=1 Resource_List.nodect=1 '
     'Resource_List.place=free Resource_List.select=1:ncpus=1:bigmem=True session=0 end=1795842874 '
     'Exit_status=265 run_count=1'),
    ('11/28/2026 05:14:34;D;4.vm;requestor=root@localhost'),
    ('11/28/2026 05:14:34;E;4.vm;user=alice group=atlas project=_pbs_project_default jobname=STDIN '
     'queue=atlas ctime=1795842865 qtime=1795842865 etime=1795842865 start=1795842872 '
     'exec_host=vm/0*2+vm/1*2 exec_vnode=(node-a:ncpus=2)+(node-b:ncpus=2) Resource_List.ncpus=4 '
     'Resource_List.nodect=2 Resource_List.place=scatter Resource_List.select=2:ncpus=2 session=0 '
     'end=1795842874 Exit_status=265 run_count=1'),
]


def test_lines_of_a_real_openpbs_server(tmp_path):
    """A job on two vnodes and one on a vnode with a custom resource, both deleted while
    running: OpenPBS then writes E records without any resources_used."""
    (tmp_path / "20261128").write_text("\n".join(REAL) + "\n")
    store = Store(f"sqlite:///{tmp_path}/h.db")
    rep = ingest_accounting(store, [str(tmp_path)])
    assert (rep.records_added, rep.malformed, rep.repaired, rep.suspicious) == (2, 0, 0, 0)
    got = {r.id: (r.user, r.group, r.queue, r.cores, r.end - r.start, r.nodes, r.exit_status)
           for r in store.finished_since(0)}
    assert got == {"4.vm": ("alice", "atlas", "atlas", 4, 2.0, ("node-a", "node-b"), 265),
                   "6.vm": ("carol", "cms", "cms", 1, 2.0, ("node-c",), 265)}


# -- where the daemon looks ---------------------------------------------------------------------

def test_the_daemon_of_an_openpbs_server_reads_openpbs_s_directory(tmp_path, monkeypatch):
    """history.accounting_dir left at its default (TORQUE's): for pbs://, OpenPBS's home from
    pbs.conf -- even where TORQUE's directory is still there, no longer written after a move."""
    torque = tmp_path / "torque" / "server_priv" / "accounting"
    torque.mkdir(parents=True)
    pbs = tmp_path / "pbs"
    (pbs / "server_priv" / "accounting").mkdir(parents=True)
    conf = tmp_path / "pbs.conf"
    conf.write_text(f"PBS_EXEC=/opt/pbs\nPBS_SERVER=pbs01\nPBS_HOME={pbs}\nPBS_START_SERVER=1\n")
    monkeypatch.delenv("PBS_HOME", raising=False)
    monkeypatch.setenv("PBS_CONF_FILE", str(conf))
    assert accounting_dir(str(torque), str(torque), openpbs=True) == (
        f"{pbs}/server_priv/accounting", f"pbs_server's home, from {conf}:3")
    assert accounting_dir(str(torque), str(torque)) == (str(torque), "history.accounting_dir")  # TORQUE's
    mine = str(tmp_path / "elsewhere")  # set by the admin: kept
    assert accounting_dir(mine, str(torque), openpbs=True) == (mine, "history.accounting_dir")
    monkeypatch.setenv("PBS_CONF_FILE", str(tmp_path / "missing"))
    assert find_server_home(openpbs=True) == ServerHome("/var/spool/pbs", "OpenPBS's default")
