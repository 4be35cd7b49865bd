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

from mlflow_agentic.core.settings import SELECTION_RULES
from mlflow_agentic.core.types import AttemptRecord, best_first

__all__ = ["SELECTION_RULES", "fit_cost", "select", "ties"]
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


def fit_cost(record: AttemptRecord, by_index: dict[int, AttemptRecord]) -> int:
    """The trainer's declared relative cost; an ensemble (or stack) costs all its members
    together."""
    from mlflow_agentic.engine.refit import COMBINERS
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
    from mlflow_agentic.engine.refit import COMBINERS

    if record.candidate.trainer not in COMBINERS:
        return [record]
    by_index = {a.index: a for a in history}
    return [by_index[i] for i in record.params.get("members", ()) if i in by_index]


def bag_worthy(history: Sequence[AttemptRecord], n: int = BAG_KEEP) -> set[int]:
    """The ``n`` best verified attempts: the ones that may be served as their fold models'
    average (the selected one, an ensemble's members)."""
    return {a.index for a in best_first(history)[:n]}
