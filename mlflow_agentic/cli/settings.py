"""The command line's options for ``SearchSettings`` and the MLproject's ``main`` entry point,
generated: each setting is declared once (``core.settings``: name, type, default, help,
choices) and each other option of ``run`` once (its click option)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from mlflow_agentic.cli.options import WholeNumber, blank_to_none, named_list, optional_float
from mlflow_agentic.core.settings import offered_settings

BUDGETED = ("max_iterations", "patience")
"""Unset on the command line means "8 and 3, off with --time-budget" (``budgeted``)."""


def offered() -> list[dataclasses.Field]:
    """The settings the command line offers (a field with ``flag=""`` is set by code)."""
    return offered_settings()


def flag_of(f: dataclasses.Field) -> str:
    if f.metadata.get("flag"):
        return f.metadata["flag"]
    dashed = f.name.replace("_", "-")
    return f"--no-{dashed}" if f.default is True else f"--{dashed}"


def option_for(f: dataclasses.Field) -> Callable:
    """One click option from one field: its type from the annotation, its default from the
    field (checks stay in ``SearchSettings``, reported as bad input)."""
    meta, kind = f.metadata, str(f.type)
    common = dict(help=meta["help"], metavar=meta.get("metavar"))
    if kind == "bool":  # a flag that also takes a value: the MLproject passes one
        return click.option(flag_of(f), f.name, is_flag=False, flag_value="true",
                            default="false", metavar="[true|false]", help=meta["help"],
                            callback=_turned_on if f.default is False else _turned_off)
    if meta.get("choices"):
        return click.option(flag_of(f), f.name, type=click.Choice(meta["choices"]),
                            default=f.default, show_default=True, help=meta["help"])
    if kind.startswith("tuple"):
        return click.option(flag_of(f), f.name, callback=_names, default=f.default, **common)
    if kind.startswith("float"):
        return click.option(flag_of(f), f.name, callback=optional_float,
                            default=f.default, show_default=f.default is not None, **common)
    if kind.startswith("int") or f.name == "cv":
        default = None if f.name in BUDGETED else f.default
        return click.option(flag_of(f), f.name, type=WholeNumber(allow_blank=default is None),
                            default=default, show_default=default is not None, **common)
    return click.option(flag_of(f), f.name, callback=blank_to_none, default=f.default,
                        **common)


def _given(value: Any) -> bool:
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", "", "none"):
        return False
    raise click.BadParameter(f"{value!r}: expected true or false (or the flag alone)")


def _turned_on(ctx: click.Context, param: click.Parameter, value: Any) -> bool:
    """``--stack`` (alone or ``true``) turns a setting on; ``false`` or absent: off."""
    return _given(value)


def _turned_off(ctx: click.Context, param: click.Parameter, value: Any) -> bool:
    """``--no-prune`` (alone or ``true``) turns an on-by-default setting off."""
    return not _given(value)


def _names(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    from mlflow_agentic.cli.options import split_list

    value = named_list(ctx, param, value)
    names = split_list(value) if value is not None else None
    return tuple(names) if names is not None else None


def settings_options(command: Callable) -> Callable:
    """Every offered setting as an option of ``command``."""
    for f in reversed(offered()):
        command = option_for(f)(command)
    return command


def setting_option(name: str) -> Callable:
    """The option of one setting (for commands that offer only some)."""
    return option_for(next(f for f in offered() if f.name == name))


def pop_settings(options: dict) -> dict:
    """The settings among a command's parsed options (taken out of ``options``)."""
    return {f.name: options.pop(f.name) for f in offered() if f.name in options}


ENTRY_POINTS = {
    "main": ("run", ("data", "target", "task", "proposer", *(f.name for f in offered()),
                     "register_name", "register", "experiment", "time_column",
                     "group_column", "holdout_fraction", "post_outcome_columns", "llm_model",
                     "llm_base_url", "max_cost_usd", "replay", "encoding", "max_experiments",
                     "critic_model")),
    "compare": ("compare", ("data", "target", "proposers", "budget_iterations", "time_budget",
                            "seeds", "split_seed", "trainers", "cv", "metric", "margin",
                            "llm_model", "llm_base_url", "max_cost_usd", "llm_replay",
                            "time_column", "group_column")),
}
"""The MLproject's generated entry points: the command each runs, and its options (by their
click names) offered as ``-P`` parameters, named as their flags are (``--no-prune``:
``no_prune``). ``main`` offers every search setting."""


def mlproject_entry(name: str, command: click.Command) -> str:
    """An entry point's YAML, generated from the command's options: a whole-number option is
    a float parameter (MLflow passes numbers as floats), everything else a string whose unset
    default reads as a word (``auto`` / ``none``)."""
    verb, names = ENTRY_POINTS[name]
    params = {p.name: p for p in command.params}
    lines = [f"  {name}:", "    parameters:"]
    flags = []
    for option in names:
        param = params[option]
        flag = max(param.opts, key=len)
        key = flag.lstrip("-").replace("-", "_")
        flags.append(f"{flag} {{{key}}}")
        lines.append(f"      {key}: {_parameter(key, param)}")
    lines.append("    command: >-")
    line = f"      python -m mlflow_agentic {verb}"
    for part in flags:
        if len(line) + len(part) + 1 > 96:
            lines.append(line)
            line = "     "
        line += " " + part
    lines.append(line)
    return "\n".join(lines) + "\n"


def _parameter(key: str, param: click.Parameter) -> str:
    if param.required:
        return "{type: string}" if param.multiple else "path"
    if isinstance(param.type, (WholeNumber, click.types.IntParamType)) and \
            param.default is not None:
        return f"{{type: float, default: {param.default}}}"
    default = param.default if isinstance(param.default, (str, int, float)) else None
    word = ("none" if default is None and key not in _AUTO_WORDS else
            "auto" if default is None else default)
    return f"{{type: string, default: {_yaml(word)}}}"


def _yaml(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if "," in text else text


_AUTO_WORDS = ("target", "trainers", "max_iterations", "patience", "n_jobs", "metric",
               "register_name", "experiment", "holdout_fraction", "llm_model", "llm_base_url",
               "encoding", "critic_model", "budget_iterations")
"""Unset parameters that mean "chosen for you" read ``auto``; the others read ``none``."""


def entry_block(text: str, name: str = "main") -> str:
    """An entry point's block of an MLproject file's text (up to the next blank line)."""
    start = text.index(f"  {name}:\n")
    end = text.index("\n\n", start) if "\n\n" in text[start:] else len(text) - 1
    return text[start:end + 1]
