# SPDX-License-Identifier: GPL-2.0
"""The kernel source: the work tree (Debian's pristine source as git plus the
series), commit messages, Kconfig lines and the subsystems the series touches."""
