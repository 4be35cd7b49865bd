"""Boundaries that keep the architecture honest, checked on the source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.imports import runtime_imports

PACKAGE = Path(__file__).resolve().parents[1] / "mlflow_agentic"
EDGE_LIBRARIES = {"mlflow", "openai", "docker"}
CORE = ["core", "engine", "verify", "proposers", "data", "trainers"]


def optional_imports(tree: ast.AST) -> set[int]:
    """ids of import nodes inside ``try: ... except ImportError``: used when present only."""
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                               "ModuleNotFoundError")
                for h in node.handlers):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return guarded


def imported_roots(path: Path) -> set[str]:
    """Modules a file needs (imports guarded by ``except ImportError`` are optional: not
    counted)."""
    roots = set()
    tree = ast.parse(path.read_text())
    optional = optional_imports(tree)
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
            if node.module.startswith("mlflow_agentic."):
                roots.add(node.module)
    return roots


def core_files():
    for part in CORE:
        target = PACKAGE / part
        yield from ([target] if target.is_file() else sorted(target.rglob("*.py")))


@pytest.mark.parametrize("path", list(core_files()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_mlflow_openai_or_docker(path):
    assert not imported_roots(path) & EDGE_LIBRARIES


@pytest.mark.parametrize("path", list(core_files()), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_tracking_or_the_cli(path):
    imports = imported_roots(path)
    assert not any(m.startswith(("mlflow_agentic.tracking", "mlflow_agentic.cli",
                                 "mlflow_agentic.cli.progress")) for m in imports)


@pytest.mark.parametrize("path", ["trainers/transforms.py", "trainers/stacked.py",
                                  "core/labels.py"])
def test_modules_pickled_into_models_import_only_the_scientific_stack(path):
    """A logged model carries these modules by value: what they import must be there wherever
    it is served (the stack, the standard library, and each other)."""
    carried = {"mlflow_agentic.core.labels", "mlflow_agentic.trainers.transforms"}
    roots = imported_roots(PACKAGE / path) - carried - {"mlflow_agentic"}
    assert roots <= {"__future__", "numpy", "pandas", "sklearn", "warnings", "collections",
                     "typing"}  # and each other


@pytest.mark.parametrize("name", ["table.py", "report.py", "plots.py"])
def test_comparison_numbers_and_report_are_computed_without_mlflow(name):
    """The report is computed from search results; only tracking/results/comparison.py logs it."""
    imports = imported_roots(PACKAGE / "compare" / name)
    assert "mlflow" not in imports
    assert not any(m.startswith("mlflow_agentic.tracking") for m in imports)


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"],
                                  ["promote", "--help"], ["compare", "--help"]])
def test_the_cli_answers_without_importing_the_heavy_stack(argv):
    """`--help` and `--version` import click and our CLI only: on a loaded machine importing
    scikit-learn, pandas and MLflow took 12-20 s before the first line."""
    import subprocess
    import sys

    code = (f"import sys\nfrom mlflow_agentic.cli import main\ntry:\n    main({argv!r})\n"
            "except SystemExit:\n    pass\nheavy = sorted(m for m in ('sklearn', 'pandas', "
            "'mlflow', 'numpy', 'optuna', 'openai') if m in sys.modules)\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=PACKAGE.parent).stdout
    assert "HEAVY []" in out, out


def test_the_package_root_is_the_honest_front_door():
    import mlflow_agentic

    assert callable(mlflow_agentic.search) and "search" in mlflow_agentic.__all__
    assert "AgenticAutoML" not in mlflow_agentic.__all__  # no holdout, no registration
    with pytest.raises(AttributeError):
        mlflow_agentic.AgenticAutoML  # noqa: B018 - the attribute access is the test


def part_of(module: str) -> str:
    """The architectural part a module belongs to: its subpackage (or top-level module)."""
    parts = module.split(".")
    if len(parts) < 2 or not ((PACKAGE / parts[1]).is_dir()
                              or (PACKAGE / f"{parts[1]}.py").exists()):
        return "root"  # the package root, or a name it exports (``__version__``)
    return parts[1]


def part_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(("mlflow_agentic", *path.relative_to(PACKAGE).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        source = part_of(module)
        if source == "root":
            continue  # the package root only maps names to modules (lazily)
        ours = (m for m in runtime_imports(path) if m.startswith("mlflow_agentic"))
        for target in map(part_of, ours):
            if target not in (source, "root") and not target.startswith("root."):
                graph.setdefault(source, set()).add(target)
    return graph


def assert_acyclic(graph: dict[str, set[str]]) -> None:
    """Fail with the path that closes a cycle of ``graph``, if it has one (depth-first)."""
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_no_import_arrow_points_back_up():
    """The parts form a DAG (data <-> verify, engine <-> proposers, tracking <-> compare were
    cycles): a cycle is printed as the path that closes it."""
    graph = part_graph()
    assert_acyclic(graph)
    assert "compare" not in graph.get("tracking", set())
    assert "verify" not in graph.get("data", set())


PUBLIC_DESPITE_THE_UNDERSCORE = {"_exit"}
"""``os._exit``: documented public API (the sandbox harness ends with it, so no exit handler
of a candidate runs after its outputs are written)."""


def test_no_private_attribute_of_another_module_is_used():
    """``obj._name`` only on ``self``/``cls`` or on attributes the same module sets."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        own = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
               and isinstance(n.ctx, ast.Store)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr.startswith("_") and \
                    not n.attr.startswith("__") and n.attr not in own and \
                    n.attr not in PUBLIC_DESPITE_THE_UNDERSCORE and not (
                        isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
                offenders.append(f"{path.relative_to(PACKAGE)}:{n.lineno} .{n.attr}")
    assert offenders == []


LAYERS = [
    {"core"},
    {"trainers"},
    {"data", "llm", "sandbox"},
    {"verify"},
    {"engine"},
    {"proposers", "scoring", "testing"},
    {"tracking"},
    {"frontdoor"},
    {"compare", "bench"},
    {"distributed"},
    {"cli"},
    {"__main__"},
]
"""The parts from the bottom up: a part imports only parts of lower layers. ``core`` is the
vocabulary every part shares (records, protocol, settings, observer hooks, metrics, errors)."""


def test_the_package_root_holds_only_its_front_door():
    """Every module lives in the folder of its layer; the root only names the public API."""
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]


def test_every_import_arrow_points_down_the_layers():
    layer = {part: n for n, parts in enumerate(LAYERS) for part in parts}
    graph = part_graph()
    assert set(graph) | {p for targets in graph.values() for p in targets} <= set(layer), \
        "a part with no layer: add it to LAYERS"
    upward = [f"{source} -> {target}" for source, targets in sorted(graph.items())
              for target in sorted(targets) if layer[target] >= layer[source]]
    assert upward == []


ROOMS = {"engine": ["evaluate", "workers", "after", "search"],
         "tracking": ["store", "resume", "registry", "results", "live"]}
"""The parts of a part, from the bottom up: a room imports only rooms below it."""


def room_graph(part: str) -> dict[str, set[str]]:
    """Which rooms of ``part`` each room imports (runtime imports, function-level ones too)."""
    graph: dict[str, set[str]] = {}
    prefix = f"mlflow_agentic.{part}."
    for path in (PACKAGE / part).rglob("*.py"):
        inside = path.relative_to(PACKAGE / part).parts
        if len(inside) < 2:
            continue
        for module in runtime_imports(path):
            if module.startswith(prefix):
                room = module[len(prefix):].split(".")[0]
                if room != inside[0] and (PACKAGE / part / room).is_dir():
                    graph.setdefault(inside[0], set()).add(room)
    return graph


@pytest.mark.parametrize("part", sorted(ROOMS))
def test_every_arrow_between_a_parts_rooms_points_down(part):
    """One level deeper than the parts: engine's rooms (evaluate < workers < after < search)
    and tracking's (store < resume < registry < results < live); no cycle at any level."""
    order = {room: n for n, room in enumerate(ROOMS[part])}
    rooms = {p.name for p in (PACKAGE / part).iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert rooms == set(order), "a room with no place in ROOMS: add it"
    upward = [f"{part}/{source} -> {target}" for source, targets in
              sorted(room_graph(part).items()) for target in sorted(targets)
              if order[target] >= order[source]]
    assert upward == []


HOMES = {"mlflow": "tracking", "openai": "llm", "docker": "sandbox"}
"""The one folder that talks to each outside system (the MLflow plugins live in plugins/)."""


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_outside_system_is_talked_to_from_one_folder(path):
    """Every ``import mlflow`` (at any depth of a function) is under ``tracking/``, every
    ``import openai`` under ``llm/``, every ``import docker`` under ``sandbox/``."""
    folder = path.relative_to(PACKAGE).parts[0]
    strays = {lib for lib, home in HOMES.items() if folder != home} & imported_roots(path)
    assert strays == set()


def test_no_private_name_is_imported_from_another_module():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "mlflow_agentic") and any(a.name.startswith("_") and
                                              not a.name.startswith("__") for a in node.names):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}")
    assert offenders == []


def test_rooms_stay_small():
    """No class over 250 lines, no function over 60 (signature and docstring included): a
    room that grows past them is split by what it does."""
    big = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            limit = (250 if isinstance(node, ast.ClassDef) else
                     60 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
            if limit and node.end_lineno - node.lineno + 1 > limit:
                big.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} "
                           f"({node.end_lineno - node.lineno + 1} lines)")
    assert big == []


def test_no_module_imports_itself_back():
    """No cycle between files either (batch <-> code was one): the modules of the package,
    with their runtime imports (function-level ones included), form a DAG."""
    modules = {".".join(("mlflow_agentic", *p.relative_to(PACKAGE).with_suffix("").parts))
               .removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")}
    graph = {m: {i for i in runtime_imports(p) if i in modules and i != m
                 and modules[i].name != "__init__.py"}
             for m, p in modules.items() if p.name != "__init__.py"}
    assert_acyclic(graph)


TRACKING = PACKAGE / "tracking"
TRACKING_PARTS = sorted(p.name for p in TRACKING.iterdir() if (p / "__init__.py").exists())


def test_tracking_is_split_by_concern_each_part_with_a_public_face():
    assert sorted(p.name for p in TRACKING.glob("*.py")) == ["__init__.py"]
    assert TRACKING_PARTS == ["live", "registry", "results", "resume", "store"]
    for part in TRACKING_PARTS:
        face = ast.parse((TRACKING / part / "__init__.py").read_text())
        assert ast.get_docstring(face), f"tracking/{part} says in one line what it is"
        assert any(isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
            for n in face.body), f"tracking/{part} names its public face (__all__)"


def test_nothing_imports_a_module_of_another_tracking_part():
    """Outside ``tracking/<part>/`` the part is used through its face (``tracking.<part>``),
    never through one of its modules."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        home = rel[1] if rel[0] == "tracking" and len(rel) > 2 else None
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("mlflow_agentic.tracking."):
                parts = node.module.split(".")
                if len(parts) > 3 and parts[2] != home:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.module}")
    assert offenders == []


def layout_blocks() -> dict[str, str]:
    """docs/architecture.md's package layout: each folder's text (``core/``, and a part's
    parts, ``tracking/store/``), up to the next folder of the layout."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    layout = text[text.index("mlflow_agentic/\n"):]
    layout = layout[:layout.index("```")]
    blocks: dict[str, str] = {}
    parent, current = "", None
    for line in layout.splitlines()[1:]:
        if line and not line.startswith(" "):
            break  # the repository's other folders (plugins/, docs/, ...)
        header = re.match(r"^( {2}| {4})([a-z_]+)/ ", line)
        if header:
            name = header.group(2)
            parent = name if len(header.group(1)) == 2 else parent
            current = name if len(header.group(1)) == 2 else f"{parent}/{name}"
            blocks[current] = ""
        if current is not None:
            blocks[current] += line + "\n"
    return blocks


WRITTEN = {"candidate", "attempt"}
"""Files the package writes (code mode's candidate.py, each attempt's attempt.py), not modules."""


def test_the_architecture_page_names_every_folder_and_module():
    """The layout on docs/architecture.md is checked against the tree: every folder has its
    entry, every module is named in its folder's entry (or its parent's, for a folder without
    one), and no module named there is missing from the tree."""
    blocks = layout_blocks()
    problems = []
    folders = sorted({p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}
                     - {"."})
    for folder in folders:
        entry = folder if folder in blocks else folder.rsplit("/", 1)[0]
        if entry not in blocks:
            problems.append(f"{folder}/ has no entry")
            continue
        if entry != folder and f"{folder.rsplit('/', 1)[1]}/" not in blocks[entry]:
            problems.append(f"{folder}/ is not named in {entry}/'s entry")
        for module in sorted((PACKAGE / folder).glob("*.py")):
            if module.stem != "__init__" and not re.search(rf"\b{module.stem}\b",
                                                           blocks[entry]):
                problems.append(f"{folder}/{module.name} is not named")
    for entry, words in blocks.items():
        for named in re.findall(r"\b([a-z_]+)\.py\b", words):
            if named not in WRITTEN and not list((PACKAGE / entry).rglob(f"{named}.py")):
                problems.append(f"{entry}/ names {named}.py, which is not there")
    assert problems == []
