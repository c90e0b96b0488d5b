# SPDX-License-Identifier: GPL-2.0
"""Host side of the BKL end-game KUnit suite: prepare, run, report."""
