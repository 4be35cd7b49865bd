"""``mlflow-agentic flush``: send a search's journal to its tracking store once it is back."""

from __future__ import annotations

from pathlib import Path

import click

from mlflow_agentic.cli.options import (
    exit_on_user_error,
    say_note,
    tracking_uri_option,
)


@click.command("flush")
@click.argument("journals", nargs=-1, type=click.Path(dir_okay=False))
@tracking_uri_option("Send to this store instead of the one each journal names.")
def flush_command(journals: tuple[str, ...], tracking_uri: str | None) -> None:
    """Send the records a search kept on disk while its tracking store was down (JOURNALS:
    the paths its error message gave; default: every journal in .mlflow-agentic/journal, or
    $MLFLOW_AGENTIC_JOURNAL_DIR). Each record is sent once, even after an earlier flush was
    cut; the journal is removed when all of it is in the store."""
    from mlflow_agentic.tracking.store import Journal, find_journals, flush_journal, journal_dir

    paths: list[str | Path] = list(journals)
    if not paths:  # every journal here, but those of searches still running (theirs to send)
        for path in find_journals():
            if Journal.open(path).owner_alive():
                say_note(f"skipped {path}: its search is still running and sends it itself")
            else:
                paths.append(path)
    if not paths:
        click.echo(f"no journal to send in {journal_dir()}: nothing to send")
        return

    def work() -> None:
        for path in paths:
            then = flush_journal(path, tracking_uri, say=lambda line: click.echo(line))
            if then:
                say_note(f"the search did not finish; finish it (nothing finished runs "
                         f"again): {then}")

    exit_on_user_error(work)
