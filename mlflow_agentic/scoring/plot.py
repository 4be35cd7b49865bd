"""CV vs holdout for every attempt, as a PNG: points below the diagonal flattered themselves."""

from __future__ import annotations

from pathlib import Path


def plot_cv_vs_holdout(report, run, path: Path) -> Path:
    from matplotlib.figure import Figure  # no pyplot: no global state, faster import

    status = {a.index: a.status for a in run.attempts}
    colours = {"verified": "tab:green", "rejected": "tab:orange", "quarantined": "tab:purple",
               "failed": "tab:red"}
    fig = Figure(figsize=(6, 5), dpi=110)
    ax = fig.add_subplot()
    points = [s for s in report.scores.values() if s.error is None]
    for kind, colour in colours.items():
        xs = [s.cv for s in points if status[s.index] == kind]
        ys = [s.holdout for s in points if status[s.index] == kind]
        if xs:
            ax.scatter(xs, ys, c=colour, label=kind, s=36, alpha=0.85, edgecolors="black",
                       linewidths=0.4)
    if report.selected is not None and report.selected.error is None:
        ax.scatter([report.selected.cv], [report.selected.holdout], s=180, facecolors="none",
                   edgecolors="black", linewidths=1.5, label="selected")
    draw_diagonal(ax, [v for s in points for v in (s.cv, s.holdout)], pad_share=0.1)
    ax.set_xlabel(f"cross-validated {report.metric} (training rows)")
    ax.set_ylabel(f"holdout {report.metric} (sealed rows)")
    ax.set_title(f"{run.dataset_name}: CV vs holdout, {len(points)} attempts")
    if ax.get_legend_handles_labels()[0]:  # nothing to label when every attempt failed
        ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


def draw_diagonal(ax, values, pad_share: float) -> None:
    """The CV = holdout line, with equal axes spanning ``values`` plus a margin."""
    if not values:
        return
    lo, hi = min(values), max(values)
    pad = (hi - lo) * pad_share or 0.01
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", lw=0.8, label="CV = holdout")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
