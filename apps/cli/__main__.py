"""``python -m specdraft.apps.cli``: the `specdraft` command line."""

import sys

from .entry_point import main

sys.exit(main())
