"""``mlflow-agentic predict MODEL --data FILE``: a model's predictions of a file's rows."""

from __future__ import annotations

import click

from mlflow_agentic.cli.options import (
    blank_to_none,
    encoding_option,
    exit_on_user_error,
    tracking_uri_option,
)


@click.command("predict", epilog="Example: mlflow-agentic predict churn-agentic --data "
               "new.csv --keep customerID -o predictions.csv")
@click.argument("model", metavar="MODEL")
@click.option("--data", required=True, type=click.Path(),
              help="The rows to predict: a CSV (or TSV, compressed) or Parquet file with the "
                   "columns the model was trained on (the target may be there: it is ignored).")
@click.option("--output", "-o", default="-", show_default=True, type=click.Path(),
              help="Where the CSV of predictions goes (-: standard output).")
@click.option("--keep", callback=blank_to_none,
              help="An input column to carry into the output, first (an ID).")
@encoding_option
@tracking_uri_option()
def predict_command(model: str, data: str, output: str, keep: str | None, encoding: str | None,
                    tracking_uri: str | None) -> None:
    """Predict the rows of --data with MODEL: a registered model (NAME: its @champion, else its
    @challenger; NAME@ALIAS; NAME/VERSION), a models:/ or runs:/ URI, or a run id (a search's:
    the model of its selected attempt). Writes a CSV with one row per input row: label and,
    for a classifier, probability_<class> per class. The model is loaded as `mlflow models
    serve` loads it, so it refuses what serving refuses, with the same messages (exit 2)."""

    def work() -> None:
        import os
        from pathlib import Path

        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        from mlflow_agentic.data.dataset import read_table
        from mlflow_agentic.tracking.registry import model_uri, predict_rows
        from mlflow_agentic.tracking.store import use_store

        _check_output(output, data)
        use_store(tracking_uri, existing=True)
        uri, note = model_uri(model)
        rows = read_table(Path(data), encoding)
        frame = predict_rows(uri, rows, keep, source=f"the rows of {data}",
                             warn=lambda text: click.echo(f"warning: {text}", err=True))
        if output == "-":
            click.echo(frame.to_csv(index=False), nl=False)
        else:
            frame.to_csv(output, index=False)
        click.echo(f"predicted {len(frame):,} rows of {data} with {note or uri}"
                   + ("" if output == "-" else f": {output}"), err=True)

    exit_on_user_error(work, kept=lambda: "")


def _check_output(output: str, data: str) -> None:
    """Refuse, before any row is predicted, an output that would overwrite the input or that
    cannot be written."""
    import os
    from pathlib import Path

    from mlflow_agentic.core.errors import UserInputError

    if output == "-":
        return
    target, source = Path(output), Path(data)
    if target.exists() and source.exists() and os.path.samefile(target, source):
        raise UserInputError(f"-o {output} is the --data file: the predictions would overwrite "
                             "the rows; write them to another file")
    if target.is_dir():
        raise UserInputError(f"-o {output} is a folder; give a file name, e.g. "
                             f"{target / 'predictions.csv'}")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UserInputError(f"-o {output}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserInputError(f"-o {output}: not writable here (permissions)")
