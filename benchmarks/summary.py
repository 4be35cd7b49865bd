"""The README's comparison from the recorded rows: one table (system x budget: mean rank, wins and
losses against mlflow-agentic, Wilcoxon p) and one plot (mean rank by budget), for one part of
the datasets at one commit of this project.

    python benchmarks/summary.py [--datasets test] [--plot docs/benchmarks/independent.png]

``tests/test_docs.py`` checks the README's table against ``summary(...)`` of the rows, so no
figure there is typed by hand.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite  # noqa: E402 - the datasets' metric directions, the rows' key

OURS = "mlflow-agentic"
SYSTEMS = ("mlflow-agentic", "autogluon", "autogluon-best", "flaml", "optuna-hgb", "default-hgb")


@dataclass(frozen=True)
class Cell:
    """One system at one budget and load: its mean rank, and against mlflow-agentic."""

    mean_rank: float
    tasks: int
    wins: int = 0
    """Tasks where mlflow-agentic scored better than this system."""
    losses: int = 0
    p: float = math.nan


def groups(rows: list[dict]) -> list[tuple[float, bool]]:
    return sorted({(r["budget"], r["load"]) for r in rows})


def summary(rows: list[dict], names: list[str]) -> dict[tuple[float, bool], dict[str, Cell]]:
    """(budget, load) -> system -> ``Cell``, over the tasks (dataset x seed) of ``names`` where
    every system of that group has a row."""
    from scipy.stats import rankdata, wilcoxon

    out: dict[tuple[float, bool], dict[str, Cell]] = {}
    rows = [r for r in rows if r["dataset"] in names and r["system"] in SYSTEMS]
    for group in groups(rows):
        mine = [r for r in rows if (r["budget"], r["load"]) == group]
        systems = sorted({r["system"] for r in mine}, key=SYSTEMS.index)
        by = {(r["dataset"], r["seed"], r["system"]): r["score"] for r in mine}
        tasks = sorted({(r["dataset"], r["seed"]) for r in mine})
        tasks = [t for t in tasks if all((*t, s) in by for s in systems)]
        ranks: dict[str, list[float]] = {s: [] for s in systems}
        for task in tasks:
            sign = 1 if suite.DATASETS[task[0]][3] else -1
            for s, rank in zip(systems, rankdata([-sign * by[(*task, s)] for s in systems],
                                                 method="min"), strict=True):
                ranks[s].append(float(rank))
        cells = {}
        for s in systems:
            cell = Cell(sum(ranks[s]) / len(tasks) if tasks else math.nan, len(tasks))
            if s != OURS and OURS in systems and tasks:
                diffs = [(1 if suite.DATASETS[t[0]][3] else -1)
                         * (by[(*t, OURS)] - by[(*t, s)]) / abs(by[(*t, s)]) for t in tasks]
                wins, losses = sum(d > 1e-5 for d in diffs), sum(d < -1e-5 for d in diffs)
                p = (float(wilcoxon(diffs).pvalue) if len(diffs) >= 6 and wins + losses
                     else math.nan)
                cell = Cell(cell.mean_rank, len(tasks), wins, losses, p)
            cells[s] = cell
        out[group] = cells
    return out


def label(group: tuple[float, bool], table: dict | None = None) -> str:
    """``60 s``, ``20 s, a core busy``; with ``table``, the number of systems ranked when that
    budget ranks fewer than another (a rank among 4 is not one among 5)."""
    text = f"{group[0]:g} s{', a core busy' if group[1] else ''}"
    if table is not None:
        most = max(len(cells) for cells in table.values())
        if len(table[group]) < most:
            text += f" ({len(table[group])} systems)"
    return text


def markdown(table: dict[tuple[float, bool], dict[str, Cell]]) -> str:
    """The README's table: a row per system, a column per budget: mean rank (1 = best; the
    column's best in bold, whichever system it is), and against mlflow-agentic its wins/losses
    and p."""
    budgets = list(table)
    systems = [s for s in SYSTEMS if any(s in table[g] for g in budgets)]
    best = {g: min(c.mean_rank for c in table[g].values()) for g in budgets}
    lines = ["| system | " + " | ".join(label(g, table) for g in budgets) + " |",
             "|---|" + "---|" * len(budgets)]
    for s in systems:
        cells = []
        for g in budgets:
            c = table[g].get(s)
            if c is None:
                cells.append("-")
                continue
            rank = f"**{c.mean_rank:.2f}**" if c.mean_rank == best[g] else f"{c.mean_rank:.2f}"
            if s == OURS:
                cells.append(f"{rank} ({c.tasks} tasks)")
            else:
                p = "-" if math.isnan(c.p) else f"{c.p:.3f}"
                cells.append(f"{rank}; ours {c.wins}/{c.losses}, p = {p}")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(table: dict[tuple[float, bool], dict[str, Cell]], path: Path) -> None:
    """Mean rank by budget, a line per system (1 = best, at the top)."""
    from matplotlib.figure import Figure

    budgets = list(table)
    fig = Figure(figsize=(7.5, 3.6), dpi=110)
    ax = fig.add_subplot()
    for s in SYSTEMS:
        points = [(i, table[g][s].mean_rank) for i, g in enumerate(budgets) if s in table[g]]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", lw=2.5 if s == OURS else 1.2,
                    label=s)
    tasks = [max(c.tasks for c in table[g].values()) for g in budgets]
    ax.set_xticks(range(len(budgets)),
                  [f"{label(g, table)}\n{n} tasks" for g, n in zip(budgets, tasks, strict=True)])
    ax.invert_yaxis()
    ax.set_ylabel("mean rank (1 = best)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main() -> None:
    import independent

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="test")
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    table = summary(suite.load(independent.RESULTS), independent.names_of(args.datasets))
    print(markdown(table))
    if args.plot:
        plot(table, args.plot)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
