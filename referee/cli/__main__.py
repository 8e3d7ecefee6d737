"""``python -m referee.cli``: the ``referee`` command."""

from .main import main

raise SystemExit(main())
