"""operators: web users who see what a bot's owner sees of every bot (its logs, errors, notes)

Revision ID: 0008_operators
Revises: 0007_submission_sizes
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008_operators'
down_revision = '0007_submission_sizes'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.add_column(sa.Column('operator', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
