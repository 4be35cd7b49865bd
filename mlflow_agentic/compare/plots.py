"""The comparison's PNGs: best-so-far curves (by attempt, by wall time) and CV vs holdout."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mlflow_agentic.compare.table import Arm
from mlflow_agentic.scoring.plot import draw_diagonal

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COLOURS = {"llm": "tab:purple", "optuna": "tab:blue", "sequence": "tab:orange",
           "random": "tab:gray"}
EXTRA = ("tab:green", "tab:red", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P")
"""Line styles and markers per proposer, so overlapping proposers stay visible."""


def colour_of(proposer: str, order: Sequence[str]) -> str:
    if proposer in COLOURS:
        return COLOURS[proposer]
    others = [p for p in order if p not in COLOURS]
    return EXTRA[others.index(proposer) % len(EXTRA)]


def _figure(title: str) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure  # no pyplot: no global state

    fig = Figure(figsize=(7.5, 4.8), dpi=110)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig, ax


def plot_best_so_far(arms: Sequence[Arm], path: Path, *, by: str = "attempt") -> Path:
    """Best verified CV score so far, one thin line per seed and (by attempt) the mean over seeds
    as a thick line. ``by`` is ``attempt`` or ``time``. Proposers in the order of ``arms`` (the
    caller passes the verdict's: best holdout rank first)."""
    order = list(dict.fromkeys(a.proposer for a in arms))
    metric = arms[0].metric if arms else ""
    fig, ax = _figure(f"{arms[0].dataset if arms else ''}: best verified CV {metric} so far, "
                      f"by {'attempt' if by == 'attempt' else 'wall time'}")
    for name in order:
        group = [a for a in arms if a.proposer == name]
        colour = colour_of(name, order)
        for k, arm in enumerate(group):
            xs = [c[0] if by == "attempt" else c[1] for c in arm.curve]
            ys = [c[2] for c in arm.curve]
            label = None
            if by == "time" and k == 0:
                label = name
            ax.step(xs, ys, where="post", color=colour, alpha=0.35 if by == "attempt" else 0.8,
                    lw=1.0, label=label, marker="o", ms=3,  # one attempt is a point, not nothing
                    ls="-" if by == "attempt" else STYLES[order.index(name) % len(STYLES)])
        if by == "attempt":
            longest = max(len(a.curve) for a in group)
            means = []
            for i in range(longest):
                values = [a.curve[min(i, len(a.curve) - 1)][2] for a in group if a.curve]
                finite = [v for v in values if math.isfinite(v)]
                means.append(sum(finite) / len(finite) if finite else math.nan)
            ax.step(range(1, longest + 1), means, where="post", color=colour, lw=2.4,
                    marker="o", ms=5,
                    ls=STYLES[order.index(name) % len(STYLES)],
                    label=f"{name} (mean of {len(group)} seeds)")
    if by == "attempt":
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        longest = max((len(a.curve) for a in arms), default=1)
        ax.set_xlim(0.5, longest + 0.5)
        if longest <= 12:  # whole attempts only, even for one or two
            ax.set_xticks(range(1, longest + 1))
    ax.set_xlabel("attempt" if by == "attempt" else "wall time since the search started (s), "
                  "proposal time included")
    ax.set_ylabel(f"best verified CV {metric}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return path


def plot_cv_vs_holdout(arms: Sequence[Arm], path: Path) -> Path:
    """Every verified attempt of every arm; the selected model of each arm circled."""
    order = list(dict.fromkeys(a.proposer for a in arms))
    metric = arms[0].metric if arms else ""
    fig, ax = _figure(f"{arms[0].dataset if arms else ''}: CV vs holdout {metric}, verified "
                      "attempts")
    values = []
    for name in order:
        group = [p for a in arms if a.proposer == name for p in a.points]
        colour = colour_of(name, order)
        values += [v for p in group for v in p[:2] if math.isfinite(v)]
        marker = MARKERS[order.index(name) % len(MARKERS)]
        ax.scatter([p[0] for p in group], [p[1] for p in group], s=22, alpha=0.5, color=colour,
                   marker=marker, label=f"{name} ({len(group)} attempts)")
        chosen = [p for p in group if p[2]]
        ax.scatter([p[0] for p in chosen], [p[1] for p in chosen], s=130, facecolors="none",
                   edgecolors=colour, linewidths=1.8, marker=marker)
    draw_diagonal(ax, values, pad_share=0.08)
    ax.scatter([], [], s=110, facecolors="none", edgecolors="black", label="selected per seed")
    ax.set_xlabel(f"cross-validated {metric} (training rows)")
    ax.set_ylabel(f"holdout {metric} (sealed rows)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return path
