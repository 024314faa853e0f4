"""Plots of a simulation run (matplotlib, headless)."""

from __future__ import annotations

from .errors import InputError
from .simulate import SimResult


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
    try:
        fig.savefig(path, dpi=100)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot write plot: {exc}") from None
    finally:
        plt.close(fig)
