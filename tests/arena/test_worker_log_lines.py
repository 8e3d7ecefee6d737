"""The worker's log of a game its run withdrew (`arena compare --queue` past its verdict): the
line procrastinate writes at the job's end keeps its text and loses the traceback of the
expected JobAborted; any other exception keeps its traceback."""

from __future__ import annotations

import io
import logging

import procrastinate.worker
from procrastinate import exceptions as queue_errors

from arena.play.worker import WITHDRAWN_FILTER


def _logged(exc: BaseException) -> str:
    """What procrastinate's worker logger writes for a job's end with ``exc`` (as its
    _log_job_outcome calls it), through the filter the arena's worker installs."""
    logger = logging.getLogger(procrastinate.worker.__name__)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    logger.addFilter(WITHDRAWN_FILTER)
    level, logger.level = logger.level, logging.INFO
    try:
        try:
            raise exc
        except BaseException as caught:
            logger.log(logging.INFO, "Job arena.play_game[7]() ended with status: Aborted, lasted 0.412 s",
                       exc_info=caught)
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(WITHDRAWN_FILTER)
        logger.level = level
    return out.getvalue()


def test_a_withdrawn_games_end_is_one_line_without_a_traceback() -> None:
    text = _logged(queue_errors.JobAborted("job 7: withdrawn by its run"))
    assert text == "INFO Job arena.play_game[7]() ended with status: Aborted, lasted 0.412 s\n"


def test_another_exception_keeps_its_traceback() -> None:
    text = _logged(RuntimeError("a bug of ours"))
    assert "Traceback (most recent call last)" in text and "RuntimeError: a bug of ours" in text
