# SPDX-License-Identifier: GPL-2.0
"""`run --coverage`: what is profiled, how, and what the numbers are measured
against (docs/coverage.md).

QEMU arches: CONFIG_GCOV_KERNEL (kunit/coverage/gcov.config) with
GCOV_PROFILE given on make's command line as an expression of the directory
being built (make_option), so only the subsystems' objects get
-fprofile-arcs and no kernel Makefile is patched; the counters come out
through the console (gcovinit.py builds the /init that prints them,
gcovdump.py reads them back).  UML: CONFIG_GCOV (kunit/coverage/uml.config,
the tree's coverage_uml.config), the host's libgcov writes the .gcda files
into the build directory when the UML process exits.

Either way a second boot that runs no suite (BOOT_ONLY_GLOB) gives what the
kernel executes before the suites start (the subsystems' initcalls, KUnit's
executor); measure.py subtracts it, so the numbers are the suites' alone.
"""

from pathlib import Path
from typing import Dict, List, Tuple

from ..base import paths

# The directories profiled, and the name each is reported under.
SUBSYSTEMS: Dict[str, str] = {
	'fs/ufs': 'ufs',
	'net/appletalk': 'appletalk',
	'fs/autofs': 'autofs',
	'lib/kunit': 'kunit',
}
DIRS: Tuple[str, ...] = tuple(SUBSYSTEMS)

# The files issue #30 sets the goal for: GOAL percent of their lines that the
# configuration builds.
GOAL = 90.0
GOAL_FILES: Tuple[str, ...] = (
	'net/appletalk/ddp.c', 'net/appletalk/aarp.c',
	'fs/ufs/inode.c', 'fs/ufs/balloc.c', 'fs/ufs/ialloc.c', 'fs/ufs/namei.c',
	'fs/ufs/dir.c', 'fs/ufs/super.c',
	'fs/autofs/root.c', 'fs/autofs/dev-ioctl.c', 'fs/autofs/waitq.c', 'fs/autofs/expire.c',
)

# kunit.py exec's filter glob of the boot that runs no suite: what the
# kernel executes of the profiled files before the suites start.
BOOT_ONLY_GLOB = 'bkl_coverage_boot_only_no_such_suite'

# The build directory of a coverage run: <cache>/build/<key>[-<profile>]-coverage/<arch>.
BUILD_SUFFIX = '-coverage'
ARCHES = ('x86_64', 'i386', 'arm', 'arm64', 'um')


# The profiles a coverage run is built with, and why not the others.
# faults adds reach: its failslab and fail_page_alloc cases walk error paths
# (and build lib/kunit/fault.c).
NOT_WITH_PROFILE: Dict[str, str] = {
	'kasan': 'KASAN does not change which lines the suites reach, and its instrumentation '
		 'and a 900 s guest timeout only make the run slower; use default or faults',
	'kcsan': 'KCSAN would report the gcov counters themselves (plain increments from every '
		 'CPU) as data races; use default or faults',
}


def profile_problem(profile: str) -> str:
	"""Why --coverage cannot be combined with this profile, or ''."""
	why = NOT_WITH_PROFILE.get(profile)
	return f'--coverage with --profile {profile}: {why}' if why else ''


def make_option() -> str:
	"""GCOV_PROFILE for make's command line: y in the profiled directories
	and below, n elsewhere.  A command-line variable overrides the
	Makefiles' own `GCOV_PROFILE := n` (which this keeps: those directories
	are not ours), is passed to every sub-make as written, and is expanded
	where it is used (scripts/Makefile.lib, per object), when $(obj) is the
	directory of the object being compiled.  A file's own
	GCOV_PROFILE_<file>.o := n still wins (it comes first there)."""
	pats = ' '.join(f'{d} {d}/%' for d in DIRS)
	return f'GCOV_PROFILE=$(if $(filter {pats},$(obj)),y,n)'


def fragment(arch: str) -> Path:
	"""The kunitconfig fragment of a coverage build on arch."""
	name = 'uml.config' if arch == 'um' else 'gcov.config'
	return paths.KUNIT_DIR / 'coverage' / name


def uses_console(arch: str) -> bool:
	"""Whether the counters come out through the guest's console (the QEMU
	arches) rather than as files the UML process writes."""
	return arch != 'um'


def subsystem_of(path: str) -> str:
	"""The subsystem a source path (relative to the tree) belongs to, or ''."""
	for d, name in SUBSYSTEMS.items():
		if path.startswith(d + '/'):
			return name
	return ''


def is_test_file(path: str) -> bool:
	"""A suite's own source: not what is measured."""
	name = Path(path).name
	return ('/tests/' in f'/{path}' or name.endswith(('_test.c', '-test.c', '_tests.c'))
		or name.startswith('test_') or name in ('kunit-example-test.c',))


def measured(path: str, kunit_files: List[str]) -> bool:
	"""Whether a profiled source file counts: a subsystem's code, not its
	tests; of lib/kunit only the files the series adds (kunit_files), not
	KUnit's framework."""
	sub = subsystem_of(path)
	if not sub or is_test_file(path):
		return False
	if sub == 'kunit':
		return path in kunit_files
	return True
