"""What a time budget keeps back, in one place: each reserve with why.

The command's ``Deadline`` is made when it starts. The loop (its refit included) must end by
``loop_deadline``: the command's end minus the recording after it. The loop keeps back, before
its own end, the refit of the model it will serve (``LoopBudget``, from the estimates below) and
the ensemble step. The refit on all rows may run to the loop's end plus ``REFIT_TOLERANCE``. The
holdout diagnostics must end ``REGISTER_SECONDS`` before the command's end. docs/performance.md
has the measurements behind each figure."""

from __future__ import annotations

import time

from mlflow_agentic.core.deadline import Deadline

# ---- the recording after the loop (kept back by the front door) ---------------------------------
FINISH_SECONDS = 1.0
FINISH_SHARE = 0.03
"""What follows the loop (model logging, the evaluator on the holdout, the registry gate,
plots): 1 s + 3%. A model over ``LOG_FREE_MB`` is the loop's to plan for; diagnostics that would
not fit are skipped and say so."""
FINISH_PER_ROW = 1.5e-5
"""And per row of the file beyond ``FINISH_FREE_ROWS``: the holdout rows logged and scored,
the data profile (21 s at 1.4M rows)."""
FINISH_FREE_ROWS = 50_000
"""Rows the fixed reserve already covers: the recording's time is flat up to about this many
rows."""
FINISH_PER_COLUMN = 0.004
"""And per column: the model's signature and input example, the data profile, the holdout
rows."""
REGISTER_SECONDS = 1.5
"""Registration and the last tags, after the holdout diagnostics."""
MIN_LOOP_SECONDS = 1.0
"""The least loop worth starting: with less, a wide file's folds may not even be preprocessed
before the deadline, and the attempts it starts are only cut."""

# ---- the refit and the ensemble step (kept back by the loop, ``LoopBudget``) -------------------
ENSEMBLE_MEMBERS = 4
"""Members a greedy ensemble usually keeps (its refit refits each): what the loop plans for."""
REFIT_TOLERANCE = 0.04
"""How far past its share of the loop's time a refit may end before a cheaper attempt is
selected instead: a second's overrun beats selecting a model twice as bad."""
LOG_SECONDS_PER_MB = 0.015
"""Logging the served model after the loop, per MB of its pickle (pickled, written, copied to
the artifact store, loaded back for MLflow's input-example check)."""
LOG_FREE_MB = 30.0
"""What the recording reserve already covers (a model up to this size logs in under half a
second); beyond it the loop keeps the logging time back itself."""
SHIP_SECONDS_PER_MB = 0.005
"""A refit model's way back from its worker, or a fold model's from disk, per MB."""
REFIT_GROWTH = 1.25
"""A refit model against one fold's: trees grow with the rows (all of them, not (k-1)/k)."""
AFTER_LOOP_RESERVE_SECONDS = 1.0
"""The steps after the loop (the ensemble selection; at most 10% of the loop's time), on top of
the refit's own estimate, until the selection is measured."""
SELECTION_RECORD_SECONDS = 0.1
"""The ensemble's own attempt record (its child run), beside the selection's arithmetic."""
FULL_REFIT_MARGIN = 1.1
"""How much longer than the first refit, beyond its share of more rows, the refit on all rows
may take: the loop keeps it back and the front door checks it with the same share."""
WORKER_START_SECONDS = 2.0
"""Fresh workers importing the scientific stack under load: what restarting the workers a spent
budget killed mid-fold costs before the refit can use them."""
ALONE_SHARE = 0.7
"""A refit against its estimate from the search's fold fits: those shared the cores with this
process's scoring and recording, a refit does not."""


def recording_reserve(seconds: float, n_rows: int = 0, n_columns: int = 0) -> float:
    """What the recording after the loop needs of a ``seconds`` budget on a file of this size."""
    return (FINISH_SECONDS + FINISH_SHARE * seconds
            + FINISH_PER_ROW * max(n_rows - FINISH_FREE_ROWS, 0) + FINISH_PER_COLUMN * n_columns)


def loop_deadline(deadline: Deadline, tracked: bool, n_rows: int = 0,
                  n_columns: int = 0) -> Deadline:
    """The loop's own deadline (its refit included), from now: the command's end less the
    recording after the loop when it is tracked. Under ``MIN_LOOP_SECONDS`` left, none at all
    (0 s: the loop starts no attempt and says why)."""
    now = time.perf_counter()
    end = deadline.end
    if end is None or deadline.seconds is None:
        return Deadline(now, None)
    reserve = recording_reserve(deadline.seconds, n_rows, n_columns) if tracked else 0.0
    left = end - now - reserve
    return Deadline(now, left if left >= MIN_LOOP_SECONDS else 0.0)


def recording_deadline(deadline: Deadline) -> float | None:
    """When the holdout diagnostics must end (``REGISTER_SECONDS`` before the command's)."""
    return deadline.before(REGISTER_SECONDS)


def full_refit_share(train_rows: int, holdout_rows: int) -> float:
    """The refit on all rows against the first refit (on the training rows): its rows' share
    times ``FULL_REFIT_MARGIN``; 0 without holdout rows (nothing to refit on)."""
    if holdout_rows <= 0:
        return 0.0
    return FULL_REFIT_MARGIN * (train_rows + holdout_rows) / max(train_rows, 1)
