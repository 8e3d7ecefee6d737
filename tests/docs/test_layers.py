"""The import graph of the referee and the arena, read from their source (every import, at any
depth of a module): no module imports another that imports it back, and the layers only look
down: the rules engine imports no other part of the project (nor gRPC, a database or the clock),
the referee nothing of the arena (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("referee", "arena")
ENGINE = "referee.rules"
NOT_IN_THE_ENGINE = ("grpc", "google", "casino", "sqlalchemy", "alembic", "psycopg", "asyncio", "time", "rich")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str) -> set[str]:
    """Every module name ``path`` imports (absolute), including ``from X import submodule``."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def project_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(project module -> the project modules it imports, project module -> everything it imports)."""
    paths = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "migrations" not in p.parts}
    every = {name: imports_of(path, name) for name, path in paths.items()}
    return {name: {i for i in deps if i in paths and i != name} for name, deps in every.items()}, every


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph, _ = project_graph()
    assert len(graph) > 40, "the scan found the project's modules"
    assert cycles(graph) == []


def test_a_cycle_is_found() -> None:
    # the check itself: a made-up pair that import each other is reported
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_the_layers_only_look_down() -> None:
    graph, every = project_graph()
    upward = []
    for name, deps in graph.items():
        for dep in deps:
            if name.startswith("referee") and dep.startswith("arena"):
                upward.append(f"{name} -> {dep}")
            if name.startswith(ENGINE) and not dep.startswith(ENGINE):
                upward.append(f"{name} -> {dep}")
    assert upward == [], upward
    engine_imports = sorted({f"{name} -> {i}" for name, deps in every.items() if name.startswith(ENGINE)
                             for i in deps if i.split(".")[0] in NOT_IN_THE_ENGINE})
    assert engine_imports == [], engine_imports
