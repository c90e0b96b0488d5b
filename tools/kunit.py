#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""BKL end-game KUnit runner: a thin CLI over tools/bklkunit.

`./tools/kunit.py --help` lists the verbs and what each does (bklkunit/cli.py
is the one place they are defined); `./tools/kunit.py VERB --help` gives a
verb's options.  See docs/ for the design, result layout and how to add a suite.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True

from bklkunit import cli  # noqa: E402

if __name__ == '__main__':
	sys.exit(cli.main(sys.argv[1:]))
