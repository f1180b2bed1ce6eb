"""The package's shape, as ARCHITECTURE.md states it: stages as subpackages on floors, each importing
only its own floor and those below (FLOORS), reading results never importing measuring,
infrastructure or the command line, no import cycles, no import hidden in a function to dodge one, no
module over 400 lines nor function over 60 outside the report's layout, every module named in the docs."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from orchestrator.config.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "orchestrator"
READING = ("orchestrator.results", "orchestrator.report")
# what reading results may import: itself, the run's description (config) and the shared leaves
READING_MAY_IMPORT = (*READING, "orchestrator.config", "orchestrator.core", "orchestrator.errors", "orchestrator.lazy")
NEVER_FOR_READING = ("orchestrator.cli", "orchestrator.measure", "orchestrator.infra", "orchestrator.targets",
                     "orchestrator.drivers")
MAX_LINES = 400
# A function's body, docstring included (a command's signature is its options, counted apart); the report's
# layout, one section written top to bottom, is exempt
MAX_BODY_LINES = 60
LAYOUT = "orchestrator.report"
# The floors, ground first: a module imports from its own floor and those below it, never above
FLOORS = (("orchestrator", "orchestrator.errors", "orchestrator.lazy", "orchestrator.core"),
          ("orchestrator.config",), ("orchestrator.results",), ("orchestrator.infra",), ("orchestrator.drivers",),
          ("orchestrator.targets",), ("orchestrator.measure",), ("orchestrator.report",),
          ("orchestrator.cli", "orchestrator.__main__"))


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(path: Path, top_level: bool) -> list[tuple[str, int]]:
    """(module imported, line) for each import of the package's own modules, at module level or
    inside functions and classes (top_level False)."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, nested: bool):
        for child in ast.iter_child_nodes(node):
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
            if isinstance(child, ast.ImportFrom) and child.level == 0 and (child.module or "").startswith("orchestrator"):
                if nested == (not top_level):
                    for alias in child.names:
                        sub = f"{child.module}.{alias.name}"
                        found.append((sub if sub in known else child.module, child.lineno))
            elif isinstance(child, ast.Import):
                if nested == (not top_level):
                    found.extend((a.name, child.lineno) for a in child.names if a.name.startswith("orchestrator"))
            visit(child, inner)

    known = modules()
    visit(tree, False)
    return found


def test_no_module_imports_the_package_inside_a_function():
    hidden = [f"{path.relative_to(ROOT)}:{line} imports {name}"
              for path in modules().values() for name, line in imports(path, top_level=False)]
    assert not hidden, "imports hidden in functions (move them to the top; a cycle means a seam is wrong):\n" + \
        "\n".join(hidden)


def test_no_import_cycles():
    known = modules()
    graph = {m: {name for name, _ in imports(p, top_level=True) if name in known and name != m}
             for m, p in known.items()}
    state, stack, cycles = {}, [], []

    def walk(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                walk(n)
        stack.pop()
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            walk(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def floor(module: str) -> int:
    """The floor of a module: that of the longest prefix FLOORS names."""
    best = max(((len(p), i) for i, names in enumerate(FLOORS) for p in names
                if module == p or module.startswith(p + ".")), default=None)
    assert best is not None, f"{module} is on no floor: add its package to FLOORS"
    return best[1]


def test_every_package_imports_only_its_floor_and_those_below():
    up = [f"{path.relative_to(ROOT)}:{line} imports {name} (floor {floor(name)} above {floor(m)})"
          for m, path in modules().items() for name, line in imports(path, top_level=True)
          if floor(name) > floor(m)]
    assert not up, "imports that point up a floor (FLOORS; move the shared piece down):\n" + "\n".join(up)


def test_reading_results_imports_only_results_report_and_config():
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for m, path in modules().items() if m.startswith(READING)
             for name, line in imports(path, top_level=True)
             if name != "orchestrator" and not name.startswith(READING_MAY_IMPORT)]
    assert not wrong, "reading results reaches into measuring, infrastructure or the command line:\n" + \
        "\n".join(wrong)


def test_importing_the_report_loads_nothing_that_measures():
    reading = [m for m in modules() if m.startswith(READING)]
    code = (f"import importlib, sys; [importlib.import_module(m) for m in {reading!r}];"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('orchestrator'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "orchestrator.report.run_report" in loaded.stdout.split()
    wrong = [m for m in loaded.stdout.split() if m.startswith(NEVER_FOR_READING)]
    assert not wrong, f"importing the report and the results API loads {wrong}"


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_function_outside_the_report_s_layout_is_over_60_lines():
    long = {}
    for name, path in modules().items():
        if name.startswith(LAYOUT):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (n := node.end_lineno - node.body[0].lineno + 1) > MAX_BODY_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.name}"] = n
    assert not long, f"functions over {MAX_BODY_LINES} lines: {long}"


def test_every_module_is_named_in_architecture_md():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    missing = [str(p.relative_to(PACKAGE)) for m, p in modules().items()
               if p.name != "__init__.py" and f"`{p.relative_to(PACKAGE)}`" not in text]
    assert not missing, f"modules ARCHITECTURE.md does not name: {missing}"


def test_the_readme_is_read_in_ten_minutes():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_nothing_outside_the_kinds_branches_on_a_kind_s_name():
    """A kind is asked (its attributes and methods: config/kinds/base.py), never named: a comparison of
    something holding a kind with a kind's name, outside config/kinds/, is a branch a new kind would miss."""
    names = set(KINDS)

    def named(node) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(named(e) for e in node.elts)

    found = []
    for m, path in modules().items():
        if m.startswith("orchestrator.config.kinds"):
            continue
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(named(s) for s in sides) and any("kind" in (ast.get_source_segment(source, s) or "")
                                                       for s in sides if not named(s)):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(source, node)}")
    assert not found, "branches on a kind's name (ask the kind instead):\n" + "\n".join(found)


def test_the_tests_are_laid_out_as_the_package_is():
    """A fast test lives in the folder of the package it tests (or house/, the package's shape, lint and
    installer); a test that starts processes lives in processes/, which conftest.py marks slow: the folder
    says the tier, and no test marks itself."""
    tests = ROOT / "tests"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and p.name not in ("fixtures", "__pycache__")}
    assert folders - packages <= {"house", "processes"}, f"folders that are no package's: {folders - packages}"
    assert not list(tests.glob("test_*.py")), "a test outside the folders"
    def marks_itself(path: Path) -> bool:
        nodes = list(ast.walk(ast.parse(path.read_text())))
        return (any("mark.slow" in ast.unparse(d) for n in nodes for d in getattr(n, "decorator_list", []))
                or any(isinstance(n, ast.Name) and n.id == "pytestmark" for n in nodes))
    marked = [str(p.relative_to(tests)) for p in tests.rglob("test_*.py") if marks_itself(p)]
    assert not marked, f"tests that mark themselves slow (the folder says it): {marked}"
    # what two test modules share is in conftest.py or a helper module beside it, never one test module's
    borrowing = [str(p.relative_to(tests)) for p in tests.rglob("*.py")
                 if any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("test_")
                        for n in ast.walk(ast.parse(p.read_text())))]
    assert not borrowing, f"test modules that import another test module: {borrowing}"
