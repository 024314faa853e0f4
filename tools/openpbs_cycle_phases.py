#!/usr/bin/env python3
"""A dry-run daemon cycle at N queued jobs on the OpenPBS loopback farm's shape (4 vnodes of 4
cpus, queues atlas and cms, alice and bob in atlas, carol in cms), without a server: the
OpenPBS adapter reads a scripted libpbs, so what is timed is mysched's own part -- the read
after the C reply (mapping, the job cache), the plan and the status file. CPU seconds and the
phases, medians of 5 warm cycles; `prof` instead prints a cProfile of 3 (SORT=tottime ...).

    tools/openpbs_cycle_phases.py single|mixed [N] [prof]

The mixes are docs/design/openpbs-read.md's."""
import sys, os, time, tempfile, cProfile, pstats, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from typing import Sequence
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.ifl import pack
from mysched.backends.openpbs.backend import OpenPBSServer
from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon

class FakeLibpbs(FakeIFL):
    def statvnode(self, conn, attrs):
        return self._stat(self.nodes, attrs)
    def statjob_packed(self, conn, attrs, queue="", extend="t"):
        return self._packed[queue]

MIX = sys.argv[1] if len(sys.argv) > 1 else "single"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
PROF = len(sys.argv) > 3 and sys.argv[3] == "prof"
sel = {"single": ["1:ncpus=1", "1:ncpus=2", "1:ncpus=4"],
       "mixed": ["1:ncpus=1", "1:ncpus=2", "2:ncpus=1", "1:ncpus=1:mem=1gb", "1:ncpus=4"]}[MIX]
users = [("alice", "atlas", "atlas"), ("bob", "atlas", "atlas"), ("carol", "cms", "cms")]
jobs = []
for i in range(N):
    u, g, q = users[i % 3]
    s = sel[i % len(sel)]
    a = {"job_state": "Q", "queue": q, "euser": u, "egroup": g, "Resource_List.ncpus": str(int(s.split(":")[0]) * int(s.split("ncpus=")[1].split(":")[0])),
         "Resource_List.nodect": "1", "Resource_List.place": "free", "Resource_List.select": s,
         "Resource_List.walltime": "01:00:00", "schedselect": s + ":mpiprocs=1", "qtime": str(1795800000 + i // 10),
         "Priority": "0", "Job_Name": "STDIN"}
    if "mem" in s:
        a["Resource_List.mem"] = "1gb"
    jobs.append((f"{1000 + i}.vm", a))
def vnode(name, ncpus=4):
    return name, {"state": "free", "resources_available.ncpus": str(ncpus), "resources_available.mem": "4gb",
                  "resources_available.host": "vm", "resources_available.vnode": name, "resources_available.arch": "linux"}
nodes = [vnode("vm", 0)] + [vnode(f"node-{c}") for c in "abcd"]
queues = [(q, {"queue_type": "Execution", "enabled": "True", "started": "True"}) for q in ("atlas", "cms")]
ifl = FakeLibpbs(jobs, nodes, queues)
ifl._packed = {q: [(jid.encode(), pack(a)) for jid, a in jobs if a["queue"] == q] for q in ("atlas", "cms")}
ifl._packed[""] = [(jid.encode(), pack(a)) for jid, a in jobs]
srv = OpenPBSServer("localhost", ifl=ifl)
cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 60; }; cms = { groups = ["cms"]; share = 40; }; }; queues = { atlas = { }; cms = { }; };')
state = tempfile.mkdtemp(prefix="cycle_phases.")
import atexit, shutil
atexit.register(shutil.rmtree, state, True)
d = Daemon(cfg, srv, dry_run=True, state_dir=state)
d.cycle()
if PROF:
    pr = cProfile.Profile(); pr.enable()
    for _ in range(3): d.cycle()
    pr.disable()
    pstats.Stats(pr).sort_stats(os.environ.get("SORT","cumulative")).print_stats(45)
else:
    ph = []
    for _ in range(5):
        t0 = time.process_time(); o = d.cycle(); ph.append((time.process_time() - t0, o.phases))
    for k in ph[0][1]:
        print(k, round(statistics.median(p[k] for _, p in ph), 3), end="; ")
    print("cpu total", round(statistics.median(t for t, _ in ph), 3), "planned", o.planned)
    w = o.plan.waits
    from collections import Counter
    print(Counter(x.reason for x in w.values()))
