# SPDX-License-Identifier: GPL-2.0
"""The base layer: errors that end a command, the one writer of result files,
where things live (repository, cache, arch table, locks) and Debian packages.
Imports nothing else of bklkunit."""
