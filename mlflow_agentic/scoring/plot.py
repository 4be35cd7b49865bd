"""CV vs holdout for every attempt, as a PNG: points below the diagonal flattered themselves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow_agentic.core.types import EngineeringRun
    from mlflow_agentic.scoring.holdout import HoldoutReport

TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
         "#7f7f7f", "#bcbd22", "#17becf")
ENSEMBLE_COLOUR = "#000000"


def trainer_colour(trainer: str, trainers: Sequence[str]) -> str:
    """One colour per trainer, the same in the PNGs and in the MLflow UI (``mlflow.runColor``):
    its position among the search's trainers in matplotlib's tab10; the ensemble black."""
    if trainer not in trainers:
        return ENSEMBLE_COLOUR
    return TAB10[list(trainers).index(trainer) % len(TAB10)]


def plot_cv_vs_holdout(report: HoldoutReport, run: EngineeringRun, path: Path,
                       trainers: Sequence[str] = ()) -> Path:
    """One point per attempt, coloured by trainer, shaped by verdict, with its CV fold standard
    deviation as a horizontal error bar; the selected attempt ringed."""
    from matplotlib.figure import Figure  # no pyplot: no global state, faster import

    attempts = {a.index: a for a in run.attempts}
    markers = {"verified": "o", "rejected": "X", "quarantined": "s"}
    fig = Figure(figsize=(7, 5.5), dpi=110)
    ax = fig.add_subplot()
    points = [s for s in report.scores.values() if s.error is None]
    order = list(trainers) if trainers else sorted({s.trainer for s in points})
    for trainer in sorted({s.trainer for s in points}, key=lambda t: (t not in order, t)):
        colour = trainer_colour(trainer, order)
        mine = [s for s in points if s.trainer == trainer]
        ax.errorbar([s.cv for s in mine], [s.holdout for s in mine],
                    xerr=[attempts[s.index].score_std for s in mine], fmt="none",
                    ecolor=colour, alpha=0.5, lw=1, capsize=2)
        for status, marker in markers.items():
            shown = [s for s in mine if attempts[s.index].status == status]
            if shown:
                ax.scatter([s.cv for s in shown], [s.holdout for s in shown], color=colour,
                           marker=marker, s=40, edgecolors="black", linewidths=0.4,
                           label=trainer if status == "verified" or not any(
                               attempts[s.index].status == "verified" for s in mine) else None)
    if report.selected is not None and report.selected.error is None:
        ax.scatter([report.selected.cv], [report.selected.holdout], s=220, facecolors="none",
                   edgecolors="black", linewidths=1.5, label="selected")
    draw_diagonal(ax, [v for s in points for v in (s.cv, s.holdout)], pad_share=0.1)
    ax.set_xlabel(f"cross-validated {report.metric} (training rows; bar: fold std)")
    ax.set_ylabel(f"holdout {report.metric} (sealed rows)")
    ax.set_title(f"{run.dataset_name}: CV vs holdout, {len(points)} attempts\n"
                 "below the line: CV flattered the attempt; o verified, X rejected, "
                 "square quarantined", fontsize=9)
    if ax.get_legend_handles_labels()[0]:  # nothing to label when every attempt failed
        ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


def draw_diagonal(ax: Any, values: Sequence[float], pad_share: float) -> None:
    """The CV = holdout line, with equal axes spanning ``values`` plus a margin."""
    if not values:
        return
    lo, hi = min(values), max(values)
    pad = (hi - lo) * pad_share or 0.01
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=0.8, label="CV = holdout")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
