"""The arena's database: tournaments, bots, games, ratings and rating history.

Every write that matters is one transaction: scheduling a tournament, starting a game (pending ->
running, attempt + 1), finishing it (result and record, only if that very attempt is still the
running one) and applying ratings (the next games in number order, all or none). So a process
killed at any moment leaves either a finished game or one to replay, never half of one.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sqlite3
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from alembic import command
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from google.protobuf import json_format
from sqlalchemy import Connection, Engine, case, create_engine, delete, event, exists, func, inspect, literal, select, text, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, aliased, defer, sessionmaker
from sqlalchemy.pool import NullPool

from casino.v1 import game_pb2

from ..errors import ArenaError, one_line, quoted, shown
from ..metrics import DATABASE_ERRORS, GAMES_STORED
from ..rating.ratings import Rating as TrueSkillRating
from ..rating.ratings import default_rating
from ..rating.results import GameOutcome
from ..rating.standings import Tally
from .game_seats import sides_of, write_seats
from .models import (Bot, BotArchive, Game, GameSeat, GameStatus, LiveGame, Rating, RatingHistory, Tournament, as_utc,
                     utcnow)
from .notices import crash_streaks

MIGRATIONS = Path(__file__).parent / "migrations"
RATING_BATCH = 64  # games read at a time when rating
CLAIM_WINDOW = 8  # pending games looked at when choosing ones whose bots are free
READS_FROM = "0001"  # the oldest schema reading commands understand (later ones only added tables they do not read)
# the transaction-scoped advisory lock migrations hold on PostgreSQL ("arena-migrate" as a bigint)
MIGRATION_LOCK_KEY = int.from_bytes(b"arenamig", "big") & (2**63 - 1)
PG_NO_SUCH_DATABASE = "3D000"  # invalid_catalog_name
PG_DUPLICATE_DATABASE = "42P04"
PG_INSUFFICIENT_PRIVILEGE = "42501"
log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 10  # the longest a PostgreSQL connection may take to open
T = TypeVar("T")
Scheduled = Callable[[Connection, int], None]  # what runs in a scheduling transaction: (connection, tournament id)


class StorageError(ArenaError):
    """The database cannot be used (unreachable, bad URL, a schedule that does not match)."""


class NoDatabaseError(StorageError):
    """A reading command found nothing to read: no database, or one without the arena's tables."""


class TournamentExistsError(StorageError):
    """Two processes created a tournament of one name at once: this one lost (and may open it)."""


@dataclass(frozen=True, slots=True)
class BotRow:
    """A bot of a tournament as stored. With an ``archive`` (its sha256), ``cwd`` is a folder inside
    the unpacked archive (None: its root), so the row is the same for every machine that plays it."""

    id: int
    position: int
    name: str
    spec: str
    cwd: str | None
    env: dict[str, str]
    active: bool
    archive: str | None = None


class BotSpec(NamedTuple):
    """How a bot is started, as a tournament file or `arena bots add` gives it."""

    name: str
    spec: str
    cwd: str | None
    env: dict[str, str]
    archive: str | None = None  # sha256 of its BotArchive


def _bot_row(b: Bot) -> BotRow:
    return BotRow(b.id, b.position, b.name, b.spec, b.cwd, dict(b.env or {}), b.active, b.archive)


@dataclass(frozen=True, slots=True)
class GameTask:
    """A game handed out to be played: its row id and the attempt that owns it."""

    id: int
    number: int
    attempt: int
    round: int
    set_number: int
    deck_seed: int
    seat_bots: tuple[int, ...]  # bot positions per seat
    faults: int = 0  # earlier attempts the platform could not play (Game.platform_faults)


@dataclass(frozen=True, slots=True)
class GameRow:
    id: int
    number: int
    round: int
    set_number: int
    deck_seed: int
    seat_bots: tuple[int, ...]
    status: str
    attempt: int
    result: dict[str, Any] | None
    error: str | None


class LiveEntry(NamedTuple):
    """A running game's record so far, to be written (Store.put_live): by the attempt playing it."""

    game_id: int
    attempt: int
    plays: int
    record: str  # JSON text


@dataclass(frozen=True, slots=True)
class LiveRow:
    """A game being played now (Store.live_games): where it is, who plays it, how far it has got."""

    tournament_id: int
    tournament: str
    game_id: int
    number: int
    seat_bots: tuple[int, ...]
    seat_names: tuple[str, ...]
    attempt: int
    plays: int
    started_at: datetime | None
    updated_at: datetime
    worker: str | None


def _count_database_error(context: Any) -> None:
    """Every error the database raises, in ``arena_database_errors_total`` (arena/metrics.py)."""
    DATABASE_ERRORS.labels(type(context.original_exception).__name__).inc()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL: readers (arena standings) never block the writer; synchronous=NORMAL is still safe
    # against a killed process (only a power cut can lose the last commits)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # a reader changes nothing (the journal mode is the writer's, kept in the file)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _read_only_sqlite(path: str) -> Callable[[], sqlite3.Connection] | None:
    """How a reader opens the SQLite file at ``path``: None (as usual) when this process may write
    the file and its folder; else a read-only connection. A WAL database needs its -shm file,
    which a read-only folder cannot get: with the -wal and -shm files beside it (a copy taken
    while it was open), ``mode=ro`` reads through them; with no write-ahead log to apply (the
    arena closed it, which folds the log into the file), ``immutable=1`` reads the file alone,
    and is right because nothing writes there (a writer would have left a -wal file)."""
    db = Path(path)
    if not db.is_file():
        raise NoDatabaseError(f"no database file {shown(path)}")
    if os.access(db, os.W_OK) and os.access(db.parent, os.W_OK):
        return None
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    uri = "file:" + urllib.parse.quote(str(db.resolve()))
    if wal.is_file() and wal.stat().st_size > 0:
        if not shm.is_file():
            raise StorageError(f"cannot read {shown(path)} where it is: its write-ahead log {shown(wal.name)} "
                               f"holds games not yet in the file, and reading it needs {shown(shm.name)} too: copy "
                               f"the database with both files, or open it once where it can be written")
        uri += "?mode=ro"
    else:
        uri += "?mode=ro&immutable=1"
    return lambda: sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)


def _keep_private(path: str) -> None:
    """A SQLite file only its owner reads: made with mode 0600 when it is new (SQLite gives its
    -wal and -shm files the same mode), and with no permission for others when this user owns it
    (a bot's uid is an "other": the file holds every archive, record and token hash)."""
    # only a new file is opened here: closing a descriptor of a database this process already has
    # open (another Store of it) would drop that connection's SQLite locks, which are POSIX locks,
    # held per process and released by any close of the file (sqlite.org/howtocorrupt.html 2.2)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass
    except OSError:
        return  # not writable here: opening it says why
    for file in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        try:
            info = os.stat(file)
            if info.st_uid == os.geteuid() and info.st_mode & 0o007:
                os.chmod(file, info.st_mode & 0o770)
        except OSError:
            continue


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def _readable_revisions() -> list[str]:
    """The schema revisions reading commands understand, newest first: head down to READS_FROM."""
    scripts = ScriptDirectory.from_config(_alembic_config())
    return [r.revision for r in scripts.walk_revisions(base=READS_FROM, head="heads")]


def known_revisions() -> list[str]:
    """Every schema revision this arena's migrations know, newest first."""
    return [r.revision for r in ScriptDirectory.from_config(_alembic_config()).walk_revisions()]


def _sqlstate(exc: SQLAlchemyError) -> str | None:
    """The PostgreSQL error code of a driver error (psycopg 3 or psycopg2), if any. A refused
    connection has none (the server's FATAL comes as text): a missing database is told by its
    message then."""
    orig = getattr(exc, "orig", None)
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state is None and re.search(r'FATAL:\s+database ".*" does not exist', str(orig or "")):
        return PG_NO_SUCH_DATABASE
    return state


def _create_database(url: str) -> None:
    """CREATE DATABASE for a PostgreSQL URL whose database does not exist, as the URL's user,
    through the server's ``postgres`` database; StorageError (one line) if that is not allowed."""
    parsed = make_url(url)
    name = parsed.database or ""
    where = f"database {quoted(name)} does not exist on {shown(parsed.host or 'localhost')}"
    admin = create_engine(engine_url(parsed.set(database="postgres")), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {admin.dialect.identifier_preparer.quote(name)}"))
        log.info("created database %s", describe_url(url))
    except SQLAlchemyError as exc:
        state = _sqlstate(exc)
        if state == PG_DUPLICATE_DATABASE:  # another process created it a moment ago
            return
        if state == PG_INSUFFICIENT_PRIVILEGE:
            raise StorageError(f"{where} and user {quoted(parsed.username or '')} may not create it: create it "
                               f"first (createdb {shlex.quote(name)}, or CREATE DATABASE as a user who may)") from None
        raise StorageError(f"{where} and it could not be created: {first_line(exc)}") from None
    finally:
        admin.dispose()


def engine_url(parsed: URL) -> URL:
    """The URL SQLAlchemy connects with: a bare ``postgresql://`` (as libpq, procrastinate and
    people write it) means psycopg 3, the driver the arena installs, not SQLAlchemy's psycopg2."""
    return parsed.set(drivername="postgresql+psycopg") if parsed.drivername == "postgresql" else parsed


def describe_url(url: str) -> str:
    """The URL without its password, for messages (escaped if it holds a line break or the like)."""
    try:
        return shown(make_url(url).render_as_string(hide_password=True), limit=1000)
    except ArgumentError:
        return shown(url, limit=1000)


class Store:
    """One database (SQLite file or PostgreSQL) holding any number of tournaments."""

    def __init__(self, url: str, read_only: bool = False, migrate: bool = True) -> None:
        """Open (and for writing, create and migrate) the database at ``url``; a queue worker opens
        it for writing with ``migrate`` False, having checked its schema is its own.

        ``read_only`` is for the commands that only look (standings, games, show, export, bots
        list): nothing is created or migrated (NoDatabaseError when there is nothing to read),
        and a SQLite file this process may not write, or whose folder it may not write (a
        read-only copy of a finished tournament), is opened read-only (see _read_only_sqlite).
        """
        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise StorageError(f"bad database URL {quoted(url)}: {one_line(str(exc))}") from None
        self.url = url
        self.read_only = read_only
        kwargs: dict[str, Any] = {}
        sqlite = parsed.get_backend_name() == "sqlite"
        self.sqlite_path: str | None = None  # the database's file, for a SQLite file
        if sqlite:
            kwargs["connect_args"] = {"timeout": 30}
            if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
                self.sqlite_path = os.path.abspath(parsed.database)
                if not read_only:
                    Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
                    _keep_private(parsed.database)
                elif (creator := _read_only_sqlite(parsed.database)) is not None:
                    kwargs.update(creator=creator, poolclass=NullPool)
        else:
            kwargs["pool_pre_ping"] = True
            if "connect_timeout" not in parsed.query:  # a database host that does not answer: bounded (store/outage.py)
                kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        try:
            self.engine: Engine = create_engine(engine_url(parsed), **kwargs)
        except (ArgumentError, ImportError) as exc:
            raise StorageError(f"cannot use database {describe_url(url)}: {one_line(str(exc))}") from None
        if sqlite:
            event.listen(self.engine, "connect", _sqlite_read_pragmas if read_only else _sqlite_pragmas)
        event.listen(self.engine, "handle_error", _count_database_error)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if read_only:
            self._check_readable()
        elif migrate:
            self.upgrade()

    def upgrade(self) -> None:
        """Bring the schema to the newest migration (a no-op when it is there). A PostgreSQL
        database that does not exist yet is created first, when the user may (_create_database)."""
        try:
            self._migrate()
        except OperationalError as exc:
            if _sqlstate(exc) != PG_NO_SUCH_DATABASE:
                raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None
            _create_database(self.url)
            self._migrate_or_fail()
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None

    def _migrate(self) -> None:
        cfg = _alembic_config()
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                # one migration at a time per database (a deployment's migrate job, a coordinator and a
                # web app may start together): the next waits here, then finds the schema current;
                # without it the second's CREATEs failed on the first's new types
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            elif conn.dialect.name == "sqlite":
                # the same on SQLite: its write lock first (waited for up to the busy timeout), so two
                # processes opening a new file at once migrate one after the other. The driver begins
                # no transaction before DDL, and the second's CREATEs failed ("table tournaments
                # already exists") on the first's tables
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def _migrate_or_fail(self) -> None:
        try:
            self._migrate()
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None

    def schema_revision(self) -> str | None:
        """The database's schema revision now (``arena migrate`` says it before and after); None
        when it has no arena tables, or is a PostgreSQL database that does not exist yet."""
        try:
            with self.engine.connect() as conn:
                return MigrationContext.configure(conn).get_current_revision()
        except OperationalError as exc:
            if _sqlstate(exc) == PG_NO_SUCH_DATABASE:
                return None
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None

    def _check_readable(self) -> None:
        """For reading: the schema is one the reading commands understand; nothing is written."""
        try:
            with self.engine.connect() as conn:
                current = MigrationContext.configure(conn).get_current_revision()
        except OperationalError as exc:
            if _sqlstate(exc) == PG_NO_SUCH_DATABASE:
                raise NoDatabaseError(f"database {describe_url(self.url)} does not exist") from None
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None
        except SQLAlchemyError as exc:
            raise StorageError(f"cannot use database {describe_url(self.url)}: {first_line(exc)}") from None
        if current is None:
            raise NoDatabaseError(f"no arena tables in {describe_url(self.url)}")
        readable = _readable_revisions()
        if current not in readable:
            raise StorageError(f"database {describe_url(self.url)} has schema revision {quoted(current)}, which "
                               f"this arena cannot read (it reads {readable[-1]} to {readable[0]})")

    @property
    def url_for_people(self) -> str:
        return describe_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def session(self) -> Session:
        return self._sessions()

    # --- tournaments and bots -------------------------------------------------------------

    def tournament_id(self, name: str) -> int | None:
        with self.session() as s:
            return s.scalar(select(Tournament.id).where(Tournament.name == name))

    def tournament(self, tid: int) -> Tournament:
        with self.session() as s:
            t = s.get(Tournament, tid)
            if t is None:
                raise StorageError(f"no tournament with id {tid}")
            return t

    def tournaments(self) -> list[Tournament]:
        with self.session() as s:
            return list(s.scalars(select(Tournament).order_by(Tournament.id)))

    def create_tournament(self, name: str, fingerprint: str, settings: dict[str, Any],
                          bots: Sequence[BotSpec | tuple[str, str, str | None, dict[str, str]]],
                          games: Iterable[Any] = (), then: Scheduled | None = None) -> int:
        """A new tournament with its bots (BotSpec: name, spec, cwd, env, archive) at positions 0.. in order, and
        ``games`` as its round 1, in one transaction (so nobody sees it without its games);
        ``then`` runs in that transaction too (the queue defers the games' jobs there).
        TournamentExistsError when another process created one of that name first."""
        start = default_rating()
        try:
            with self.session() as s, s.begin():
                t = Tournament(name=name, fingerprint=fingerprint, settings=settings, rated_through=0, rounds=0)
                s.add(t)
                s.flush()
                for position, entry in enumerate(bots):
                    b = BotSpec(*entry)
                    bot = Bot(tournament_id=t.id, position=position, name=b.name, spec=b.spec, cwd=b.cwd,
                              env=dict(b.env), active=True, archive=b.archive)
                    s.add(bot)
                    s.flush()
                    s.add(Rating(bot_id=bot.id, mu=start.mu, sigma=start.sigma, games=0))
                if _schedule(s, t, 1, games):
                    t.rounds = 1
                if then is not None:
                    s.flush()
                    then(s.connection(), t.id)
                return t.id
        except IntegrityError:
            if self.tournament_id(name) is None:
                raise
            raise TournamentExistsError(f"tournament {name!r} was just created by another process") from None

    def bots(self, tid: int, active_only: bool = False) -> list[BotRow]:
        with self.session() as s:
            q = select(Bot).where(Bot.tournament_id == tid).order_by(Bot.position)
            if active_only:
                q = q.where(Bot.active.is_(True))
            return [_bot_row(b) for b in s.scalars(q)]

    def update_settings(self, tid: int, changes: Mapping[str, Any]) -> None:
        """Set keys of a tournament's stored settings (those the fingerprint does not cover)."""
        with self.session() as s, s.begin():
            t = s.get(Tournament, tid)
            if t is None:
                raise StorageError(f"no tournament with id {tid}")
            t.settings = {**t.settings, **changes}  # a new dict: the JSON column sees the change

    def update_bot_specs(self, tid: int, bots: Iterable[BotSpec | tuple[str, str, str | None, dict[str, str]]]) -> None:
        """Refresh how bots are started (a bot's command, folder or archive may change between runs)."""
        with self.session() as s, s.begin():
            rows = {b.name: b for b in s.scalars(select(Bot).where(Bot.tournament_id == tid))}
            for entry in bots:
                b = BotSpec(*entry)
                if (row := rows.get(b.name)) is not None:
                    row.spec, row.cwd, row.env, row.archive = b.spec, b.cwd, dict(b.env), b.archive

    def add_bot(self, tid: int, name: str, spec: str, cwd: str | None = None, env: dict[str, str] | None = None,
                archive: str | None = None) -> BotRow:
        """Add a bot (or re-activate a removed one of that name, with the new spec); ``archive``: the
        sha256 of its files' archive, stored first (put_archive)."""
        with self.session() as s, s.begin():
            existing = s.scalar(select(Bot).where(Bot.tournament_id == tid, Bot.name == name))
            if existing is not None:
                if existing.active:
                    raise StorageError(f"a bot named {name!r} is already in the pool")
                existing.active, existing.spec, existing.cwd, existing.env = True, spec, cwd, dict(env or {})
                existing.archive = archive
                existing.entered_after = self._last_game(s, tid)
                bot = existing
            else:
                position = s.scalar(select(func.coalesce(func.max(Bot.position), -1)).where(Bot.tournament_id == tid)) + 1
                bot = Bot(tournament_id=tid, position=position, name=name, spec=spec, cwd=cwd, env=dict(env or {}),
                          active=True, archive=archive, entered_after=self._last_game(s, tid))
                s.add(bot)
                s.flush()
                start = default_rating()
                s.add(Rating(bot_id=bot.id, mu=start.mu, sigma=start.sigma, games=0))
            return _bot_row(bot)

    @staticmethod
    def _last_game(s: Session, tid: int) -> int:
        """Where a bot entering the pool now counts its first games from (Bot.entered_after)."""
        return int(s.scalar(select(func.max(Game.number)).where(Game.tournament_id == tid)) or 0)

    def remove_bot(self, tid: int, name: str) -> None:
        """Take a bot out of the pool; its games and ratings stay."""
        with self.session() as s, s.begin():
            bot = s.scalar(select(Bot).where(Bot.tournament_id == tid, Bot.name == name, Bot.active.is_(True)))
            if bot is None:
                raise StorageError(f"no bot named {name!r} in the pool")
            bot.active = False

    # --- bot archives -------------------------------------------------------------------------

    def put_archive(self, sha256: str, content: bytes) -> bool:
        """Store an archive's bytes under their sha256, once however many bots or tournaments use
        it; True when it was not stored yet. The caller has checked it (referee/packages/archive.py)."""
        if not self.has_archive(sha256):
            try:
                with self.session() as s, s.begin():
                    s.add(BotArchive(sha256=sha256, size=len(content), content=content))
                return True
            except IntegrityError:  # another process stored the same bytes a moment ago
                pass
        return False

    def has_archive(self, sha256: str) -> bool:
        with self.session() as s:
            return s.scalar(select(BotArchive.sha256).where(BotArchive.sha256 == sha256)) is not None

    def archive_content(self, sha256: str) -> bytes | None:
        """An archive's bytes as stored, or None when there is no archive of that hash."""
        with self.session() as s:
            return s.scalar(select(BotArchive.content).where(BotArchive.sha256 == sha256))

    # --- games --------------------------------------------------------------------------------

    def add_games(self, tid: int, round_number: int, games: Iterable[Any], then: Scheduled | None = None) -> int:
        """Schedule games (objects with number, set_number, deck_seed, seat_bots) as one round;
        ``then`` runs in the same transaction (see create_tournament)."""
        with self.session() as s, s.begin():
            t = s.get(Tournament, tid)
            assert t is not None
            count = _schedule(s, t, round_number, games)
            t.rounds = max(t.rounds, round_number)
            if then is not None:
                s.flush()
                then(s.connection(), tid)
            return count

    def in_transaction(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` in one transaction of its own (the queue's resume: find the games
        without a job and queue them, atomically)."""
        with self.engine.begin() as conn:
            return fn(conn)

    def last_game_number(self, tid: int) -> int:
        with self.session() as s:
            return s.scalar(select(func.max(Game.number)).where(Game.tournament_id == tid)) or 0

    def last_set_number(self, tid: int) -> int:
        with self.session() as s:
            return s.scalar(select(func.max(Game.set_number)).where(Game.tournament_id == tid)) or 0

    def requeue_running(self, tid: int) -> int:
        """Games left running by a process that died go back to pending, to be replayed from the start."""
        with self.session() as s, s.begin():
            result = s.execute(update(Game).where(Game.tournament_id == tid, Game.status == GameStatus.RUNNING.value)
                               .values(status=GameStatus.PENDING.value))
            s.execute(delete(LiveGame).where(LiveGame.tournament_id == tid))  # none of its games runs now
            return result.rowcount or 0

    def claim(self, tid: int, limit: int, busy: Collection[int] = (), window: int = CLAIM_WINDOW) -> list[GameTask]:
        """Start up to ``limit`` pending games (as many as there are, up to ``limit``): first, among
        the next ``window`` pending games, those whose bots are not ``busy`` (bot positions playing
        now) nor in another chosen game, so a bot needs fewer processes at once; then the lowest
        numbers. One UPDATE ... RETURNING (with SKIP LOCKED on PostgreSQL: several workers never
        share a game)."""
        with self.engine.begin() as conn:
            pending = (select(Game.id, Game.seat_bots)
                       .where(Game.tournament_id == tid, Game.status == GameStatus.PENDING.value)
                       .order_by(Game.number).limit(max(limit, window)))
            if self.engine.dialect.name == "postgresql":
                pending = pending.with_for_update(skip_locked=True)
            candidates = conn.execute(pending).all()
            taken: set[int] = set(busy)
            chosen = []
            for game_id, seats in candidates:
                if len(chosen) == limit:
                    break
                if not taken.intersection(seats):
                    chosen.append(game_id)
                    taken.update(seats)
            for game_id, _ in candidates:  # then the lowest numbers, clashes or not: nothing waits
                if len(chosen) == limit:
                    break
                if game_id not in chosen:
                    chosen.append(game_id)
            if not chosen:
                return []
            rows = conn.execute(
                update(Game).where(Game.id.in_(chosen), Game.status == GameStatus.PENDING.value)
                .values(status=GameStatus.RUNNING.value, attempt=Game.attempt + 1, started_at=utcnow())
                .returning(Game.id, Game.number, Game.attempt, Game.round, Game.set_number, Game.deck_seed, Game.seat_bots,
                           Game.platform_faults)
            ).all()
        return sorted((GameTask(i, n, a, r, st, d, tuple(seats), f) for i, n, a, r, st, d, seats, f in rows),
                      key=lambda task: task.number)

    def claim_game(self, game_id: int, job_id: int, worker: str) -> GameTask | None:
        """Start one game for queue job ``job_id`` (pending -> running, attempt + 1), or take it
        over from an earlier run of the same job (its worker died mid-game: the job was retried).
        None when the game is done, failed, or running for another job: nothing to play."""
        with self.engine.begin() as conn:
            row = conn.execute(
                update(Game)
                .where(Game.id == game_id,
                       (Game.status == GameStatus.PENDING.value)
                       | ((Game.status == GameStatus.RUNNING.value) & (Game.job_id == job_id)))
                .values(status=GameStatus.RUNNING.value, attempt=Game.attempt + 1, started_at=utcnow(),
                        job_id=job_id, worker=worker)
                .returning(Game.id, Game.number, Game.attempt, Game.round, Game.set_number, Game.deck_seed,
                           Game.seat_bots, Game.platform_faults)
            ).first()
        if row is None:
            return None
        i, n, a, r, st, d, seats, f = row
        return GameTask(i, n, a, r, st, d, tuple(seats), f)

    def finish(self, task: GameTask, result: game_pb2.GameResult, record: dict[str, Any],
               then: Callable[[Connection], None] | None = None) -> bool:
        """Store a played game: result and record in one transaction, only if ``task`` still owns
        the game (so a game is stored exactly once); ``then`` runs in that transaction when it
        does (the queue defers a rating pass there). False when it did not."""
        payload = json_format.MessageToDict(result, always_print_fields_with_no_presence=True)
        with self.engine.begin() as conn:
            done = conn.execute(
                update(Game)
                .where(Game.id == task.id, Game.status == GameStatus.RUNNING.value, Game.attempt == task.attempt)
                .values(status=GameStatus.DONE.value, result=payload, record=json.dumps(record), error=None,
                        finished_at=utcnow())
            )
            conn.execute(_delete_live(task))
            if done.rowcount:
                tid = self._tournament_of(conn, task)
                write_seats(conn, tid, task.number, task.seat_bots, payload)
                crash_streaks(conn, tid, task.number)  # told once per streak, with the game (arena/notify/)
                if then is not None:
                    then(conn)
        if done.rowcount:  # committed
            GAMES_STORED.labels("done").inc()
        return bool(done.rowcount)

    @staticmethod
    def _tournament_of(conn: Connection, task: GameTask) -> int:
        tid: int = conn.scalar(select(Game.tournament_id).where(Game.id == task.id))
        return tid

    def fail(self, task: GameTask, error: str, retry: bool, then: Callable[[Connection], None] | None = None) -> bool:
        """The referee could not play the game: back to pending to retry, or failed for good;
        ``then`` runs in the same transaction when ``task`` still owned the game. Whether it did."""
        status = GameStatus.PENDING if retry else GameStatus.FAILED
        with self.engine.begin() as conn:
            done = conn.execute(update(Game).where(Game.id == task.id, Game.status == GameStatus.RUNNING.value,
                                                   Game.attempt == task.attempt)
                                .values(status=status.value, error=error, finished_at=None if retry else utcnow()))
            conn.execute(_delete_live(task))
            if done.rowcount and not retry:  # failed for good: its seats are listed, with no outcome
                write_seats(conn, self._tournament_of(conn, task), task.number, task.seat_bots, None)
            if done.rowcount and then is not None:
                then(conn)
        if done.rowcount and not retry:  # committed
            GAMES_STORED.labels("failed").inc()
        return bool(done.rowcount)

    def fault(self, task: GameTask, error: str, limit: int,
              then: Callable[[Connection], None] | None = None) -> bool | None:
        """The platform could not play the game (a PlatformFault: never a bot's failure, never
        rated): one more platform fault counted, and the game back to pending to be played again,
        or failed for the operator with ``error`` once it has ``limit`` of them (``then`` runs in
        that transaction). True when it was failed, False when it went back to pending, None when
        ``task`` no longer owned the game."""
        with self.engine.begin() as conn:
            row = conn.execute(
                update(Game)
                .where(Game.id == task.id, Game.status == GameStatus.RUNNING.value, Game.attempt == task.attempt)
                .values(platform_faults=Game.platform_faults + 1, error=error,
                        status=case((Game.platform_faults + 1 >= limit, GameStatus.FAILED.value),
                                    else_=GameStatus.PENDING.value),
                        finished_at=case((Game.platform_faults + 1 >= limit, utcnow()), else_=None))
                .returning(Game.status, Game.tournament_id)
            ).first()
            conn.execute(_delete_live(task))
            if row is None:
                return None
            failed = row[0] == GameStatus.FAILED.value
            if failed:  # failed for good: its seats are listed, with no outcome (nobody's failure)
                write_seats(conn, row[1], task.number, task.seat_bots, None)
                if then is not None:
                    then(conn)
        if failed:  # committed
            GAMES_STORED.labels("failed").inc()
        return failed

    def counts(self, tid: int) -> dict[str, int]:
        """Games per status (every status present, 0 included)."""
        with self.session() as s:
            rows = s.execute(select(Game.status, func.count()).where(Game.tournament_id == tid).group_by(Game.status))
            counts = {st.value: 0 for st in GameStatus}
            counts.update({status: n for status, n in rows})
            return counts

    def games(self, tid: int, bot_position: int | None = None, statuses: Sequence[str] = ()) -> list[GameRow]:
        with self.session() as s:
            # not the records: a row needs its result only, and records are most of a game's bytes
            q = select(Game).options(defer(Game.record)).where(Game.tournament_id == tid).order_by(Game.number)
            if statuses:
                q = q.where(Game.status.in_(statuses))
            rows = [_game_row(g) for g in s.scalars(q)]
        if bot_position is not None:
            rows = [g for g in rows if bot_position in g.seat_bots]
        return rows

    def game(self, tid: int, number: int) -> tuple[GameRow, dict[str, Any] | None]:
        with self.session() as s:
            g = s.scalar(select(Game).where(Game.tournament_id == tid, Game.number == number))
            if g is None:
                raise StorageError(f"no game {number} in this tournament")
            return _game_row(g), (json.loads(g.record) if g.record else None)

    def records(self, tid: int) -> Iterable[tuple[int, dict[str, Any]]]:
        """Every stored record, by game number."""
        with self.session() as s:
            for number, record in s.execute(select(Game.number, Game.record).where(
                    Game.tournament_id == tid, Game.record.is_not(None)).order_by(Game.number)):
                yield number, json.loads(record)

    # --- live games (arena/play/live.py writes them, the web reads them) ----------------------

    def put_live(self, entries: Sequence[LiveEntry]) -> int:
        """Write running games' records so far in one transaction: each game's row is replaced (or
        added) only while the game is still running with the entry's attempt, so a game stored or
        failed meanwhile never gets a row back; how many were written."""
        now = utcnow()
        written = 0
        with self.engine.begin() as conn:
            for e in entries:
                owned = ((Game.id == e.game_id) & (Game.status == GameStatus.RUNNING.value)
                         & (Game.attempt == e.attempt))
                changed = conn.execute(update(LiveGame).where(LiveGame.game_id == e.game_id,
                                                              exists(select(Game.id).where(owned)))
                                       .values(attempt=e.attempt, plays=e.plays, updated_at=now, record=e.record))
                if changed.rowcount:
                    written += 1
                    continue
                added = conn.execute(LiveGame.__table__.insert().from_select(
                    ["game_id", "tournament_id", "attempt", "plays", "updated_at", "record"],
                    select(Game.id, Game.tournament_id, literal(e.attempt), literal(e.plays),
                           literal(now, LiveGame.updated_at.type), literal(e.record, LiveGame.record.type)).where(owned),
                ).returning(LiveGame.game_id)).all()  # (an INSERT ... SELECT's rowcount is not always known)
                written += len(added)
        return written

    def trim_live(self) -> int:
        """Delete the rows of games no longer running with the attempt that wrote them (a player
        that crashed leaves its rows); how many."""
        with self.engine.begin() as conn:
            stale = conn.execute(delete(LiveGame).where(~_live_owned()))
            return stale.rowcount or 0

    def _live_readable(self) -> bool:
        """Whether the database has the live table (a reader may open one of an older schema)."""
        if getattr(self, "_has_live", None) is None:
            self._has_live = inspect(self.engine).has_table(LiveGame.__tablename__)
        return bool(self._has_live)

    def live_games(self, tid: int | None = None) -> list[LiveRow]:
        """The games being played now (of tournament ``tid``, or of all), by tournament and number:
        only rows whose game still runs with the attempt that wrote them."""
        if not self._live_readable():
            return []
        q = (select(LiveGame.tournament_id, Tournament.name, Game.id, Game.number, Game.seat_bots, LiveGame.attempt,
                    LiveGame.plays, Game.started_at, LiveGame.updated_at, Game.worker)
             .join(Game, Game.id == LiveGame.game_id).join(Tournament, Tournament.id == LiveGame.tournament_id)
             .where(_live_owned()).order_by(Tournament.name, Game.number))
        if tid is not None:
            q = q.where(LiveGame.tournament_id == tid)
        with self.session() as s:
            rows = s.execute(q).all()
            names: dict[tuple[int, int], str] = {}
            if rows:
                tids = {r[0] for r in rows}
                names = {(t, p): n for t, p, n in s.execute(
                    select(Bot.tournament_id, Bot.position, Bot.name).where(Bot.tournament_id.in_(tids)))}
        return [LiveRow(t, name, gid, number, tuple(seats), tuple(names.get((t, p), f"bot {p}") for p in seats),
                        attempt, plays, as_utc(started), as_utc(updated), worker)  # type: ignore[arg-type]
                for t, name, gid, number, seats, attempt, plays, started, updated, worker in rows]

    def live_record(self, game: int | tuple[int, int]) -> tuple[LiveRow, dict[str, Any]] | None:
        """A running game's row and record so far, by game id or (tournament id, number); None when
        the game is not being played now (or has made no report yet)."""
        if not self._live_readable():
            return None
        where = (Game.id == game) if isinstance(game, int) else ((Game.tournament_id == game[0]) & (Game.number == game[1]))
        with self.session() as s:
            gid = s.scalar(select(Game.id).where(where))
            if gid is None:
                return None
            record = s.scalar(select(LiveGame.record).where(LiveGame.game_id == gid, _live_owned()))
        if record is None:
            return None
        row = next((r for r in self.live_games() if r.game_id == gid), None)
        return (row, json.loads(record)) if row is not None else None

    def live_plays(self, tid: int, number: int) -> tuple[str, int | None] | None:
        """Game ``number``'s status and, while it is being played, its plays so far (None before its
        first report); None when there is no such game. One small read: what an event stream polls."""
        owned = (LiveGame.game_id == Game.id) & (LiveGame.attempt == Game.attempt)
        columns = [Game.status, LiveGame.plays] if self._live_readable() else [Game.status, literal(None)]
        q = select(*columns).select_from(Game).where(Game.tournament_id == tid, Game.number == number)
        if self._live_readable():
            q = q.outerjoin(LiveGame, owned)
        with self.session() as s:
            row = s.execute(q).first()
        if row is None:
            return None
        status, plays = row
        return status, plays if status == GameStatus.RUNNING.value else None

    # --- ratings ------------------------------------------------------------------------------

    def outcomes(self, tid: int) -> list[GameOutcome]:
        """Every finished game, by number, as ratings and standings see it."""
        names = {b.position: b.name for b in self.bots(tid)}
        players = int(self.tournament(tid).settings.get("players", 2))
        return [_outcome(g, names, players) for g in self.games(tid, statuses=[GameStatus.DONE.value])]

    @contextmanager
    def rating_pass(self, tid: int) -> Iterator["RatingPass"]:
        """One transaction over the games still to rate (the tournament row locked on PostgreSQL, so
        two processes never rate the same game): what play/rate.py reads and writes through."""
        with self.session() as s, s.begin():
            q = select(Tournament).where(Tournament.id == tid)
            if self.engine.dialect.name == "postgresql":
                q = q.with_for_update()
            t = s.scalar(q)
            assert t is not None
            yield RatingPass(s, t)

    def ratings(self, tid: int) -> dict[str, TrueSkillRating]:
        with self.session() as s:
            rows = s.execute(select(Bot.name, Rating.mu, Rating.sigma).join(Rating, Rating.bot_id == Bot.id)
                             .where(Bot.tournament_id == tid))
            return {name: TrueSkillRating(mu, sigma) for name, mu, sigma in rows}

    def standings_tally(self, tid: int) -> Tally:
        """What the standings count, summed by the database over game_seats (a few grouped reads
        whatever the number of games; the same sums as rating.standings.tally_outcomes)."""
        names = {b.position: b.name for b in self.bots(tid)}
        tally = Tally.empty(list(names.values()))
        seat, other = GameSeat, aliased(GameSeat)
        done = (seat.tournament_id == tid) & seat.outcome.is_not(None)
        with self.session() as s:
            for position, games, wins, draws, points in s.execute(
                    select(seat.bot_position, func.count(), func.sum(case((seat.outcome == "win", 1), else_=0)),
                           func.sum(case((seat.outcome == "draw", 1), else_=0)), func.sum(seat.points))
                    .where(done).group_by(seat.bot_position)):
                record = tally.records[names[position]]
                record.games, record.wins, record.draws, record.points = games, wins, draws, points
                record.losses = games - wins - draws
            for position, kind, n in s.execute(select(seat.bot_position, seat.forfeit, func.count())
                                               .where(done, seat.forfeited.is_(True))
                                               .group_by(seat.bot_position, seat.forfeit)):
                tally.forfeits[names[position]][kind] += n
            versus = (select(seat.bot_position, other.bot_position, func.count(),
                             func.sum(case((seat.rank < other.rank, 1.0), (seat.rank == other.rank, 0.5), else_=0.0)))
                      .join(other, (other.tournament_id == seat.tournament_id)
                            & (other.game_number == seat.game_number) & (other.side != seat.side))
                      .where(done).group_by(seat.bot_position, other.bot_position))
            for mine, theirs, met, score in s.execute(versus):
                pair = (names[mine], names[theirs])
                tally.met[pair], tally.score[pair] = met, float(score)
        return tally

    def rating_history(self, tid: int) -> list[tuple[int, str, float, float]]:
        """(game number, bot, mu, sigma) after each rated game, in order."""
        with self.session() as s:
            rows = s.execute(select(RatingHistory.game_number, Bot.name, RatingHistory.mu, RatingHistory.sigma)
                             .join(Bot, Bot.id == RatingHistory.bot_id)
                             .where(RatingHistory.tournament_id == tid)
                             .order_by(RatingHistory.game_number, Bot.position))
            return [tuple(r) for r in rows]  # type: ignore[misc]


class RatingPass:
    """The rating step's view of the database inside one transaction: the bots' current ratings,
    the settled games after ``rated_through`` in number order, and a write per rated game. How a
    game changes ratings is not the store's business (play/rate.py decides)."""

    def __init__(self, s: Session, t: Tournament) -> None:
        self._s, self._t = s, t
        self._bots = {b.name: b for b in s.scalars(select(Bot).where(Bot.tournament_id == t.id))}
        self._names = {b.position: b.name for b in self._bots.values()}
        ids = [b.id for b in self._bots.values()]
        self._rows = {r.bot_id: r for r in s.scalars(select(Rating).where(Rating.bot_id.in_(ids)))}
        self._players = int(t.settings.get("players", 2))

    def ratings(self) -> dict[str, TrueSkillRating]:
        """Every bot's rating before this pass."""
        return {name: TrueSkillRating(self._rows[b.id].mu, self._rows[b.id].sigma) for name, b in self._bots.items()}

    def settled_games(self) -> Iterator[tuple[int, GameOutcome | None]]:
        """(number, outcome) of each game after ``rated_through`` in number order, None for a failed
        game; it stops at the first game still pending or running. Reads in batches, and only the
        columns rating needs (not the records)."""
        after = self._t.rated_through
        while True:
            rows = self._s.execute(
                select(Game.number, Game.round, Game.set_number, Game.deck_seed, Game.seat_bots, Game.status,
                       Game.attempt, Game.result)
                .where(Game.tournament_id == self._t.id, Game.number > after)
                .order_by(Game.number).limit(RATING_BATCH)
            ).all()
            for number, round_, set_number, deck_seed, seat_bots, status, attempt, result in rows:
                if number != after + 1 or status not in (GameStatus.DONE.value, GameStatus.FAILED.value):
                    return
                after = number
                if status == GameStatus.DONE.value:
                    row = GameRow(0, number, round_, set_number, deck_seed, tuple(seat_bots), status, attempt, result, None)
                    yield number, _outcome(row, self._names, self._players)
                else:
                    yield number, None
            if len(rows) < RATING_BATCH:
                return

    def rated(self, number: int, ratings: dict[str, TrueSkillRating]) -> None:
        """Game ``number`` is rated: the bots in it now have ``ratings`` (none for a failed game)."""
        for name, rating in ratings.items():
            bot = self._bots[name]
            current = self._rows[bot.id]
            current.mu, current.sigma, current.games = rating.mu, rating.sigma, current.games + 1
            self._s.add(RatingHistory(tournament_id=self._t.id, game_number=number, bot_id=bot.id,
                                      mu=rating.mu, sigma=rating.sigma))
        self._t.rated_through = number


def _live_owned() -> Any:
    """A live row whose game still runs with the attempt that wrote it (its own alias of games, so
    it correlates only with live_games in a query that also joins games)."""
    game = aliased(Game)
    return exists(select(game.id).where(game.id == LiveGame.game_id, game.status == GameStatus.RUNNING.value,
                                        game.attempt == LiveGame.attempt))


def _delete_live(task: GameTask) -> Any:
    """The row the attempt ``task`` wrote of its game, if any (not another attempt's)."""
    return delete(LiveGame).where(LiveGame.game_id == task.id, LiveGame.attempt == task.attempt)


def _schedule(s: Session, t: Tournament, round_number: int, games: Iterable[Any]) -> int:
    """Add ``games`` to tournament ``t`` as pending games of ``round_number``; how many."""
    count = 0
    for g in games:
        s.add(Game(tournament_id=t.id, number=g.number, round=round_number, set_number=g.set_number,
                   deck_seed=g.deck_seed, seat_bots=list(g.seat_bots), status=GameStatus.PENDING.value, attempt=0))
        count += 1
    return count


def _game_row(g: Game) -> GameRow:
    return GameRow(g.id, g.number, g.round, g.set_number, g.deck_seed, tuple(g.seat_bots), g.status, g.attempt,
                   g.result, g.error)


def _outcome(g: GameRow, names: dict[int, str], players: int) -> GameOutcome:
    assert g.result is not None
    result = json_format.ParseDict(g.result, game_pb2.GameResult())
    return GameOutcome.from_result(g.number, tuple(names[p] for p in g.seat_bots), sides_of(players), result)


def first_line(exc: BaseException) -> str:
    """The first line of a database error (the driver's message when there is one), for one-line errors."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
