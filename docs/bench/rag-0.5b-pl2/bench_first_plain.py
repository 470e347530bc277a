"""`specdraft bench ...` with SpeculationConfig.plain_first_step on for every request (the default
is off; this is what turning it on in the configs would do). Usage: python bench_first_plain.py bench rag ..."""
import sys

import specdraft.policy as policy

_init = policy.SpeculationPolicy.__init__


def _init_first_plain(self, config, cost):
    _init(self, config, cost)
    self._first_step = True  # as SpeculationConfig(plain_first_step=True)


policy.SpeculationPolicy.__init__ = _init_first_plain

from specdraft.apps.cli.entry_point import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
