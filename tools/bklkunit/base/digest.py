# SPDX-License-Identifier: GPL-2.0
"""The sha256 of a file: the config_hash a run records of each build's
.config (run/runner.py) and the one compare works out for older results
(compare/baseline.py)."""

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
	"""sha256 of a file, '' when it cannot be read."""
	try:
		return hashlib.sha256(Path(path).read_bytes()).hexdigest()
	except OSError:
		return ''
