"""``python -m flawedcode``: the same as the ``flawedcode`` command (see ``flawedcode.cli``)."""

from flawedcode.cli import main

raise SystemExit(main())
