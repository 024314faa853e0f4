"""`mysched sweep`: a grid of configuration settings x seeds x policies, one simulator run a cell.

Every choice a site makes is a trade-off the simulator answers one run at a time; a sweep runs
the whole grid (on a pool of processes or a Dask cluster, `mysched.sim.sweepdask`) and keeps
each finished cell under a key of everything that decides its figures, so that an interrupted
or repeated sweep reuses them. A cell runs `mysched simulate` itself, in-process, so its
figures are exactly those of `mysched simulate --json` with the same options.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from mysched.errors import MyschedError, UsageError
from mysched.files import os_reason, write_atomic
from mysched.sim.sweepgrid import MAX_CELLS, Setting, check_grid, refusal, show, with_settings

_PREFIX = re.compile(r"^mysched( \w+)?: (error: )?")
"""How `mysched` begins its error lines; a failed cell's reason is given without it."""


# --- cells ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One simulator run: settings x seed (None for a trace) x policy, with what it runs on."""

    settings: tuple[Setting, ...]
    seed: int | None
    policy: str
    config_text: str
    sim_args: tuple[str, ...] = ()
    trace_id: str = ""
    """For --trace: the file's path, size and mtime (its jobs decide the figures too)."""

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        for part in (self.config_text, json.dumps(list(self.sim_args)), str(self.seed), self.policy, self.trace_id):
            h.update(part.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()

    @property
    def name(self) -> str:
        return f"{show(self.settings)} policy={self.policy}" + (f" seed={self.seed}" if self.seed is not None else "")

    def argv(self, config_path: str, json_path: str) -> list[str]:
        """The `mysched simulate` command line of this cell."""
        config = ["-c", config_path] if self.config_text else []  # a trace without -c: simulate's own default
        return (["simulate", *config, *self.sim_args, "--policy", self.policy, "--json", json_path,
                 "--progress", "never"] + (["--seed", str(self.seed)] if self.seed is not None else []))


def trace_id(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"--trace {path}: {os_reason(exc)}") from None
    return f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}"


@dataclass
class Grid:
    """The cells of a sweep, and those the configuration refused (named, not run)."""

    cells: list[Cell] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def make_cells(doc: dict, grid: list[tuple[str, list[Any]]], seeds: list[int | None], policies: list[str],
               sim_args: tuple[str, ...], trace: str = "") -> Grid:
    """Every combination of the grid's values x seeds x policies; a combination the
    configuration refuses is kept aside with why."""
    out = Grid()
    keys = [k for k, _ in grid]
    combos = list(itertools.product(*(vals for _, vals in grid)))
    if len(combos) * len(seeds) * len(policies) > MAX_CELLS:
        raise UsageError(f"{len(combos) * len(seeds) * len(policies)} cells: more than {MAX_CELLS}; "
                         "sweep fewer values at once")
    tid = trace_id(trace) if trace else ""
    texts = {}
    refused: dict[tuple[Setting, ...], str] = {}
    for combo in combos:
        settings = tuple(zip(keys, combo))
        texts[settings] = with_settings(doc, settings)
        why = refusal(texts[settings]) if settings else None
        if why:
            refused[settings] = why
    check_grid(grid, refused)
    for settings, text in texts.items():
        if settings in refused:
            out.refused.append((show(settings), refused[settings]))
            continue
        for policy in policies:
            for seed in seeds:
                out.cells.append(Cell(settings, seed, policy, text, sim_args, tid))
    return out


def run_cell(cell: Cell) -> dict:
    """The cell's `mysched simulate --json` document, run in this process (picklable: Dask and
    the process pool ship it to their workers). A refused run raises `MyschedError` with the
    simulator's own one-line message."""
    from mysched.cli.main import main  # the command itself: the same figures, by construction

    with tempfile.TemporaryDirectory(prefix="mysched-sweep-") as tmp:
        cfg, out = os.path.join(tmp, "cell.cfg"), os.path.join(tmp, "cell.json")
        if cell.config_text:
            with open(cfg, "w", encoding="utf-8") as f:
                f.write(cell.config_text)
        err = io.StringIO()
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(err):
            rc = main(cell.argv(cfg, out))
        if rc == 130:  # Ctrl-C reached the simulation: it stops the sweep, not just this cell
            raise KeyboardInterrupt
        if rc != 0 or not os.path.exists(out):
            lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            why = lines[-1] if lines else f"exit status {rc}"
            kind = UsageError if rc == 2 else MyschedError  # options simulate refuses: bad input, said so
            raise kind(f"{cell.name}: {_PREFIX.sub('', why)}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


# --- executors -----------------------------------------------------------------------------

class CellExecutor(Protocol):
    """Runs fn over items; yields (item, result) or (item, exception) as each completes."""

    def run(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[tuple[Any, Any]]: ...

    def close(self) -> None: ...


class SerialExecutor:
    """In this process, one after another (tests; a single worker)."""

    def run(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[tuple[Any, Any]]:
        for item in items:
            try:
                res = fn(item)
            except Exception as exc:  # noqa: BLE001 - reported as the cell's failure, as a worker's would be
                res = exc
            yield item, res

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A local pool of processes (concurrent.futures), where Dask is not installed."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self._pool: Any = None

    def run(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[tuple[Any, Any]]:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        self._pool = ProcessPoolExecutor(max_workers=min(self.workers, max(1, len(items))))
        futures = {self._pool.submit(fn, item): item for item in items}
        for fut in as_completed(futures):
            exc = fut.exception()
            yield futures[fut], (exc if exc is not None else fut.result())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


# --- the results store ---------------------------------------------------------------------

class ResultStore:
    """One JSON file a finished cell under `--results DIR`, named by the cell's key, written
    whole or not at all: a sweep started again finds what the last one finished."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory
        if directory is None:
            return
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--results {directory}: cannot create it: {os_reason(exc)}") from None
        if not os.path.isdir(directory):
            raise UsageError(f"--results {directory}: not a directory")
        try:  # a real file, not os.access: root may be refused too (a read-only mount)
            with tempfile.TemporaryFile(dir=directory):
                pass
        except OSError as exc:
            raise UsageError(f"--results {directory}: not writable: {os_reason(exc)}") from None

    def _path(self, cell: Cell) -> str:
        return os.path.join(self.directory or "", f"{cell.key}.json")

    def get(self, cell: Cell) -> dict | None:
        if self.directory is None:
            return None
        try:
            with open(self._path(cell), encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):  # not there, or damaged: the cell runs again
            return None
        return doc.get("result") if isinstance(doc, dict) and isinstance(doc.get("result"), dict) else None

    def put(self, cell: Cell, result: dict) -> None:
        if self.directory is None:
            return
        doc = {"cell": {"settings": [[k, v] for k, v in cell.settings], "seed": cell.seed, "policy": cell.policy,
                        "simulate": list(cell.sim_args)}, "result": result}
        try:
            write_atomic(self._path(cell), (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())
        except OSError as exc:
            raise MyschedError(f"--results {self.directory}: cannot store a cell: {os_reason(exc)}") from None


def reason(cell: Cell, exc: BaseException) -> str:
    """Why a cell failed, in one line naming it once (a worker's own failure by its type)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    if not isinstance(exc, MyschedError):
        text = f"{type(exc).__name__}: {text}".rstrip(": ")
    return text if text.startswith(cell.name) else f"{cell.name}: {text}"


def run_sweep(cells: list[Cell], executor: CellExecutor, store: ResultStore,
              done: Callable[[Cell, dict | None, BaseException | None], None] = lambda c, r, e: None,
              fn: Callable[[Cell], dict] | None = None) -> tuple[dict[str, dict], list[tuple[Cell, str]]]:
    """Run the cells not already stored; each result is stored as it arrives (Ctrl-C keeps
    what finished). Returns results by cell key, and the cells that failed with their error."""
    results: dict[str, dict] = {}
    failed: list[tuple[Cell, BaseException]] = []
    todo = []
    for cell in cells:
        stored = store.get(cell)
        if stored is not None:
            results[cell.key] = stored
            done(cell, stored, None)
        else:
            todo.append(cell)
    first: dict[str, Cell] = {}
    for cell in todo:  # settings that give the same text run once
        first.setdefault(cell.key, cell)
    unique = list(first.values())
    try:
        for cell, res in executor.run(fn or run_cell, unique):
            if isinstance(res, KeyboardInterrupt):  # from a worker: Ctrl-C reached it first
                raise res
            if isinstance(res, BaseException):
                failed.append((cell, res))
                done(cell, None, res)
                continue
            store.put(cell, res)
            results[cell.key] = res
            done(cell, res, None)
    finally:
        executor.close()
    return results, failed


def note(msg: str) -> None:
    print(f"mysched: note: {msg}", file=sys.stderr)
