"""The Node.js, C++ and Go sample bots carry their own copy of the protocol (a sandboxed bot reads only
its own folder, and a bot package builds from its own files): each copy is the repository's
proto/casino/v1 files, byte for byte."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

KITS = ("node", "cpp", "go")


@pytest.mark.parametrize("kit", KITS)
def test_the_sample_bots_protos_are_the_repositorys(kit: str) -> None:
    protos = ROOT / "sample_bots" / kit / "proto" / "casino" / "v1"
    copies = sorted(p.name for p in protos.glob("*.proto"))
    assert copies == ["bot.proto", "game.proto"], "bot.proto and what it imports"
    for name in copies:
        assert (protos / name).read_bytes() == (ROOT / "proto" / "casino" / "v1" / name).read_bytes(), (
            f"sample_bots/{kit}/proto/casino/v1/{name} differs from proto/casino/v1/{name}: copy it again")
