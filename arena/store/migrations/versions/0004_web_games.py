"""web game lists: game_seats (a finished game's bot, result and forfeit per seat, indexed) filled
for the games already stored; indexes on one bot's rating history and on when games finished

Revision ID: 0004_web_games
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from arena.store.game_seats import fill_game_seats

revision = '0004_web_games'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('game_seats',
    sa.Column('tournament_id', sa.Integer(), nullable=False),
    sa.Column('game_number', sa.Integer(), nullable=False),
    sa.Column('seat', sa.Integer(), nullable=False),
    sa.Column('bot_position', sa.Integer(), nullable=False),
    sa.Column('outcome', sa.String(length=8), nullable=True),
    sa.Column('forfeited', sa.Boolean(), nullable=False),
    sa.Column('forfeit', sa.String(length=16), nullable=True),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('side', sa.Integer(), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=True),
    sa.Column('points', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['tournament_id', 'game_number'], ['games.tournament_id', 'games.number'],
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('tournament_id', 'game_number', 'seat')
    )
    op.create_index('ix_game_seats_bot', 'game_seats', ['tournament_id', 'bot_position', 'game_number'])
    op.create_index('ix_game_seats_bot_outcome', 'game_seats',
                    ['tournament_id', 'bot_position', 'outcome', 'game_number'])
    op.create_index('ix_game_seats_forfeited', 'game_seats', ['tournament_id', 'forfeited', 'game_number'])
    op.create_index('ix_rating_history_bot', 'rating_history', ['bot_id', 'game_number'])
    op.create_index('ix_games_finished', 'games', ['tournament_id', 'finished_at'])
    op.create_index('ix_games_tournament_status', 'games', ['tournament_id', 'status'])
    fill_game_seats(op.get_bind())


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
