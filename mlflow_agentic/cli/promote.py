"""``mlflow-agentic promote``: move ``@champion`` to the challenger only if its evidence holds."""

from __future__ import annotations

import sys

import click

from mlflow_agentic.cli.options import (
    blank_to_none,
    exit_on_user_error,
    gap_threshold,
    tracking_uri_option,
)

EXIT_REFUSED = 1


@click.command("promote")
@click.option("--model", "model", required=True, help="Registered model name.")
@click.option("--from", "from_alias", default="challenger", show_default=True,
              help="Alias (or version number) of the version to promote.")
@click.option("--to", "to_alias", default="champion", show_default=True,
              help="Alias to move to it when the gate passes.")
@click.option("--data", callback=blank_to_none, type=click.Path(),
              help="Evaluation data for both models (default: the holdout recorded with the "
                   "challenger's search).")
@click.option("--max-gap", default="0.05", callback=gap_threshold, show_default=True,
              help="Largest CV-minus-holdout gap accepted (absolute for AUC/accuracy/F1/R2, "
                   "relative for RMSE/MAE/log loss).")
@click.option("--min-improvement", default=0.0, show_default=True, type=float,
              help="How much better than the champion the challenger must be, in the metric's "
                   "units, at the pessimistic 5% bound of a paired bootstrap over the "
                   "evaluation rows (0: better beyond the noise, a one-sided test at 5%).")
@click.option("--dry-run", is_flag=True,
              help="Evaluate and print the decision; move no alias and record nothing.")
@click.option("--accept-generated-code", is_flag=True,
              help="Allow promoting a code-mode version, whose loading runs LLM-written code "
                   "(recorded on the version with who and when). Serve such a model inside a "
                   "container.")
@tracking_uri_option()
def promote_command(model: str, from_alias: str, to_alias: str, data: str | None,
                    max_gap: float, min_improvement: float, dry_run: bool,
                    accept_generated_code: bool, tracking_uri: str | None) -> None:
    """Promote MODEL@challenger to @champion if the runs of its search vouch for it (its
    source run is an attempt of the search run that registered it, and its tags agree with
    those runs), it is verified, not quarantined, its gap is within --max-gap, and it beats
    the current champion on the same evaluation data beyond the noise of those rows (a paired
    bootstrap; a tie keeps the champion). Either way the decision, both scores, the interval
    and the data digest are recorded as model-version tags (not with --dry-run). Exit 0:
    promoted (or would be); 1: refused; 2: bad input."""
    result = {}

    def work() -> None:
        import os

        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

        from mlflow_agentic.tracking.registry import promote
        from mlflow_agentic.tracking.store import use_store

        use_store(tracking_uri, existing=True)
        result["outcome"] = promote(model, from_alias=from_alias, to_alias=to_alias,
                                    data=data, max_gap=max_gap,
                                    min_improvement=min_improvement, dry_run=dry_run,
                                    accept_generated_code=accept_generated_code)

    exit_on_user_error(work)
    outcome = result["outcome"]
    d = outcome.decision
    champion = (f"v{outcome.champion_version} {d.champion_score:.4f}"
                if d.champion_score is not None and outcome.champion_version else "none")
    if outcome.data_rows:
        click.echo(f"evaluation data: {outcome.data} ({outcome.data_rows} rows, digest "
                   f"{outcome.data_digest})")
        click.echo(f"{d.metric}: challenger v{outcome.challenger_version} "
                   f"{d.challenger_score:.4f}; champion {champion}")
    else:
        click.echo(f"challenger v{outcome.challenger_version}: refused before loading or "
                   "scoring it")
    if d.promoted and dry_run:
        click.secho(f"would promote (dry run, nothing changed): models:/{model}@"
                    f"{outcome.target_alias} -> version {outcome.challenger_version}", fg="green")
        for reason in d.reasons:
            click.echo(f"  - {reason}")
        return
    if d.promoted:
        click.secho(f"promoted: models:/{model}@{outcome.target_alias} -> version "
                    f"{outcome.challenger_version}", fg="green")
        for reason in d.reasons:
            click.echo(f"  - {reason}")
        return
    click.secho(f"refused{' (dry run)' if dry_run else ''}: @{outcome.target_alias} unchanged",
                fg="red", err=True)
    for reason in d.reasons:
        click.echo(f"  - {reason}", err=True)
    sys.exit(EXIT_REFUSED)
