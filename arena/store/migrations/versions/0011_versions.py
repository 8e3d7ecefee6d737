"""versions: when each bot last entered its ladder's pool (the tournament's last game number at
that moment), so a version rolled back to, or newly accepted, counts its first games from there
and is scheduled first until it has played them (arena/schedule/pairings.py, docs/web.md "Versions")

Revision ID: 0011_versions
Revises: 0010_challenges
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011_versions'
down_revision = '0010_challenges'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('bots') as batch:
        batch.add_column(sa.Column('entered_after', sa.Integer(), nullable=True))


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
