"""Matches: what a match is (spec), one game between started bots (game), its record (record) and
result (outcome), a whole match (run) and what it reports (report)."""
