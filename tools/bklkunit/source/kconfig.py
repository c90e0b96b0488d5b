# SPDX-License-Identifier: GPL-2.0
"""Kconfig text: the symbols a Kconfig file defines, and the two forms of an
option in a .config or a kunitconfig fragment (kunit_tool's kunit_config.py
reads the same two), for `ab` (the A side's fragments) and check-series'
modules check (modulescheck: a .config against its fragment)."""

import re
from typing import Dict, Optional

# `config FOO` / `menuconfig FOO` in a Kconfig file.
KCONFIG_DEFINITION = re.compile(r'^\s*(?:menu)?config\s+([A-Za-z0-9_]+)', re.M)
# kunit_config.py's two forms of an option; anything else is a comment.
OPTION_SET = re.compile(r'^CONFIG_(\w+)=(\S+|".*")$')
OPTION_UNSET = re.compile(r'^# CONFIG_(\w+) is not set$')


def option_symbol(line: str) -> Optional[str]:
	"""The symbol a line sets or unsets, None for a comment."""
	s = line.strip()
	m = OPTION_SET.match(s) or OPTION_UNSET.match(s)
	return m.group(1) if m else None


def config_values(text: str) -> Dict[str, str]:
	"""A .config as {symbol: value} ('n' for `# CONFIG_X is not set`)."""
	out: Dict[str, str] = {}
	for line in text.splitlines():
		m = OPTION_SET.match(line.strip())
		u = OPTION_UNSET.match(line.strip())
		if m:
			out[m.group(1)] = m.group(2)
		elif u:
			out[u.group(1)] = 'n'
	return out
