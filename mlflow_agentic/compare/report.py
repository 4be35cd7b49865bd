"""The comparison as text: the same cells rendered as Markdown, HTML and a console table."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from mlflow_agentic.compare.table import Arm, caveats, compared, rank, verdict_line

if TYPE_CHECKING:
    from rich.table import Table

PLOTS = {"best_so_far_by_attempt.png": "Best verified CV so far, by attempt",
         "best_so_far_by_time.png": "Best verified CV so far, by wall time",
         "cv_vs_holdout.png": "CV vs holdout, every verified attempt"}


@dataclass
class Grid:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class DatasetReport:
    """Everything one dataset's comparison says, ready to render."""

    dataset: str
    comparison_id: str
    metric: str
    greater_is_better: bool
    settings: dict[str, str]
    summary: list[dict]
    arms: list[Arm]
    verdict: str = ""
    grids: list[Grid] = field(default_factory=list)
    ranks: dict[str, float] = field(default_factory=dict)
    run_id: str = ""

    def __post_init__(self) -> None:
        self.ranks = rank(self.summary, self.greater_is_better)
        self.verdict = " ".join([verdict_line(self.summary, self.metric,
                                              self.greater_is_better), *caveats(self.arms)])
        self.grids = [proposer_grid(self.summary, self.metric), arm_grid(self.arms)]

    @property
    def compared(self) -> bool:
        """Whether proposers were compared here (each made proposals of its own)."""
        return compared(self.summary)


def _f(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def _pm(mean: float, std: float) -> str:
    if not math.isfinite(mean):
        return "-"
    return f"{mean:.4f} ± {std:.4f}" if math.isfinite(std) else f"{mean:.4f}"


def _tokens(prompt: float, completion: float) -> str:
    total = (prompt or 0) + (completion or 0)
    return "-" if not total else f"{total:,.0f}"


def proposer_grid(summary: Sequence[dict], metric: str) -> Grid:
    headers = ["proposer", "seeds", "proposals", f"best CV {metric}", f"holdout {metric}", "gap",
               "attempts", "verified", "quarantined", "wall s", "tokens", "cost $",
               "first verified s"]
    rows = []
    for r in summary:
        ran = r.get("compared", True)
        scores = ([_pm(r["best_cv"], r["best_cv_std"]), _pm(r["holdout"], r["holdout_std"]),
                   _f(r["gap"])] if ran else ["not compared", "-", "-"])
        rows.append([r["proposer"], f"{r['seeds_verified']}/{r['seeds']}",
                     _proposals(r.get("proposals", 0), r.get("proposals_verified", 0)), *scores,
                     str(r["attempts"]), str(r["verified"]), str(r["quarantined"]),
                     _f(r["wall_seconds"], 1), _tokens(r["prompt_tokens"],
                                                       r["completion_tokens"]),
                     _f(r["cost_usd"], 4), _f(r["first_verified_seconds"], 1)])
    return Grid("Per proposer (mean ± std over seeds)", headers, rows,
                "proposals = candidates the proposer made itself after the seed candidates "
                "(verified in brackets); a proposer with none is not compared; gap = CV - "
                "holdout of the selected model (positive: CV flattered it); seeds = seeds that "
                "verified a model / seeds run; attempts, verified and quarantined: counted over "
                "all seeds; tokens and cost per seed.")


def _proposals(made: int, verified: int) -> str:
    return f"{made} ({verified})"


def arm_grid(arms: Sequence[Arm]) -> Grid:
    headers = ["proposer", "seed", "proposals", "best CV", "holdout", "gap", "selected",
               "attempts", "verified", "quarantined", "failed", "wall s", "first verified s",
               "tokens", "stopped because", "run"]
    rows = [[a.proposer, str(a.seed), _proposals(a.proposals, a.proposals_verified),
             _f(a.best_cv), _f(a.holdout), _f(a.gap),
             a.best_trainer or "-", str(a.attempts), str(a.verified), str(a.quarantined),
             str(a.failed), _f(a.wall_seconds, 1), _f(a.first_verified_seconds, 1),
             _tokens(a.prompt_tokens, a.completion_tokens), a.stop_reason, a.run_id[:12]]
            for a in arms]
    return Grid("Per proposer and seed", headers, rows)


def ranking_grid(table: Sequence[dict]) -> Grid:
    datasets = [k[5:] for k in (table[0] if table else {}) if k.startswith("rank.")]
    headers = ["proposer", "mean rank", "wins", "datasets", *datasets]
    rows = [[r["proposer"], _f(r["mean_rank"], 2), str(r["wins"]), str(r["datasets"]),
             *[_f(r[f"rank.{d}"], 1) for d in datasets]] for r in table]
    return Grid("Ranking across datasets (by mean holdout score per dataset; 1 = best)",
                headers, rows, "Ties share the mean rank and each count as a win.")


# ---- renderers ------------------------------------------------------------------------------
def grid_markdown(grid: Grid) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [f"### {grid.title}", "", "| " + " | ".join(grid.headers) + " |",
             "|" + "---|" * len(grid.headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in grid.rows]
    if grid.note:
        lines += ["", f"_{grid.note}_"]
    return "\n".join(lines)


def grid_html(grid: Grid) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in grid.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in grid.rows)
    note = f"<p class='note'>{html.escape(grid.note)}</p>" if grid.note else ""
    return (f"<h3>{html.escape(grid.title)}</h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{note}")


def dataset_markdown(report: DatasetReport, plots: bool = True) -> str:
    lines = [f"## Comparison on {report.dataset} ({report.comparison_id})", "",
             f"**{report.verdict}**", ""]
    lines += [f"- {k}: {v}" for k, v in report.settings.items()]
    for grid in report.grids:
        lines += ["", grid_markdown(grid)]
    if plots:
        lines += [""] + [f"![{title}]({name})" for name, title in PLOTS.items()]
    return "\n".join(lines) + "\n"


STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}"
         "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;"
         "padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
         "th{background:#f3f3f3}.note{color:#555;font-size:90%}img{max-width:48%;margin:4px}")


def dataset_html(report: DatasetReport, images: dict[str, bytes] | None = None) -> str:
    """The report as one page; ``images`` (PNG bytes by file name) are embedded, so the page
    is whole when opened from MLflow's artifact viewer or mailed around."""
    import base64

    images = images or {}
    settings = "".join(f"<li>{html.escape(k)}: {html.escape(v)}</li>"
                       for k, v in report.settings.items())
    grids = "".join(grid_html(g) for g in report.grids)
    pictures = "".join(
        f"<img src='{_source(n, images, base64)}' alt='{html.escape(t)}' "
        f"title='{html.escape(t)}'>" for n, t in PLOTS.items())
    return page(f"Comparison on {report.dataset}",
                f"<h2>Comparison on {html.escape(report.dataset)} "
                f"({html.escape(report.comparison_id)})</h2>"
                f"<p><b>{html.escape(report.verdict)}</b></p><ul>{settings}</ul>{grids}{pictures}")


def _source(name: str, images: dict[str, bytes], base64: ModuleType) -> str:
    if name not in images:
        return name
    return "data:image/png;base64," + base64.b64encode(images[name]).decode()


def page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{STYLE}</style></head><body>{body}</body></html>\n")


def console_table(grid: Grid) -> Table:
    from rich.table import Table

    table = Table(title=grid.title, caption=grid.note or None)
    for h in grid.headers:
        table.add_column(h, justify="left" if h in ("proposer", "stopped because") else "right",
                         no_wrap=h != "stopped because")
    for row in grid.rows:
        table.add_row(*row)
    return table
