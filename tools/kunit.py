#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""BKL end-game KUnit runner: a thin CLI over tools/bklkunit.

  prepare       unpack Debian's linux-source-6.12 into the cache as a git tree
                and apply kernel-patches/series
  export        write the work tree's commits back to kernel-patches/
  run           build and boot each arch through the tree's own kunit.py
  ab            run each arch on the pristine tree (A) and with the series (B):
                every case new / fixed / regressed by the series / unchanged
  fixtures      make (or find) the UFS fixture disk images and list them
  bench         plain kunit.py against our run: cold, warm, one-test edit, overhead
  check-series  series checks: applies, checkpatch --strict, each patch builds
  test          what `make test` and CI run: pytest, check-series (x86_64 boots), run on arm
  deps          install the Debian packages the arches need
  report        junit.xml, kcidb.json and index.html for a results directory
  baseline      record a run's per-case results as kunit/baselines/<arch>.json
  compare       a run against the baselines: regressions (exit 1), fixes, flakes
  clean         remove build directories (and with --all the whole cache)

See docs/ for the design, result layout and how to add a suite.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True

from bklkunit import cli  # noqa: E402

if __name__ == '__main__':
	sys.exit(cli.main(sys.argv[1:]))
