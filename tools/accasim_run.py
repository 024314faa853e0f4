"""Run AccaSim 1.1.3 (FIFO + FirstFit, output files off) on an SWF trace; print wall time.

Used by tools/accasim_compare.sh inside a scratch venv where AccaSim is installed.
"""

import collections
import collections.abc
import json
import os
import sys
import time

# AccaSim 1.1.3 predates Python 3.10, which removed the ABC aliases from `collections`.
for _name in ("Mapping", "MutableMapping", "Sequence", "Iterable", "Callable", "Hashable", "Set"):
    setattr(collections, _name, getattr(collections.abc, _name))

from accasim.base.allocator_class import FirstFit
from accasim.base.scheduler_class import FirstInFirstOut
from accasim.base.simulator_class import Simulator

trace, nodes, slots, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
cfg = os.path.join(work, "sys_config.json")
with open(cfg, "w") as f:
    json.dump({"groups": {"g0": {"core": slots, "mem": 10 ** 9}}, "resources": {"g0": nodes},
               "equivalence": {"processor": {"core": 1}}, "start_time": 0}, f)
t0 = time.time()
sim = Simulator(trace, cfg, FirstInFirstOut(FirstFit()), RESULTS_FOLDER_PATH=os.path.join(work, "results"),
                scheduling_output=False, pprint_output=False, benchmark_output=False, statistics_output=False,
                show_statistics=False)
sim.start_simulation(system_status=False)
print(f"wall {time.time() - t0:.1f} s (AccaSim, including reading the trace)")
