"""The documents agree with the code: docs/rules.md states every rule 1-18 and links only to tests
that exist; docs/protocol.md documents every enum value and message field of the .proto files, in
the words of their comments where both describe one, the referee's limits as its code sets them,
and Failure.received as real records store it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from casino.v1 import bot_pb2, game_pb2, referee_pb2
from referee.bots.launcher import STOP_WAIT_S
from referee.bots.slot import STARTUP_ATTEMPTS
from referee.clock import TimeControl
from referee.wire.connection import CHANNEL_OPTIONS, MAX_MESSAGE_BYTES, MAX_QUEUED, RECEIVED_PREVIEW, preview
from tests.conftest import ROOMY_TIME, builtin_bot_command, python_bot_command
from tests.support import run_referee

ROOT = Path(__file__).resolve().parents[2]
RULES_DOC = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")


def test_rules_doc_states_every_rule() -> None:
    """Each of the rules file's 18 rules has a numbered paragraph in docs/rules.md."""
    numbers = {int(n) for n in re.findall(r"^\*\*(\d+)\. ", RULES_DOC, flags=re.M)}
    assert numbers == set(range(1, 19))


def test_rules_doc_links_only_existing_tests() -> None:
    """Every ``scenarios::ID`` and ``deal::NAME`` reference names a real case or test."""
    scenarios = (ROOT / "tests" / "rules" / "test_scenarios.py").read_text(encoding="utf-8")
    deal = (ROOT / "tests" / "rules" / "test_deal_and_scoring.py").read_text(encoding="utf-8")
    missing = []
    for name, wildcard in re.findall(r"scenarios::([a-z0-9_-]+)([*…]?)", RULES_DOC):
        if wildcard or name.endswith("-"):
            continue  # a family of cases such as r08-*
        if f'"{name}"' not in scenarios and f"def {name}(" not in scenarios:
            missing.append(f"scenarios::{name}")
    for name in re.findall(r"deal::([a-z0-9_]+)", RULES_DOC):
        if f"def {name}(" not in deal:
            missing.append(f"deal::{name}")
    assert not missing, f"docs/rules.md refers to tests that do not exist: {missing}"


def test_every_rule_has_a_named_test() -> None:
    """Each rule number 2-18 names at least one test (rule 1 is covered through rules 6 and 8)."""
    scenarios = (ROOT / "tests" / "rules" / "test_scenarios.py").read_text(encoding="utf-8")
    deal = (ROOT / "tests" / "rules" / "test_deal_and_scoring.py").read_text(encoding="utf-8")
    for n in range(2, 19):
        tag = f"r{n:02d}"
        assert f'"{tag}-' in scenarios or f"def test_{tag}_" in deal, f"no test names rule {n}"


# --- docs/protocol.md against the code and the .proto files ---------------------------------------
# What can drift mechanically: enum values and message fields missing from the document, meanings
# that differ between a .proto comment and its table row, the referee's limits, and the stored form
# of Failure.received (checked against real records).

PROTOCOL_DOC = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
PROTO_DIR = ROOT / "proto" / "casino" / "v1"
PROTO_MODULES = (game_pb2, bot_pb2, referee_pb2)


def _flat(text: str) -> str:
    """``text`` with every run of whitespace made one space (the document wraps its lines)."""
    return " ".join(text.split())


def _meaning(text: str) -> str:
    """A meaning as the .proto comments and the document's tables can both state it: no markdown
    code marks, one space between words, no final period, first letter in lower case."""
    text = _flat(text.replace("`", "").replace("–", "-")).removesuffix(".")
    return text[:1].lower() + text[1:]


def _table(heading: str) -> list[list[str]]:
    """The body rows (lists of cells) of the first table after ``heading`` in protocol.md."""
    rest = PROTOCOL_DOC[PROTOCOL_DOC.index(heading):]
    table = re.search(r"\n(\|.*\n)+", rest)
    assert table, f"no table after {heading!r}"
    lines = table.group(0).strip().splitlines()[2:]  # after the header and its --- line
    return [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]


def _doc_rows(heading: str) -> dict[str, list[str]]:
    """The rows of the table after ``heading``, keyed by their first cell's code name
    (``FAILURE_KIND_TIMEOUT`` of ``| `FAILURE_KIND_TIMEOUT` (1) | ... |``)."""
    return {name.group(1): cells for cells in _table(heading) if (name := re.match(r"`([^`]+)`", cells[0]))}


def _proto_comments(proto: str, block: str) -> dict[str, str]:
    """The comment lines just above each field or value of ``block`` (``message Move`` or ``enum
    FailureKind``) in ``proto``, joined, by field or value name."""
    lines = (PROTO_DIR / proto).read_text(encoding="utf-8").splitlines()
    start = lines.index(f"{block} {{")
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in lines[start + 1:]:
        text = line.strip()
        if text == "}":
            break
        if text.startswith("//"):
            pending.append(text[2:].strip())
            continue
        field = re.match(r"(?:repeated\s+)?[\w.]+\s+(\w+)\s*=\s*\d+;|(\w+)\s*=\s*\d+;", text)
        if field:
            comments[field.group(1) or field.group(2)] = " ".join(pending)
        pending = []
    return comments


def test_every_enum_value_is_documented_with_its_number() -> None:
    """Each value of every enum of the three .proto files appears in protocol.md with its number,
    as ``| `NAME` | n |`` or ``| `NAME` (n) |``."""
    missing = []
    for module in PROTO_MODULES:
        for enum in module.DESCRIPTOR.enum_types_by_name.values():
            for value in enum.values:
                if not re.search(rf"\| `{value.name}` (\| {value.number} \||\({value.number}\) \|)", PROTOCOL_DOC):
                    missing.append(f"{enum.name}.{value.name} = {value.number}")
    assert not missing, f"protocol.md does not document {missing}"


def test_every_message_field_is_documented() -> None:
    """Each message of the three .proto files has its **`Name`** paragraph in protocol.md, naming
    every field of the message before the next message's paragraph."""
    missing = []
    for module in PROTO_MODULES:
        for message in module.DESCRIPTOR.message_types_by_name.values():
            heading = f"**`{message.name}`**"
            if heading not in PROTOCOL_DOC:
                missing.append(message.name)
                continue
            start = PROTOCOL_DOC.index(heading) + len(heading)
            ends = [i for i in (PROTOCOL_DOC.find("**`", start), PROTOCOL_DOC.find("\n#", start)) if i >= 0]
            section = PROTOCOL_DOC[start:min(ends)]
            missing += [f"{message.name}.{f.name}" for f in message.fields if f"`{f.name}`" not in section]
    assert not missing, f"protocol.md does not document {missing}"


def test_every_failure_kind_has_a_misbehaviour_row() -> None:
    """Section 5's table says, for every FailureKind, what a bot does to get it."""
    kinds = {cells[1] for cells in _table("### Misbehaviour → FailureKind")}
    documented = {v.name.removeprefix("FAILURE_KIND_") for v in game_pb2.FailureKind.DESCRIPTOR.values if v.number}
    assert documented <= kinds, f"no row gives {sorted(documented - kinds)}"


@pytest.mark.parametrize("proto, block, heading", [
    ("game.proto", "enum FailureKind", "**`FailureKind`**"),
    ("game.proto", "message Move", "**`Move`**"),
])
def test_proto_comments_state_the_documented_meanings(proto: str, block: str, heading: str) -> None:
    """The comment of each FailureKind value and each Move field in game.proto says what its row
    in protocol.md says (code generated from the .proto carries the comment to bot authors)."""
    comments = _proto_comments(proto, block)
    rows = _doc_rows(heading)
    assert set(comments) == set(rows), f"{block} has {sorted(comments)}; the table {sorted(rows)}"
    differ = {name: (comments[name], rows[name][-1]) for name in comments
              if _meaning(comments[name]) != _meaning(rows[name][-1])}
    assert not differ, f"{block}: .proto comment and protocol.md differ (comment, doc): {differ}"


def test_documented_limits_are_the_referees() -> None:
    """The numbers protocol.md gives for the referee's limits are the ones in its code."""
    doc = _flat(PROTOCOL_DOC)
    floods = re.findall(r"[Mm]ore than \**(\d+)\**(?: unrequested)? messages", doc)
    assert floods and set(floods) == {str(MAX_QUEUED)}, floods
    assert f"at most **{MAX_MESSAGE_BYTES >> 20} MiB**" in doc and f"vs. {MAX_MESSAGE_BYTES})" in doc
    send_limit = dict(CHANNEL_OPTIONS)["grpc.max_send_message_length"]
    assert f"may send messages up to {send_limit >> 20} MiB" in doc
    assert f"After **{STARTUP_ATTEMPTS} consecutive failed starts**" in doc
    assert f"up to {STOP_WAIT_S:g} s for the bot to exit" in doc and f"you have {STOP_WAIT_S:g} seconds" in doc
    defaults = {name: cells[3] for name, cells in _doc_rows("**`TimeControl`**").items()}
    assert defaults == {f.name: str(getattr(TimeControl(), f.name)) for f in game_pb2.TimeControl.DESCRIPTOR.fields}


def test_documented_received_cut_is_the_referees() -> None:
    """Failure.received: the documented cut (its length and what is appended) is the one
    ``connection.preview`` makes."""
    (row,) = [cells for name, cells in _doc_rows("**`Failure`**").items() if name == "received"]
    cut = re.search(r"longer than (\d+) characters is cut after its first (\d+), with `([^`]+)` appended", row[-1])
    assert cut, row[-1]
    assert int(cut.group(1)) == int(cut.group(2)) == RECEIVED_PREVIEW
    long_answer = preview(bot_pb2.MoveChoice(turn_id=5, notation="X" * (2 * RECEIVED_PREVIEW)))
    assert long_answer == ('turn_id: 5 notation: "' + "X" * RECEIVED_PREVIEW)[:RECEIVED_PREVIEW] + cut.group(3)


def test_documented_received_examples_are_what_records_store(tmp_path: Path) -> None:
    """The record example of section 8 (a bot playing illegal moves under the random-move policy)
    is what a real match stores, and the two forms of Failure.received the document shows (a
    rejected MoveChoice, a whole PlayResponse) are the stored values."""
    records = tmp_path / "records"
    done = run_referee("match", "--bot", python_bot_command("illegal"), "--bot", builtin_bot_command(4),
                       "--seed", "1", "--policy", "random_move", "--max-strikes", "1",
                       "--move-time", str(ROOMY_TIME.move_time_ms), "--records", str(records), "--logs", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (record_file,) = records.glob("*.json")
    record = json.loads(record_file.read_text(encoding="utf-8"))
    example = re.search(r'\n "failures": (\[.*?\n \]),', PROTOCOL_DOC, re.S)
    moves = re.search(r'"moves": (\[.*?\])', PROTOCOL_DOC)
    assert example and moves, "section 8's example lost its failures or moves"
    assert record["failures"] == json.loads(example.group(1))
    assert record["engine"]["deals"][0]["moves"] == json.loads(moves.group(1))

    (row,) = [cells for name, cells in _doc_rows("**`Failure`**").items() if name == "received"]
    as_move_choice = re.search(r"it is the `MoveChoice` \(`([^`]+)`\)", row[-1])
    as_response = re.search(r"the whole `PlayResponse` \(`([^`]+)` for a Handshake answered with a move\)", row[-1])
    assert as_move_choice and as_response, row[-1]
    assert record["failures"][0]["received"] == as_move_choice.group(1)
    records = tmp_path / "no-hello"
    done = run_referee("match", "--bot", python_bot_command("no-hello"), "--bot", builtin_bot_command(4),
                       "--records", str(records), "--logs", str(tmp_path))
    assert done.returncode == 0, done.stderr
    (record_file,) = records.glob("*.json")
    (failure,) = json.loads(record_file.read_text(encoding="utf-8"))["failures"]
    assert failure["kind"] == "FAILURE_KIND_STARTUP" and failure["received"] == as_response.group(1)
