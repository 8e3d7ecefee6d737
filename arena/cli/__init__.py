"""The ``arena`` command: thin sub-commands (main, compare, demo) and terminal rendering (console,
live, describe)."""
