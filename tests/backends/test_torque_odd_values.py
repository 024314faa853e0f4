"""pbs_server's odd attribute values, through the mapping into the model and a plan (issue 34,
item 5): every value a job or node can carry -- walltimes of 11 digits, nodes specs of 0
cores or a trailing '+', sizes in zettabytes, unicode digits and host names, job ids with odd
characters, exec_host and node states of unknown forms, np of letters -- becomes a job or node
the scheduler reports (started, or waiting with a reason) or a located warning in English.
Never an exception out of a cycle, never a job silently dropped."""

from __future__ import annotations

import re

import pytest

from mysched.backends.torque.backend import TorqueServer, job_from_attrs, node_from_attrs, queue_from_attrs
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.mapping import array_limits, server_limits_from_attrs
from mysched.config import config_from_text
from mysched.core.model.batch import NodeState
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

PYTHON_WORDS = re.compile(r"invalid literal|base 10|Traceback|Error\b|NoneType|object has no|could not convert|"
                          r"unsupported operand|not supported between|codec")
BASE = {"job_state": "Q", "queue": "q", "euser": "u", "egroup": "g", "qtime": "1795300000"}

ODD_JOB_VALUES = [
    ("Resource_List.walltime", "99999999999:00:00"), ("Resource_List.walltime", "-1"),
    ("Resource_List.walltime", "1:2:3:4:5"), ("Resource_List.walltime", "nan"), ("Resource_List.walltime", "inf"),
    ("Resource_List.walltime", ""), ("Resource_List.walltime", "\u0661\u0662:00:00"),
    ("Resource_List.walltime", "\u00b2:00"), ("Resource_List.walltime", "0"), ("Resource_List.walltime", "9" * 5000),
    ("Resource_List.nodes", "0"), ("Resource_List.nodes", "2:ppn=0"), ("Resource_List.nodes", "node01:ppn=99999999"),
    ("Resource_List.nodes", "1:ppn=2:gpus=1+"), ("Resource_List.nodes", "+"), ("Resource_List.nodes", "::"),
    ("Resource_List.nodes", "\u00b2:ppn=2"), ("Resource_List.nodes", "1:ppn=\u00b2"), ("Resource_List.nodes", "1:ppn=-1"),
    ("Resource_List.nodes", "99999999999999999999:ppn=99999999999999"), ("Resource_List.nodes", "w\u00f6rker01:ppn=2"),
    ("Resource_List.nodes", "1:ppn=2" + "+1:ppn=2" * 5000), ("Resource_List.nodes", "0+2"),
    ("Resource_List.nodes", "1pn=0"), ("Resource_List.nodes", "=:ppn=2"), ("Resource_List.nodes", "1:ppn=2:ppn=3"),
    ("Resource_List.procs", "-1"), ("Resource_List.procs", "0"), ("Resource_List.procs", "\u00b2"),
    ("Resource_List.procs", "\u0663"), ("Resource_List.procs", "99999999999999999999"), ("Resource_List.procs", "1e3"),
    ("Resource_List.ncpus", "\u00b2"), ("Resource_List.ncpus", "-4"),
    ("Resource_List.mem", "1zb"), ("Resource_List.mem", "nan"), ("Resource_List.mem", ""), ("Resource_List.mem", "-1gb"),
    ("Resource_List.mem", "\u00b2gb"), ("Resource_List.mem", "99999999999999999999pb"), ("Resource_List.mem", "0"),
    ("Resource_List.pmem", "lots"), ("Resource_List.vmem", "\u00b2"), ("Resource_List.pvmem", "1e9"),
    ("Resource_List.naccesspolicy", "\u00fc"), ("node_exclusive", "maybe"),
    ("exec_host", "node01"), ("exec_host", "node01/"), ("exec_host", "/0"), ("exec_host", "node01/5-2"),
    ("exec_host", "node01/\u00b2"), ("exec_host", "node01/0-99999999999"), ("exec_host", "n\u00f6de/0+n\u00f6de/1"),
    ("exec_host", "node01/0,,1"), ("exec_host", "+++"),
    ("qtime", "nan"), ("qtime", "inf"), ("qtime", "-1e300"), ("qtime", "1e300"), ("qtime", "\u0661"),
    ("start_time", "nan"), ("start_time", "-inf"), ("ctime", "nan"),
    ("Priority", "1e3"), ("Priority", "nan"), ("Priority", "99999999999999999999"), ("Priority", "\u00b2"),
    ("queue", ""), ("queue", "\u00fc" * 1000), ("euser", ""), ("egroup", "g\x00"), ("Job_Owner", "@"),
    ("job_state", "q"), ("job_state", ""), ("job_state", "RUNNING"), ("Job_Name", "\x00" * 100),
]


@pytest.mark.parametrize("key, value", ODD_JOB_VALUES, ids=[f"{k}={v[:30]!r}" for k, v in ODD_JOB_VALUES])
def test_an_odd_job_value_becomes_a_job_or_a_warning_in_words(key, value):
    warnings: list[str] = []
    job = job_from_attrs("7.srv", {**BASE, key: value}, warnings)
    for w in warnings:
        assert "7.srv" in w and not PYTHON_WORDS.search(w) and len(w) < 600, w[:300]
    if job is None:
        assert warnings, "a job left out without a word"
    else:
        assert job.cores >= 1 and job.id == "7.srv"
        assert job.submit_time == job.submit_time and abs(job.submit_time) != float("inf"), job.submit_time
        assert job.start_time is None or (job.start_time == job.start_time and abs(job.start_time) != float("inf"))
        assert job.walltime is None or job.walltime == job.walltime


ODD_JOB_IDS = ["7.srv", "7[].srv", "7[3].srv", "7[x].srv", "[].srv", "7[", "\u00e9\u00e9.srv", "a b.srv", "",
               "7.srv\x00", "x" * 10000, "7[99999999999999999999].s"]


@pytest.mark.parametrize("jid", ODD_JOB_IDS, ids=[repr(j[:20]) for j in ODD_JOB_IDS])
def test_an_odd_job_id_is_mapped_or_left_out_as_an_array_parent(jid):
    warnings: list[str] = []
    job = job_from_attrs(jid, dict(BASE), warnings)
    assert job is not None or jid.endswith("[].srv") or re.match(r"^\d+\[\]", jid)
    assert not any(PYTHON_WORDS.search(w) for w in warnings)


ODD_NODE_VALUES = [
    ("np", "abc"), ("np", "-1"), ("np", ""), ("np", "\u00b2"), ("np", "\u0663"), ("np", "99999999999999999999"),
    ("np", "1e3"), ("np", " 4 "), ("state", "weird"), ("state", ""), ("state", "free,offline,down"),
    ("state", "\u00fc"), ("properties", ",,,"), ("properties", "a b,c"), ("jobs", "0-1/"), ("jobs", "/"),
    ("jobs", "x" * 10000), ("status", "physmem=\u00b2kb"), ("status", "physmem=-1kb"), ("status", "loadave=nan"),
    ("status", "loadave=-1"), ("status", "availmem=1zb"), ("status", "totmem="), ("status", "=,=,="),
    ("note", "\n\t\x00"),
]


@pytest.mark.parametrize("key, value", ODD_NODE_VALUES, ids=[f"{k}={v[:30]!r}" for k, v in ODD_NODE_VALUES])
def test_an_odd_node_value_becomes_a_node_or_a_warning_in_words(key, value):
    warnings: list[str] = []
    node = node_from_attrs("wn01", {"state": "free", "np": "4", key: value}, warnings)
    assert node.name == "wn01" and 0 <= node.slots <= 1 << 20, node.slots
    for w in warnings:
        assert "wn01" in w and not PYTHON_WORDS.search(w), w[:300]
    if node.slots == 0 and value.strip() not in ("0",):
        assert node.state in (NodeState.OFFLINE, NodeState.DOWN)


ODD_QUEUE_VALUES = [("max_running", "\u00b2"), ("max_running", "-1"), ("max_user_run", "1e3"),
                    ("resources_max.walltime", "\u00b2:00"), ("resources_max.walltime", "99999999999:00:00"),
                    ("resources_max.walltime", "0"), ("queue_type", ""), ("enabled", "\u00fc"), ("started", "")]


@pytest.mark.parametrize("key, value", ODD_QUEUE_VALUES, ids=[f"{k}={v[:30]!r}" for k, v in ODD_QUEUE_VALUES])
def test_an_odd_queue_value_becomes_a_queue_or_a_warning_in_words(key, value):
    warnings: list[str] = []
    queue_from_attrs("q", {"queue_type": "Execution", key: value}, warnings)
    server_limits_from_attrs({key: value}, warnings)
    array_limits([("7[].s", {"job_array_request": f"0-9%{value}"})], None, warnings)
    for w in warnings:
        assert not PYTHON_WORDS.search(w), w[:300]


def test_a_snapshot_of_every_odd_value_plans_a_reason_for_every_waiting_job():
    """All the odd jobs at once on a small farm with odd nodes beside good ones: the cycle's
    read and plan raise nothing, and every job read is started or waits with a reason."""
    jobs = [(f"{i}.srv", {**BASE, k: v}) for i, (k, v) in enumerate(ODD_JOB_VALUES) if k not in ("job_state",)]
    jobs += [(jid, dict(BASE)) for jid in ODD_JOB_IDS if jid and not jid.endswith("[].srv")]
    nodes = [("wn01", {"state": "free", "np": "8", "status": "physmem=16gb"}),
             ("wn02", {"state": "free", "np": "8"})]
    nodes += [(f"odd{i}", {"state": "free", "np": "4", k: v}) for i, (k, v) in enumerate(ODD_NODE_VALUES)]
    ifl = FakeIFL(jobs=jobs, nodes=nodes, queues=[("q", {"queue_type": "Execution", "enabled": "True",
                                                          "started": "True"})], start_jobs=False)
    snap = TorqueServer("batch", ifl=ifl, clock=lambda: 1795300100.0).snapshot()
    for w in snap.extra["warnings"]:
        assert not PYTHON_WORDS.search(w), w[:300]
    config = config_from_text('vos = { v = { groups = ["g"]; share = 50; }; };\n'
                              'scheduler = { reservation_depth = 3; };\n')
    p = plan(snap, config, Usage(), 1795300100.0)
    started = {s.job_id for s in p.starts}
    for job in snap.jobs:
        if job.state.value == "Q":
            assert job.id in started or job.id in p.waits, job.id
    for r in p.reservations.values():
        assert r.start < 1795300100.0 + 400 * 86400, r  # never further than the ceiling


def test_a_job_asking_for_memory_alone_takes_a_core_and_no_more_start_than_free_cores():
    """`qsub -l mem=1gb` (no nodes=, no procs): pbs_server gives it one node and one core (or
    ncpus). It was read as 0 cores: four such jobs were all planned, with no location, beside
    one free core."""
    run = {"job_state": "R", "queue": "q", "euser": "a", "egroup": "g", "exec_host": "wn01/0",
           "start_time": "1795300000", "qtime": "1795290000"}
    jobs = [("1.srv", run)] + [(f"{i}.srv", {**BASE, "Resource_List.mem": "1gb"}) for i in range(2, 6)]
    jobs.append(("6.srv", {**BASE, "Resource_List.mem": "1gb", "Resource_List.ncpus": "4"}))
    ifl = FakeIFL(jobs=jobs, nodes=[("wn01", {"state": "free", "np": "2", "jobs": "0/1.srv",
                                               "status": "physmem=64gb"})],
                  queues=[("q", {"queue_type": "Execution", "enabled": "True", "started": "True"})], start_jobs=False)
    snap = TorqueServer("batch", ifl=ifl, clock=lambda: 1795300100.0).snapshot()
    assert {j.id: j.cores for j in snap.jobs} == {"1.srv": 1, "2.srv": 1, "3.srv": 1, "4.srv": 1, "5.srv": 1,
                                                   "6.srv": 4}
    p = plan(snap, config_from_text('vos = { v = { groups = ["g"]; share = 50; }; };\n'), Usage(), 1795300100.0)
    assert [(s.cores, s.placement) for s in p.starts] == [(1, (("wn01", 1),))]
    assert p.waits["6.srv"].reason == "never_fits"


@pytest.mark.parametrize("key, what", [("Job_Name", "job name"), ("Account_Name", "account string")])
def test_a_job_whose_name_or_account_would_crash_pbs_server_is_never_started(key, what):
    """A 60,000-character job name (pbs_submit takes it) crashed TORQUE 6.1's pbs_server when the
    job started: acct_job writes it with sprintf into a 4,096-byte buffer. Such a job waits
    `unsafe_request`, saying why, and the plain job beside it starts; a 4,000-byte one starts."""
    jobs = [("1.srv", {**BASE, key: "x" * 60000}), ("2.srv", {**BASE, key: "y" * 4000}), ("3.srv", dict(BASE))]
    ifl = FakeIFL(jobs=jobs, nodes=[("wn01", {"state": "free", "np": "8"})],
                  queues=[("q", {"queue_type": "Execution", "enabled": "True", "started": "True"})], start_jobs=False)
    snap = TorqueServer("batch", ifl=ifl, clock=lambda: 1795300100.0).snapshot()
    config = config_from_text('vos = { v = { groups = ["g"]; share = 50; }; };\n')
    p = plan(snap, config, Usage(), 1795300100.0)
    assert {s.job_id for s in p.starts} == {"2.srv", "3.srv"}
    w = p.waits["1.srv"]
    assert w.reason == "unsafe_request" and f"its {what} has 60000 bytes" in w.detail, w
