"""submission sizes: what each submission keeps (its archive's bytes, its unpacked bytes) for the
per-user quota, and when its stored archive was pruned

Revision ID: 0007_submission_sizes
Revises: 0006_users
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007_submission_sizes'
down_revision = '0006_users'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions') as batch:
        batch.add_column(sa.Column('archive_bytes', sa.BigInteger(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('unpacked_bytes', sa.BigInteger(), nullable=False, server_default='0'))
        batch.add_column(sa.Column('pruned_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('ix_submissions_user_created', 'submissions', ['user_id', 'created_at'], unique=False)


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
