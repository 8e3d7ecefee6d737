"""challenges: a user's unrated match of one of their bots against another, in duplicate pairs
until a number of pairs or the sequential test's verdict; its games in a tournament of their own

Revision ID: 0010_challenges
Revises: 0009_platform_faults
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010_challenges'
down_revision = '0009_platform_faults'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'challenges',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=True),
        sa.Column('tournament_id', sa.Integer(), nullable=False),
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('opponent_id', sa.Integer(), nullable=False),
        sa.Column('games_tournament_id', sa.Integer(), nullable=True),
        sa.Column('pairs_asked', sa.Integer(), nullable=True),
        sa.Column('max_pairs', sa.Integer(), nullable=False),
        sa.Column('seed', sa.BigInteger(), nullable=False),
        sa.Column('unit', sa.String(length=8), nullable=False),
        sa.Column('bounds', sa.JSON(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('verdict', sa.String(length=16), nullable=True),
        sa.Column('margin', sa.Float(), nullable=True),
        sa.Column('interval_low', sa.Float(), nullable=True),
        sa.Column('interval_high', sa.Float(), nullable=True),
        sa.Column('games_played', sa.Integer(), nullable=False),
        sa.Column('games_failed', sa.Integer(), nullable=False),
        sa.Column('pairs', sa.JSON(), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['tournament_id'], ['tournaments.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['bot_id'], ['bots.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['opponent_id'], ['bots.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['games_tournament_id'], ['tournaments.id'], ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_challenges_user_created', 'challenges', ['user_id', 'created_at'])
    op.create_index('ix_challenges_tournament_status', 'challenges', ['tournament_id', 'status'])


def downgrade() -> None:
    raise NotImplementedError("the arena does not downgrade; restore a backup instead")
