"""scale-out: procrastinate's job queue (PostgreSQL), which job and worker play a game, bot archives

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.queue_schema import apply_procrastinate_schema

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('games') as batch:
        batch.add_column(sa.Column('job_id', sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column('worker', sa.String(length=255), nullable=True))
    with op.batch_alter_table('bots') as batch:
        batch.add_column(sa.Column('archive', sa.String(length=64), nullable=True))
    op.create_table('bot_archives',
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('content', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('sha256')
    )
    apply_procrastinate_schema(op)


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
