"""race_harness: the local race harness of the MNIST-medium time challenge (issue 48, item 3).

The group's entries are judged remotely by the published pixel harness (1.1.x) on an A100; a try
there costs a queue slot and tells little when it fails. This package runs the same protocol here,
from its published description (docs/race.md), so that an entry is known to pass its band, to keep
its outputs valid and its times consistent, and to stay out of the sandbox's forbidden paths before
it is submitted; and so that a band's candidate configuration of the revgraph engine can be judged
on the very draws on a machine without a GPU.

  tools/race run ENTRY.py --idx-dir DIR [...]   an entry through the protocol's calls (cuda or cpu)
  tools/race engine --band N --idx-dir DIR      the engine's predictions on the same 11 draws
  tools/race draws --seed S --output D.npz      the draws themselves, to hold against the generator
  tools/race check ENTRY.py                     the entry file's static rules only

Modules, each saying why it exists:
  errors    the two failures a command reports (bad input: exit 1; usage: exit 2), and SIGTERM
  draws     IDX files -> the 9x9 pool -> the halves, the 11 ranked draws, foreign draws; seeds
  rules     an entry file's static rules, read with ast, before anything of it runs
  sandbox   the audit hook that refuses the protocol's forbidden paths while the entry runs
  runner    import an entry, stage the calls into the same three tensors, flush, time, validate
  package   the built revgraph Python package (BUILD/python), found the way tools/frontier does
  verdict   the band's verdict (the engine's revgraph.band_verdict), hold-out and consistency rules
  report    the JSON report and the one-line verdict; atomic writes
  cli       the command line

tools/ is the tools' one import root (tools/python_with.py); tools/race is the thin command.
"""

PROTOCOL = "pixel harness 1.1.x"
HARNESS = "revgraph tools/race 1"
# The default local seed; no entry may be chosen on it (issue 48, item 3 -> 48_0003). Choosing or
# tuning an entry on the draws it judges would make its pass mean nothing on the judge's secret draws.
DEFAULT_SEED = 480003
