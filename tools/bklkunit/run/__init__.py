# SPDX-License-Identifier: GPL-2.0
"""The runner: profiles, the typed plan and kunit.py command lines, progress,
builds skipped when nothing changed, the boots (first, later, coverage) and
the `run` and `clean` verbs."""
