"""Scheduling, kept as data: round-robin pairings, seat rotations, deck seeds, ladder pairings (pairings)."""
