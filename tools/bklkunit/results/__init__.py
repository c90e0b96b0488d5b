# SPDX-License-Identifier: GPL-2.0
"""The result model and its files: statuses, cases and arches (model), the
adapter to the tree's kunit_tool, a console read into cases and a verdict,
results directories and series.json read and written, and the exporters."""
