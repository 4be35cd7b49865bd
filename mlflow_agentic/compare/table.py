"""The comparison's numbers, from search results only: one row per arm (proposer x seed), one row
per proposer (mean over seeds), and a ranking across datasets. Pure: no MLflow, no plotting."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow_agentic.frontdoor.orchestrator import SearchResult

DETERMINISTIC = ("proposer", "seeds", "best_cv", "best_cv_std", "holdout", "holdout_std", "gap",
                 "attempts", "verified", "quarantined", "failed", "prompt_tokens",
                 "completion_tokens", "cost_usd")
"""Columns that a re-run with the same seeds reproduces for a deterministic proposer (the rest
are timings)."""


@dataclass
class Arm:
    """One proposer with one seed, searched to the shared budget."""

    dataset: str
    proposer: str
    seed: int
    run_id: str
    metric: str
    greater_is_better: bool
    best_cv: float
    holdout: float
    gap: float
    best_trainer: str
    attempts: int
    verified: int
    quarantined: int
    failed: int
    wall_seconds: float
    first_verified_seconds: float
    """Wall time from the start of the search to the end of the first verified attempt."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    stop_reason: str = ""
    proposals: int = 0
    """Candidates the proposer made itself once the seed candidates had run (not a seed, not a
    fallback): an arm with none compared nothing of its proposer's (an LLM that never answered,
    every answer refused, a budget spent on the seeds)."""
    proposals_verified: int = 0
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    """(attempt number, elapsed seconds, best verified CV so far) after each attempt."""
    points: list[tuple[float, float, bool]] = field(default_factory=list)
    """(CV, holdout, selected) for each verified attempt."""
    proposed: list[str] = field(default_factory=list)
    """What each attempt tried (trainer and hyperparameters), in order: arms that tried the
    same things could not differ."""

    def row(self) -> dict:
        data = asdict(self)
        data.pop("curve")
        data.pop("proposed", None)
        data.pop("points")
        return data


def arm_from_search(result: SearchResult, *, proposer: str, seed: int, run_id: str,
                    llm_exchanges: Sequence[Any] = ()) -> Arm:
    """An ``Arm`` from a ``SearchResult`` (the engine's records and the holdout report)."""
    run, report = result.run, result.holdout
    sign = 1.0 if run.greater_is_better else -1.0
    curve, best = [], None
    for a in run.attempts:
        if a.verdict.valid and (best is None or sign * a.score > sign * best):
            best = a.score
        curve.append((a.index, a.elapsed, math.nan if best is None else best))
    selected = report.selected if report.selected and report.selected.error is None else None
    points = [(s.cv, s.holdout, selected is not None and s.index == selected.index)
              for s in report.scores.values()
              if s.error is None and run.attempts[s.index - 1].verdict.valid]
    verified = [a for a in run.attempts if a.verdict.valid]
    own = [a for a in run.attempts if a.phase == "reflect" and a.candidate.source != "fallback"]
    return Arm(
        dataset=run.dataset_name, proposer=proposer, seed=seed, run_id=run_id,
        metric=run.metric, greater_is_better=run.greater_is_better,
        best_cv=_num(run.best_score), holdout=selected.holdout if selected else math.nan,
        gap=selected.gap if selected else math.nan,
        best_trainer=run.best_candidate.trainer if run.best_candidate else "",
        attempts=len(run.attempts), verified=len(verified),
        quarantined=sum(a.verdict.quarantined for a in run.attempts),
        failed=sum(a.failed for a in run.attempts), wall_seconds=run.wall_seconds,
        first_verified_seconds=min((a.elapsed for a in verified), default=math.nan),
        prompt_tokens=sum(e.prompt_tokens for e in llm_exchanges),
        completion_tokens=sum(e.completion_tokens for e in llm_exchanges),
        cost_usd=sum(e.cost_usd for e in llm_exchanges), stop_reason=run.stop_reason,
        proposals=len(own), proposals_verified=sum(a.verdict.valid for a in own), curve=curve,
        points=points,
        proposed=[f"{a.candidate.trainer} {sorted((k, str(v)) for k, v in a.params.items())}"
                  for a in run.attempts if a.phase != "ensemble"])


def caveats(arms: Sequence[Arm]) -> list[str]:
    """What this comparison cannot tell, said beside its verdict: with one seed there is no
    spread to judge a lead against; arms that tried the same candidates could not differ."""
    notes = []
    seeds = sorted({a.seed for a in arms})
    proposers = list(dict.fromkeys(a.proposer for a in arms))
    tried = {p: tuple(tuple(a.proposed) for s in seeds for a in arms
                      if a.proposer == p and a.seed == s) for p in proposers}
    alike: dict[tuple, list[str]] = {}
    for p in proposers:
        alike.setdefault(tried[p], []).append(p)
    for group in (g for g in alike.values() if len(g) > 1):
        count = max(len(run) for run in tried[group[0]])
        who = ("The proposers" if len(group) == len(proposers) else
               " and ".join([", ".join(group[:-1]), group[-1]]))
        notes.append(f"{who} could not differ here: with every seed they tried the same "
                     f"{count} candidate(s) (the seed candidates every search starts with), so "
                     "their difference is noise. Give a budget larger than the seed candidates "
                     "(e.g. --budget-iterations 20).")
    for p in proposers:
        idle = [a for a in arms if a.proposer == p and not a.proposals]
        if idle and len(idle) < sum(a.proposer == p for a in arms):
            notes.append(f"{p} made no proposal of its own with seed(s) "
                         f"{', '.join(str(a.seed) for a in idle)} ({idle[0].stop_reason}): "
                         "its figures are of its other seeds only.")
    if len(seeds) == 1:
        notes.append("One seed: there is no seed-to-seed spread to judge a lead against; use "
                     "--seeds 1,2,3 or more before concluding.")
    return notes


def summarize(arms: Sequence[Arm]) -> list[dict]:
    """One row per proposer, in the order first seen: means (and std over seeds) of each arm's
    scores, times and tokens; its counts of attempts summed over seeds (whole numbers). A seed
    that verified nothing counts as NaN and is reported in ``seeds_verified``. The scores are of
    the arms that made proposals of their own; a proposer none of whose arms did is not
    ``compared`` (``why_not``: how its first arm stopped)."""
    rows = []
    for name in dict.fromkeys(a.proposer for a in arms):
        every = [a for a in arms if a.proposer == name]
        group = [a for a in every if a.proposals] or every
        rows.append({
            "proposer": name, "seeds": len(every),
            "compared": any(a.proposals for a in every),
            "proposals": sum(a.proposals for a in every),
            "proposals_verified": sum(a.proposals_verified for a in every),
            "why_not": "" if any(a.proposals for a in every) else every[0].stop_reason,
            "seeds_verified": sum(math.isfinite(a.best_cv) for a in group),
            "best_cv": _mean(a.best_cv for a in group),
            "best_cv_std": _std(a.best_cv for a in group),
            "holdout": _mean(a.holdout for a in group),
            "holdout_std": _std(a.holdout for a in group),
            "gap": _mean(a.gap for a in group),
            "attempts": sum(a.attempts for a in group),  # counts: totals over seeds
            "verified": sum(a.verified for a in group),
            "quarantined": sum(a.quarantined for a in group),
            "failed": sum(a.failed for a in group),
            "wall_seconds": _mean(a.wall_seconds for a in group),
            "first_verified_seconds": _mean(a.first_verified_seconds for a in group),
            "prompt_tokens": _mean(a.prompt_tokens for a in group),
            "completion_tokens": _mean(a.completion_tokens for a in group),
            "cost_usd": _mean(a.cost_usd for a in group),
        })
    return rows


def rank(rows: Sequence[dict], greater_is_better: bool) -> dict[str, float]:
    """Rank proposers by mean holdout score (the honest number), 1 = best; ties share the mean
    rank; a proposer that verified nothing ranks last; one that made no proposal of its own is
    not ranked."""
    def key(row: dict) -> float:
        value = row["holdout"]
        if not math.isfinite(value):
            return math.inf
        return -value if greater_is_better else value

    ordered = sorted((r for r in rows if r.get("compared", True)), key=key)
    ranks: dict[str, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and key(ordered[j + 1]) == key(ordered[i]):
            j += 1
        for row in ordered[i:j + 1]:
            ranks[row["proposer"]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def aggregate(per_dataset: dict[str, tuple[list[dict], bool]]) -> list[dict]:
    """Across datasets: mean rank and wins (rank 1, shared on ties) per proposer, best first."""
    ranks_by_dataset = {name: rank(rows, gib) for name, (rows, gib) in per_dataset.items()}
    names = list(dict.fromkeys(p for ranks in ranks_by_dataset.values() for p in ranks))
    table = []
    for name in names:
        ranks = [r[name] for r in ranks_by_dataset.values() if name in r]
        wins = sum(r[name] == min(r.values()) for r in ranks_by_dataset.values() if name in r)
        table.append({"proposer": name, "datasets": len(ranks),
                      "mean_rank": statistics.fmean(ranks), "wins": wins,
                      **{f"rank.{ds}": r.get(name, math.nan)
                         for ds, r in ranks_by_dataset.items()}})
    return sorted(table, key=lambda row: (row["mean_rank"], -row["wins"], row["proposer"]))


def compared(rows: Sequence[dict]) -> bool:
    """Whether proposers were compared: every one asked for (up to two) made proposals."""
    return sum(r.get("compared", True) for r in rows) >= min(2, len(rows))


def verdict_line(rows: Sequence[dict], metric: str, greater_is_better: bool) -> str:
    """Who won on the holdout, and whether the lead is larger than the seed-to-seed spread;
    no verdict where proposers were not compared (a proposer made no proposal of its own)."""
    idle = [r for r in rows if not r.get("compared", True)]
    why = "; ".join(f"{r['proposer']} made no proposal of its own ({r['why_not']})"
                    for r in idle)
    if not compared(rows):
        ran = [r["proposer"] for r in rows if r.get("compared", True)]
        return (f"No comparison of proposers was made: {why}"
                + (f"; only {', '.join(ran)} searched." if ran else "."))
    ranks = rank(rows, greater_is_better)
    ordered = sorted((r for r in rows if r["proposer"] in ranks),
                     key=lambda r: ranks[r["proposer"]])
    first = ordered[0]
    if not math.isfinite(first["holdout"]):
        return "No proposer verified a model."
    line = (f"Best mean holdout {metric}: {first['proposer']} {first['holdout']:.4f} "
            f"(± {_fmt_std(first['holdout_std'])} over {first['seeds']} seeds)")
    if len(ordered) > 1 and math.isfinite(ordered[1]["holdout"]):
        second = ordered[1]
        lead = abs(first["holdout"] - second["holdout"])
        spread = max(_zero(first["holdout_std"]), _zero(second["holdout_std"]))
        if lead < 5e-5:
            line += f"; tied with {second['proposer']} {second['holdout']:.4f}"
        else:
            judgement = "larger than" if lead > spread else "within"
            line += (f"; runner-up {second['proposer']} {second['holdout']:.4f}, a lead of "
                     f"{lead:.4f}, {judgement} the seed-to-seed spread ({spread:.4f})")
    return line + "." + (f" Not ranked: {why}." if idle else "")


def _num(value: float | None) -> float:
    return math.nan if value is None else float(value)


def _finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _mean(values: Iterable[float | None]) -> float:
    finite = _finite(values)
    return statistics.fmean(finite) if finite else math.nan


def _std(values: Iterable[float | None]) -> float:
    finite = _finite(values)
    return statistics.stdev(finite) if len(finite) > 1 else math.nan


def _zero(value: float) -> float:
    return value if math.isfinite(value) else 0.0


def _fmt_std(value: float) -> str:
    return f"{value:.4f}" if math.isfinite(value) else "n/a"
