# SPDX-License-Identifier: GPL-2.0
"""The series upkeep: check-series (its plan, the modules and boot checks, the
checks of every patch) and the series as mail."""
