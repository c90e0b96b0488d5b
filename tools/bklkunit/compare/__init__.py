# SPDX-License-Identifier: GPL-2.0
"""Baselines and comparisons: per-case baselines (kunit/baselines/<arch>.json),
regressions, cross-arch divergence and coverage baselines."""
