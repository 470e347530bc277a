"""No import cycles in the package, counting lazy (function-level) and ``TYPE_CHECKING`` imports.

Every module under the package's folders is parsed with ``ast`` (nothing is imported); each
``import specdraft...`` / ``from ... import ...`` anywhere in it (module level, inside a function, under
``if TYPE_CHECKING:``) is an edge to the module it names, relative imports resolved. ``from P import
name`` is an edge to the submodule ``P.name`` where that is a module, else to ``P`` itself: an import of
a package counts as an import of its ``__init__``. The graph must have no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> package, as pyproject's [tool.setuptools.package-dir] maps them
FOLDERS = {
    "core": "specdraft",
    "apps": "specdraft.apps",
    "copydraft": "specdraft.copydraft",
    "retrieval": "specdraft.retrieval",
    "edge": "specdraft.edge",
}


def modules() -> dict[str, Path]:
    """Module name -> file, for every module of the package (a package's name -> its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules ``name`` (the module in ``path``) imports, anywhere in its code."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    targets: set[str] = set()

    def nearest(module: str) -> str | None:
        while module and module not in known:
            module = module.rpartition(".")[0]
        return module or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "specdraft" or alias.name.startswith("specdraft."):
                    targets.add(nearest(alias.name))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not (module == "specdraft" or module.startswith("specdraft.")):
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                targets.add(sub if sub in known else nearest(module))
    targets.discard(None)
    targets.discard(name)
    return targets


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) per strongly connected component with several modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def connect(start: str) -> None:  # Tarjan's algorithm, iteratively (deep graphs)
        nonlocal counter
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return [_a_cycle(edges, set(component)) for component in components]


def _a_cycle(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & component):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return sorted(component)  # pragma: no cover - a component always holds a cycle


def test_the_graph_sees_every_kind_of_import():
    edges = graph()
    assert "specdraft.model_config" in edges["specdraft.backends"]  # module level, relative
    assert "specdraft.backends.transformers.model" in edges["specdraft.backends"]  # inside a function
    assert "specdraft.prefix_cache" in edges["specdraft.target"]  # under TYPE_CHECKING
    assert "specdraft" in edges["specdraft.apps.model_pool"]  # a package: its __init__


def test_cycles_are_found_and_named():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles (lazy and TYPE_CHECKING imports count):\n" + "\n".join(
        " -> ".join(c) for c in found
    )
