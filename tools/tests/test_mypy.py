# SPDX-License-Identifier: GPL-2.0
"""mypy is clean on tools/bklkunit (tools/mypy.ini), so `make pytest` and
`make test` (which runs pytest) fail when it is not.  mypy is one of the
packages `deps --with-test` installs (deps.TEST_PACKAGES)."""

import subprocess
import sys
from pathlib import Path

from bklkunit.base import deps

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / 'tools' / 'mypy.ini'


def test_mypy_is_installed_by_deps():
	assert 'mypy' in deps.TEST_PACKAGES


def test_mypy_is_clean():
	proc = subprocess.run([sys.executable, '-m', 'mypy', '--config-file', str(CONFIG)],
			      cwd=REPO, capture_output=True, text=True)
	if 'No module named mypy' in proc.stderr:
		raise AssertionError('mypy is not installed: apt-get install mypy '
				     '(or ./tools/kunit.py deps --with-test)')
	assert proc.returncode == 0, proc.stdout + proc.stderr
	assert 'Success: no issues found' in proc.stdout
