"""`python -m generator` is the `pith-mirror` command."""

from .commands.cli import main

raise SystemExit(main())
