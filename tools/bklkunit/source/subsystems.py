# SPDX-License-Identifier: GPL-2.0
"""The subsystems the series touches, by where their files are: the one
table for the mail sets (mail.py), check-series' boot plan (checkplan.py)
and its modules check (modulescheck.py), and the files a patch touches."""

import re
from typing import Dict, List, Optional, Tuple

# The subsystem of a patch is where its files are.  A patch must touch
# exactly one; MAINTAINERS belongs to none (our test sections live there).
SUBSYSTEMS: Dict[str, Tuple[str, ...]] = {
	# The small APIs the fault helpers call, and their own suites.
	'mm': ('mm/', 'include/linux/fault-inject.h', 'include/linux/kmemleak.h',
	       'lib/Kconfig.debug', 'Documentation/fault-injection/',
	       'Documentation/dev-tools/kmemleak.rst'),
	'kunit': ('include/kunit/', 'lib/kunit/'),
	'ufs': ('fs/ufs/',),
	# MAINTAINERS' APPLETALK NETWORK LAYER: its headers with it.
	'appletalk': ('net/appletalk/', 'include/linux/atalk.h', 'include/uapi/linux/atalk.h'),
	'autofs': ('fs/autofs/',),
}
NEUTRAL = ('MAINTAINERS',)


def touched_files(text: str) -> List[str]:
	"""The files a patch touches (both sides of a rename), in order."""
	out: List[str] = []
	for m in re.finditer(r'^diff --git a/(\S+) b/(\S+)$', text, re.M):
		for f in m.groups():
			if f not in out:
				out.append(f)
	return out


def of_file(path: str) -> Optional[str]:
	"""The subsystem a file belongs to, None for none."""
	for name, prefixes in SUBSYSTEMS.items():
		if path.startswith(prefixes):
			return name
	return None
