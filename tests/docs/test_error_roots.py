"""One error root per package (docs/architecture.md, "The referee"): every public exception the
engine, the referee or the arena defines descends from its package's root, so the commands map
errors to exit statuses in one place. Found by importing every module and looking at the
classes each defines."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import arena
import referee
from arena.errors import ArenaError
from referee.errors import RefereeError
from referee.rules.errors import RulesError

SKIPPED = ("__main__", ".migrations")  # running a command; Alembic's env.py runs migrations on import


def modules(package: ModuleType) -> list[ModuleType]:
    names = [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [importlib.import_module(n) for n in names if not any(s in n for s in SKIPPED)]


def public_errors(package: ModuleType) -> dict[str, type[BaseException]]:
    """Exception classes defined (not imported) in the package's modules, by dotted name, except
    private ones (a leading underscore: control flow inside one module)."""
    found = {}
    for module in modules(package):
        for name, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
                    and not name.startswith("_")):
                found[f"{module.__name__}.{name}"] = value
    return found


def root_of(dotted: str) -> type[BaseException]:
    if dotted.startswith("referee.rules."):
        return RulesError
    return RefereeError if dotted.startswith("referee.") else ArenaError


def test_every_error_descends_from_its_packages_root() -> None:
    errors = {**public_errors(referee), **public_errors(arena)}
    assert {"arena.config.ConfigError", "arena.store.store.StorageError", "referee.errors.UsageError",
            "referee.rules.errors.IllegalMoveError"} <= set(errors), sorted(errors)
    strays = sorted(name for name, cls in errors.items() if not issubclass(cls, root_of(name)))
    assert strays == [], f"errors outside their package's root: {strays}"

