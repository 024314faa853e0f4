"""Pausing Python's cyclic garbage collector around work that allocates a farm's worth of
objects and makes no reference cycles: a plan (about ten objects per job), a snapshot read, a
trace load, a status file. The collector would rescan the growing heap over and over -- a
third of a plan's time at 50,000 jobs -- and find nothing to free. The pure core does not
touch process-wide state, so the callers that plan or read repeatedly (daemon, simulator,
`mysched bench`) pause it here; this sits beside `mysched.errors`, below the layers.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector disabled, then put back the state it found
    (also when the block raises): nested pauses leave it off until the outermost one ends,
    and a process that had disabled it itself keeps it disabled."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
