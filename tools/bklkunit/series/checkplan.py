# SPDX-License-Identifier: GPL-2.0
"""What `check-series` is to do, typed: its options, read once and checked
before anything is written, and which patches boot with which suites.

SeriesOptions is the command line (checks, the arches of the per-patch and
module builds, --from-patch, the boots' scope).  boot_plan() is the boot
check's choice for one patch, from its patch file alone (the message's
Fixes: trailer as commitmsg reads it, the files its diff touches):

  a patch boots     when it is a fix (a Fixes: trailer) or touches a KUnit
                    suite: a file under a tests/ directory, a .kunitconfig,
                    a *_KUNIT_TEST Kconfig entry, include/kunit/ or
                    lib/kunit/; and the series head always boots
  with the suites   of the subsystem it touches (`ufs_*`, `appletalk_*`,
                    `autofs_*`: adding-a-suite.md's naming rule), every
                    suite when it touches the KUnit helpers, more than one
                    subsystem or a file of none (--boot-suites=all: always
                    every suite)
  and their cases   but those KUnit's speed attribute marks slow (the
                    fault-injection and stress cases), reported as skipped;
                    the head runs every suite and every case
                    (--boot-slow: every boot does)

The costs behind that choice are in docs/series-checks.md.
"""

import argparse
import dataclasses
import enum
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..base import paths
from ..base.errors import UserError
from ..source import commitmsg, subsystems

ALL_CHECKS = ['apply', 'checkpatch', 'fixes', 'maintainers', 'build', 'boot', 'bkl-scan',
	      'go7007', 'modules', 'mail']
# The per-patch checks: --from-patch starts them at a later patch.
PER_PATCH = ('checkpatch', 'fixes', 'maintainers', 'build', 'boot')
# The boots run the x86_64 build (CI's arch); other arches are built only.
BOOT_ARCH = 'x86_64'
# A boot runs its suites through kunit.py exec --timeout: a hang costs this.
BOOT_TIMEOUT = 600
# KUnit's attribute filter of a boot that leaves the slow cases out.
SKIP_SLOW = 'speed>slow'
# The suites of a subsystem (subsystems.SUBSYSTEMS: where its files are), by the
# naming rule of docs/adding-a-suite.md.  A change to the KUnit helpers
# boots every suite, their own (kunit_thread, kunit_watch) with the others.
SUITE_PREFIX: Dict[str, str] = {'ufs': 'ufs_', 'appletalk': 'appletalk_', 'autofs': 'autofs_'}
KUNIT_DIRS = ('include/kunit/', 'lib/kunit/')


def suite_glob(subsystem: Optional[str]) -> str:
	"""The filter glob of a subsystem's suites ('' for none of its own)."""
	return SUITE_PREFIX[subsystem] + '*' if subsystem in SUITE_PREFIX else ''


class BuildConfig(enum.StrEnum):
	"""The configuration of the per-patch builds."""
	FULL = 'full'       # every suite, the `faults` profile's kunit_tool config (booted)
	LEAN = 'lean'       # tinyconfig + every suite built in (kunit/modules.config
			    # with m made y): the cheap check that each patch builds


class BootScope(enum.StrEnum):
	"""Which suites a boot runs."""
	SUBSYSTEM = 'subsystem'       # those of the subsystem the patch touches
	ALL = 'all'                   # every suite the build has


# ------------------------------------------------------------ the patches


_HUNK = re.compile(r'^@@ [^@]* @@(?P<context>.*)$')
_CONFIG = re.compile(r'^config\s+(\w+)')
# A suite's Kconfig symbol: <SUITE>_KUNIT_TEST in the subsystems, and
# KUNIT_<SUITE>_TEST for KUnit's own (lib/kunit/Kconfig: KUNIT_EXAMPLE_TEST).
_SUITE_SYMBOL = r'(?:\w+_KUNIT_TEST|KUNIT_\w+_TEST)'
_TEST_SYMBOL = re.compile(r'\b' + _SUITE_SYMBOL + r'\b')


def is_suite_symbol(name: str) -> bool:
	return re.fullmatch(_SUITE_SYMBOL, name) is not None


def kconfig_test_entries(patch_text: str) -> List[str]:
	"""The *_KUNIT_TEST entries a patch adds, removes or changes in a
	Kconfig file: a changed line that names one, or a changed line inside
	one (the `config` line above it, in the hunk or in git's hunk header)."""
	out: List[str] = []
	kconfig = False
	entry = ''
	for line in patch_text.splitlines():
		if line.startswith('diff --git '):
			kconfig = bool(re.search(r'/Kconfig[^/\s]*$', line))
			entry = ''
			continue
		if not kconfig or line.startswith(('--- ', '+++ ')):
			continue
		m = _HUNK.match(line)
		if m:
			c = _CONFIG.match(m.group('context').strip())
			entry = c.group(1) if c else ''
			continue
		if line[:1] not in (' ', '+', '-'):
			continue
		c = _CONFIG.match(line[1:])
		if c:
			entry = c.group(1)
		names = _TEST_SYMBOL.findall(line[1:]) if line[0] != ' ' else []
		if line[0] != ' ' and is_suite_symbol(entry):
			names.append(entry)
		for n in names:
			if n not in out:
				out.append(n)
	return out


def suite_files(touched: Sequence[str]) -> List[str]:
	"""The files of a patch that belong to a KUnit suite or to KUnit."""
	return [f for f in touched
		if '/tests/' in f or f.startswith('tests/') or f.rsplit('/', 1)[-1] == '.kunitconfig'
		or f.startswith(KUNIT_DIRS)]


@dataclass(frozen=True)
class BootPlan:
	"""The boot of one patch's build."""
	patch: str                      # the patch file's name
	why: Tuple[str, ...]            # 'Fixes: 1234... ("...")', 'touches fs/ufs/tests/x.c', 'series head'
	subsystems: Tuple[str, ...]     # what the patch touches (subsystems.SUBSYSTEMS names)
	glob: str                       # kunit.py exec's filter glob ('' : every suite)
	skip_slow: bool                 # the cases marked slow are skipped

	@property
	def suites(self) -> str:
		"""The suites, as the check's detail says them."""
		what = f"'{self.glob}'" if self.glob else 'every suite'
		return what + (' (slow cases skipped)' if self.skip_slow else ', slow cases too')


def boot_plan(name: str, patch_text: str, scope: BootScope = BootScope.SUBSYSTEM,
	      head: bool = False, slow: bool = False) -> Optional[BootPlan]:
	"""Whether the patch named name (its format-patch text) boots, and
	with which suites; None when it is neither a fix nor a suite change
	(nor the series head)."""
	msg = commitmsg.split(patch_text)
	touched = subsystems.touched_files(patch_text)
	why = [t for t in msg.tags('Fixes')]
	why += [f'touches {f}' for f in suite_files(touched)]
	why += [f'changes the Kconfig entry {s}' for s in kconfig_test_entries(patch_text)]
	if head:
		why.append('series head')
	if not why:
		return None
	subs: List[str] = []
	for f in touched:
		s = subsystems.of_file(f)
		if s and s not in subs:
			subs.append(s)
	outside = [f for f in touched if subsystems.of_file(f) is None and f not in subsystems.NEUTRAL]
	glob = ''
	if scope == BootScope.SUBSYSTEM and not head and len(subs) == 1 and not outside:
		glob = suite_glob(subs[0])
	return BootPlan(name, tuple(why), tuple(subs), glob, skip_slow=not (head or slow))


# -------------------------------------------------- what the series defines


def test_symbols(diff_text: str) -> Dict[str, str]:
	"""{symbol: Kconfig file} of every *_KUNIT_TEST entry a diff adds
	(`git diff <pristine> <commit>`): the series' suites up to that commit."""
	out: Dict[str, str] = {}
	path = ''
	for line in diff_text.splitlines():
		if line.startswith('+++ '):
			path = line[4:].strip()
			path = path[2:] if path.startswith('b/') else path
			continue
		m = re.match(r'^\+config\s+(' + _SUITE_SYMBOL + r')\b', line)
		if m and re.search(r'(^|/)Kconfig[^/]*$', path):
			out[m.group(1)] = path
	return out


# ------------------------------------------------------------ the options


def add_arguments(p: argparse.ArgumentParser) -> None:
	"""check-series' options about what to check (checkseries adds the rest)."""
	p.add_argument('--checks', default=','.join(ALL_CHECKS),
		       help=f'comma list of checks to run (default: all: {",".join(ALL_CHECKS)})')
	p.add_argument('--build-arches', default=None, metavar='A[,B]',
		       help='arches of the per-patch build and of the modules check: '
			    f'{", ".join(paths.SERIES_ARCHES)} or all (default: {BOOT_ARCH}; boots '
			    f'are {BOOT_ARCH} only)')
	p.add_argument('--all-arches', action='store_true',
		       help='--build-arches=all: every patch built on the four arches (long; '
			    'not in CI: docs/series-checks.md)')
	p.add_argument('--from-patch', default=None, metavar='N',
		       help='start the per-patch checks (checkpatch, fixes, maintainers, build, '
			    'boot) at patch N (a number, 1 = the first; default 1)')
	p.add_argument('--to-patch', default=None, metavar='N',
		       help='end the per-patch checks at patch N (default: the last)')
	p.add_argument('--shard', default=None, metavar='K/N',
		       help='the per-patch checks on the Kth of N contiguous ranges of the series '
			    '(sizes differing by at most one: shard_range), instead of --from-patch '
			    'and --to-patch; what CI splits the series with')
	p.add_argument('--build-config', default=BuildConfig.FULL.value,
		       choices=[c.value for c in BuildConfig],
		       help='the per-patch builds\' configuration: full (the `faults` profile\'s, '
			    'booted; default) or lean (tinyconfig with every suite built in: a '
			    'fraction of the objects and of the link, never booted, so no boot '
			    'check)')
	p.add_argument('--no-boot', action='store_true',
		       help='leave out the boot check (the per-patch builds are not booted)')
	p.add_argument('--boot-suites', default=BootScope.SUBSYSTEM.value,
		       choices=[s.value for s in BootScope],
		       help='which suites a boot runs: those of the subsystem the patch touches '
			    '(default) or all of them')
	p.add_argument('--boot-slow', action='store_true',
		       help='every boot runs the cases KUnit marks slow too (default: only the '
			    'series head; the others report them skipped)')
	p.add_argument('--boot-timeout', default=str(BOOT_TIMEOUT), metavar='S',
		       help=f'seconds a boot may run before it is killed (default {BOOT_TIMEOUT})')


def shard_range(k: int, n: int, patches: int) -> Tuple[int, int]:
	"""The patches (first, last; 1 is the first) of shard k of n: n
	contiguous ranges of the series, in order, their sizes differing by at
	most one.  A shard beyond the series' length is empty (first > last)."""
	return (k - 1) * patches // n + 1, k * patches // n


def parse_shard(text: str, patches: int) -> Tuple[int, int, Tuple[int, int]]:
	"""--shard K/N: (k, n, its range); a UserError when it is not one."""
	k_text, sep, n_text = str(text).partition('/')
	if not sep:
		raise UserError(f'--shard {text}: not K/N (e.g. 2/4)')
	n = _whole(n_text, '--shard N', 1)
	k = _whole(k_text, '--shard K', 1)
	if k > n:
		raise UserError(f'--shard {text}: K is more than N')
	if n > patches:
		raise UserError(f'--shard {text}: the series has {patches} patches, fewer than {n} shards')
	return k, n, shard_range(k, n, patches)


def _whole(text: Union[str, int], option: str, low: int) -> int:
	try:
		n = int(text)
	except (TypeError, ValueError):
		raise UserError(f'{option}: not a whole number: {text!r}')
	if n < low:
		raise UserError(f'{option}: must be at least {low}, not {n}')
	return n


@dataclass(frozen=True)
class SeriesOptions:
	"""check-series' command line, read once (from_args) and checked."""
	checks: Tuple[str, ...] = tuple(ALL_CHECKS)
	build_arches: Tuple[str, ...] = (BOOT_ARCH,)
	from_patch: int = 1
	to_patch: int = 0             # 0: the last patch
	scope: BootScope = BootScope.SUBSYSTEM
	slow: bool = False
	boot_timeout: int = BOOT_TIMEOUT
	build_config: BuildConfig = BuildConfig.FULL
	shard: str = ''               # --shard K/N as given ('' : none)
	# How the checks run: make -j (0: nproc), ccache, -v, where series.json
	# goes, the go7007 arches (as given) and whether to record its baseline.
	jobs: int = 0
	use_ccache: bool = True
	verbose: bool = False
	results_dir: Optional[Path] = None
	go7007_arch: str = 'all'
	update_go7007_baseline: bool = False
	allow_install: bool = True

	def wants(self, check: str) -> bool:
		return check in self.checks

	def takes(self, index: int) -> bool:
		"""Whether the per-patch checks take the patch at 0-based index."""
		return self.from_patch - 1 <= index and (not self.to_patch or index < self.to_patch)

	def range_note(self, patches: int) -> str:
		"""' (per-patch checks on patches A-B)' when not all of them, else ''."""
		last = self.to_patch or patches
		if self.from_patch == 1 and last == patches:
			return ''
		return f' (per-patch checks on patches {self.from_patch}-{last})'

	@classmethod
	def from_args(cls, args: argparse.Namespace, patches: int) -> 'SeriesOptions':
		"""The options of a command line for a series of `patches`
		patches; a UserError (one line) for anything wrong."""
		a = vars(args)
		results_dir = a.get('results_dir')
		return dataclasses.replace(
			cls._checked(a, patches), jobs=a.get('jobs') or 0,
			use_ccache=not a.get('no_ccache', False), verbose=bool(a.get('verbose')),
			results_dir=Path(results_dir).resolve() if results_dir else None,
			go7007_arch=a.get('go7007_arch') or 'all',
			update_go7007_baseline=bool(a.get('update_go7007_baseline')),
			allow_install=not a.get('no_install', False))

	@classmethod
	def _checked(cls, a: Dict[str, Any], patches: int) -> 'SeriesOptions':
		"""The checks, arches and patches of a command line (from_args)."""
		checks = [c.strip() for c in (a.get('checks') or '').split(',') if c.strip()]
		bad = [c for c in checks if c not in ALL_CHECKS]
		if bad:
			raise UserError(f'unknown check(s) {", ".join(bad)}; choose from '
					f'{", ".join(ALL_CHECKS)}')
		if not checks:
			raise UserError(f'--checks names no check; choose from {", ".join(ALL_CHECKS)}')
		if a.get('no_boot'):
			if 'boot' in checks and a.get('checks') != ','.join(ALL_CHECKS):
				raise UserError('--no-boot contradicts --checks, which names boot')
			checks = [c for c in checks if c != 'boot']
		config = BuildConfig(a.get('build_config') or BuildConfig.FULL)
		if config == BuildConfig.LEAN and 'boot' in checks:
			if a.get('checks') not in (None, ','.join(ALL_CHECKS)):
				raise UserError('--build-config=lean builds kernels that are not booted: '
						'leave boot out of --checks')
			checks = [c for c in checks if c != 'boot']
		spec = a.get('build_arches')
		if a.get('all_arches'):
			if spec is not None and tuple(_arches(spec)) != tuple(paths.SERIES_ARCHES):
				raise UserError(f'--all-arches contradicts --build-arches={spec}')
			spec = 'all'
		arches = tuple(_arches(spec if spec is not None else BOOT_ARCH))
		if 'boot' in checks:
			if 'build' not in checks:
				raise UserError('the boot check boots the build check\'s kernels: add build '
						'to --checks (or leave boot out)')
			if BOOT_ARCH not in arches:
				raise UserError(f'the boot check boots the {BOOT_ARCH} builds: add '
						f'{BOOT_ARCH} to --build-arches, or --no-boot')
		first = 1
		shard = ''
		if a.get('shard') is not None:
			if a.get('from_patch') is not None or a.get('to_patch') is not None:
				raise UserError('--shard contradicts --from-patch and --to-patch: give one or '
						'the other')
			k, n, (first, last) = parse_shard(a['shard'], patches)
			shard = f'{k}/{n}'
			return dataclasses.replace(cls(*cls._rest(a, checks, arches, first, last, config)),
						   shard=shard)
		if a.get('from_patch') is not None:
			first = _whole(a['from_patch'], '--from-patch', 1)
			if first > patches:
				raise UserError(f'--from-patch {first}: the series has {patches} patches')
		last = 0
		if a.get('to_patch') is not None:
			last = _whole(a['to_patch'], '--to-patch', 1)
			if last > patches:
				raise UserError(f'--to-patch {last}: the series has {patches} patches')
			if last < first:
				raise UserError(f'--to-patch {last} is before --from-patch {first}')
		return cls(*cls._rest(a, checks, arches, first, last, config))

	@staticmethod
	def _rest(a: Dict[str, Any], checks: List[str], arches: Tuple[str, ...], first: int,
		  last: int, config: BuildConfig) -> Tuple[Any, ...]:
		return (tuple(checks), arches, first, last, BootScope(a.get('boot_suites') or
								      BootScope.SUBSYSTEM),
			bool(a.get('boot_slow')),
			_whole(a.get('boot_timeout') or BOOT_TIMEOUT, '--boot-timeout', 1), config)


def _arches(spec: str) -> List[str]:
	try:
		arches = paths.parse_arches(spec, paths.SERIES_ARCHES)
	except ValueError as e:
		raise UserError(f'--build-arches: {e}')
	if 'um' in arches:
		raise UserError(f'--build-arches: um has no per-patch build; choose from '
				f'{", ".join(paths.SERIES_ARCHES)} or all')
	return arches


whole = _whole     # merge's --expect-shards
