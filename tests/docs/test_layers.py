"""The import graph of the referee and the arena, read from their source (every import, at any
depth of a module): no module imports another that imports it back, and the layers only look
down: the rules engine imports no other part of the project (nor gRPC, a database or the clock),
the referee nothing of the arena (docs/architecture.md). The Python SDK (sample_bots/python) uses
the project only through the engine's public names, the wire module and the generated protocol
code, and the wire module only the engine and the protocol code."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import referee.rules
from tests.conftest import ROOT

PACKAGES = ("referee", "arena")
ENGINE = "referee.rules"
NOT_IN_THE_ENGINE = ("grpc", "google", "casino", "sqlalchemy", "alembic", "psycopg", "asyncio", "time", "rich")
SDK = ROOT / "sample_bots" / "python"
PROJECT = ("referee", "arena", "casino", "tests", "bench", "scripts")  # the repository's top-level packages
# what the SDK package may import besides the standard library: its declared dependencies
# (royal-casino-arena, grpcio, grpcio-health-checking, grpcio-reflection, protobuf)
SDK_DEPENDENCIES = ("referee", "casino", "grpc", "grpc_health", "grpc_reflection", "google")
# the research environments (casino_bot.envs, the SDK's `research` extra) may also import the extra's
# packages; the rest of the SDK may not, so a bot without the extra installs and runs as before
SDK_RESEARCH_DEPENDENCIES = ("numpy", "gymnasium", "pettingzoo", "pyspiel", "open_spiel")


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


# Each package's layer, lowest first (docs/architecture.md, "Layout"): a module imports only modules
# of its own layer or below. The rules engine is the bottom; the arena sits on the whole referee.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("referee.rules",),
    ("referee.errors", "referee.clock", "referee.names", "referee.players", "referee.perft", "referee.metrics",
     "referee.logs", "referee.loop"),
    ("referee.wire",),
    ("referee.bots", "referee.sandbox"),
    ("referee.match", "referee.packages"),
    ("referee.service", "referee.cli"),
    ("arena.errors", "arena.config", "arena.cores", "arena.metrics"),
    ("arena.rating", "arena.schedule"),
    ("arena.store",),
    ("arena.play", "arena.notify"),
    ("arena.cli", "arena.web"),
)


def layer_of(module: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS (and to docs/architecture.md)")


def package_of(module: str) -> str:
    """The unit the layers name: ``referee.match.game`` -> ``referee.match``, ``arena.config`` -> itself."""
    for prefixes in LAYERS:
        for p in prefixes:
            if module == p or module.startswith(p + "."):
                return p
    return module


def package_graph() -> dict[str, set[str]]:
    """Each package (as LAYERS names them) -> the other packages its modules import."""
    graph, _ = project_graph()
    packages: dict[str, set[str]] = {}
    for name, deps in graph.items():
        if name in PACKAGES:
            continue  # the bare top-level packages (empty __init__ files)
        packages.setdefault(package_of(name), set()).update(package_of(d) for d in deps if package_of(d) != package_of(name))
    return packages


def test_every_package_imports_only_its_own_layer_or_below() -> None:
    graph = package_graph()
    assert {"referee.rules", "referee.wire", "referee.bots", "referee.match", "arena.store", "arena.play", "arena.cli"} <= set(graph)
    upward = sorted(f"{p} -> {d}" for p, deps in graph.items() for d in deps if layer_of(d) > layer_of(p))
    assert upward == [], upward


def test_no_cycles_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_the_layer_check_sees_an_upward_import() -> None:
    # the check itself: a made-up engine module importing the arena's store is upward
    assert layer_of("arena.store.store") > layer_of("referee.rules.state")
    assert package_of("referee.match.game") == "referee.match"


def test_the_architecture_layout_table_names_every_package_at_its_layer() -> None:
    # docs/architecture.md "Layout": one row per package folder (or group of top-level modules);
    # every package folder on disk is in the table, at the layer LAYERS gives it
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Layout"):doc.index("### Where what comes next goes")]
    rows: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            first = cells[1].split(",")[0].strip().strip("`").removesuffix("/").removesuffix(".py")
            rows[first.replace("/", ".")] = int(cells[0])
    for pkg in PACKAGES:
        for folder in sorted((ROOT / pkg).iterdir()):
            if (folder / "__init__.py").exists():
                name = f"{pkg}.{folder.name}"
                assert name in rows, f"{name} is missing from docs/architecture.md's Layout table"
    for name, rank in rows.items():
        assert layer_of(name) == rank, f"{name}: layer {rank} in the doc, {layer_of(name)} in LAYERS"
    assert "referee.sandbox" in rows and "arena.play" in rows


def sdk_imports_outside_the_public_surface(source: str) -> list[str]:
    """The imports of project code in ``source`` other than ``referee.rules``' ``__all__`` names,
    ``referee.wire.convert``'s public names and the generated ``casino.v1`` modules."""
    public = set(referee.rules.__all__)
    wrong = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            wrong += [a.name for a in node.names if a.name.split(".")[0] in PROJECT
                      and a.name not in ("referee.rules", "referee.wire.convert") and not a.name.startswith("casino.v1")]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in PROJECT:
            module = node.module or ""
            wrong += [f"{module}.{a.name}" for a in node.names if not public_name(module, a.name, public)]
    return wrong


def public_name(module: str, name: str, public: set[str]) -> bool:
    """Whether a bot may import ``name`` from the project module ``module``."""
    if module == "referee.rules":
        return name in public
    if module == "referee.wire.convert":
        return not name.startswith("_")
    return module == "casino.v1" or module.startswith("casino.v1.")


def test_the_sdk_uses_the_engine_only_through_its_public_names() -> None:
    kits = [ROOT / "sample_bots" / name for name in ("random", "greedy", "lookahead")]  # the Python starter kits
    paths = sorted([*SDK.rglob("*.py"), *(p for kit in kits for p in kit.rglob("*.py"))])
    assert SDK / "casino_bot" / "view.py" in paths and ROOT / "sample_bots" / "lookahead" / "lookahead_bot.py" in paths
    wrong = {str(p.relative_to(ROOT)): w for p in paths if (w := sdk_imports_outside_the_public_surface(
        p.read_text(encoding="utf-8")))}
    assert wrong == {}, wrong
    package = {p: imports_of(p, ".".join(p.relative_to(SDK).with_suffix("").parts).removesuffix(".__init__"))
               for p in (SDK / "casino_bot").rglob("*.py")}
    assert SDK / "casino_bot" / "envs" / "openspiel.py" in package
    undeclared = sorted({f"{p.relative_to(SDK)}: {i}" for p, deps in package.items() for i in deps
                         if i.split(".")[0] not in (*sys.stdlib_module_names, *SDK_DEPENDENCIES, "casino_bot",
                                                    *(SDK_RESEARCH_DEPENDENCIES if "envs" in p.parts else ()))})
    assert undeclared == [], undeclared
    core_uses_envs = sorted(f"{p.name}: {i}" for p, deps in package.items() if "envs" not in p.parts
                            for i in deps if i.startswith("casino_bot.envs"))
    assert core_uses_envs == [], core_uses_envs


def test_the_public_surface_check_sees_internals() -> None:
    # the check itself: a submodule, a private name and a name outside __all__ are reported
    source = ("from referee.rules.state import deal_new\nfrom referee.wire.convert import _varint\n"
              "from referee.rules import successor, resample\nimport referee.match\nfrom casino.v1 import bot_pb2\n")
    assert sdk_imports_outside_the_public_surface(source) == [
        "referee.rules.state.deal_new", "referee.wire.convert._varint", "referee.rules.successor", "referee.match"]


def test_the_wire_module_imports_only_the_engine_and_the_protocol() -> None:
    spec = importlib.util.find_spec("referee.wire.convert")
    assert spec is not None and spec.origin is not None
    outside = sorted(i for i in imports_of(Path(spec.origin), "referee.wire.convert")
                     if i.split(".")[0] not in (*sys.stdlib_module_names, "casino")
                     and i != "referee.rules" and not i.startswith("referee.rules."))
    assert outside == [], outside
