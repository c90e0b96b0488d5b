# SPDX-License-Identifier: GPL-2.0
"""Debian packages: what is missing, and installing it when permitted."""

import os
import shlex
import subprocess
from typing import Iterable, List

from . import paths
from .errors import UserError

# What building any arch needs, on top of the per-arch packages in paths.ARCHES.
BUILD_PACKAGES = ['git', 'make', 'gcc', 'libc6-dev', 'flex', 'bison', 'bc',
		  'libelf-dev', 'libssl-dev', 'xz-utils', 'perl', 'ccache',
		  'python3', paths.SOURCE_PACKAGE]
# What running the suites needs beyond building: nothing (the UFS images are
# carried in the kernel; makefs is needed only to check and remake them).
RUN_PACKAGES: List[str] = []
# run --coverage: lcov (geninfo, genhtml) for the reports, and rsync, which the
# kernel's `make headers_install` needs for the UAPI headers that the guest's
# /init is built against (docs/coverage.md).
COVERAGE_PACKAGES = ['lcov', 'rsync']
# What `make test` needs beyond that.
# checkpatch's SPDX check (scripts/spdxcheck.py), for check-series; and
# git send-email (with the Mail::Address it needs) for its mail check.
CHECK_PACKAGES = ['python3-ply', 'python3-git', 'git-email', 'libmailtools-perl']
# tools/tests/test_mypy.py checks tools/bklkunit with mypy (tools/mypy.ini).
TEST_PACKAGES = ['python3-pytest', 'python3-jsonschema', 'python3-yaml', 'mypy', 'makefs',
		 'chromium'] + CHECK_PACKAGES


def dpkg_query(args: List[str]) -> subprocess.CompletedProcess[str]:
	"""dpkg-query with these arguments; a UserError when it cannot be run."""
	try:
		return subprocess.run(['dpkg-query'] + args, capture_output=True, text=True)
	except OSError as e:
		raise UserError(f'cannot run dpkg-query ({e.strerror}): this tool needs Debian\'s '
				'dpkg (package dpkg) on PATH to find its packages')


def missing(packages: Iterable[str]) -> List[str]:
	"""The packages of the list that dpkg does not report as installed."""
	wanted = sorted(set(packages))
	if not wanted:
		return []
	proc = dpkg_query(['-W', '-f=${Package} ${db:Status-Status}\n'] + wanted)
	installed = set()
	for line in proc.stdout.splitlines():
		parts = line.split()
		if len(parts) == 2 and parts[1] == 'installed':
			installed.add(parts[0].split(':')[0])
	return [p for p in wanted if p not in installed]


def install_command(packages: List[str]) -> List[str]:
	return ['apt-get', 'install', '-y', '--no-install-recommends'] + packages


def ensure(packages: Iterable[str], allow_install: bool = True) -> None:
	"""Install what is missing, or stop with the exact command to run."""
	need = missing(packages)
	if not need:
		return
	cmd = install_command(need)
	if not allow_install or os.geteuid() != 0:
		raise UserError('missing Debian packages: ' + ' '.join(need) +
				'\n  install them with:  sudo ' + shlex.join(cmd) +
				'\n  (or run as root without --no-install)')
	print('Installing missing Debian packages: ' + ' '.join(need), flush=True)
	env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
	proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
	if proc.returncode != 0:
		# An old package list is the usual cause on a fresh machine.
		subprocess.run(['apt-get', 'update'], env=env, capture_output=True)
		proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
	if proc.returncode != 0:
		tail = '\n'.join((proc.stdout + proc.stderr).splitlines()[-15:])
		raise UserError('apt-get could not install ' + ' '.join(need) + ':\n' + tail)
	still = missing(need)
	if still:
		raise UserError('still missing after apt-get: ' + ' '.join(still))


def for_arches(arches: Iterable[str]) -> List[str]:
	pkgs = list(BUILD_PACKAGES) + RUN_PACKAGES
	for a in arches:
		pkgs.extend(paths.ARCHES[a].packages)
	return pkgs
