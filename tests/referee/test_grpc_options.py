"""gRPC's EventEngine is off in the referee's processes and the bots they start, unless the
environment already chose (referee/__init__.py; docs/benchmarks.md, "gRPC's EventEngine off")."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

SHOW = "import referee, grpc, os; print(os.environ.get('GRPC_EXPERIMENTS'))"


def experiments(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True, timeout=60, check=True,
                          cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
    return done.stdout.strip()


def test_the_referee_turns_the_event_engine_off_unless_told_otherwise() -> None:
    base = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    assert experiments(base) == "-event_engine_client,-event_engine_listener"
    assert experiments({**base, "GRPC_EXPERIMENTS": ""}) == "", "an operator's own choice stands"


def test_the_referee_turns_grpcs_fork_handlers_off_unless_told_otherwise() -> None:
    """uvloop starts programs with fork(); gRPC's fork handlers would log on stderr (referee/__init__.py)."""
    show = "import referee, os; print(os.environ.get('GRPC_ENABLE_FORK_SUPPORT'))"
    base = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    for env, expected in ((base, "0"), ({**base, "GRPC_ENABLE_FORK_SUPPORT": "1"}, "1")):
        done = subprocess.run([sys.executable, "-c", show], capture_output=True, text=True, timeout=60, check=True,
                              cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)})
        assert done.stdout.strip() == expected
