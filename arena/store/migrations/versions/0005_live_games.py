"""live games: each running game's plays so far, for the web's live pages

Revision ID: 0005_live_games
Revises: 0004_web_games
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005_live_games'
down_revision = '0004_web_games'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('live_games',
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('tournament_id', sa.Integer(), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('plays', sa.Integer(), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('record', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['games.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tournament_id'], ['tournaments.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('game_id')
    )
    op.create_index(op.f('ix_live_games_tournament_id'), 'live_games', ['tournament_id'], unique=False)


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
