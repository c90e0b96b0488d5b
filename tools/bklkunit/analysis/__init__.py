# SPDX-License-Identifier: GPL-2.0
"""Runs made to learn something: `ab` (what the series did to each case),
`bench` (plain kunit.py against ours) and `mutate` (each lock site taken out)."""
