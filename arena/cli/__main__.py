"""``python -m arena.cli``: the ``arena`` command."""

from .main import main

raise SystemExit(main())
