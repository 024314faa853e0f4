"""Plots of a simulation run (matplotlib, headless)."""

from __future__ import annotations

import os

from mysched.errors import InputError, clip
from mysched.files import write_output
from mysched.sim.result import SimResult


def _save(fig, plt, path: str, what: str, dpi: int = 100) -> None:  # noqa: ANN001 - matplotlib objects
    """Write a figure whole or not at all (`mysched.files.write_output`) and close it; an
    unwritable path is a clear `InputError`. The format goes by the name's extension (the
    file written first is a temporary one)."""
    import matplotlib

    fmt = os.path.splitext(path)[1][1:].lower() or matplotlib.rcParams["savefig.format"]
    try:
        write_output(path, lambda f: fig.savefig(f, format=fmt, dpi=dpi), what)
    except ValueError as exc:  # a format matplotlib does not write (`plot_file` refuses it first)
        raise InputError(f"{path}: cannot write {what}: {clip(str(exc))}") from None
    finally:
        plt.close(fig)


def _pyplot():  # noqa: ANN202 - the matplotlib.pyplot module
    """matplotlib, headless; a clear error where it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise InputError(MISSING) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


MISSING = "plots need matplotlib: pip install 'mysched[plot]'"


def plot_file(path: str) -> str:
    """The file a plot named `path` goes to, known before the run: matplotlib adds its default
    extension to a name without one and cannot write an extension it does not know."""
    import matplotlib
    from matplotlib.backend_bases import FigureCanvasBase

    ext = os.path.splitext(path)[1][1:].lower()
    if not ext:
        return path.rstrip(".") + "." + matplotlib.rcParams["savefig.format"]
    known = FigureCanvasBase.get_supported_filetypes()
    if ext not in known:
        raise InputError(f"{path}: cannot write a plot as .{ext}; use one of ." + ", .".join(sorted(known)))
    return path


def movie_file(path: str) -> str:
    """The file a farm movie named `path` goes to, known before the run: a GIF where the name
    has no extension; refused where Pillow cannot write an animation of that kind."""
    from PIL import Image

    ext = os.path.splitext(path)[1].lower()
    if not ext:
        return path.rstrip(".") + ".gif"
    Image.init()
    animated = sorted(e for e, f in Image.registered_extensions().items() if f in Image.SAVE_ALL)
    if ext not in animated:
        raise InputError(f"{path}: cannot write a movie as {ext}; use .gif (or " + ", ".join(animated) + ")")
    return path

REAL_DATES_AFTER = 100_000_000.0
"""Replays whose clock starts after 1973 carry real dates (traces); earlier: synthetic hours."""


def _axis(r: SimResult) -> tuple[list, str]:
    """The x values of a run's timeline: dates where the replay has real ones, else hours."""
    ts = r.timeline.get("t", [])
    if r.t0 >= REAL_DATES_AFTER:
        import datetime as dt

        return ([dt.datetime.fromtimestamp(r.t0 + t, dt.timezone.utc) for t in ts],
                "simulated time (UTC)")
    return [t / 3600.0 for t in ts], "simulated time (hours since the start)"


def _slots_in_use(ax, r: SimResult, x: list, colour: str | None = None, label: str = "") -> None:  # noqa: ANN001
    """Fraction of slots in use over time, and the report's occupancy (used / available
    slot-seconds while jobs were queued) as a dashed line: two figures, labelled apart."""
    line = ax.step(x, [u / r.slots if r.slots else 0 for u in r.timeline.get("used", [])], where="post",
                   color=colour, label=f"{label}slots in use")[0]
    if r.occupancy is not None:  # None: no job ever waited
        ax.axhline(r.occupancy, color=line.get_color(), linestyle="--", linewidth=1,
                   label=f"{label}occupancy while jobs queued (report): {r.occupancy:.1%}")


def result_figure(results: list[SimResult]):  # noqa: ANN201 - a matplotlib Figure
    """One run: running slots and queued jobs per VO, slots in use. Several (--compare): the
    running slots per VO of each policy, then queued jobs and slots in use of all of them."""
    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(n + 2, 1, figsize=(11, 4 + 2.6 * (n + 1)), sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    vos = sorted({v for r in results for d in r.timeline.get("running", []) + r.timeline.get("queued", [])
                  for v in d})
    xlabel = ""
    for ax, r in zip(axes, results):
        x, xlabel = _axis(r)
        if x:
            ax.stackplot(x, [[d.get(v, 0) for d in r.timeline["running"]] for v in vos], labels=vos, step="post")
        ax.set_ylabel("running slots")
        ax.set_title(f"policy {r.policy}: {r.nodes} nodes / {r.slots} slots")
    if vos:
        axes[0].legend(loc="upper left", ncol=min(6, len(vos)), fontsize="small")
    queued, used = axes[n], axes[n + 1]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(results):
        x, _ = _axis(r)
        if n == 1:
            for v in vos:
                queued.step(x, [d.get(v, 0) for d in r.timeline.get("queued", [])], where="post", label=v)
            _slots_in_use(used, r, x, "k")
        else:
            c = colours[i % len(colours)]
            queued.step(x, [sum(d.values()) for d in r.timeline.get("queued", [])], where="post", color=c,
                        label=r.policy)
            _slots_in_use(used, r, x, c, f"{r.policy}: ")
    queued.set_ylabel("queued jobs" + (" per VO" if n == 1 else ""))
    if queued.get_legend_handles_labels()[0]:
        queued.legend(loc="upper left", ncol=min(6, max(1, len(vos))), fontsize="small")
    used.set_ylabel("fraction of slots")
    used.set_ylim(0, 1.35)  # room for the legend above the lines
    used.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    used.set_xlabel(xlabel)
    used.legend(loc="upper left", ncol=min(n, 2), fontsize="x-small")  # four policies' labels overran the figure
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig


def plot_result(results: SimResult | list[SimResult], path: str) -> None:
    """Write `result_figure` of one run or of every compared policy."""
    fig = result_figure(results if isinstance(results, list) else [results])
    _save(fig, _pyplot(), path, "plot")


FREE_COLOUR = "#f2f2f2"
DEFAULT_COLOUR = "#4c72b0"
CLASS_COLOURS = ["#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974"]


def _frame_figure(cells: dict[str, list], classes: list[str], title: str):
    """The INFN-T1 farm picture: one cell per slot, nodes in order, row-major in a square."""
    import math

    plt = _pyplot()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    flat: list[int] = []
    code = {None: 0, "default": 1}
    for i, c in enumerate(classes):
        code[c] = 2 + i
    for name in cells:
        flat.extend(code.get(v, 1) for v in cells[name])
    side = max(1, math.ceil(math.sqrt(len(flat))))
    flat.extend([0] * (side * side - len(flat)))
    grid = [flat[r * side:(r + 1) * side] for r in range(side)]
    colours = [FREE_COLOUR, DEFAULT_COLOUR] + [CLASS_COLOURS[i % len(CLASS_COLOURS)] for i in range(len(classes))]
    fig, ax = plt.subplots(figsize=(6, 6.6))
    ax.imshow(grid, cmap=ListedColormap(colours), vmin=0, vmax=len(colours) - 1, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize="small")
    handles = [Patch(color=colours[0], label="free"), Patch(color=colours[1], label="default")]
    handles += [Patch(color=colours[2 + i], label=c) for i, c in enumerate(classes)]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=len(handles), fontsize="small")
    fig.tight_layout()
    return fig, plt


def write_frames(r: SimResult, directory: str, classes: list[str], movie: str | None = None) -> list[str]:
    """Write the captured farm pictures as PNG files (and a GIF of them, if asked)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{directory}: cannot create frame directory: {exc.strerror}") from None
    paths = []
    for i, (t, cells) in enumerate(r.frames):
        fig, plt = _frame_figure(cells, classes, f"{r.policy}: t = {t / 3600:.1f} h")
        path = os.path.join(directory, f"farm-{r.policy}-{i:05d}.png")
        _save(fig, plt, path, "frame", dpi=80)
        paths.append(path)
    if movie and paths:
        from PIL import Image

        images = [Image.open(p).convert("P", palette=Image.ADAPTIVE) for p in paths]
        Image.init()
        fmt = Image.registered_extensions().get(os.path.splitext(movie)[1].lower(), "GIF")
        write_output(movie, lambda f: images[0].save(f, format=fmt, save_all=True, append_images=images[1:],
                                                     duration=200, loop=0), "movie")
    return paths


def plot_packing(results: list[SimResult], path: str) -> None:
    """Packing Index of each class over time, one line per policy (the study's figures)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 4))
    xlabel = ""
    for r in results:
        x, xlabel = _axis(r)
        pis = r.timeline.get("packing_index", [])
        for c in sorted({c for d in pis for c in d}):
            ax.plot(x, [d.get(c) for d in pis], label=f"{r.policy}: {c}")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("packing index")
    ax.set_xlabel(xlabel)
    ax.legend(fontsize="small")
    fig.autofmt_xdate()
    fig.tight_layout()
    _save(fig, plt, path, "plot")
