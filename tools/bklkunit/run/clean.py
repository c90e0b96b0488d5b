# SPDX-License-Identifier: GPL-2.0
"""`kunit.py clean`: the build directories and results of the cache
removed, each build directory under the lock its builds hold.

`run`, `ab` and `mutate` hold <build dir>.lock while they build and boot a
build directory (runner.run_arch).  clean takes that same lock before it
removes the directory, and removes the lock file while it still holds it:
a build running on the same cache is waited for ("Waiting for the build
directory ...: in use by pid N"), never removed from under it, and a build
that was waiting for the lock makes it again (paths.locked).  A build that
starts while clean runs is found on the next pass and waited for too.

With --all the whole cache goes: the build directories as above, then,
with every other lock of the cache (the work tree's, ab's, the series
checks') held at once, the rest.  Those are not waited for: a command
holding one (a prepare, an ab, a check-series) makes clean refuse, in one
line, before the rest is removed.
"""

import contextlib
import shutil
from pathlib import Path
from typing import List

from ..base import paths

LOCK = '.lock'


def build_locks(root: Path) -> List[Path]:
	"""The build directories' lock files under a build root:
	<root>/<key>/<arch>.lock (and <root>/<name>.lock)."""
	found = set(root.glob(f'*{LOCK}')) | set(root.glob(f'*/*{LOCK}'))
	return sorted(p for p in found if p.is_file())


def remove_builds(root: Path) -> List[Path]:
	"""Every build directory under root, each under its lock, then root;
	returns what was removed."""
	removed: List[Path] = []
	while True:
		locks = build_locks(root)
		if not locks:
			break
		for lock in locks:
			bdir = lock.with_name(lock.name[:-len(LOCK)])
			with paths.locked(lock, f'the build directory {bdir}'):
				if bdir.is_dir() and not bdir.is_symlink():
					print(f'Removing {bdir}', flush=True)
					shutil.rmtree(bdir)
					removed.append(bdir)
				lock.unlink(missing_ok=True)
	if root.exists():
		print(f'Removing {root}', flush=True)
		shutil.rmtree(root)
		removed.append(root)
	return removed


def other_locks(cache: Path) -> List[Path]:
	"""The cache's other lock files (the work tree's, ab's, the series
	checks'): <cache>/*.lock and <cache>/*/*.lock."""
	found = set(cache.glob(f'*{LOCK}')) | set(cache.glob(f'*/*{LOCK}'))
	return sorted(p for p in found if p.is_file())


def clean(cache: Path, everything: bool = False) -> List[Path]:
	"""`kunit.py clean [--all]`; returns what was removed."""
	removed: List[Path] = []
	for root in (cache / 'build', cache / 'pristine' / 'build'):
		removed += remove_builds(root)
	if not everything:
		results = cache / 'results'
		if results.exists():
			print(f'Removing {results}', flush=True)
			shutil.rmtree(results)
			removed.append(results)
		return removed
	with contextlib.ExitStack() as held:
		for lock in other_locks(cache):
			held.enter_context(paths.locked(lock, str(lock.with_name(lock.name[:-len(LOCK)])),
							wait=False))
		if cache.exists():
			print(f'Removing {cache}', flush=True)
			shutil.rmtree(cache)
			removed.append(cache)
	return removed
