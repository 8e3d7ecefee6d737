"""The job queue that spreads a tournament's games over worker processes (docs/scale-out.md).

procrastinate keeps the queue in the arena's own PostgreSQL database. There are three tasks:

- ``play_game``: one job per game, deferred in the same transaction that schedules the game (or,
  on a resume, that finds it pending without a job). Its ``queueing_lock`` keeps a game from
  waiting in the queue twice. The worker (worker.py) claims the game through its status, attempt
  and job id, so a job run twice (procrastinate runs jobs at least once), or a second job of one
  game, stores the game once.
- ``rate_tournament``: deferred with each finished game, ahead of the games waiting; its lock
  makes it the tournament's one rating writer at a time, and its queueing lock keeps one waiting,
  which rates every game that is ready, in number order.
- ``retry_stalled_jobs``: periodic; puts back the jobs of workers whose heartbeat stopped (a
  worker killed with kill -9, a machine lost), as procrastinate's documentation recommends.

Jobs go to a queue named after the project's version, schema revision and protocol version
(``QUEUE``): a worker of another version never sees them, and says so (worker.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import procrastinate
from alembic.script import ScriptDirectory
from procrastinate import exceptions as queue_errors
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from referee.match.spec import GameSetup
from referee.sandbox import SandboxSettings
from referee.sandbox.settings import PATH_SETTINGS
from referee.wire.convert import PROTOCOL_VERSION

from ..errors import UsageError, quoted
from ..store.store import _alembic_config, describe_url

PLAY_TASK = "arena.play_game"
RATE_TASK = "arena.rate_tournament"
STALLED_TASK = "arena.retry_stalled_jobs"
JOB_FORMAT = "royal-casino-arena/game-job"
QUEUE_PREFIX = "arena-games-"  # each version's queue: this, then compatibility()
CHANNEL_PREFIX = "procrastinate_queue_v1#"  # procrastinate's LISTEN channel of a queue: this, then its name
MAX_CHANNEL_BYTES = 63  # PostgreSQL's longest identifier
RATE_PRIORITY = 10  # rating passes run before the games waiting (priority 0)


def project_version() -> str:
    """The installed arena's version (pyproject.toml's)."""
    try:
        return importlib.metadata.version("royal-casino-arena")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def schema_head() -> str:
    """The newest schema revision this arena knows."""
    head = ScriptDirectory.from_config(_alembic_config()).get_current_head()
    assert head is not None
    return head


def compatibility() -> str:
    """What a coordinator and a worker must share to hand games to each other."""
    return f"{project_version()}-schema{schema_head()}-protocol{PROTOCOL_VERSION}"


def queue_name(compat: str | None = None) -> str:
    """The queue a version's jobs go to (a worker only reads its own version's). procrastinate
    names a PostgreSQL NOTIFY channel after it, and a channel name has at most 63 bytes: with a
    long schema revision id the revision is given by a digest of it instead."""
    name = f"{QUEUE_PREFIX}{compat or compatibility()}"
    if len(CHANNEL_PREFIX) + len(name.encode()) <= MAX_CHANNEL_BYTES:
        return name
    digest = hashlib.sha256(schema_head().encode()).hexdigest()[:8]
    return f"{QUEUE_PREFIX}{project_version()}-s{digest}-protocol{PROTOCOL_VERSION}"


def require_postgresql(url: str, what: str, hint: str = 'set database = "postgresql://user@host/name"') -> None:
    """UsageError (one line, exit 2) unless ``url`` is a PostgreSQL database: the queue lives there;
    ``hint``: how the command is given one (a tournament file's setting by default)."""
    try:
        backend = make_url(url).get_backend_name()
    except Exception:  # noqa: BLE001 - any unparsable URL is the same usage problem
        backend = ""
    if backend != "postgresql":
        raise UsageError(f"{what} needs a PostgreSQL database (the job queue lives in it), not "
                         f"{describe_url(url)}: {hint}")


def libpq_url(url: str) -> str:
    """The SQLAlchemy URL as libpq (and so procrastinate's psycopg connector) reads it."""
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


def make_app() -> procrastinate.App:
    """The arena's procrastinate app with no connection (for deferring on a caller's connection);
    ``worker.py`` registers the tasks' code on its own app with the same names."""
    return procrastinate.App(connector=procrastinate.SyncPsycopgConnector())


@dataclass(frozen=True, slots=True)
class GameJob:
    """What a ``play_game`` job carries: the game (its row and attempt guard are in the database),
    how it is played and how its bots are confined. Versioned, like GameSetup."""

    game_id: int
    tournament_id: int
    number: int
    setup: GameSetup
    sandbox: SandboxSettings
    runtimes: dict[str, Any] = dataclasses.field(default_factory=dict)  # the tournament file's [runtimes], as written

    def to_args(self) -> dict[str, Any]:
        sandbox = dataclasses.asdict(self.sandbox)
        for key in (*PATH_SETTINGS, "pass_env"):
            sandbox[key] = list(getattr(self.sandbox, key))
        return {"format": JOB_FORMAT, "version": 1, "game_id": self.game_id, "tournament_id": self.tournament_id,
                "number": self.number, "setup": self.setup.to_dict(), "sandbox": sandbox,
                **({"runtimes": self.runtimes} if self.runtimes else {})}

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> GameJob:
        """Inverse of ``to_args``; ValueError on a job this arena does not read."""
        if args.get("format") != JOB_FORMAT or args.get("version") != 1:
            raise ValueError(f"not a version-1 {JOB_FORMAT}: {quoted(str(args)[:200])}")
        return cls(int(args["game_id"]), int(args["tournament_id"]), int(args["number"]),
                   GameSetup.from_dict(args["setup"]), SandboxSettings.from_table(args["sandbox"], "job sandbox"),
                   dict(args.get("runtimes") or {}))


def game_lock(game_id: int) -> str:
    return f"arena-game-{game_id}"


def rate_lock(tournament_id: int) -> str:
    return f"arena-rate-{tournament_id}"


def defer_games(app: procrastinate.App, conn: Connection, jobs: Iterable[GameJob]) -> int:
    """Queue ``jobs`` on ``conn`` (in its transaction, so they exist exactly when the caller's writes
    do). A game already waiting in the queue is skipped: each job in a savepoint of its own, so
    one that is refused (its queueing lock taken) does not undo the others. How many were queued."""
    queued = 0
    raw = conn.connection.driver_connection
    for job in jobs:
        # A queueing lock (never waiting twice) but no lock: the claim (job id, status, attempt)
        # already keeps two jobs of one game from both playing it, and a lock per game makes
        # procrastinate's fetch look for the lock's other jobs on every candidate (slow with a backlog).
        deferrer = app.configure_task(PLAY_TASK, queue=queue_name(), queueing_lock=game_lock(job.game_id),
                                      connection=raw)
        savepoint = conn.begin_nested()
        try:
            deferrer.defer(**job.to_args())
        except queue_errors.AlreadyEnqueued:
            savepoint.rollback()
            continue
        savepoint.commit()
        queued += 1
    return queued


def defer_rating(app: procrastinate.App, conn: Connection, tournament_id: int) -> None:
    """Queue a rating pass of the tournament on ``conn`` unless one is waiting already (that one
    runs after this transaction commits, and so rates what it wrote)."""
    lock = rate_lock(tournament_id)
    # Ahead of the games waiting (procrastinate takes higher priorities first), so ratings keep up.
    # Not delayed to fold more games into a pass: a job due later wakes no worker when it becomes
    # due (they hear of it at its insert), so it waited for their 5 s poll (docs/benchmarks.md).
    deferrer = app.configure_task(RATE_TASK, queue=queue_name(), lock=lock, queueing_lock=lock,
                                  priority=RATE_PRIORITY, connection=conn.connection.driver_connection)
    savepoint = conn.begin_nested()
    try:
        deferrer.defer(tournament_id=tournament_id)
    except queue_errors.AlreadyEnqueued:
        savepoint.rollback()
        return
    savepoint.commit()


def games_without_job(conn: Connection, tournament_id: int) -> list[int]:
    """Ids of the tournament's pending games that no job waits for or is playing: the ones a resume
    must queue (a coordinator killed before it queued them, a job that gave up). Two linear reads,
    not a join the planner may turn into games x jobs: the pending games (by status), and the
    queueing locks of the live jobs (through procrastinate's index of todo and doing jobs)."""
    pending = conn.execute(text(
        "SELECT id FROM games WHERE tournament_id = :tid AND status = 'pending' ORDER BY number"),
        {"tid": tournament_id}).scalars().all()
    if not pending:
        return []
    live = set(conn.execute(text(
        "SELECT queueing_lock FROM procrastinate_jobs WHERE status IN ('todo', 'doing') AND task_name = :task"),
        {"task": PLAY_TASK}).scalars())
    return [game_id for game_id in pending if game_lock(game_id) not in live]


def release_orphaned_games(conn: Connection, tournament_id: int) -> int:
    """Put back to pending the running games whose job is neither waiting nor running any more (a
    job that gave up on errors of the database itself, after claiming its game): nobody would
    finish them. A live job's game is never touched: its job is 'doing' for as long as it plays."""
    result = conn.execute(text(  # the job that claimed a game is named on it: a primary-key look-up each
        "UPDATE games g SET status = 'pending' WHERE g.tournament_id = :tid AND g.status = 'running'"
        " AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = g.job_id"
        " AND j.status IN ('todo', 'doing'))"), {"tid": tournament_id})
    return result.rowcount or 0


def live_jobs(conn: Connection, tournament_id: int) -> int:
    """How many of the tournament's games wait in the queue or are being played by a worker (0 on
    a database without the queue): a local run must not take them from the workers."""
    if conn.dialect.name != "postgresql":
        return 0
    return int(conn.execute(text(
        "SELECT count(*) FROM procrastinate_jobs WHERE task_name = :task AND status IN ('todo', 'doing')"
        " AND args->>'tournament_id' = :tid"), {"task": PLAY_TASK, "tid": str(tournament_id)}).scalar() or 0)
