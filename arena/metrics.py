"""The arena's Prometheus metrics: every name and label in one place (docs/operations.md); the
referee's, recorded wherever a game is played, are in referee/metrics.py, which also serves both
(``--metrics-listen``)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

WEB_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

GAMES_STORED = Counter("arena_games_stored", "Games this process stored, by status (done: a result; failed: "
                       "the referee or the platform could not finish it).", ["status"])
RATING_UPDATES = Counter("arena_rating_updates", "Games rated (each rating pass adds the games it rated).")
DATABASE_ERRORS = Counter("arena_database_errors", "Errors the database raised, by exception class.", ["error"])
QUEUE_JOBS = Gauge("arena_queue_jobs", "The followed tournament's game jobs now, by procrastinate status "
                   "(the coordinator: arena run --queue, arena serve --queue).", ["status"])
QUEUE_STALLED = Gauge("arena_queue_stalled_jobs", "Running game jobs whose worker has no recent heartbeat.")
QUEUE_RETRIED = Gauge("arena_queue_retried_jobs", "Waiting or running game jobs that ran before (attempts > 0).")
QUEUE_WORKERS = Gauge("arena_queue_workers", "Workers with a recent heartbeat.")
WORKER_JOBS = Counter("arena_worker_jobs", "Jobs this worker ran, by task and outcome.", ["task", "outcome"])
WORKER_PAUSED = Gauge("arena_worker_paused", "1 while this worker takes no games after a platform fault, "
                      "until its check of the condition passes; else 0.")
WORKER_PAUSES = Counter("arena_worker_pauses", "Times this worker paused after a platform fault, by condition "
                        "(disk, descriptors, memory, sandbox, runtime, database).", ["condition"])
QUEUE_PAUSED = Gauge("arena_queue_paused_workers", "Live workers paused by a platform fault (any tournament's).")
WEB_REQUESTS = Counter("arena_web_requests", "Requests the web app answered, by route (its path template) "
                       "and status code.", ["route", "status"])
WEB_SECONDS = Histogram("arena_web_request_seconds", "Time the web app took to answer, by route.", ["route"],
                        buckets=WEB_BUCKETS)
