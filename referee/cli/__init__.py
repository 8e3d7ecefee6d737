"""The ``referee`` command: its sub-commands (main), ``match``/``check`` (match), the demo and the
text rendering of games and records (render)."""
