"""Plots of a simulation run (matplotlib, headless)."""

from __future__ import annotations

from mysched.errors import InputError
from mysched.sim.result import SimResult


def _save(fig, plt, path: str, what: str, dpi: int = 100) -> None:  # noqa: ANN001 - matplotlib objects
    """Write a figure and close it; an unwritable path is a clear `InputError`."""
    try:
        fig.savefig(path, dpi=dpi)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot write {what}: {getattr(exc, 'strerror', None) or exc}") from None
    finally:
        plt.close(fig)


def plot_result(r: SimResult, path: str) -> None:
    """Running and queued jobs per VO and occupancy over time, as in Gellrich's figures."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tl = r.timeline
    hours = [t / 3600.0 for t in tl.get("t", [])]
    vos = sorted({v for d in tl.get("running", []) + tl.get("queued", []) for v in d})
    fig, axes = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    if hours:
        run = [[d.get(v, 0) for d in tl["running"]] for v in vos]
        axes[0].stackplot(hours, run, labels=vos, step="post")
        for v in vos:
            axes[1].step(hours, [d.get(v, 0) for d in tl["queued"]], where="post", label=v)
        axes[2].step(hours, [u / r.slots if r.slots else 0 for u in tl["used"]], where="post", color="k")
    axes[0].set_ylabel("running slots")
    axes[0].set_title(f"mysched simulate — policy {r.policy}, {r.nodes} nodes / {r.slots} slots")
    axes[1].set_ylabel("queued jobs")
    axes[2].set_ylabel("occupancy")
    axes[2].set_ylim(0, 1.05)
    axes[2].set_xlabel("simulated time (hours)")
    if vos:
        axes[0].legend(loc="upper left", ncol=min(6, len(vos)), fontsize="small")
    fig.tight_layout()
    _save(fig, plt, path, "plot")


FREE_COLOUR = "#f2f2f2"
DEFAULT_COLOUR = "#4c72b0"
CLASS_COLOURS = ["#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974"]


def _frame_figure(cells: dict[str, list], classes: list[str], title: str):
    """The INFN-T1 farm picture: one cell per slot, nodes in order, row-major in a square."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    import os

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
        try:
            images[0].save(movie, save_all=True, append_images=images[1:], duration=200, loop=0)
        except OSError as exc:
            raise InputError(f"{movie}: cannot write movie: {exc.strerror}") from None
    return paths


def plot_packing(results: list[SimResult], path: str) -> None:
    """Packing Index of each class over time, one line per policy (the study's figures)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4))
    for r in results:
        hours = [t / 3600.0 for t in r.timeline.get("t", [])]
        pis = r.timeline.get("packing_index", [])
        for c in sorted({c for d in pis for c in d}):
            ax.plot(hours, [d.get(c) for d in pis], label=f"{r.policy}: {c}")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("packing index")
    ax.set_xlabel("simulated time (hours)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    _save(fig, plt, path, "plot")
