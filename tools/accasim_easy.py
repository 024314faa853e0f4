"""Run AccaSim 1.1.3's EASY backfilling (with FirstFit) on an SWF trace and print its mean
wait and mean bounded slowdown (tau 10 s) as JSON, for tools/accasim_compare_easy.sh.

Usage (inside a venv where AccaSim is installed): accasim_easy.py TRACE.swf NODES SLOTS WORKDIR
"""

import collections
import collections.abc
import datetime
import json
import os
import sys
import time

# AccaSim 1.1.3 predates Python 3.10, which removed the ABC aliases from `collections`.
for _name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable", "Hashable", "Set"):
    setattr(collections, _name, getattr(collections.abc, _name))

from accasim.base.allocator_class import FirstFit  # noqa: E402
from accasim.base.scheduler_class import EASYBackfilling  # noqa: E402
from accasim.base.simulator_class import Simulator  # noqa: E402

TAU = 10.0

trace, nodes, slots, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cfg = os.path.join(work, "sys_config.json")
with open(cfg, "w") as f:
    json.dump({"groups": {"g0": {"core": slots, "mem": 10 ** 9}}, "resources": {"g0": nodes},
               "equivalence": {"processor": {"core": 1}}, "start_time": 0}, f)
results = os.path.join(work, "results-easy")
t0 = time.time()
sim = Simulator(trace, cfg, EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=results, scheduling_output=True,
                pprint_output=False, benchmark_output=False, statistics_output=False, show_statistics=False)
sim.start_simulation(system_status=False)
wall = time.time() - t0
waits, bsld = [], []
sched = os.path.join(results, "sched-" + os.path.basename(trace))
def _t(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


with open(sched) as f:  # job;user;QUEUED__assignments__START;END;...
    for line in f:
        chunks = line.strip().split("__")
        if len(chunks) != 3:
            continue
        head, tail = chunks[0].split(";"), chunks[2].split(";")
        q, s, e = _t(head[2]), _t(tail[0]), _t(tail[1])
        wait, run = s - q, e - s
        waits.append(wait)
        bsld.append(max(1.0, (wait + run) / max(run, TAU)))
print(json.dumps({"jobs": len(waits), "wait_mean": sum(waits) / len(waits), "bounded_slowdown": sum(bsld) / len(bsld),
                  "wall_s": round(wall, 1)}))
