"""The C++ starter bot (sample_bots/cpp), a bot package built from source: a copy of its folder
builds with ``make`` against the system's gRPC (no network, only its folder writable where
bubblewrap runs), and the bot it makes checks clean with 2, 3 and 4 players, serves health, stops
on SIGTERM and refuses to start without its address. Skipped only where the toolchain is missing
(scripts/setup-system.sh installs it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.sdk.native_kits import assert_is_a_package, build, copy_kit, files_of, play_the_built_kit

TOOLS = ("g++", "make", "pkg-config", "protoc", "grpc_cpp_plugin")


def _missing_toolchain() -> str | None:
    """Why the kit cannot be built here, or None."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not on PATH (Debian: g++ make pkg-config protobuf-compiler-grpc)"
    found = subprocess.run(["pkg-config", "--variable=includedir", "grpc++"], capture_output=True, text=True,
                           timeout=30, check=False)
    if found.returncode != 0 or not (Path(found.stdout.strip()) / "grpcpp" / "grpcpp.h").is_file():
        return "no grpc++ headers (Debian: libgrpc++-dev)"
    if subprocess.run(["pkg-config", "--exists", "protobuf"], timeout=30, check=False).returncode != 0:
        return "no protobuf C++ library (Debian: libprotobuf-dev)"
    return None


MISSING = _missing_toolchain()


@pytest.mark.skipif(MISSING is not None, reason=f"the C++ kit cannot be built here: {MISSING}")
@pytest.mark.slow  # CI builds and checks this kit as a package (tests/sandbox/test_packages.py); here its
# make, 2-4 players, health, SIGTERM and make clean, a second compile of some 20-40 s of CPU
def test_the_cpp_kit_builds_and_plays_clean(tmp_path: Path) -> None:
    folder = copy_kit("cpp", tmp_path)
    sources = files_of(folder)
    assert {"bot.cpp", "Makefile", "bot.toml", "README.md", "proto/casino/v1/bot.proto"} <= sources
    assert_is_a_package(folder)
    done = build(folder)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    play_the_built_kit(folder, "cpp-bot", sources)
