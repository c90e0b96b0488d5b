# SPDX-License-Identifier: GPL-2.0
"""gcov coverage of the subsystems: what is profiled, the guest's side, the
counters read back, lcov tracefiles, the numbers per arch and their table."""
