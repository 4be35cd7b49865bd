"""Screenshots of the MLflow UI after the README's main command, as committed under docs/ui/.

Run from a directory where ``mlflow run . -P data=examples/churn.csv --env-manager local
--experiment-name churn-agentic`` ran, with ``mlflow ui`` serving its store:

    mlflow ui --backend-store-uri sqlite:///mlflow.db -p 5055 &
    python docs/screenshots.py http://127.0.0.1:5055 docs/ui

After a code-mode search (``--proposer code``), ``--code`` takes the code-mode pictures
instead: the attempts named by hypothesis with their sandbox limits, one attempt's tags and its
``candidate.py``, and the roles' traces.

Needs ``pip install playwright`` and a Chromium (Debian: ``apt-get install chromium``).
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import mlflow
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def pick_columns(page, names, every: bool = False) -> None:
    """Tick (or untick) the named columns; ``every``: each group's column of that name (the
    search run's param and its attempts' tag of the same name)."""
    page.get_by_role("button", name="Columns", exact=True).click()
    time.sleep(0.5)
    box = page.get_by_placeholder("Search")
    for name in names:
        box.fill(name)
        time.sleep(0.6)
        title = page.locator("span[title]").filter(has_text=re.compile(rf"^{re.escape(name)}$"))
        for k in range(title.count() if every else 1):
            title.nth(k).locator("xpath=preceding-sibling::span[1]").click()  # its checkbox
    page.keyboard.press("Escape")
    time.sleep(0.5)


def main(ui: str, out: Path, store: str = "sqlite:///mlflow.db") -> None:
    out.mkdir(parents=True, exist_ok=True)
    client = mlflow.MlflowClient(store, registry_uri=store)
    exp = client.get_experiment_by_name("churn-agentic")
    parent = client.search_runs([exp.experiment_id], "tags.`agentic.role` = 'search' and "
                                "tags.`registered_version` != 'none'",
                                order_by=["attributes.start_time ASC"], max_results=1)[0]
    selected = parent.data.tags["selected_run_id"]
    version = parent.data.tags["registered_version"]
    name = parent.data.tags["registered_model"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        # the link the search printed (also in its description), opened with no click: the
        # view it names sorts and picks the columns, not this script
        link = re.search(r"\(([^)]*viewStateShareKey=[^)]*)\)",
                         parent.data.tags["mlflow.note.content"]).group(1)
        page.goto(f"{ui}/{link}")
        time.sleep(6)
        page.screenshot(path=str(out / "search_link.png"))
        runs = f"{ui}/#/experiments/{exp.experiment_id}/runs"
        page_shot(page, f"{runs}/{selected}", out / "selected_attempt.png")
        page_shot(page, f"{runs}/{selected}/artifacts", out / "selected_attempt_roc.png",
                  clicks=["holdout_roc_curve_plot.png"])
        page_shot(page, None, out / "selected_attempt_importance.png",
                  clicks=["explanations", "permutation_importance.png"])
        page_shot(page, f"{runs}/{parent.info.run_id}", out / "search_run.png")
        page_shot(page, f"{ui}/#/models/{name}/versions/{version}", out / "model_version.png")
        home_shots(browser, ui, out)
        browser.close()


def home_shots(browser, ui: str, out: Path) -> None:
    """The path a user clicks from the UI's home, in a fresh browser (no stored workflow type):
    home, the experiment, a run; then the one click MLflow leaves to the user (its Model
    training switch), after which the browser keeps that view."""
    context = browser.new_context(viewport={"width": 1920, "height": 1080})
    page = context.new_page()
    page_shot(page, f"{ui}/", out / "home.png")
    page.get_by_text("churn-agentic", exact=True).first.click()
    time.sleep(5)
    page.screenshot(path=str(out / "home_experiment.png"))
    got_it = page.get_by_role("button", name="Got it")  # MLflow's GenAI popover, over the page
    if got_it.count():
        got_it.first.click()
        time.sleep(1)
    page.get_by_text("Model training", exact=True).first.click()
    time.sleep(5)
    page.screenshot(path=str(out / "home_model_training.png"))
    page.get_by_role("link", name=re.compile(r"^churn-optuna-")).first.click()  # the search's run
    time.sleep(5)
    page.screenshot(path=str(out / "home_run.png"))
    context.close()


HIDDEN = ["Source", "Dataset"]
CODE_COLUMNS = ["cv_roc_auc", "verdict", "sandbox", "sandbox.memory", "sandbox.cpus",
                "sandbox.timeout", "critic"]


def code_shots(ui: str, out: Path, store: str = "sqlite:///mlflow.db") -> None:
    """Code mode: the attempts, one attempt's sandbox tags and candidate.py, the traces."""
    client = mlflow.MlflowClient(store, registry_uri=store)
    exp = client.get_experiment_by_name("churn-agentic")
    parent = client.search_runs([exp.experiment_id], "tags.`agentic.role` = 'search' and "
                                "tags.`registered_version` != 'none'",
                                order_by=["attributes.start_time ASC"], max_results=1)[0]
    children = client.search_runs(
        [exp.experiment_id], f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    feature = next(c for c in children if "per month" in (c.info.run_name or ""))
    runs = f"{ui}/#/experiments/{exp.experiment_id}/runs"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1920, "height": 1080})
        page.goto(f"{runs}?orderByKey=metrics.%60cv_roc_auc%60&orderByAsc=false")  # flat
        time.sleep(5)
        if page.get_by_role("button", name="Close").count():
            page.get_by_role("button", name="Close").first.click()  # the assistant panel
        pick_columns(page, CODE_COLUMNS, every=True)
        pick_columns(page, HIDDEN)
        page.screenshot(path=str(out / "code_runs_table.png"))
        page_shot(page, f"{runs}/{feature.info.run_id}", out / "code_attempt.png")
        page_shot(page, f"{runs}/{feature.info.run_id}/artifacts", out / "code_candidate.png",
                  clicks=["candidate.py"])
        page_shot(page, f"{ui}/#/experiments/{exp.experiment_id}/traces", None)
        if page.get_by_role("button", name="Got it").count():
            page.get_by_role("button", name="Got it").first.click()  # a feature tour
            time.sleep(1)
        page.screenshot(path=str(out / "code_traces.png"))
        browser.close()


def page_shot(page, url: str | None, path: Path | None, clicks=()) -> None:
    """Open ``url`` (None: stay), click the named items in turn, then take the screenshot
    (None: not yet)."""
    if url is not None:
        page.goto(url)
        time.sleep(5)
    for text in clicks:
        page.get_by_text(text, exact=True).click()
        time.sleep(2)
    if path is not None:
        page.screenshot(path=str(path), full_page=not clicks)


if __name__ == "__main__":
    shots = code_shots if "--code" in sys.argv[3:] else main
    shots(sys.argv[1], Path(sys.argv[2]))
