"""Each setting is declared once: the command line's options, the MLproject's parameters and
``search()`` take it from ``SearchSettings`` (name, type, default, help, choices)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from mlflow_agentic.cli.mlproject import COMMANDS
from mlflow_agentic.cli.run import run_command
from mlflow_agentic.cli.settings import BUDGETED, entry_block, flag_of, mlproject_entry, offered
from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.settings import SearchSettings, TrackingOptions
from mlflow_agentic.frontdoor.api import search
from mlflow_agentic.frontdoor.orchestrator import SplitOptions
from mlflow_agentic.proposers.factory import CodeOptions, LLMOptions

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = {p.name: p for p in run_command.params}


@pytest.mark.parametrize("field", offered(), ids=lambda f: f.name)
def test_every_setting_is_an_option_of_run_with_its_declared_default(field):
    option = OPTIONS[field.name]
    assert flag_of(field) in option.opts
    assert option.help == field.metadata["help"]
    if field.name in BUDGETED:  # unset: 8 and 3, off with a time budget (budgeted)
        assert option.default is None and f"default: {field.default}" in option.help
    elif field.type == "bool":  # the flag alone, or a value (as the MLproject passes it)
        flag = flag_of(field)
        for args, value in (([], field.default), ([flag], not field.default),
                            ([flag, "false"], field.default), ([flag, "true"], not field.default)):
            ctx = run_command.make_context("run", ["--data", "x.csv", *args])
            assert ctx.params[field.name] is value, args
    else:
        assert option.default == field.default
    if field.metadata.get("choices"):
        assert tuple(option.type.choices) == field.metadata["choices"]


@pytest.mark.parametrize("field", offered(), ids=lambda f: f.name)
def test_every_setting_is_an_mlproject_parameter_and_a_logged_run_parameter(field):
    """Declared once, it is offered by ``mlflow run``, recorded on the search run (the run's
    parameters are checked in tests/test_tracking.py) and, if declared so, checked on resume."""
    from mlflow_agentic.core.settings import logged_name
    from mlflow_agentic.tracking.resume import MUST_MATCH

    main = entry_block((ROOT / "MLproject").read_text(), "main")
    key = flag_of(field).lstrip("-").replace("-", "_")
    assert f"      {key}: " in main and f"{flag_of(field)} {{{key}}}" in main
    assert logged_name(field) in SearchSettings().logged()
    assert (logged_name(field) in MUST_MATCH) is field.metadata["same_on_resume"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_mlproject_entry_points_are_the_generated_ones(name):
    """Regenerate with ``python -m mlflow_agentic.cli.mlproject``."""
    text = (ROOT / "MLproject").read_text()
    assert entry_block(text, name) == mlproject_entry(name, COMMANDS[name])


SAID_OTHERWISE = {("compare", "time_budget"): "wall seconds per proposer and seed, not per search"}


def test_no_command_declares_a_search_setting_of_its_own():
    """Every command's option named as a search setting is the generated one (flag, help,
    default): compare, worker and finalize take theirs from the same declarations as run."""
    from mlflow_agentic.cli import main

    fields = {f.name for f in offered()}
    seen = []
    for name, command in main.commands.items():
        for param in getattr(command, "params", []):
            if param.name in fields and (name, param.name) not in SAID_OTHERWISE:
                mine = OPTIONS[param.name]
                assert (param.opts, param.default, param.help) == \
                    (mine.opts, mine.default, mine.help), (name, param.name)
                seen.append((name, param.name))
    assert {c for c, _ in seen} >= {"run", "compare", "worker", "finalize"}


def test_a_worker_is_offered_every_setting_its_study_shares():
    """What workers must agree on is derived from the declarations (``same_on_resume``, but
    what finalize decides); each is an option of ``worker``, so every worker can be told."""
    from mlflow_agentic.cli import main
    from mlflow_agentic.core.settings import FINALIZE_DECIDES, same_on_resume, shared_by_workers

    worker = {p.name for p in main.commands["worker"].params}
    assert set(shared_by_workers()) <= worker
    assert {logged for logged in same_on_resume()} >= set(FINALIZE_DECIDES)


def test_the_shared_options_are_declared_once():
    """--tracking-uri, --experiment and the LLM's options come from cli.options everywhere."""
    source = "\n".join(p.read_text() for p in (ROOT / "mlflow_agentic" / "cli").glob("*.py")
                       if p.name != "options.py")
    for flag in ("--tracking-uri", "--llm-model", "--llm-base-url", "--max-cost-usd"):
        assert f'"{flag}"' not in source, flag


@pytest.mark.parametrize("make, words", [
    (lambda: SplitOptions(holdout_fraction=0.7), "holdout fraction must be in (0, 0.5]"),
    (lambda: LLMOptions(max_cost_usd=-1.0), "max cost -1.0"),
    (lambda: CodeOptions(max_experiments=0), "max experiments 0"),
    (lambda: TrackingOptions(register="sometimes"), "unknown policy"),
], ids=["split", "llm", "code", "tracking"])
def test_every_options_object_checks_itself_when_made(make, words):
    with pytest.raises(UserInputError, match=re.escape(words)):
        make()


def test_search_declares_no_setting_of_its_own():
    """``search()`` takes settings as ``settings=`` or keyword overrides, never as parameters
    with defaults of their own."""
    parameters = set(inspect.signature(search).parameters)
    fields = {f.name for f in dataclasses.fields(SearchSettings)}
    assert parameters & fields == set()


def test_an_unknown_override_and_a_bad_value_are_refused_before_reading_the_data(tmp_path):
    with pytest.raises(TypeError, match="unknown search setting 'max_iteration'"):
        search(tmp_path / "never-read.csv", max_iteration=3)
    with pytest.raises(UserInputError, match="cv must be at least 2"):
        search(tmp_path / "never-read.csv", cv=1)
