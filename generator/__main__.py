"""`python -m generator` is the `pith-mirror` command."""

from .cli import main

raise SystemExit(main())
