"""Which verified attempt is selected, and which others it cannot be told apart from.

Two CV scores closer than the top attempt's standard error (``AttemptRecord.standard_error``:
its fold scores' standard deviation over the square root of the fold count) are a tie on these
folds. ``best`` selects the top CV score all the same; ``one-se``, the one-standard-error rule
(Breiman et al. 1984; Hastie, Tibshirani and Friedman, ESL 7.10), selects the cheapest trainer
within one standard error of the top, which usually generalises as well and costs less to fit
and serve.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from mlflow_agentic.core.settings import SELECTION_RULES
from mlflow_agentic.core.types import COMBINERS, AttemptRecord, best_first

__all__ = ["SELECTION_RULES", "beats_choosing", "combination_wins", "diverse_first", "fit_cost",
           "nested_best", "select", "ties"]
T = TypeVar("T")
BAG_KEEP = 8
"""The best attempts whose fold models are kept (an ensemble keeps about 4 members)."""
DEFAULT_COST = 2
"""A trainer's relative fit cost when the registry does not know it (1 cheap .. 3 expensive)."""


def ties(history: Sequence[AttemptRecord], top: AttemptRecord | None) -> list[AttemptRecord]:
    """Eligible attempts other than ``top`` within one standard error of its CV score, best
    first. Empty when ``top`` has no standard error (fewer than two folds)."""
    if top is None:
        return []
    window = top.standard_error
    if not math.isfinite(window):
        return []
    close = [a for a in history if a is not top and a.selectable and math.isfinite(a.score)
             and top.utility - a.utility <= window]
    return sorted(close, key=lambda a: (-a.utility, a.index))


def diverse_first(ranked: Sequence[T], kind: Callable[[T], str]) -> list[T]:
    """``ranked`` (best first) with each kind's (trainer's) best first, then the others: the
    ensemble's candidates, and the members the loop keeps time back for. After hundreds of
    trials the top attempts are near copies of one configuration, and blending copies gains
    nothing (AutoGluon's ensemble, too, blends one model of each kind)."""
    seen: set[str] = set()
    heads: list[T] = []
    rest: list[T] = []
    for item in ranked:
        (rest if kind(item) in seen else heads).append(item)
        seen.add(kind(item))
    return heads + rest


def nested_best(history: Sequence[AttemptRecord]) -> float | None:
    """The CV score of "take the single attempt with the best CV score", nested the way a
    combination's score is: each fold scored by the attempt best on the other folds. Among
    many close attempts the top CV score is partly luck on these folds (the winner's curse),
    and this is what choosing it is worth. None without two complete single attempts."""
    singles = [a for a in history if a.selectable and a.candidate.trainer not in COMBINERS
               and a.fold_scores and all(math.isfinite(x) for x in a.fold_scores)]
    k = max((len(a.fold_scores) for a in singles), default=0)
    full = [a for a in singles if len(a.fold_scores) == k]
    if k < 2 or len(full) < 2:
        return None
    sign = 1.0 if full[0].greater_is_better else -1.0
    totals = [sign * sum(a.fold_scores) for a in full]
    picked = []
    for j in range(k):  # the first of equal ones: the earlier attempt, as ``best_first``
        rest = [t - sign * a.fold_scores[j] for t, a in zip(totals, full, strict=True)]
        picked.append(full[rest.index(max(rest))].fold_scores[j])
    return sum(picked) / k


def beats_choosing(score: float, best: AttemptRecord, history: Sequence[AttemptRecord]) -> bool:
    """Whether a combination's nested CV ``score`` beats choosing ``best``: a single attempt
    weighed by ``nested_best`` (what choosing it is worth), a combination by its own score."""
    nested = None if best.candidate.trainer in COMBINERS else nested_best(history)
    bar = best.score if nested is None else nested
    return score > bar if best.greater_is_better else score < bar


def combination_wins(record: AttemptRecord, best: AttemptRecord | None,
                     history: Sequence[AttemptRecord]) -> tuple[bool, str]:
    """Whether a combination (ensemble, stack) with its nested CV score ``record.score``
    beats ``best``, and why when it wins over a higher CV score. A single ``best`` is
    weighed by what choosing it is worth (``nested_best``), not by its own CV score: both
    numbers then come from folds nothing was chosen on."""
    if not record.verdict.valid:
        return False, ""
    if best is None:
        return True, ""
    if not beats_choosing(record.score, best, history):
        return False, ""
    if record.utility >= best.utility:
        return True, ""
    nested = nested_best(history)  # beaten, not by the CV score: a single ``best``'s nested
    singles = sum(a.selectable and a.candidate.trainer not in COMBINERS for a in history)
    return True, (f"the {record.candidate.trainer} (nested CV {record.score:.4f}) is worth more "
                  f"than choosing the best of {singles} single attempts by CV ({nested:.4f} "
                  "when each fold is scored by the attempt best on the other folds)")


def fit_cost(record: AttemptRecord, by_index: dict[int, AttemptRecord]) -> int:
    """The trainer's declared relative cost; an ensemble (or stack) costs all its members
    together."""
    from mlflow_agentic.trainers.registry import trainer_registry

    if record.candidate.trainer in COMBINERS:
        members = [by_index[i] for i in record.params.get("members", ()) if i in by_index]
        return sum(fit_cost(m, by_index) for m in members) or DEFAULT_COST
    trainer = trainer_registry().get(record.candidate.trainer)
    return DEFAULT_COST if trainer is None else trainer.cost


def select(history: Sequence[AttemptRecord], top: AttemptRecord | None, rule: str = "best"
           ) -> AttemptRecord | None:
    """The attempt ``rule`` selects: ``top`` (``best``), or the cheapest of ``top`` and its ties
    (``one-se``; the better CV score among equally cheap ones)."""
    if rule not in SELECTION_RULES:
        raise ValueError(f"unknown selection rule {rule!r}; valid: {', '.join(SELECTION_RULES)}")
    if top is None or rule == "best":
        return top
    by_index = {a.index: a for a in history}
    return min([top, *ties(history, top)],
               key=lambda a: (fit_cost(a, by_index), -a.utility, a.index))


def affordable(best: AttemptRecord, history: Sequence[AttemptRecord],
               fits: Callable[..., bool],
               bag: Callable[[AttemptRecord], object] | None = None,
               prefer_bag: bool = False) -> tuple[AttemptRecord, str, object]:
    """``(record, why, model)``: ``best`` to refit; or, when its refit would not fit the time
    left (``fits(members)`` of the attempts it refits: an ensemble's members), ``best`` served
    as the average of its fold models (``bag(best)``: already fitted, no refit, when
    ``fits(members, bag=True)``: k fold models log k times the bytes), or when those are not
    kept or too big, the best verified attempt whose refit does fit. ``prefer_bag``: the
    average of the fold models first, whenever they were kept and fit; a refit otherwise."""
    members = refit_members(best, history)
    if prefer_bag and bag is not None and fits(members, bag=True):
        model = bag(best)
        if model is not None:
            return best, (f"attempt {best.index} is served as the average of its fold models "
                          "(bag)"), model
    if fits(members):
        return best, "", None
    model = bag(best) if bag is not None and fits(members, bag=True) else None
    if model is not None:
        return best, (f"attempt {best.index} is served as the average of its fold models: its "
                      "refit would not fit the time budget left"), model
    for record in best_first(history):
        if fits(refit_members(record, history)):
            return record, (f"attempt {best.index}'s refit would not fit the time budget left; "
                            f"selected attempt {record.index}, the best whose refit does"), None
    return best, "", None


def refit_members(record: AttemptRecord, history: Sequence[AttemptRecord]
                  ) -> list[AttemptRecord]:
    """The attempts a refit of ``record`` fits: an ensemble's (or stack's) members, else
    itself."""
    if record.candidate.trainer not in COMBINERS:
        return [record]
    by_index = {a.index: a for a in history}
    return [by_index[i] for i in record.params.get("members", ()) if i in by_index]


def bag_worthy(history: Sequence[AttemptRecord], n: int = BAG_KEEP) -> set[int]:
    """The ``n`` best verified attempts: the ones that may be served as their fold models'
    average (the selected one, an ensemble's members)."""
    return {a.index for a in best_first(history)[:n]}
