"""``python -m mlflow_agentic.cli.mlproject``: regenerate the MLproject's ``main`` entry point
from the ``run`` command (``tests/test_settings.py`` checks the file matches)."""

from pathlib import Path

from mlflow_agentic.cli.run import run_command
from mlflow_agentic.cli.settings import main_block, mlproject_main

if __name__ == "__main__":
    path = Path(__file__).resolve().parents[2] / "MLproject"
    text = path.read_text()
    path.write_text(text.replace(main_block(text), mlproject_main(run_command)))
    print(f"wrote the main entry point of {path}")
