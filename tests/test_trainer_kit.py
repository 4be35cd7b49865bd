"""``check_trainer``: every built-in trainer and the example plugin keep the engine's contract,
and trainers written to break it are caught by the check that names what they break."""

from __future__ import annotations

import pytest
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
from sklearn.linear_model import LogisticRegression, Ridge

from mlflow_agentic.testing import TrainerCheckFailed, check_trainer
from mlflow_agentic.trainers import FloatParam, IntParam, Trainer, trainer_registry

QUICK = ["declares_itself", "space_holds_its_defaults", "fits_and_predicts",
         "is_single_threaded"]
"""The fast tier's form; the slow tier runs every check (the edges of the space, seeding and
pickling: about 20 s for all trainers on 2 cores)."""


@pytest.mark.parametrize("name", sorted(trainer_registry()))
def test_every_installed_trainer_passes_the_quick_checks(name):
    assert check_trainer(trainer_registry()[name], QUICK) == QUICK


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(trainer_registry()))
def test_every_installed_trainer_passes_every_check(name):
    check_trainer(trainer_registry()[name])


def linear(task, p, seed):
    return Ridge(alpha=p["alpha"]) if task == "regression" else LogisticRegression(C=p["alpha"])


BROKEN = {
    "space_holds_its_defaults": Trainer(
        "default_outside", linear, lambda ds: {"alpha": FloatParam(0.1, 1.0)},
        lambda ds: {"alpha": 5.0}, preprocessing="scaled"),
    "fits_and_predicts": Trainer(  # native preprocessing keeps NaN, which these models refuse
        "no_missing_values", linear, lambda ds: {"alpha": FloatParam(0.1, 1.0)},
        lambda ds: {"alpha": 1.0}, preprocessing="native"),
    "is_single_threaded": Trainer(
        "all_cores", lambda task, p, seed: (RandomForestRegressor if task == "regression" else
                                            RandomForestClassifier)(
            n_estimators=p["n"], n_jobs=-1, random_state=seed),
        lambda ds: {"n": IntParam(5, 20)}, lambda ds: {"n": 10}),
    "is_seeded": Trainer(
        "unseeded", lambda task, p, seed: (RandomForestRegressor if task == "regression" else
                                           RandomForestClassifier)(n_estimators=p["n"],
                                                                   n_jobs=1),
        lambda ds: {"n": IntParam(5, 20)}, lambda ds: {"n": 10}),
}


@pytest.mark.parametrize("check", sorted(BROKEN))
def test_a_trainer_written_to_break_a_check_fails_it(check):
    with pytest.raises(TrainerCheckFailed, match=check):
        check_trainer(BROKEN[check])
