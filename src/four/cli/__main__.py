"""``python -m four.cli``: the same as the ``four`` command."""

from four.cli import main

raise SystemExit(main())
