"""``python -m nova``: the same as the ``nova`` command."""

from nova.cli.main import main

raise SystemExit(main())
