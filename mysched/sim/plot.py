"""Plots of a simulation run (matplotlib, headless)."""

from __future__ import annotations

import os
from typing import Callable

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
        write_output(path, (lambda f: _png(fig, f, dpi)) if fmt == "png" else
                     (lambda f: fig.savefig(f, format=fmt, dpi=dpi)), what)
    except ValueError as exc:  # a format matplotlib does not write (`plot_file` refuses it first)
        raise InputError(f"{path}: cannot write {what}: {clip(str(exc))}") from None
    finally:
        plt.close(fig)


def _png(fig, f, dpi: int) -> None:  # noqa: ANN001 - a Figure, a binary file
    """A PNG of 256 colours: a third of the size of matplotlib's own, the same to the eye
    (flat colours, a few shades of antialiasing)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    Image.open(buf).convert("RGB").quantize(colors=256).save(f, format="PNG", optimize=True)


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


def _at(r: SimResult, t: float):  # noqa: ANN202 - a datetime or hours
    """Where `t` (seconds since the start of the replay) is on the x axis."""
    if r.t0 >= REAL_DATES_AFTER:
        import datetime as dt

        return dt.datetime.fromtimestamp(r.t0 + t, dt.timezone.utc)
    return t / 3600.0


def _axis(r: SimResult) -> tuple[list, str]:
    """The x values of a run's timeline: dates where the replay has real ones, else hours."""
    label = "simulated time (UTC)" if r.t0 >= REAL_DATES_AFTER else "simulated time (hours since the start)"
    return [_at(r, t) for t in r.timeline.get("t", [])], label


def _end(r: SimResult, tail: bool) -> float:
    """Seconds since the start where the plot ends: the last submission, or with `tail` the
    end of the replay. After the last submission a finite workload drains out, which is no
    state a farm that goes on receiving work is ever in, and took most of the axis."""
    last = r.last_submit_s if r.last_submit_s > 0 else r.span_s
    return max(r.span_s, last) if tail else last


def _closed(r: SimResult, end: float) -> tuple[list[float], list[float], list[float]]:
    """(times, slots of closed nodes, slots closed by downtimes) as step functions up to `end`:
    slots no job could use, so an idle stretch there is not the scheduler's."""
    ts = sorted({0.0, end, *(x for s, e, _ in r.downtimes for x in (s, e) if 0.0 <= x <= end)})
    down = [sum(n for s, e, n in r.downtimes if s <= t < e) for t in ts]
    return ts, [float(r.closed_slots)] * len(ts), [min(float(d), r.slots - r.closed_slots) for d in down]


CLOSED_COLOUR = "0.82"
DOWNTIME_COLOUR = "0.55"


def _shade_closed(ax, r: SimResult, end: float, scale: float) -> None:  # noqa: ANN001 - a matplotlib Axes
    """Grey bands at the top of the panel (the farm's `r.slots` times `scale`): nodes closed to
    every job of the workload, below them the slots of a downtime, each with a legend entry."""
    if not (r.downtimes or r.closed_slots):
        return
    ts, closed, down = _closed(r, end)
    x = [_at(r, t) for t in ts]
    top = r.slots * scale
    if r.closed_slots:
        ax.fill_between(x, [top - c * scale for c in closed], top, step="post", color=CLOSED_COLOUR, linewidth=0,
                        label=f"closed nodes ({r.closed_slots} slots admit no job)")
    if any(down):
        ax.fill_between(x, [top - (c + d) * scale for c, d in zip(closed, down)],
                        [top - c * scale for c in closed], step="post", facecolor="none", hatch="///",
                        edgecolor=DOWNTIME_COLOUR, linewidth=0, label="downtime (slots closed)")


def _legend(ax, title: str | None = None) -> None:  # noqa: ANN001 - a matplotlib Axes
    """A legend beside the panel, never over its data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small",
                  title=title, title_fontsize="small", frameon=False)


STYLES = (("-", 4.0, None), ("--", 2.6, None), (":", 2.4, "o"), ("-.", 1.4, "s"), ((0, (1, 3)), 1.2, "^"),
          ((0, (5, 1, 1, 1, 1, 1)), 1.0, "D"))
"""Line style, width and marker of each compared policy, widest first: a line drawn over
another of the same values leaves the one below showing at its edges and between its dashes."""


def _same(series: list[list[float]], close: Callable[[list[float], list[float]], bool]) -> list[list[int]]:
    """Groups of the indices of `series` that `close` finds alike (to the first of a group)."""
    groups: list[list[int]] = []
    for i, s in enumerate(series):
        for g in groups:
            if len(series[g[0]]) == len(s) and close(series[g[0]], s):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def _on_grid(r: SimResult, values: list[float], end: float, points: int = 400) -> list[float]:
    """A run's step series read at `points` fixed times up to `end`, so that runs whose samples
    fell at other times can be compared."""
    from bisect import bisect_right

    ts = r.timeline.get("t", [])
    out = []
    for k in range(points + 1):
        i = bisect_right(ts, end * k / points) - 1
        out.append(values[i] if 0 <= i < len(values) else 0.0)
    return out


NEAR = 0.01
"""Lines apart by less than this part of the panel's height on average look as one."""


def _compare_lines(ax, results: list[SimResult], series: list[list[float]], end: float, scale: float,  # noqa: ANN001
                   colours: list[str], what: str) -> str | None:
    """One step line per policy, each in its own colour, style and width, so that lines drawn
    over each other still show; the legend names the policies each is the same as (identical
    figures) or close to (apart by under 1 % of the panel on average). Returns the note naming
    them (None: every line stands apart)."""
    grid = [_on_grid(r, s, end) for r, s in zip(results, series)]
    same = _same(grid, lambda a, b: a == b)
    near = _same(grid, lambda a, b: sum(abs(x - y) for x, y in zip(a, b)) <= NEAR * scale * len(a))
    twins = {i: [j for j in g if j != i] for g in same for i in g}
    close = {i: [j for j in g if j != i and j not in twins[i]] for g in near for i in g}
    for i, (r, s) in enumerate(zip(results, series)):
        style, width, marker = STYLES[i % len(STYLES)]
        x, _ = _axis(r)
        said = ([f"same as {', '.join(results[j].policy for j in twins[i])}"] if twins[i] else []) + (
            [f"close to {', '.join(results[j].policy for j in close[i])}"] if close[i] else [])
        ax.step(x, s, where="post", color=colours[i % len(colours)], linestyle=style, linewidth=width,
                marker=marker, markevery=max(1, len(x) // 12) if marker else None, markersize=5,
                label=r.policy + (f" ({'; '.join(said)})" if said else ""), zorder=3 + i)
    parts = [" = ".join(results[j].policy for j in g) + " identical" for g in same if len(g) > 1]
    parts += [" ~ ".join(results[j].policy for j in g) + " within 1 %" for g in near
              if len(g) > 1 and not any(set(g) <= set(h) for h in same)]
    return f"{what}: " + ", ".join(parts) if parts else None


def _occupancy_mark(ax, r: SimResult, tail: bool, colour: str, label: str, line: bool) -> None:  # noqa: ANN001
    """The report's occupancy over the span shown (up to the last submission, or the whole
    replay with the tail): a dashed line for one run, a mark on the right edge for several."""
    occ = r.occupancy if tail else r.occupancy_submitting
    if occ is None:  # no job ever waited
        return
    what = "occupancy (report)" if tail else "occupancy until the last submission (report)"
    if line:
        ax.axhline(occ, color=colour, linestyle="--", linewidth=1, label=f"{label}{what}: {occ:.1%}")
    else:
        ax.plot([1.0], [occ], transform=ax.get_yaxis_transform(), marker="<", markersize=9, color=colour,
                clip_on=False, linestyle="none", label=f"{label}{what}: {occ:.1%}", zorder=10)


def _vo_colours(vos: list[str]) -> dict[str, str]:
    """One colour per VO in every panel (the stack, the queued lines)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if len(vos) <= 10 else "tab20"]
    return {v: matplotlib.colors.to_hex(cmap(i % cmap.N)) for i, v in enumerate(vos)}


def result_figure(results: list[SimResult], tail: bool = False):  # noqa: ANN201 - a matplotlib Figure
    """One run: running slots and queued jobs per VO, slots in use. Several (--compare): the
    running slots per VO of each policy, then queued jobs and slots in use of all of them.
    Up to the last submission unless `tail`; legends beside the panels; downtimes and closed
    nodes shaded; compared policies that coincide drawn apart and named."""
    plt = _pyplot()
    n = len(results)
    fig, axes = plt.subplots(n + 2, 1, figsize=(12, 3 + 2.3 * (n + 1)), sharex=True, squeeze=False,
                             layout="constrained")
    axes = [a[0] for a in axes]
    vos = sorted({v for r in results for d in r.timeline.get("running", []) + r.timeline.get("queued", [])
                  for v in d})
    colour = _vo_colours(vos)
    first = results[0]
    end = max(_end(r, tail) for r in results)
    last = first.last_submit_s
    xlabel = ""
    for ax, r in zip(axes, results):
        x, xlabel = _axis(r)
        if x:
            ax.stackplot(x, [[d.get(v, 0) for d in r.timeline["running"]] for v in vos], labels=vos,
                         colors=[colour[v] for v in vos], step="post")
        _shade_closed(ax, r, end, 1.0)
        ax.set_ylim(0, r.slots * 1.02 if r.slots else None)
        ax.set_ylabel("running slots")
        ax.set_title(f"policy {r.policy}: {r.nodes} nodes / {r.slots} slots", fontsize="medium")
        if ax is axes[0]:  # the same colours in every panel
            _legend(ax, "VO")
    queued, used = axes[n], axes[n + 1]
    notes = []
    if n == 1:
        r = first
        x, _ = _axis(r)
        for v in vos:
            queued.step(x, [d.get(v, 0) for d in r.timeline.get("queued", [])], where="post", color=colour[v], label=v)
        used.step(x, [u / r.slots if r.slots else 0 for u in r.timeline.get("used", [])], where="post", color="k",
                  label="slots in use")
        _occupancy_mark(used, r, tail, "k", "", line=True)
    else:
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        qs = [[float(sum(d.values())) for d in r.timeline.get("queued", [])] for r in results]
        us = [[u / r.slots if r.slots else 0.0 for u in r.timeline.get("used", [])] for r in results]
        top = max((max(_on_grid(r, q, end)) for r, q in zip(results, qs)), default=0.0)
        notes.append(_compare_lines(queued, results, qs, end, max(1.0, top), colours, "queued jobs"))
        notes.append(_compare_lines(used, results, us, end, 1.0, colours, "slots in use"))
        for i, r in enumerate(results):
            _occupancy_mark(used, r, tail, colours[i % len(colours)], f"{r.policy}: ", line=False)
    _shade_closed(used, first, end, 1.0 / first.slots if first.slots else 0.0)
    for s, e, _ in first.downtimes:  # where the queue grew for a downtime's sake, faintly
        if s < end:
            queued.axvspan(_at(first, s), _at(first, min(e, end)), color=DOWNTIME_COLOUR, alpha=0.12, linewidth=0)
    queued.set_ylabel("queued jobs" + (" per VO" if n == 1 else ""))
    _legend(queued, "VO" if n == 1 else "policy")
    used.set_ylabel("fraction of slots")
    used.set_ylim(0, 1.02)
    used.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    _legend(used)
    if tail and last > 0:
        for ax in axes:
            ax.axvline(_at(first, last), color="0.3", linestyle=":", linewidth=1,
                       label="last submission" if ax is used else None)
        _legend(used)
    where = ("the whole replay, the drain-out after the last submission (dotted line) included" if tail else
             "up to the last submission (--plot-tail: the drain-out after it too)")
    used.set_xlabel(f"{xlabel}; {where}")
    if end > 0:
        used.set_xlim(_at(first, 0.0), _at(first, end))
    said = [t for t in notes if t]
    if said:
        fig.supxlabel("Lines that coincide (drawn wide to narrow, each in its own style):\n" + "\n".join(said),
                      fontsize="small", x=0.01, ha="left")
    if first.t0 >= REAL_DATES_AFTER:
        for label in used.get_xticklabels():
            label.set_rotation(20)
            label.set_horizontalalignment("right")
    return fig


def plot_result(results: SimResult | list[SimResult], path: str, tail: bool = False) -> None:
    """Write `result_figure` of one run or of every compared policy."""
    fig = result_figure(results if isinstance(results, list) else [results], tail)
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


def plot_packing(results: list[SimResult], path: str, tail: bool = False) -> None:
    """Packing Index of each class over time, one line per policy (the study's figures), up to
    the last submission unless `tail`."""
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
    end = max((_end(r, tail) for r in results), default=0.0)
    if end > 0:
        ax.set_xlim(_at(results[0], 0.0), _at(results[0], end))
    ax.set_xlabel(xlabel + ("" if tail else "; up to the last submission (--plot-tail: the drain-out too)"))
    _legend(ax)
    fig.autofmt_xdate()
    fig.tight_layout()
    _save(fig, plt, path, "plot")
