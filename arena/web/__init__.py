"""The web app (`arena web`): pages over the arena's database, every page also JSON (docs/web.md)."""
