"""A loss-curve PNG (Nova's losses beside torch eager's), when matplotlib is installed."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

__all__ = ["write_loss_plot"]


def write_loss_plot(path: str | Path, losses: Sequence[float],
                    torch_losses: Sequence[float] = (), *, title: str = "") -> Path | None:
    """Writes the curves to ``path``; returns it, or None when matplotlib cannot
    be imported (plotting is optional: it is in the test extras only)."""
    try:
        # The object-oriented API with the Agg canvas: no pyplot, so the user's
        # matplotlib backend is left as it is.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    steps = range(1, len(losses) + 1)
    axes.plot(steps, list(losses), label="Nova (simulated chip)", linewidth=2)
    if torch_losses:
        axes.plot(range(1, len(torch_losses) + 1), list(torch_losses), "--",
                  label="torch eager")
    axes.set_xlabel("step")
    axes.set_ylabel("loss")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path)
    return path
