"""platform faults: each game counts the attempts the platform could not play (a full disk, no
descriptors, a sandbox that would not start), so such a game is played again a bounded number of
times and then failed for the operator; and the workers paused by one, for `arena status`

Revision ID: 0009_platform_faults
Revises: 0008_operators
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009_platform_faults'
down_revision = '0008_operators'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('games') as batch:
        batch.add_column(sa.Column('platform_faults', sa.Integer(), nullable=False, server_default='0'))
    op.create_table(
        'worker_pauses',
        sa.Column('worker', sa.String(length=255), nullable=False),
        sa.Column('queue_worker_id', sa.BigInteger(), nullable=True),
        sa.Column('condition', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.Text(), nullable=False),
        sa.Column('since', sa.DateTime(timezone=True), nullable=False),
        sa.Column('next_check_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('worker'),
    )


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
