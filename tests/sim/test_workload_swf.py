"""SWF reader: the real archive traces in /work/shared/traces (skipped when absent), and
small traces written here for the edge cases."""

from __future__ import annotations

import gc
import gzip
import json
import time

import pytest

from mysched.errors import InputError
from mysched.sim.workloads.swf import MAX_PROBLEMS, read_swf
from mysched.sim.workloads.vomap import parse_vo_map

from ..conftest import TRACES

LPC = "LPC-EGEE-2004-1.2-cln.swf.gz"

HEADER = "; UnixStartTime: 1000000000\n; TimeZoneString: Europe/Berlin\n"


def line(job, submit, run=100, alloc=1, req_procs=1, req_time=200, req_mem=-1, status=1, user=3, group=2,
         queue=1, wait=5) -> str:
    """One 18-column SWF job line."""
    cols = [job, submit, wait, run, alloc, -1, -1, req_procs, req_time, req_mem, status, user, group, -1, queue,
            -1, -1, -1]
    return " ".join(str(c) for c in cols) + "\n"


def write(tmp_path, text: str, name: str = "t.swf", compress: bool = False):
    f = tmp_path / name
    if compress:
        f.write_bytes(gzip.compress(text.encode()))
    else:
        f.write_text(text)
    return f


@pytest.fixture(scope="module")
def lpc():
    if not (TRACES / LPC).is_file():
        pytest.skip(f"shared traces not found at {TRACES}")
    return read_swf(TRACES / LPC)


# -- the real traces -----------------------------------------------------------------------

def test_lpc_egee_loads_all_jobs_but_the_cancelled(lpc):
    # 234,889 lines; SOURCES.md: 14,194 cancelled before they started (user -1, run -1, no
    # processor). 16 more status-5 lines got a processor and were killed within the second:
    # dispatched, so replayed (220,695 started jobs, as AccaSim counts them).
    assert lpc.skipped == {"cancelled": 14194}
    assert len(lpc.jobs) == 234_889 - 14_194 == 220_695
    assert lpc.cancelled_ran == 2364 + 16  # killed while running: kept, they held a slot
    assert lpc.problems == [] and not lpc.truncated and lpc.lines == 234_889 + 71
    assert lpc.unix_start == 1091615532 and lpc.timezone == "Europe/Paris"
    assert (lpc.max_nodes, lpc.max_procs) == (70, 140)
    assert set(lpc.queues) == {"test", "short", "long", "day", "infinite", "batch"}
    assert set(lpc.groups) == {f"g{i}" for i in range(1, 9)}
    assert lpc.groups["g2"] == 108_210  # SOURCES.md: group 2 has 46 % of the jobs
    times = [tj.job.submit_time for tj in lpc.jobs]
    assert times == sorted(times)
    assert all(tj.job.cores == 1 for tj in lpc.jobs)  # "Jobs are always serial"


def test_lpc_egee_job_fields(lpc):
    # first job line: "9933 3585977 4 16 1 2 0 1 7200 -1 1 1 1 -1 2 1 -1 -1"
    first = lpc.jobs[0]
    assert first.job.id == "9933" and first.runtime == 16.0
    assert first.job.submit_time == 1091615532 + 3585977
    assert (first.job.user, first.job.group, first.job.queue) == ("u1", "g1", "short")
    assert first.job.walltime == 7200.0 and first.job.mem is None and first.job.vo is None
    # "220822 22320774 42010 16669 1 8 45120 1 28800 819200 1 48 6 -1 4 2 -1 -1": the header
    # says mem_req is per job (KB)
    job = next(tj for tj in lpc.jobs if tj.job.id == "220822").job
    assert (job.queue, job.user, job.group, job.mem) == ("day", "u48", "g6", 819200 * 1024)


def test_first_and_start_from(lpc):
    path = TRACES / LPC
    head = read_swf(path, first=1000)
    assert [tj.job for tj in head.jobs] == [tj.job for tj in lpc.jobs[:1000]]
    assert head.truncated
    cut = lpc.jobs[50_000].job.submit_time
    later = read_swf(path, start_from=cut, first=10)
    expected = [tj.job.id for tj in lpc.jobs if tj.job.submit_time >= cut][:10]
    assert [tj.job.id for tj in later.jobs] == expected
    assert all(tj.job.submit_time >= cut for tj in later.jobs)
    assert later.skipped["before_start_from"] > 40_000


def test_wagap_queue_names_come_from_column_20():
    path = TRACES / "wagap-2013.swf"
    if not path.is_file():
        pytest.skip(f"shared traces not found at {TRACES}")
    tr = read_swf(path)
    assert tr.extended and tr.unix_start is None
    # SOURCES.md's table; the two q_4d jobs with a negative run time cannot be replayed
    assert tr.queues == {"q_1d": 5301, "q_2h": 4392, "q_1w": 3414, "q_2d": 1435, "q_4h": 1267, "q_4d": 1058,
                         "q_2w": 844, "backfill": 104, "q_2w_plus": 68, "ops": 11, "priority_long": 4}
    assert tr.skipped == {"no_runtime": 2}
    job0 = tr.jobs[0].job
    assert job0.id == "0" and job0.submit_time == 1356996147  # absolute already
    assert job0.cores == 64 and job0.mem == 68719476736  # Alea: bytes per job
    assert len({tj.job.user for tj in tr.jobs}) == 75


@pytest.mark.parametrize("name, jobs, skipped, repaired", [
    ("KTH-SP2-1996-2.1-cln.swf.gz", 28_476, {}, {"assumed_1_core": 1}),
    ("SDSC-SP2-1998-4.2-cln.swf.gz", 59_715 - 5_671, {"cancelled": 5_671}, {}),
    ("LLNL-Thunder-2007-1.1-cln.swf.gz", 121_039 - 1_190 - 135, {"no_submit": 1_190, "cancelled": 135},
     {"assumed_1_core": 923}),
])
def test_other_archive_traces(name, jobs, skipped, repaired):
    # expected counts from awk over the files: status 5 with no processor or run < 0;
    # Thunder has 1,190 lines with submit time -1 (each reported with its line, not silently
    # dropped); KTH one job with neither allocated nor requested processors
    if not (TRACES / name).is_file():
        pytest.skip(f"shared traces not found at {TRACES}")
    tr = read_swf(TRACES / name)
    assert len(tr.jobs) == jobs and tr.skipped == skipped and tr.repaired == repaired
    assert tr.reported == sum(v for k, v in skipped.items() if k != "cancelled") + sum(repaired.values())
    assert len(tr.problems) == min(tr.reported, 20)
    assert all(p.startswith(f"{TRACES / name}:") for p in tr.problems)


def test_lines_not_replayed_or_repaired_are_reported_with_their_place(tmp_path):
    lines = ["1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1",
             "2 -5 0 10 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1",     # negative submit
             "3 5 0 nan 1 -1 -1 1 60 -1 1 1 1 -1 1 -1 -1 -1",     # NaN run time
             "1 9 0 10 1 -1 -1 1 60 -1 1 2 1 -1 1 -1 -1 -1",      # job number 1 again
             "4 9 0 10 0 -1 -1 -1 60 -1 1 2 1 -1 1 -1 -1 -1"]     # no processor count
    path = tmp_path / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    tr = read_swf(path)
    assert [tj.job.id for tj in tr.jobs] == ["1", "1.2", "4"]
    assert tr.jobs[2].job.cores == 1
    assert tr.skipped == {"no_submit": 1, "no_runtime": 1}
    assert tr.repaired == {"duplicate_id": 1, "assumed_1_core": 1}
    assert [p.split(":")[1] for p in tr.problems] == ["2", "3", "4", "5"]


def test_header_queue_names_are_used_where_clean():
    path = TRACES / "SDSC-SP2-1998-4.2-cln.swf.gz"
    if not path.is_file():
        pytest.skip(f"shared traces not found at {TRACES}")
    tr = read_swf(path, first=5000)
    assert set(tr.queues) <= {"interactive", "express", "high", "normal", "low", "standby", "No_Class"}


@pytest.mark.bench
def test_lpc_egee_loads_fast():
    if not (TRACES / LPC).is_file():
        pytest.skip(f"shared traces not found at {TRACES}")
    t0 = time.perf_counter()
    read_swf(TRACES / LPC)
    assert time.perf_counter() - t0 < 3.0


# -- small traces ---------------------------------------------------------------------------

def test_malformed_lines_are_reported_with_line_numbers_and_the_rest_loads(tmp_path):
    f = write(tmp_path, HEADER + line(1, 0) + "2 10 x 100 1\n" + line(3, 20).replace(" 200 ", " 2x0 ")
              + line(4, 30) + line(5, 40).replace("5 40", "5 forty"))
    seen = []
    tr = read_swf(f, on_problem=seen.append)
    assert [tj.job.id for tj in tr.jobs] == ["1", "4"]
    assert seen == tr.problems == [
        f"{f}:4: expected 18 columns, found 5",
        f"{f}:5: non-numeric requested time (column 9): '2x0'",
        f"{f}:7: non-numeric submit time (column 2): 'forty'",
    ]
    assert tr.skipped == {"malformed": 3}


def test_problems_are_capped_but_all_counted(tmp_path):
    f = write(tmp_path, HEADER + line(1, 0) + "junk\n" * (MAX_PROBLEMS + 30) + line(2, 10))
    tr = read_swf(f)
    assert len(tr.problems) == MAX_PROBLEMS and tr.skipped["malformed"] == MAX_PROBLEMS + 30
    assert [tj.job.id for tj in tr.jobs] == ["1", "2"]


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("name", ["t.swf", "t.swf.gz"])
def test_gzip_and_plain_are_told_apart_by_content(tmp_path, compress, name):
    f = write(tmp_path, HEADER + line(1, 0) + line(2, 60), name=name, compress=compress)
    tr = read_swf(str(f))
    assert [(tj.job.id, tj.job.submit_time) for tj in tr.jobs] == [("1", 1e9), ("2", 1e9 + 60)]


@pytest.mark.parametrize("module", ["bz2", "lzma"])
def test_bzip2_and_xz_too(tmp_path, module):
    compress = __import__(module).compress
    f = tmp_path / "t.swf"
    f.write_bytes(compress((HEADER + line(1, 0) + line(2, 60)).encode()))
    assert [tj.job.id for tj in read_swf(f).jobs] == ["1", "2"]


def test_job_mapping(tmp_path):
    f = write(tmp_path, HEADER + "; Queue: 1 short\n; Queue: 2 [fque:1]\n"
              + line(7, 5, run=300, alloc=-1, req_procs=4, req_time=-1, req_mem=1000, user=12, group=-1, queue=2)
              + line(8, 6, alloc=2, req_procs=4, queue=1, status=0)
              + line(9, 7, run=0, queue=-1, alloc=-1, req_procs=-1))
    tr = read_swf(f, vo_map={"g2": "atlas"})
    a, b, c = (tj.job for tj in tr.jobs)
    assert (a.id, a.submit_time, a.cores, a.walltime, a.mem) == ("7", 1e9 + 5, 4, None, 1000 * 1024 * 4)
    assert (a.user, a.group, a.queue, a.vo) == ("u12", "nogroup", "q2", None)
    assert (b.cores, b.queue, b.group, b.vo, b.walltime) == (2, "short", "g2", "atlas", 200.0)  # failed: kept
    assert (c.cores, c.queue) == (1, "default") and tr.jobs[2].runtime == 0.0  # ran 0 s: kept
    assert tr.timezone == "Europe/Berlin" and tr.queue_names == {1: "short"}
    assert tr.groups == {"g2": 2, "nogroup": 1}


def test_what_is_skipped(tmp_path):
    f = write(tmp_path, HEADER
              + line(1, 0, run=-1, alloc=0, status=5, user=-1, group=-1, req_time=-1)  # cancelled in the queue
              + line(2, 1, run=0, status=5)  # killed as it started, on a processor: dispatched
              + line(3, 2, run=50, status=5)  # killed while running: it ran
              + line(4, -1, run=-1)  # no submit time
              + line(5, 3, run=-1)  # no run time
              + line(6, 4)
              + line(7, 5, run=-1, status=5))  # cancelled, no run time: never ran
    tr = read_swf(f)
    assert [tj.job.id for tj in tr.jobs] == ["2", "3", "6"]
    assert tr.skipped == {"cancelled": 2, "no_submit": 1, "no_runtime": 1}
    assert tr.cancelled_ran == 2


def test_out_of_order_file_is_sorted_before_first_is_applied(tmp_path):
    f = write(tmp_path, HEADER + line(1, 100) + line(2, 50) + line(3, 10) + line(4, 200))
    assert [tj.job.id for tj in read_swf(f).jobs] == ["3", "2", "1", "4"]
    assert [tj.job.id for tj in read_swf(f, first=2).jobs] == ["3", "2"]
    assert [tj.job.id for tj in read_swf(f, start_from=1e9 + 50).jobs] == ["2", "1", "4"]


def test_without_header_submit_times_are_absolute(tmp_path):
    f = write(tmp_path, line(1, 1356996147) + line(2, 1356996200))
    tr = read_swf(f)
    assert tr.unix_start is None and tr.jobs[0].job.submit_time == 1356996147


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nope.swf: no such file"):
        read_swf(tmp_path / "nope.swf")
    with pytest.raises(InputError, match="cannot read"):
        read_swf(tmp_path)
    assert gc.isenabled()  # switched off while reading, and back on after a failure


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02 binary junk\xff\xfe\nmore junk here\n" * 200, "not an SWF trace"),
    (b"; only a header\n; UnixStartTime: 5\n", "not an SWF trace: no job lines"),
    (b"", "not an SWF trace"),
    (gzip.compress(("; UnixStartTime: 0\n" + line(1, 0) * 5000).encode())[:500], "cannot read"),
])
def test_files_that_are_no_trace_raise_one_input_error(tmp_path, content, message):
    f = tmp_path / "bad.swf"
    f.write_bytes(content)
    seen = []
    with pytest.raises(InputError, match=message) as err:
        read_swf(f, on_problem=seen.append)
    assert str(f) in str(err.value) and seen == []
    assert gc.isenabled()


# -- --vo-map ---------------------------------------------------------------------------------

def test_vo_map_inline_and_file(tmp_path):
    assert parse_vo_map("g2=atlas, g6=cms") == {"g2": "atlas", "g6": "cms"}
    f = tmp_path / "map"
    f.write_text("# group  vo\ng2 atlas\n\ng6=cms   # the CMS group\n")
    assert parse_vo_map(f) == {"g2": "atlas", "g6": "cms"}


@pytest.mark.parametrize("text, message", [
    ("g2=atlas,bogus", "--vo-map item 2: expected GROUP=VO"),
    ("g2=atlas,g2=cms", "--vo-map item 2: group g2 mapped twice"),
    ("g2=", "--vo-map item 1"),
    ("missing.map", "missing.map: no such file"),
])
def test_vo_map_errors_name_the_item(text, message):
    with pytest.raises(InputError, match=message):
        parse_vo_map(text)


def test_vo_map_file_errors_name_the_line(tmp_path):
    f = tmp_path / "map"
    f.write_text("g2 atlas\ng6 cms extra\n")
    with pytest.raises(InputError, match=f"{f}:2: expected GROUP=VO"):
        parse_vo_map(str(f))


@pytest.mark.parametrize("header, where", [
    ("; MaxNodes: -5\n; MaxProcs: -10\n", "t.swf:1: MaxNodes '-5' is not a positive count: ignored"),
    ("; MaxNodes: 4\n; MaxProcs: -10\n", "t.swf:2: MaxProcs '-10' is not a positive count: ignored"),
    ("; UnixStartTime: 1e20\n", "t.swf:1: UnixStartTime '1e20' is not a Unix time"),
])
def test_a_header_no_farm_could_have_is_ignored_with_its_line(tmp_path, capsys, header, where):
    from mysched.cli.main import main

    f = write(tmp_path, header + line(1, 0) + line(2, 600))
    assert main(["simulate", "--trace", str(f), "--progress", "never", "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {f.parent}/{where}" in err
    assert "2 jobs on 50 nodes x 8 slots" in err  # the configuration's farm (--json -: the report on stderr)
    assert "simulated" in err and " 0s simulated" not in err  # 1e20 rounded both submit times to one
    assert json.loads(out)["jobs"] == 2


@pytest.mark.parametrize("header", ["; MaxNodes: 1000000\n; MaxProcs: 1000000\n",
                                    "; MaxNodes: 1\n; MaxProcs: 1000000000\n"])
def test_a_header_farm_over_the_caps_is_refused_before_the_run(tmp_path, capsys, header):
    from mysched.cli.main import main

    f = write(tmp_path, header + line(1, 0))
    assert main(["simulate", "--trace", str(f), "--progress", "never"]) == 2
    out, err = capsys.readouterr()
    assert "header MaxNodes/MaxProcs of" in err and "too large to simulate" in err and "simulating" not in out
