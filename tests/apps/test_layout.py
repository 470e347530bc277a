"""The layout of ``specdraft.apps``: three deliverables (the command line ``cli``, the HTTP ``service``
and the benchmark runner ``bench``) over shared modules (``model_pool``), with no import cycles.

Reads the source with ``ast`` (nothing is imported): every ``import`` and ``from ... import`` counts,
at module level or inside a function (lazy imports are edges too), relative ones resolved."""

import ast
from pathlib import Path

import specdraft.apps

APPS_ROOT = Path(specdraft.apps.__file__).parent
PACKAGE = "specdraft.apps"
DELIVERABLES = ("cli", "service", "bench")


def _module_name(path: Path) -> str:
    parts = path.relative_to(APPS_ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _sources() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(APPS_ROOT.rglob("*.py"))}


def _imported(node: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that one import statement in ``module`` names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        # `from package import submodule` names the submodule; `from module import name` the module
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    found = set()
    for name in names:
        while name and name not in known:  # `import a.b.c` of a module outside apps/ gives nothing
            name = name.rpartition(".")[0]
        if name.startswith(PACKAGE + ".") or name == PACKAGE:
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the ``specdraft.apps`` modules it imports anywhere in its source."""
    sources = _sources()
    known = set(sources)
    graph = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _imported(node, module, path.name == "__init__.py", known)
        graph[module] = edges - {module}
    return graph


def deliverable(module: str) -> str | None:
    """``cli``, ``service`` or ``bench`` for a module of a deliverable; None for a shared one."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in DELIVERABLES else None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == 1:
                return path[path.index(other) :] + [other]
            if other not in state and (cycle := visit(other)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


def crossings(graph: dict[str, set[str]], source: str | None, targets: tuple[str | None, ...]) -> list[str]:
    return sorted(
        f"{a} -> {b}"
        for a, edges in graph.items()
        if deliverable(a) == source
        for b in edges
        if deliverable(b) in targets and deliverable(b) != source
    )


def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert {"specdraft.apps.cli", "specdraft.apps.service", "specdraft.apps.bench", "specdraft.apps.model_pool"} <= set(
        graph
    )
    assert "specdraft.apps.bench.suite" in graph["specdraft.apps.bench.rag_suites"]  # from .suite import ...
    assert "specdraft.apps.bench.rag_suites" in graph["specdraft.apps.bench.suites"]  # inside build()
    assert "specdraft.apps.service" in graph["specdraft.apps.cli.entry_point"]  # inside _serve()
    assert "specdraft.apps.cli.entry_point" in graph["specdraft.apps.cli"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_service_imports_neither_the_command_line_nor_the_benchmark():
    assert crossings(import_graph(), "service", ("cli", "bench")) == []


def test_the_benchmark_imports_neither_the_command_line_nor_the_service():
    assert crossings(import_graph(), "bench", ("cli", "service")) == []


def test_the_laptop_endpoint_is_the_service():
    """``specdraft edge serve`` starts the service serving an edge model (``service.edge_model``), not a
    second app: the command line builds it through the service, and ``apps`` holds no other deliverable
    (the service imports neither the command line nor the benchmark: above)."""
    graph = import_graph()
    assert {"specdraft.apps.service", "specdraft.apps.service.edge_model"} <= graph["specdraft.apps.cli.edge_serve"]
    assert sorted(p.name for p in APPS_ROOT.iterdir() if (p / "__init__.py").exists()) == sorted(DELIVERABLES)


def test_shared_modules_import_no_deliverable():
    assert crossings(import_graph(), None, DELIVERABLES) == []


def test_no_import_cycle_among_the_modules_of_apps():
    assert find_cycle(import_graph()) is None
