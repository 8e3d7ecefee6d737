"""The Node.js sample bot carries its own copy of the protocol (a sandboxed bot reads only its own
folder): the copy is the repository's proto/casino/v1 files, byte for byte."""

from __future__ import annotations

from tests.conftest import ROOT

NODE_PROTOS = ROOT / "sample_bots" / "node" / "proto" / "casino" / "v1"


def test_the_node_bots_protos_are_the_repositorys() -> None:
    copies = sorted(p.name for p in NODE_PROTOS.glob("*.proto"))
    assert copies == ["bot.proto", "game.proto"], "bot.proto and what it imports"
    for name in copies:
        assert (NODE_PROTOS / name).read_bytes() == (ROOT / "proto" / "casino" / "v1" / name).read_bytes(), (
            f"sample_bots/node/proto/casino/v1/{name} differs from proto/casino/v1/{name}: copy it again")
