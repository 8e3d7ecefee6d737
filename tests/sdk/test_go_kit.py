"""The Go starter bot (sample_bots/go), a bot package built from source offline: a copy of its
folder builds with ``make`` from Debian's grpc-go and protobuf sources (GOPATH mode, no module
proxy, no network, only its folder writable where bubblewrap runs), and the bot it makes checks
clean with 2, 3 and 4 players, serves health, stops on SIGTERM and refuses to start without its
address. Skipped only where the toolchain is missing (scripts/setup-system.sh installs it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.sdk.native_kits import assert_is_a_package, build, copy_kit, files_of, play_the_built_kit

GOCODE = Path("/usr/share/gocode/src")  # where Debian's Go source packages are (the kit's GOPATH)
TOOLS = ("go", "make", "protoc", "protoc-gen-go", "protoc-gen-go-grpc")


def _missing_toolchain() -> str | None:
    """Why the kit cannot be built here, or None."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not on PATH (Debian: golang-go make protoc-gen-go protoc-gen-go-grpc)"
    if not (GOCODE / "google.golang.org" / "grpc").is_dir() or not (GOCODE / "google.golang.org" / "protobuf").is_dir():
        return f"no grpc-go or protobuf sources in {GOCODE} (Debian: golang-google-grpc-dev golang-google-protobuf-dev)"
    if not (GOCODE / "github.com" / "golang" / "protobuf" / "proto" / "registry.go").is_file():
        return "github.com/golang/protobuf is older than 1.4 (Debian: golang-github-golang-protobuf-1-5-dev)"
    return None


MISSING = _missing_toolchain()


@pytest.mark.skipif(MISSING is not None, reason=f"the Go kit cannot be built here: {MISSING}")
@pytest.mark.slow  # CI builds and checks this kit as a package (tests/sandbox/test_packages.py); here its
# make, 2-4 players, health, SIGTERM and make clean, a second compile of some 20-40 s of CPU
def test_the_go_kit_builds_and_plays_clean(tmp_path: Path) -> None:
    folder = copy_kit("go", tmp_path)
    sources = files_of(folder)
    assert {"bot.go", "Makefile", "bot.toml", "README.md", "proto/casino/v1/bot.proto"} <= sources
    assert_is_a_package(folder)
    done = build(folder)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    play_the_built_kit(folder, "go-bot", sources)
