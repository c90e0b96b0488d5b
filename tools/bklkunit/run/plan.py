# SPDX-License-Identifier: GPL-2.0
"""What a run is to do, typed, and the kunit.py command lines it makes.

RunOptions is what `run` (and `ab`, whose sides are runs) takes from its
command line, read once by RunOptions.from_args; ArchPlan is one arch of
it: the tree, the arch, the build and results directories, the
kunitconfig fragments.  ArchPlan.build_command and ArchPlan.exec_command
are the one place where the kernel's `kunit.py build` and `kunit.py exec`
command lines are made (the first boot, the boots after it, both sides of
`ab`; ArchPlan.config_command is check-series' `kunit.py config`); bench's
plain `kunit.py run` takes its options from here too.
"""

import argparse
import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from . import profiles, progress
from ..base import paths
from ..base.errors import UserError
from ..coverage import scope, umlgcov

DEFAULT_TIMEOUT = 300
DEFAULT_SUITE_TIMEOUT = 120
# Seconds a `kunit.py exec` may run past its own --timeout before run kills
# it (progress.stream's deadline: --timeout + EXEC_GRACE after it was
# started).  At --timeout kunit.py kills its guest (QEMU) itself; what is
# left then is its parse of the console it already read, which takes
# seconds, and starting up.  Past that, its kunit_parser loops on the
# console (6.12 does on some garbled ones: docs/design.md), and the boot
# is a CRASH, never a pass (ArchPlan.exec_killed).
EXEC_GRACE = 300
PROGRESS_INTERVAL = progress.INTERVAL
# Guests get two vCPUs: the race and stress cases of the suites need a second
# CPU to race on.  (--smp 1 for a single-CPU guest.)
DEFAULT_SMP = 2
# The kernel command line of every boot of `run` and `ab` (first boots,
# re-runs, --list_tests), whatever the profile: printk timestamps on the
# console, so each case has a duration and a start time (cases.py,
# rundir.py).  printk.time works whatever CONFIG_PRINTK_TIME says.  Not
# bench's plain side, unless --same-guest: that is kunit.py as a developer
# types it.
GUEST_KERNEL_ARGS: Tuple[str, ...] = ('printk.time=1',)
# And on the PC guests (x86_64, i386): no PS/2 keyboard or mouse port.  Their
# devices are probed asynchronously (serio's workqueue) while the suites
# print, and the 6.12 kunit_parser misreads a suite whose nested "KTAP
# version 1" and "# Subtest:" lines have "input: ImExPS/2 Generic Explorer
# Mouse ..." between them: the cases before it are given to a nameless
# subtest and the suite is reported crashed (seen 2026-12-05 in the boot of
# the then 0038 in check-series, ufs_image, a complete and passing console).
PC_GUEST_KERNEL_ARGS: Tuple[str, ...] = ('i8042.nokbd', 'i8042.noaux')


def guest_kernel_args(arch: str) -> Tuple[str, ...]:
	"""GUEST_KERNEL_ARGS, and PC_GUEST_KERNEL_ARGS on x86_64 and i386."""
	return GUEST_KERNEL_ARGS + (PC_GUEST_KERNEL_ARGS if arch in ('x86_64', 'i386') else ())


def profile_named(name: str) -> profiles.Profile:
	"""The profile of that name (one not in PROFILES: its fragment, no options)."""
	return profiles.PROFILES.get(name) or profiles.Profile(name, '')


def kunitconfigs(arch: str, extra: Sequence[str], profile: str = profiles.DEFAULT,
		 with_coverage: bool = False) -> List[Path]:
	"""The repo's .kunitconfig, the default debug profile (the arch's own
	copy where it cannot have all of it: profiles.default_fragment), the
	profile's own fragment, the arch fragment, the coverage fragment
	(with_coverage), the user's."""
	out = [paths.KUNITCONFIG, profiles.default_fragment(arch)]
	if profile != profiles.DEFAULT:
		out.append(paths.KUNIT_DIR / 'profiles' / f'{profile}.config')
	frag = paths.KUNIT_DIR / 'arch' / f'{arch}.config'
	if frag.exists():
		out.append(frag)
	if with_coverage:
		out.append(scope.fragment(arch))
	out.extend(Path(e).resolve() for e in extra)
	for p in out:
		if not p.exists():
			raise UserError(f'kunitconfig fragment {p} does not exist')
	return out


# The ccache directory when no --ccache-dir is given (run, ab, check-series,
# test alike): a CI job's cached one.  Default <cache>/ccache.
CCACHE_DIR_ENV = 'BKL_KUNIT_CCACHE_DIR'


def build_env(cache: Path, ccache_dir: Optional[Path] = None) -> Dict[str, str]:
	"""The environment of kunit.py: reproducible build stamps, ccache
	(ccache_dir, else $BKL_KUNIT_CCACHE_DIR, else <cache>/ccache)."""
	env = dict(os.environ)
	env.update({
		'PYTHONDONTWRITEBYTECODE': '1',
		# Reproducible build stamps, so ccache hits survive across runs.
		'KBUILD_BUILD_TIMESTAMP': '2011-01-25 00:00:00 UTC',
		'KBUILD_BUILD_USER': 'bkl-kunit',
		'KBUILD_BUILD_HOST': 'kunit',
		'CCACHE_DIR': str(ccache_dir or os.environ.get(CCACHE_DIR_ENV) or cache / 'ccache'),
		'CCACHE_BASEDIR': str(cache),
		'CCACHE_MAXSIZE': os.environ.get('CCACHE_MAXSIZE', '20G'),
		'CCACHE_NOHASHDIR': '1',
	})
	return env


@dataclass(frozen=True)
class RunOptions:
	"""The options of a run, as its command line gave them."""
	profile: profiles.Profile = profiles.PROFILES[profiles.DEFAULT]
	filter_glob: str = ''
	kunitconfig: Tuple[str, ...] = ()        # the user's extra fragments
	kconfig_add: Tuple[str, ...] = ()
	qemu_args: Tuple[str, ...] = ()          # the user's, after the vCPUs
	smp: int = DEFAULT_SMP
	timeout: Optional[int] = None            # --timeout; guest_timeout() decides
	suite_timeout: int = DEFAULT_SUITE_TIMEOUT
	jobs: int = 1
	use_ccache: bool = True
	ccache_dir: Optional[Path] = None
	always_build: bool = False
	verbose: bool = False
	progress_interval: float = PROGRESS_INTERVAL
	rerun_failures: int = 0
	crash_rerun: bool = True
	exec_grace: float = EXEC_GRACE           # not an option: EXEC_GRACE, or a test's
	# --coverage: gcov of the subsystems (scope.py, docs/coverage.md).
	coverage: bool = False
	# kunit.py exec --filter (KUnit's test attributes, e.g. 'speed>slow'),
	# with --filter_action=skip: the cases it leaves out are reported as
	# skipped, not dropped ('' for none).  check-series' boots use it.
	attr_filter: str = ''
	# buildinputs fingerprints of the trees, taken once per run ({tree: hash}),
	# shared by every copy of these options (with_jobs).
	fingerprints: Dict[str, str] = field(default_factory=dict, compare=False)

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'RunOptions':
		"""The options of `run` (or of `ab`, of a test's partial Namespace:
		what it lacks is the default)."""
		a = vars(args)
		ccache_dir = a.get('ccache_dir')
		return cls(
			profile=profile_named(a.get('profile') or profiles.DEFAULT),
			filter_glob=a.get('filter_glob') or '',
			kunitconfig=tuple(a.get('kunitconfig') or ()),
			kconfig_add=tuple(a.get('kconfig_add') or ()),
			qemu_args=tuple(a.get('qemu_args') or ()),
			smp=a.get('smp', DEFAULT_SMP),
			timeout=a.get('timeout'),
			suite_timeout=a.get('suite_timeout', DEFAULT_SUITE_TIMEOUT),
			jobs=a.get('jobs') or 1,
			use_ccache=not a.get('no_ccache', False),
			ccache_dir=Path(ccache_dir).resolve() if ccache_dir else None,
			always_build=bool(a.get('always_build', False)),
			verbose=bool(a.get('verbose', False)),
			progress_interval=a.get('progress_interval', PROGRESS_INTERVAL),
			rerun_failures=a.get('rerun_failures', 0) or 0,
			crash_rerun=not a.get('no_crash_rerun', False),
			coverage=bool(a.get('coverage', False)),
			exec_grace=EXEC_GRACE)

	def with_jobs(self, jobs: int) -> 'RunOptions':
		return dataclasses.replace(self, jobs=jobs, fingerprints=self.fingerprints)

	def with_kconfig_add(self, kconfig_add: Sequence[str]) -> 'RunOptions':
		return dataclasses.replace(self, kconfig_add=tuple(kconfig_add),
					   fingerprints=self.fingerprints)

	def guest_timeout(self) -> int:
		"""--timeout, else the profile's (a KASAN guest is slower), else the default."""
		if self.timeout is not None:
			return self.timeout
		return self.profile.timeout or DEFAULT_TIMEOUT

	def qemu_extra(self, arch: str) -> List[str]:
		"""The --qemu_args of a boot besides the profile's: vCPUs, then the
		user's own.  None for UML: it boots no QEMU."""
		return qemu_extra(arch, self.profile, self.qemu_args, self.smp)

	def exec_options(self, arch: str) -> List[str]:
		"""kunit.py exec's --qemu_args and --kernel_args: the profile's, the
		vCPUs, the user's; then guest_kernel_args(arch)."""
		return profiles.exec_options(self.profile.name, self.qemu_extra(arch),
					     guest_kernel_args(arch), arch)


@dataclass(frozen=True)
class RunRequest:
	"""The `run` command (and what `ab` shares with it), read once from its
	command line by from_args: nothing below the verb's entry sees the
	command line itself."""
	arches: Tuple[str, ...]
	profile: profiles.Profile
	cache: Path
	options: RunOptions
	tree: Optional[Path] = None          # --tree (None: the prepared work tree)
	apply_series: bool = False
	results_dir: Optional[Path] = None   # --results-dir (None: <cache>/results/<timestamp>)
	build_dir: Optional[Path] = None     # --build-dir (None: <cache>/build/<key>/)
	allow_install: bool = True           # not --no-install
	compare: bool = False
	baseline_dir: Optional[str] = None   # --baseline-dir, as given
	parallel: int = 0

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'RunRequest':
		"""`run`'s (or `ab`'s) command line; a UserError for an arch list
		it cannot read."""
		a = vars(args)
		try:
			arches = tuple(paths.parse_arches(a['arch']))
		except ValueError as e:
			raise UserError(str(e))
		profile = profiles.get(a.get('profile') or profiles.DEFAULT)
		cache = paths.cache_dir(a.get('cache_dir'))

		def resolved(v: Optional[str]) -> Optional[Path]:
			return Path(v).resolve() if v else None
		return cls(arches, profile, cache, RunOptions.from_args(args),
			   tree=resolved(a.get('tree')), apply_series=bool(a.get('apply_series')),
			   results_dir=resolved(a.get('results_dir')),
			   build_dir=resolved(a.get('build_dir')),
			   allow_install=not a.get('no_install', False),
			   compare=bool(a.get('compare')), baseline_dir=a.get('baseline_dir'),
			   parallel=a.get('parallel') or 0)


def qemu_extra(arch: str, profile: profiles.Profile, qemu_args: Sequence[str] = (),
	       smp: int = DEFAULT_SMP) -> List[str]:
	"""RunOptions.qemu_extra for these options alone (bench's plain side)."""
	if arch == 'um':
		return []
	out: List[str] = []
	user = ' '.join(qemu_args)
	has_smp = '-smp' in user or any('-smp' in q for q in profile.qemu_args)
	# A uniprocessor machine (m68k's virt) gets one CPU, whatever --smp says.
	if smp and smp > 1 and not has_smp and paths.ARCHES[arch].smp:
		out.append(f'-smp {smp}')
	return out + list(qemu_args)


def make_options(arch: str, use_ccache: bool) -> List[str]:
	if not use_ccache or not shutil.which('ccache'):
		return []
	cc = paths.ARCHES[arch].cross_compile + 'gcc'
	return [f'CC=ccache {cc}', 'HOSTCC=ccache gcc']


@dataclass
class ArchPlan:
	"""One arch of a run: what to build, where, and how to boot it."""
	ktree: Path
	arch: str
	build_dir: Path
	out: Path                       # its results directory
	options: RunOptions
	fragments: List[Path]           # kunitconfig fragments, in order
	tag: str = ''                   # shown after the arch in progress lines ('ab' sides)
	# --coverage on a QEMU arch: the qemu_config kunit.py exec boots with
	# (gcovinit.py: the tree's, with the initramfs), instead of --arch.
	qemu_config: Optional[Path] = None

	@property
	def name(self) -> str:
		return f'{self.arch} ({self.tag})' if self.tag else self.arch

	def kunit(self) -> List[str]:
		"""The tree's own kunit_tool, under this interpreter."""
		return [sys.executable, str(self.ktree / 'tools/testing/kunit/kunit.py')]

	def common(self, booting: bool = False) -> List[str]:
		"""The options build and exec share: arch (kunit.py's name of it; for
		a boot, the qemu_config when there is one), build directory, cross
		compiler."""
		where = (f'--qemu_config={self.qemu_config}' if booting and self.qemu_config
			 else f'--arch={paths.ARCHES[self.arch].kernel_arch}')
		out = [where, f'--build_dir={self.build_dir}']
		cross = paths.ARCHES[self.arch].cross_compile
		if cross:
			out.append(f'--cross_compile={cross}')
		return out

	def config_command(self) -> List[str]:
		"""kunit.py config: the .config of the fragments, nothing built."""
		cmd = self.kunit() + ['config'] + self.common()
		cmd += [f'--kunitconfig={k}' for k in self.fragments]
		cmd += [f'--make_options={m}' for m in make_options(self.arch, self.options.use_ccache)]
		return cmd

	def build_command(self) -> List[str]:
		o = self.options
		cmd = self.kunit() + ['build'] + self.common() + [f'--jobs={o.jobs}']
		cmd += [f'--kunitconfig={k}' for k in self.fragments]
		cmd += [f'--kconfig_add={k}' for k in o.kconfig_add]
		cmd += [f'--make_options={m}' for m in make_options(self.arch, o.use_ccache)]
		if o.coverage and scope.uses_console(self.arch):
			cmd.append(f'--make_options={scope.make_option()}')
		elif o.coverage:
			cmd += [f'--make_options={m}' for m in umlgcov.make_options(self.ktree, self.build_dir)]
		return cmd

	def exec_command(self, extra: Sequence[str] = (), timeout: Optional[int] = None,
			 json: Optional[Path] = None) -> List[str]:
		"""kunit.py exec: timeout (default: the first boot's), --json, the
		attribute filter (its cases skipped), the profile's and the vCPU
		options, then extra (a filter glob, --list_tests)."""
		t = self.options.guest_timeout() if timeout is None else timeout
		cmd = self.kunit() + ['exec'] + self.common(booting=True) + [f'--timeout={t}']
		if json is not None:
			cmd.append(f'--json={json}')
		if self.options.attr_filter:
			cmd += [f'--filter={self.options.attr_filter}', '--filter_action=skip']
		return cmd + self.options.exec_options(self.arch) + list(extra)

	def exec_deadline(self, timeout: Optional[int] = None) -> float:
		"""Seconds after its start at which a kunit.py exec of exec_command(timeout=timeout)
		is killed (progress.stream's deadline): its --timeout plus EXEC_GRACE."""
		t = self.options.guest_timeout() if timeout is None else timeout
		return t + self.options.exec_grace

	def exec_killed(self, timeout: Optional[int] = None, console: str = 'console.log') -> str:
		"""Why a boot killed at exec_deadline(timeout) is a CRASH, one line."""
		t = self.options.guest_timeout() if timeout is None else timeout
		return (f'kunit.py exec did not end within {self.options.exec_grace:g} s of its guest '
			f'timeout ({t} s), or printed one line {progress.REPEAT_LIMIT:,} times in a row, '
			f'and was killed; its console parser may loop on this console: see {console}')
