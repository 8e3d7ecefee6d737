"""`referee --log-format json`: a real `referee match` writes one JSON object per stderr line, its
failure lines carry what the game records say (docs/operations.md, "Logs"), the text form says the
same as ever; and the JSON formatter itself on real log records (exceptions, values that are not
JSON, messages of several lines)."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path
from typing import Any

from referee.logs import FIELDS, JsonFormatter, iso_utc, make_formatter
from referee.metrics import failure_kind_label
from tests.conftest import builtin_bot_command, python_bot_command
from tests.support import assert_usage_error, run_referee

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ([\w.]+) (.*)$")  # referee's: no level


def match_args(records: Path) -> list[str]:
    """Two games between a bot that answers an illegal move on its second turn and the built-in bot."""
    return ["match", "-v", "--bot", python_bot_command("illegal", after=2), "--bot", builtin_bot_command(),
            "--games", "2", "--move-time", "2000", "--records", str(records)]


def test_a_match_logs_json_lines_whose_failures_are_the_records(tmp_path: Path) -> None:
    done = run_referee("--log-format", "json", *match_args(tmp_path / "records"))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stderr.splitlines()]  # a line that is not JSON fails here
    assert lines and all(list(r)[:4] == ["time", "level", "logger", "message"] for r in lines), done.stderr
    assert all(set(r) <= {"time", "level", "logger", "message", *FIELDS} for r in lines), done.stderr
    recorded = set()
    for path in sorted((tmp_path / "records").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        names = {int(s.get("seat", 0)): s["name"] for s in record["seats"]}
        recorded |= {(record["game_id"], int(f.get("seat", 0)), names[int(f.get("seat", 0))],
                      failure_kind_label(f["kind"]), f["reason"]) for f in record["failures"]}
    assert len(recorded) == 2, recorded
    logged = {(r["game_id"], r["seat"], r["bot"], r["failure_kind"], r["reason"]) for r in lines
              if r["level"] == "warning" and r["logger"] == "referee.match.game"}
    assert logged == recorded
    # every game's start and end line names it; the end says why (a forfeit) and who forfeited
    ends = [r for r in lines if r["logger"] == "referee.match.game" and r.get("reason") == "forfeit"]
    assert {(r["game_id"], r["seat"], r["bot"], r["failure_kind"]) for r in ends} == {x[:4] for x in recorded}


def test_the_text_form_of_a_match_says_what_the_json_says(tmp_path: Path) -> None:
    text = run_referee(*match_args(tmp_path / "text"))
    as_json = run_referee("--log-format", "json", *match_args(tmp_path / "json"))
    assert text.returncode == as_json.returncode == 0, text.stderr + as_json.stderr
    assert all(TEXT_LINE.match(line) for line in text.stderr.splitlines()), text.stderr
    assert text.stdout.count("\n") == as_json.stdout.count("\n")  # the results, unchanged on stdout

    def game_lines(pairs: list[tuple[str, str]]) -> list[str]:
        # the games' lines (bots start concurrently, so their lines come in either order); match ids
        # are random per run
        return [re.sub(r"\b[0-9a-f]{12}-g", "M-g", message) for logger, message in pairs
                if logger == "referee.match.game"]
    from_text = game_lines([TEXT_LINE.match(line).groups() for line in text.stderr.splitlines()])  # type: ignore[misc, union-attr]
    from_json = game_lines([(r["logger"], r["message"]) for r in map(json.loads, as_json.stderr.splitlines())])
    assert from_text == from_json and len(from_text) == 6, (from_text, from_json)  # start, failure, end a game


def test_a_bad_log_format_is_a_usage_error() -> None:
    line = assert_usage_error(run_referee("--log-format", "xml", "perft", "--deck", "x", "--depth", "1"), "referee")
    assert "--log-format" in line and "'text', 'json'" in line, line


def formatted(record: logging.LogRecord, log_format: str = "json") -> str:
    """``record`` through the formatter of ``log_format`` and a real StreamHandler."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(make_formatter(log_format, "%(name)s %(message)s"))
    handler.handle(record)
    return out.getvalue()


def record(message: str, *args: Any, exc_info: Any = None, **extra: Any) -> logging.LogRecord:
    made = logging.getLogger("referee.test").makeRecord("referee.test", logging.ERROR, __file__, 1, message, args,
                                                          exc_info, extra=extra)
    made.created = 0.5  # 1970-01-01T00:00:00.500Z
    return made


def test_a_json_line_has_the_keys_in_order_and_leaves_other_extras_out() -> None:
    line = formatted(record("game %s: %s\nsecond line", "g1", "forfeit", reason="forfeit", game_id="g1", seat=1,
                            path=Path("/x"), unrelated={"a": 1}))
    assert line.endswith("\n") and line.count("\n") == 1, line  # one line, though the message has two
    assert json.loads(line) == {"time": "1970-01-01T00:00:00.500Z", "level": "error", "logger": "referee.test",
                                "message": "game g1: forfeit\nsecond line", "game_id": "g1", "seat": 1,
                                "reason": "forfeit"}
    assert list(json.loads(line)) == ["time", "level", "logger", "message", "game_id", "seat", "reason"]
    assert formatted(record("game %s", "g1", game_id="g1"), "text") == "referee.test game g1\n"


def test_a_json_line_carries_the_traceback_and_values_that_are_not_json_as_text() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        made = record("failed", exc_info=sys.exc_info(), bot=Path("/bots/greedy"))
    parsed = json.loads(formatted(made))
    assert parsed["bot"] == "/bots/greedy"
    assert parsed["exc_info"].startswith("Traceback") and parsed["exc_info"].endswith("ValueError: boom")


def test_fields_from_another_library_never_override_the_records_own() -> None:
    formatter = JsonFormatter(fields_from=[lambda r: {"job_id": 7, "game": 3, "not_ours": 1},
                                           lambda r: 1 / 0])  # a broken extractor costs its fields only
    made = record("job done", game=4)
    made.message = made.getMessage()
    assert json.loads(formatter.format(made)) == {
        "time": iso_utc(0.5), "level": "error", "logger": "referee.test", "message": "job done", "game": 4, "job_id": 7}
