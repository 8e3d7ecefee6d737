"""The public contract: buf lint passes and the committed generated code is fresh."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _buf() -> str:
    found = Path(sys.executable).parent / "buf"
    path = str(found) if found.exists() else shutil.which("buf")
    if path is None:
        pytest.skip("buf is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    return path


def test_buf_lint_passes() -> None:
    """`buf lint` (STANDARD rules) finds nothing in proto/."""
    done = subprocess.run([_buf(), "lint"], cwd=ROOT / "proto", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    """Regenerating from proto/ with the pinned generators gives exactly the committed casino/v1/."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, timeout=120)
    fresh = tmp_path / "casino" / "v1"
    committed = ROOT / "casino" / "v1"
    names = sorted(p.name for p in fresh.iterdir() if p.is_file())
    assert names == sorted(p.name for p in committed.iterdir() if p.is_file() and p.suffix in (".py", ".pyi"))
    match, mismatch, errors = filecmp.cmpfiles(fresh, committed, names, shallow=False)
    assert not mismatch and not errors, f"stale generated files {mismatch + errors}: run python scripts/gen_proto.py"


def test_generated_code_imports() -> None:
    """The generated modules import with the installed runtime."""
    from casino.v1 import bot_pb2, bot_pb2_grpc, game_pb2, referee_pb2, referee_pb2_grpc

    assert bot_pb2.DESCRIPTOR.package == "casino.v1"
    assert hasattr(bot_pb2_grpc, "BotServiceStub") and hasattr(referee_pb2_grpc, "RefereeServiceServicer")
    assert game_pb2.MoveKind.Value("MOVE_KIND_CAPTURE") == 2 and referee_pb2.FAILURE_POLICY_FORFEIT == 1
