"""``python -m scorer.cli``: the ``semif`` command without the console script."""

import sys

from scorer.cli import main

sys.exit(main())
