"""Reading a source file's imports, for the architecture tests."""

from __future__ import annotations

import ast
from pathlib import Path


def runtime_imports(path: Path) -> set[str]:
    """Modules a file imports when it runs (function-level included; ``if TYPE_CHECKING:``
    blocks left out). ``from pkg import name`` counts as ``pkg.name`` when ``pkg`` is the
    package root (the name may be a submodule), else as ``pkg``."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and getattr(node.test, "id", None) == "TYPE_CHECKING"
                   for stmt in node.body for n in ast.walk(stmt)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {f"{node.module}.{a.name}" if node.module == "mlflow_agentic" else
                      node.module for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found
