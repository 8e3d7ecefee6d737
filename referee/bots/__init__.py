"""Bot sessions: where a bot is (endpoint), how its process is started (launcher), waiting for it
(health) and one bot of a match across its games: start, handshake, restart (slot)."""
