# SPDX-License-Identifier: GPL-2.0
"""The UFS image toolkit: the fixture images (made with makefs, verified),
their C form the kernel suites carry, and the `fixtures` verb."""
