"""Alembic environment: the arena runs migrations itself (arena.store.store), handing over
its own connection; ``alembic -x url=...`` from a shell works too."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from arena.store.models import Base
from arena.store.queue_schema import include_object

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True,
                          include_object=include_object)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    engine = create_engine(url)
    with engine.connect() as conn:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True,
                          include_object=include_object)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; pass -x url=... instead")
run_migrations_online()
