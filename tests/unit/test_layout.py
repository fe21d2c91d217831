"""The layout holds: no import cycles, no package too flat, no module too long to read.

The rules (docs/architecture.md, "Where to find it"): a module over about 400 lines is
split unless it is one regular table (one branch per event); a package of more than
about 20 modules groups them into subpackages; the import graph, between modules and
between the subpackages of a package, has no cycle. Imports under ``TYPE_CHECKING`` do
not count (they are not executed).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "contreact_events": ROOT / "libs/events/contreact_events",
    "contreact_bus": ROOT / "libs/bus/contreact_bus",
    "contreact_analysis": ROOT / "libs/analysis/contreact_analysis",
    "contreact_orchestrator": ROOT / "services/orchestrator/contreact_orchestrator",
    "contreact_llm": ROOT / "services/llm-worker/contreact_llm",
    "contreact_memory": ROOT / "services/memory/contreact_memory",
    "contreact_embedder": ROOT / "services/embedder/contreact_embedder",
    "contreact_ui": ROOT / "services/ui/contreact_ui",
    "contreact_assessor": ROOT / "services/assessor/contreact_assessor",
    "contreact_cli": ROOT / "cli/contreact_cli",
    "bench": ROOT / "bench",
}
MAX_LINES = 440  # "about 400"
MAX_MODULES = 20
REGULAR_TABLES = {
    # One branch per event type: long, but read one branch at a time (its engine, the
    # task ids and decide are modules of their own).
    "contreact_events.core.fold",
}


def modules(package: str, path: Path) -> dict[str, Path]:
    found = {}
    for file in sorted(path.rglob("*.py")):
        parts = file.relative_to(path).with_suffix("").parts
        name = ".".join((package, *parts)).removesuffix(".__init__")
        found[name] = file
    return found


ALL = {name: file for pkg, path in PACKAGES.items() for name, file in modules(pkg, path).items()}


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                yield from _runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If | ast.Try | ast.With):
            yield from _runtime_imports(node)


def imports_of(name: str, file: Path) -> set[str]:
    """The first-party modules ``name`` imports when it is loaded."""
    targets: set[str] = set()
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_imports(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            bases = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in bases:
            if target in ALL and target != name:
                targets.add(target)
    return targets


GRAPH = {name: imports_of(name, file) for name, file in ALL.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_module_import_graph_has_no_cycle() -> None:
    # A package's __init__ importing its own submodules is how a package exports; the
    # edge from a submodule to its package's __init__ is the package being loaded first.
    graph = {
        name: {t for t in targets if not name.startswith(f"{t}.")}
        for name, targets in GRAPH.items()
    }
    assert find_cycle(graph) is None


def _subpackage(name: str, root: str) -> str | None:
    parts = name.split(".")
    if not name.startswith(f"{root}.") or len(parts) < 3:
        return None
    candidate = ".".join(parts[:2])
    return candidate if any(n.startswith(f"{candidate}.") for n in ALL) else None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_subpackages_do_not_import_each_other_in_a_cycle(package: str) -> None:
    graph: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        source = _subpackage(name, package)
        if source is None:
            continue
        for target in targets:
            dest = _subpackage(target, package)
            if dest is not None and dest != source:
                graph.setdefault(source, set()).add(dest)
    assert find_cycle(graph) is None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_package_is_too_flat(package: str) -> None:
    by_folder: dict[Path, int] = {}
    for name, file in ALL.items():
        if name.startswith(package) and file.name not in {"__init__.py", "__main__.py"}:
            by_folder[file.parent] = by_folder.get(file.parent, 0) + 1
    crowded = {str(p.relative_to(ROOT)): n for p, n in by_folder.items() if n > MAX_MODULES}
    assert not crowded, f"group these into subpackages: {crowded}"


def test_no_module_is_too_long_to_read() -> None:
    long = {
        name: n
        for name, file in ALL.items()
        if (n := len(file.read_text().splitlines())) > MAX_LINES and name not in REGULAR_TABLES
    }
    assert not long, f"split these by what they do: {long}"


def test_the_checks_see_the_packages() -> None:
    # Guards the guards: a wrong root would make every check above pass on nothing.
    assert len(ALL) > 100
    assert "contreact_events.core.state" in GRAPH["contreact_events.core.fold"]
    assert "contreact_events.core.folding" in GRAPH["contreact_events.core.fold"]
    assert "bench._support" in GRAPH["bench.fold_speed"]
    assert any(name.startswith("contreact_assessor.") for name in ALL)
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def fresh_process_prints(probe: str) -> str:
    """What ``probe`` prints in a new interpreter (nothing imported before it)."""
    return subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "start",
    [
        "from contreact_cli.main import build_parser; build_parser()",
        "import contreact_ui.main",
    ],
    ids=["every CLI command", "the dashboard"],
)
def test_the_cli_and_the_dashboard_start_without_the_analysis_libraries(start: str) -> None:
    """Every `contreact` command paid for pandas and scipy (about 2.7 s of a 4.6 s start
    on a loaded machine) once the Inspect export was imported at the top of a command
    module; the dashboard paid 1.7 of its 2.9 CPU-s at start for pandas, scipy,
    statsmodels and matplotlib, in every stack, for pages most stacks never show. They
    are imported where they are used."""
    probe = (
        f"import sys; {start}; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'scipy', 'pandas', 'statsmodels', 'inspect_ai', 'sklearn', 'matplotlib', "
        "'pyarrow'})))"
    )
    loaded = fresh_process_prints(probe).strip()
    assert loaded == "", f"{start!r} loads {loaded}: import it where it is used"


def test_an_llm_worker_imports_a_backends_client_at_its_first_task() -> None:
    """``openai`` alone cost every LLM worker's start 0.3-0.5 CPU-s, in every stack,
    most of which never call it: each backend is built at its first task."""
    probe = (
        "import sys; from contreact_llm.handler import build_backends; "
        "from contreact_llm.settings import LLMWorkerSettings; "
        "backends = build_backends(LLMWorkerSettings()); "
        "clients = lambda: sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'ollama'}); "
        "print(clients()); backends['openai']; print(clients()); "
        "print(sorted(backends), [b.name for b in backends.built()])"
    )
    lines = fresh_process_prints(probe).splitlines()
    assert lines == [
        "[]",
        "['openai']",
        "['embedded', 'ollama', 'openai', 'scripted'] ['openai']",
    ]
