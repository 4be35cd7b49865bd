"""``python -m mlflow_agentic.cli.mlproject``: regenerate the MLproject's entry points from
the commands (``tests/test_settings.py`` checks the file matches)."""

from pathlib import Path

from mlflow_agentic.cli.compare import compare_command
from mlflow_agentic.cli.run import run_command
from mlflow_agentic.cli.settings import entry_block, mlproject_entry

COMMANDS = {"main": run_command, "compare": compare_command}

if __name__ == "__main__":
    path = Path(__file__).resolve().parents[2] / "MLproject"
    text = path.read_text()
    for name, command in COMMANDS.items():
        text = text.replace(entry_block(text, name), mlproject_entry(name, command))
    path.write_text(text)
    print(f"wrote the {', '.join(COMMANDS)} entry points of {path}")
