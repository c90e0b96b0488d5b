# SPDX-License-Identifier: GPL-2.0
"""Host side of the BKL end-game KUnit suite: prepare, run, report."""

# The tool's version (`kunit.py --version`); the formats of what it writes
# are versioned on their own (rundir.FORMAT, jsonout.FORMAT, ...).
VERSION = '1.1'
