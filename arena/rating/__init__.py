"""Rating and statistics, pure: game outcomes (results), TrueSkill (ratings), standings tables
(standings) and the sequential tests of ``arena compare`` (stats)."""
