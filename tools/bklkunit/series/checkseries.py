# SPDX-License-Identifier: GPL-2.0
"""`kunit.py check-series`: the checks every patch of the series must pass.

  apply        the series applies with git am to the pristine tree
  checkpatch   scripts/checkpatch.pl --strict on each patch
  maintainers  every file a patch adds is covered by a MAINTAINERS section
  build        every patch builds on its own (x86_64, the suite config; with
               --build-arches/--all-arches on more arches), with no warning
               in a file it touches, and W=1-clean objects
  boot         the x86_64 build of each fix and of each patch that touches a
               suite boots and passes the suites of its subsystem
               (checkplan.py chooses, bootcheck.py boots)
  bkl-scan     no <linux/smp_lock.h> include and no lock_kernel() call left
  go7007       drivers/media/usb/go7007 (the driver seed 001 took the BKL
               out of) builds with W=1 on each arch with no warning beyond
               kunit/baselines/go7007-w1/<arch>.txt
  modules      the series head with KUNIT=m and the subsystems as modules
               (kunit/modules.config over tinyconfig) builds, and every suite
               the fragment expects is enabled (modulescheck.py)
  mail         the series as per-subsystem mail sets and stable requests
               (mail.py, docs/mail.md): each set applies and passes
               git send-email --dry-run

The checks run in a scratch worktree of the prepared repository
(<cache>/series/src/...), never in the work tree a developer edits; one
check-series at a time per cache (<cache>/series/series.lock).
"""

import argparse
import functools
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Set, Tuple

from . import bootcheck, checkplan, mail, modulescheck
from .checkplan import BOOT_ARCH, SeriesOptions
from ..base import atomic, deps, paths
from ..base.argtypes import at_least
from ..base.errors import UserError
from ..results import seriesjob
from ..results.model import now
from ..results.seriesjob import SeriesCheck, SeriesJob, write_series_job
from ..run import progress
from ..run.plan import ArchPlan, RunOptions, build_env, kunitconfigs, make_options
from ..source import commitmsg, kconfig, tree

# checkpatch's FILE_PATH_CHANGES ("does MAINTAINERS need updating?") fires on
# every new file whatever MAINTAINERS says; the maintainers check replaces it
# with a real answer from get_maintainer.pl.
#
# UNKNOWN_COMMIT_ID: the Debian tree has no upstream history to look ids up
# in; the fixes check verifies every Fixes: tag against
# kunit/upstream-commits.txt instead.
CHECKPATCH_IGNORE = ['FILE_PATH_CHANGES', 'UNKNOWN_COMMIT_ID']
# The profile whose kunitconfig every patch is built with: it enables every suite.
FIXES_RE = re.compile(r'^Fixes:\s*(?P<id>[0-9a-f]+)\s+\("(?P<subject>.*)"\)\s*$')
WARNING_RE = re.compile(r'^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)? (?P<kind>warning|error): (?P<msg>.*)$')
# The niceness of the head checks' makes (go7007, modules), which run from
# a worktree of their own beside the per-patch builds (Checker.start_head):
# they take what the per-patch builds leave (a link is one CPU's work).
HEAD_NICE = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
	checkplan.add_arguments(p)
	p.add_argument('--go7007-arch', default='all',
		       help='arches for the go7007 W=1 build (default: all four)')
	p.add_argument('--update-go7007-baseline', action='store_true',
		       help='record the current go7007 W=1 warnings as the baseline')
	p.add_argument('--jobs', type=at_least(1), default=None, help='make -j (default: nproc)')
	p.add_argument('--no-ccache', action='store_true')
	p.add_argument('--results-dir', default=None, metavar='DIR',
		       help='also record every check in DIR/series.json, rewritten after each '
			    'check (what `merge` reads; docs/ci.md)')
	p.add_argument('-v', '--verbose', action='store_true')


def _debian_python_env() -> Dict[str, str]:
	"""checkpatch runs scripts/spdxcheck.py with the `python3` on PATH; it
	needs Debian's, which sees python3-ply and python3-git."""
	env = dict(__import__('os').environ)
	env['PATH'] = '/usr/bin:' + env.get('PATH', '')
	return env


# A MAINTAINERS entry line: one capital letter, a colon and a tab ("M:\t...").
_MAINTAINERS_TAG = re.compile(r'^[A-Z]:\s')


def maintainer_sections(output: str) -> List[str]:
	"""The section names `get_maintainer.pl --sections` printed: every line
	that is neither blank, indented nor an entry ("M:", "F:", ...).  Names
	are not all capitals ("KERNEL UNIT TESTING FRAMEWORK (KUnit)")."""
	return [l for l in output.splitlines()
		if l.strip() and not l[0].isspace() and not _MAINTAINERS_TAG.match(l)]


@dataclass
class Check:
	name: str
	ok: bool
	detail: str = ''
	seconds: float = 0.0


# A commit cited in the text of a message: 12+ hex digits and ("subject"),
# the subject possibly wrapped over lines.
CITED_RE = re.compile(r'\b(?P<id>[0-9a-f]{12,40})\s+\("(?P<subject>[^"]+)"\)')


def fixes_problems(patch_text: str, known: Dict[str, str]) -> Tuple[int, List[str]]:
	"""(number of upstream ids in the commit message - its Fixes: tags and
	the commits its text cites as `<id> ("subject")` - and the problems with
	them): each must be listed in upstream-commits.txt with that subject."""
	msg = commitmsg.split(patch_text)
	tags = msg.tags('Fixes')
	bad = []
	for t in tags:
		m = FIXES_RE.match(t)
		if not m or len(m.group('id')) < 12:
			bad.append(f'{t}: not `Fixes: <12+ hex> ("subject")`')
		elif known.get(m.group('id')[:12]) != m.group('subject'):
			bad.append(f'{t}: not in upstream-commits.txt with that subject')
	# The subject, the body and the other trailers may cite commits too.
	text = ' '.join(l.strip() for l in (msg.subject,) + msg.body + msg.trailers
			if l not in tags)
	cited = list(CITED_RE.finditer(text))
	for m in cited:
		subject = ' '.join(m.group('subject').split())
		if known.get(m.group('id')[:12]) != subject:
			bad.append(f'cites {m.group("id")} ("{subject}"): not in '
				   'upstream-commits.txt with that subject')
	return len(tags) + len(cited), bad


BKL_CALL_RE = re.compile(r'(^|[^\w])(un)?lock_kernel\s*\(|#\s*include\s*<linux/smp_lock\.h>')


def is_comment_hit(grep_line: str) -> bool:
	"""A `git grep -n` hit (path:line:text) whose match is only in a comment:
	a line inside a block comment (kernel style, starting with '*'), or a
	match that disappears once /* ... */ and // comments are removed."""
	text = grep_line.split(':', 2)[-1]
	stripped = text.lstrip()
	if stripped.startswith(('*', '/*', '//')) and '*/' not in stripped[2:]:
		return True
	code = re.sub(r'/\*.*?\*/', '', text)
	code = re.sub(r'/\*.*$', '', code)
	code = re.sub(r'//.*$', '', code)
	return not BKL_CALL_RE.search(code)


class Booting(NamedTuple):
	"""A boot running beside the builds (Checker._boot_patch)."""
	patch: Path
	plan: checkplan.BootPlan
	kernel: Path                                # its staged kernel
	future: 'Future[bootcheck.BootRecord]'


# Checker.add's arguments, kept by a check that runs in another thread and
# added (printed) by the main thread.
AddCheck = Callable[..., Any]


class Checker:
	# --results-dir: its series.json, rewritten after every check (None: not asked for).
	record: Optional[Path] = None

	def __init__(self, cache: Path, opts: SeriesOptions):
		self.cache = cache
		self.opts = opts
		self.jobs = opts.jobs or (os.cpu_count() or 1)
		self.results: List[Check] = []
		self.patches = tree.read_series(paths.PATCH_DIR)
		self.main = tree.find_prepared(cache)
		st = tree.load_state(self.main)
		self.pristine = st.pristine
		# --results-dir: series.json, rewritten after every check.
		self.record: Optional[Path] = None
		self.job = SeriesJob(series_hash=tree.series_hash(self.patches),
				     kernel_version=tree.upstream_version(st.debian_version),
				     debian_version=st.debian_version, patches=len(self.patches),
				     from_patch=self.opts.from_patch, to_patch=self.opts.to_patch,
				     shard=self.opts.shard, started=now(),
				     name=('' if any(self.opts.wants(c) for c in checkplan.PER_PATCH)
					   else 'head checks'))
		if opts.results_dir:
			self.record = opts.results_dir / seriesjob.FILE
			write_series_job(self.record, self.job)
		# Same depth below the cache as the main tree, so that relative paths
		# (and with them ccache hits) match the main builds.
		self.wt = cache / 'series' / 'src' / self.main.name
		self.build_root = cache / 'series' / 'build'
		self.logdir = cache / 'series' / 'logs'
		self.commits: List[str] = []
		self.boots: List[bootcheck.BootRecord] = []
		# The boot running beside the builds, at most one (_boot_patch).
		self._pool: Optional[ThreadPoolExecutor] = None
		self._booting: Optional[Booting] = None
		self._kunit_tool_patched: Optional[bool] = None     # _serial_boot
		# arch -> the commit whose olddefconfig made its build directory's
		# .config (_config_current).
		self._config_at: Dict[str, str] = {}
		self._init_head()

	def _init_head(self) -> None:
		"""The head checks' state and the makes' registry (__init__)."""
		# The head checks (go7007, modules) running beside the per-patch
		# builds from their own worktree: same depth below their root as
		# the per-patch tree and build directories below cache/series, so
		# that ccache's relative paths are those they had there.
		self.head_root = self.cache / 'series' / 'head'
		self.head_wt = self.head_root / 'src' / self.main.name
		self._head: Optional['Future[List[Tuple[Tuple[Any, ...], Dict[str, Any]]]]'] = None
		self._head_pool: Optional[ThreadPoolExecutor] = None
		self._head_stop = threading.Event()
		# The makes running, which stop_head ends.
		self._live: Set['subprocess.Popen[str]'] = set()
		self._live_lock = threading.Lock()

	def add(self, name: str, ok: bool, detail: str = '', seconds: float = 0.0,
		note: str = '') -> Check:
		"""Record a check and print its line (note: after it, even when it
		passed), its detail when it failed or with -v."""
		c = Check(name, ok, detail, seconds)
		self.results.append(c)
		if self.record:
			self.job.checks.append(SeriesCheck(name, ok, detail, round(seconds, 3)))
			write_series_job(self.record, self.job)
		mark = 'ok  ' if ok else 'FAIL'
		print(f'  {mark} {name}' + (f' ({seconds:.0f} s)' if seconds >= 1 else '')
		      + (f': {note}' if note else ''), flush=True)
		if detail and (not ok or self.opts.verbose):
			for line in detail.splitlines()[:40]:
				print('       ' + line)
		return c

	def in_range(self) -> List[Tuple[int, Path, str]]:
		"""(index, patch, commit) of the patches the per-patch checks take:
		--from-patch to --to-patch (commit '' before the series is applied)."""
		commits = self.commits or [''] * len(self.patches)
		return [(i, p, c) for i, (p, c) in enumerate(zip(self.patches, commits))
			if self.opts.takes(i)]

	# -------------------------------------------------------- worktree
	def worktree(self) -> None:
		if (self.wt / '.git').exists():
			tree.git(self.wt, 'am', '--abort', check=False)
		tree.scratch_worktree(self.main, self.wt, self.pristine, clean=True)

	def check_apply(self) -> bool:
		t0 = time.time()
		self.worktree()
		try:
			tree.apply_series(self.wt, self.patches)
		except UserError as e:
			self.add('apply', False, str(e), time.time() - t0)
			tree.git(self.wt, 'am', '--abort', check=False)
			return False
		out = tree.git(self.wt, 'rev-list', '--reverse', f'{self.pristine}..HEAD').stdout
		self.commits = out.split()
		self.add('apply', len(self.commits) == len(self.patches),
			 f'{len(self.patches)} patches onto pristine {self.pristine[:12]}',
			 time.time() - t0)
		return True

	def check_checkpatch(self) -> None:
		script = self.wt / 'scripts' / 'checkpatch.pl'
		for _, p, _ in self.in_range():
			t0 = time.time()
			proc = subprocess.run(['perl', str(script), '--strict', '--no-summary',
					       '--terse', '--show-types', '--color=never',
					       '--ignore', ','.join(CHECKPATCH_IGNORE), str(p)],
					      cwd=self.wt, capture_output=True, text=True,
					      env=_debian_python_env())
			out = (proc.stdout + proc.stderr).strip()
			self.add(f'checkpatch {p.name}', proc.returncode == 0 and not out, out,
				 time.time() - t0)

	def check_fixes(self) -> None:
		listing = mail.UPSTREAM_FILE
		known = mail.known_upstream(listing)
		for _, p, _ in self.in_range():
			tags, bad = fixes_problems(p.read_text(errors='replace'), known)
			if tags:
				self.add(f'fixes {p.name}', not bad, '\n'.join(bad) or
					 f'{tags} upstream id(s) match {listing.name}')

	def check_maintainers(self) -> None:
		for _, p, c in self.in_range():
			added = tree.git(self.wt, 'diff-tree', '--no-commit-id', '--name-only', '-r',
					 '--diff-filter=A', c).stdout.split()
			missing = []
			for f in added:
				proc = subprocess.run(['perl', 'scripts/get_maintainer.pl', '--no-git',
						       '--no-rolestats', '--sections', '-f', f],
						      cwd=self.wt, capture_output=True, text=True)
				if not [s for s in maintainer_sections(proc.stdout) if s != 'THE REST']:
					missing.append(f)
			self.add(f'maintainers {p.name}', not missing,
				 ('no MAINTAINERS section covers: ' + ', '.join(missing)) if missing
				 else f'{len(added)} new file(s) covered')

	# -------------------------------------------------------- builds
	def _make(self, bdir: Path, arch: str, targets: List[str], extra: List[str],
		  log: Path, srcdir: Path, nice: int = 0) -> subprocess.CompletedProcess[str]:
		a = paths.ARCHES[arch]
		cmd = ['make', '-C', str(srcdir), f'O={bdir}', f'ARCH={a.kernel_arch}', f'-j{self.jobs}']
		if a.cross_compile:
			cmd.append(f'CROSS_COMPILE={a.cross_compile}')
		cmd += make_options(arch, self.opts.use_ccache) + extra + targets
		# make's own children (in our process group: ^C reaches them) get
		# its niceness; make ends them when stop_head terminates it.
		proc = subprocess.Popen(progress.niced(cmd, nice), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
					text=True, env=build_env(self.cache))
		with self._live_lock:
			self._live.add(proc)
		try:
			out, err = proc.communicate()
		finally:
			with self._live_lock:
				self._live.discard(proc)
		with open(log, 'a') as f:
			f.write('$ ' + shlex.join(cmd) + '\n' + out + err)
		return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

	def check_build(self) -> None:
		"""Every patch of the range built on each arch of --build-arches,
		and (boot check) the x86_64 build of a patch checkplan.boot_plan
		picks booted beside the builds that follow it (_boot_patch; its
		result is added when the next boot starts, or by finish_boots)."""
		self.logdir.mkdir(parents=True, exist_ok=True)
		tree.git(self.wt, 'checkout', '-q', '--detach', self.commits[-1] if self.commits
			 else self.pristine)
		full = {}
		for arch in self.opts.build_arches:
			made = self._full_config(arch)
			if made:
				full[arch] = made
		for i, p, c in self.in_range():
			tree.git(self.wt, 'checkout', '-q', '--detach', c)
			for arch in self.opts.build_arches:
				if arch in full and self._build_patch(arch, p, c, full[arch]) \
				   and arch == BOOT_ARCH and self.opts.wants('boot'):
					self._boot_patch(i, p, c)

	def _config_current(self, arch: str, commit: str) -> bool:
		"""Whether arch's .config is what olddefconfig of the full
		configuration would make at commit: it made it at a commit whose
		Kconfig files are the same (the usual step from one patch to the
		next), so the copy and the olddefconfig (a make of their own, 5-7 s
		a patch) are left out."""
		at = self._config_at.get(arch)
		if not at or not commit:
			return False
		changed = tree.git(self.wt, 'diff', '--name-only', at, commit).stdout.split()
		return not any(Path(f).name.startswith('Kconfig') or f.startswith('scripts/kconfig/')
			       for f in changed)

	def _build_dir(self, arch: str) -> Path:
		"""One build directory per arch and configuration (ccache is
		shared: build_env)."""
		lean = self.opts.build_config == checkplan.BuildConfig.LEAN
		return self.build_root / ('lean' if lean else 'debian') / arch

	def _full_config(self, arch: str) -> Optional[Path]:
		"""The full suite configuration, made once at the top of the series
		and re-applied before each patch (olddefconfig at an early patch
		drops the symbols that later patches add).  The `faults` profile's
		fragments: the default one and the fault-injection options, so that
		every suite of the series, those that exist only with fault
		injection included, is compiled."""
		if self.opts.build_config == checkplan.BuildConfig.LEAN:
			return self._lean_config(arch)
		bdir = self._build_dir(arch)
		bdir.mkdir(parents=True, exist_ok=True)
		full = bdir / 'config.full'
		t0 = time.time()
		plan = ArchPlan(self.wt, arch, bdir, bdir, RunOptions(use_ccache=self.opts.use_ccache),
				kunitconfigs(arch, [], bootcheck.PROFILE))
		proc = subprocess.run(plan.config_command(), capture_output=True, text=True,
				      env=build_env(self.cache))
		if proc.returncode != 0:
			self.add('build config' + ('' if arch == BOOT_ARCH else f' {arch}'), False,
				 (proc.stdout + proc.stderr)[-3000:], time.time() - t0)
			return None
		shutil.copyfile(bdir / '.config', full)
		return full

	def _suite_symbols(self, wt: Path, commit: str) -> Dict[str, str]:
		"""The series' suites up to commit (checkplan.test_symbols)."""
		return checkplan.test_symbols(tree.git(wt, 'diff', self.pristine, commit, '--',
							'*Kconfig*').stdout)

	def _new_warnings(self, bdir: Path, arch: str, c: str, objs: List[str], log: Path,
			  warns: List[str]) -> Tuple[List[str], int]:
		"""warns less those the parent commit's objs had (W=1), and how
		many those were: a patch answers for the warnings it adds."""
		if not warns:
			return [], 0
		old = self._preexisting(bdir, arch, c, objs, log)
		kept = [w for w in warns if self._key(w) not in old]
		return kept, len(warns) - len(kept)

	def _lean_config(self, arch: str) -> Optional[Path]:
		"""--build-config=lean: tinyconfig with every suite of the series
		built in (modulescheck.lean_fragment), made at the top of the
		series like the full one.  The check fails when olddefconfig left
		one of the series' suites out of it: the lean builds would not
		compile that suite."""
		bdir = self._build_dir(arch)
		bdir.mkdir(parents=True, exist_ok=True)
		name = 'build config' + ('' if arch == BOOT_ARCH else f' {arch}')
		t0 = time.time()
		log = self.logdir / f'config-lean-{arch}.log'
		log.write_text('')
		frag = bdir / 'lean.config'
		atomic.write_text(frag, modulescheck.lean_fragment(arch))
		bad = modulescheck.configure(self._make, self.wt, bdir, arch, log, [frag],
					      build_env(self.cache))
		if bad:
			what, proc = bad
			self.add(name, False, f'{what} failed; see {log}\n'
				 + '\n'.join((proc.stdout + proc.stderr).splitlines()[-15:]),
				 time.time() - t0)
			return None
		suites = sorted(self._suite_symbols(self.wt, self.commits[-1] if self.commits
						    else self.pristine))
		config = kconfig.config_values((bdir / '.config').read_text(errors='replace'))
		off = modulescheck.not_built_in(config, suites)
		if off:
			self.add(name, False, 'the lean configuration does not build in '
				 + ', '.join(f'CONFIG_{s}' for s in off)
				 + f' (olddefconfig dropped it: a dependency tinyconfig lacks? {log})',
				 time.time() - t0)
			return None
		full = bdir / 'config.full'
		shutil.copyfile(bdir / '.config', full)
		self.add(name, True, f'{arch}: tinyconfig + {frag.name}, {len(suites)} suites built in',
			 time.time() - t0)
		return full

	def _build_patch(self, arch: str, p: Path, c: str, full: Path) -> bool:
		"""Build the checked-out patch c on arch; whether make succeeded
		(the check itself also fails on warnings)."""
		bdir = self._build_dir(arch)
		name = f'build {p.name}' if arch == BOOT_ARCH else f'build {arch} {p.name}'
		t0 = time.time()
		log = self.logdir / (f'build-{p.stem}.log' if arch == BOOT_ARCH
				     else f'build-{arch}-{p.stem}.log')
		log.write_text('')
		# The lean builds are all W=1: what a patch changes is compiled
		# once, at W=1, in the one make (the full ones build again at W=1
		# what the patch touches, below).
		lean = self.opts.build_config == checkplan.BuildConfig.LEAN
		w = ['W=1'] if lean else []
		if self._config_current(arch, c):
			proc = self._make(bdir, arch, [], w, log, self.wt)
		else:
			self._config_at.pop(arch, None)
			shutil.copyfile(full, bdir / '.config')
			proc = self._make(bdir, arch, ['olddefconfig'], w, log, self.wt)
			if proc.returncode == 0:
				if c:
					self._config_at[arch] = c
				proc = self._make(bdir, arch, [], w, log, self.wt)
		if proc.returncode != 0:
			self.add(name, False, f'see {log}\n' +
				 '\n'.join((proc.stdout + proc.stderr).splitlines()[-25:]),
				 time.time() - t0)
			return False
		touched = tree.git(self.wt, 'diff-tree', '--no-commit-id', '--name-only', '-r',
				   c).stdout.split()
		inherited = 0
		warns = self._warnings_in(proc.stdout + proc.stderr, touched)
		# W=1 on the objects of the C files the patch touches.
		objs = [t[:-2] + '.o' for t in touched
			if t.endswith('.c') and (bdir / (t[:-2] + '.o')).exists()]
		if lean:
			warns, inherited = self._new_warnings(bdir, arch, c, objs, log, warns)
			detail = f'{arch} lean, W=1 on all, {len(objs)} object(s) the patch touches'
			if inherited:
				detail += (f'; {inherited} warning(s) already in the parent commit, '
					   'not counted')
			self.add(name, not warns, '\n'.join(warns) if warns else detail,
				 time.time() - t0)
			return True
		if objs:
			for o in objs:
				(bdir / o).unlink()
			w1 = self._make(bdir, arch, objs, ['W=1'], log, self.wt)
			w1warns = self._warnings_in(w1.stdout + w1.stderr, touched)
			if w1.returncode != 0:
				warns.append(f'W=1 build of {" ".join(objs)} failed')
			for o in objs:
				# Leave W=0 objects behind for the next patch.
				(bdir / o).unlink(missing_ok=True)
			kept, inherited = self._new_warnings(bdir, arch, c, objs, log, w1warns)
			warns += kept
		detail = f'{arch}, W=1 on {len(objs)} object(s)'
		if objs and inherited:
			detail += (f'; {inherited} W=1 warning(s) already in the parent '
				   'commit, not counted')
		self.add(name, not warns, '\n'.join(warns) if warns else detail, time.time() - t0)
		return True

	def _boot_patch(self, i: int, p: Path, c: str) -> None:
		"""Start the boot check of patch i (checked out and built at c),
		beside what comes next: the next patches' builds, and after the
		head the mail check.  Its kernel is staged out of the build
		directory first (bootcheck.stage), and the boot before it is
		finished, so one guest runs at a time next to at most one build.
		Much of a boot is the guest sleeping (AARP's probes, kmemleak's
		object age) while a build wants both CPUs; the cases never depend
		on how fast the guest runs.  The worktree's git commands stay in
		this thread: the boot reads only tools/testing/kunit of the
		worktree, which no patch of the series touches (a patch that did
		is booted alone: see _serial_boot)."""
		plan = checkplan.boot_plan(p.name, p.read_text(errors='replace'), self.opts.scope,
					    head=i == len(self.patches) - 1, slow=self.opts.slow)
		if plan is None:
			return
		symbols = self._suite_symbols(self.wt, c)
		out = self.cache / 'series' / 'boots' / p.stem
		self.finish_boot()
		kernel = bootcheck.stage(self.wt, self._build_dir(BOOT_ARCH), out / 'kernel')
		if self._pool is None:
			self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='boot')
			# Its progress lines go between the builds' lines: never
			# rewritten in place.
			progress.LINES_ONLY = True
		fut = self._pool.submit(bootcheck.boot_patch, self.wt, kernel, out, self.cache, plan,
					symbols, self.opts.boot_timeout, self.opts.use_ccache,
					self.opts.verbose)
		self._booting = Booting(p, plan, kernel, fut)
		if self._serial_boot():
			self.finish_boot()

	def _serial_boot(self) -> bool:
		"""Whether boots must end before the worktree moves on: the series
		changes the kunit_tool the boot runs from the worktree."""
		if self._kunit_tool_patched is None:
			changed = tree.git(self.wt, 'diff', '--name-only', self.pristine,
					   self.commits[-1] if self.commits else self.pristine, '--',
					   'tools/testing/kunit').stdout
			self._kunit_tool_patched = bool(changed and changed.strip())
		return self._kunit_tool_patched

	def finish_boot(self) -> None:
		"""Wait for the boot running beside the builds, if any, and add its
		check (named after its patch, printed after the lines of the builds
		that ran beside it)."""
		if self._booting is None:
			return
		p, plan, kernel, fut = self._booting
		self._booting = None
		rec = fut.result()
		shutil.rmtree(kernel, ignore_errors=True)
		self.boots.append(rec)
		self.add(f'boot {p.name}', rec.ok, rec.detail(), rec.seconds,
			 note=f'{plan.suites}: {rec.passed} passed, {rec.failed} failed, '
			      f'{rec.skipped} skipped' + (' (no suite yet)' if rec.status ==
							  bootcheck.BootStatus.NO_SUITE else ''))

	def finish_boots(self) -> None:
		"""The last boot finished and every boot's record written
		(boots.json) with the summary line."""
		try:
			self.finish_boot()
		finally:
			if self._pool is not None:
				self._pool.shutdown(wait=True)
				self._pool = None
		if self.opts.wants('boot'):
			bootcheck.write_records(self.cache / 'series' / 'boots.json', self.boots)
			line = bootcheck.summary(self.boots)
			if line:
				print(f'  {line} (records: {self.cache / "series" / "boots.json"})')

	def stop_boots(self) -> None:
		"""^C, SIGTERM or an error: stop the running guest (its kunit.py
		exec runs in a session of its own, which ^C does not reach), wait
		for its thread, start no other."""
		booting, self._booting = self._booting, None
		if booting is not None:
			progress.stop_all()
			try:
				wait([booting.future])
			finally:
				progress.stop_all_done()
		if self._pool is not None:
			self._pool.shutdown(wait=True)
			self._pool = None

	def _preexisting(self, bdir: Path, arch: str, commit: str, objs: List[str],
			 log: Path) -> Set[str]:
		"""W=1 warnings (as _key) of @objs built from @commit's parent."""
		# Its make syncs .config with the parent's Kconfig files.
		self._config_at.pop(arch, None)
		tree.git(self.wt, 'checkout', '-q', '--detach', f'{commit}^')
		try:
			have = [o for o in objs if (self.wt / (o[:-2] + '.c')).exists()]
			if not have:
				return set()
			for o in have:
				(bdir / o).unlink(missing_ok=True)
			proc = self._make(bdir, arch, have, ['W=1'], log, self.wt)
			for o in have:
				(bdir / o).unlink(missing_ok=True)
			return {self._key(w) for w in
				self._warnings_in(proc.stdout + proc.stderr,
						  [o[:-2] + '.c' for o in have])}
		finally:
			tree.git(self.wt, 'checkout', '-q', '--detach', commit)

	def _key(self, line: str) -> str:
		"""A warning without its line number and build-directory prefix."""
		m = WARNING_RE.match(line.strip())
		if not m:
			return line.strip()
		f = m.group('file')
		for root in (str(self.wt) + '/', '../'):
			if root in f:
				f = f.split(root)[-1]
		return f'{f}: {m.group("kind")}: {m.group("msg")}'

	@staticmethod
	def _warnings_in(output: str, touched: List[str]) -> List[str]:
		out = []
		for line in output.splitlines():
			m = WARNING_RE.match(line.strip())
			if not m:
				continue
			f = m.group('file')
			if any(f.endswith(t) for t in touched):
				out.append(line.strip())
		return out

	def check_bkl_scan(self) -> None:
		where = self.wt if self.commits else self.main
		hits = []
		for pat in [r'#[[:space:]]*include[[:space:]]*<linux/smp_lock\.h>',
			    r'(^|[^[:alnum:]_])(un)?lock_kernel[[:space:]]*\(']:
			proc = tree.git(where, 'grep', '-n', '-E', pat, '--', '*.c', '*.h', check=False)
			hits += proc.stdout.splitlines()
		hits = [h for h in hits if not is_comment_hit(h)]
		self.add('bkl-scan', not hits, '\n'.join(hits[:30]) if hits else
			 'no smp_lock.h include, no lock_kernel()/unlock_kernel() call')

	# -------------------------------------------------------- the head checks
	def start_head(self, checks: Tuple[str, ...]) -> None:
		"""Start go7007 and modules (those of checks) on the series head in
		a thread of their own, beside everything else: from a worktree at
		the head (head_wt), their makes at nice HEAD_NICE.  Their results
		are added by finish_head, where they used to run after the
		per-patch builds (12 min at the end of a cold make test, 2026-12-06)."""
		steps = [c for c in ('go7007', 'modules') if c in checks]
		if not steps:
			return
		self._head_stop.clear()
		self._head_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix='head')
		self._head = self._head_pool.submit(self._head_checks, steps)

	def _head_checks(self, steps: List[str]) -> List[Tuple[Tuple[Any, ...], Dict[str, Any]]]:
		"""The head checks' results, as the arguments of add (the main
		thread prints them).  An exception is its check's failure."""
		out: List[Tuple[Tuple[Any, ...], Dict[str, Any]]] = []

		def report(*a: Any, **k: Any) -> None:
			out.append((a, k))
		make = functools.partial(self._make, nice=HEAD_NICE)
		t0 = time.time()
		try:
			if self.commits:
				tree.scratch_worktree(self.main, self.head_wt, self.commits[-1], clean=True)
			srcdir = self.head_wt if self.commits else self.main
		except Exception as e:  # noqa: BLE001 - every step fails with it
			for step in steps:
				report(step, False, f'could not check out the head in {self.head_wt}: {e}',
				       time.time() - t0)
			return out
		# Left by check-series before the head checks had a root of their own.
		for old in ('go7007', 'modules'):
			shutil.rmtree(self.build_root / old, ignore_errors=True)
		for step in steps:
			if self._head_stop.is_set():
				break
			try:
				if step == 'go7007':
					self.check_go7007(srcdir, self.head_root / 'build', report, make)
				else:
					self.check_modules(srcdir, self.head_root / 'build', report, make)
			except Exception as e:  # noqa: BLE001 - this check's failure
				report(step, False, f'{type(e).__name__}: {e}', time.time() - t0)
		return out

	def finish_head(self) -> None:
		"""Wait for the head checks and add their results."""
		fut, self._head = self._head, None
		if fut is None:
			return
		try:
			for a, k in fut.result():
				self.add(*a, **k)
		finally:
			self._shutdown_head()

	def stop_head(self) -> None:
		"""^C, SIGTERM or an error: end the head checks' make and wait
		for their thread; their results are dropped."""
		fut, self._head = self._head, None
		if fut is not None:
			self._head_stop.set()
			while not fut.done():
				with self._live_lock:
					for proc in list(self._live):
						proc.terminate()
				wait([fut], timeout=1)
		self._shutdown_head()

	def _shutdown_head(self) -> None:
		if self._head_pool is not None:
			self._head_pool.shutdown(wait=True)
			self._head_pool = None

	def check_go7007(self, srcdir: Path, build_root: Path, report: AddCheck,
			 make: Callable[..., subprocess.CompletedProcess[str]]) -> None:
		arches = paths.parse_arches(self.opts.go7007_arch, paths.SERIES_ARCHES)
		arches = [a for a in arches if a != 'um']
		frag = paths.KUNIT_DIR / 'go7007.config'
		# Its own: it may run before any other check made the directory.
		self.logdir.mkdir(parents=True, exist_ok=True)
		for arch in arches:
			if self._head_stop.is_set():
				return
			t0 = time.time()
			bdir = build_root / 'go7007' / arch
			bdir.mkdir(parents=True, exist_ok=True)
			log = self.logdir / f'go7007-{arch}.log'
			log.write_text('')
			# allnoconfig plus what the driver needs.
			proc = make(bdir, arch, ['allnoconfig'], [f'KCONFIG_ALLCONFIG={frag}'],
				    log, srcdir)
			cfg = (bdir / '.config').read_text() if (bdir / '.config').exists() else ''
			if proc.returncode != 0 or 'CONFIG_VIDEO_GO7007=y' not in cfg:
				report(f'go7007 {arch}', False, f'could not configure go7007; see {log}',
				       time.time() - t0)
				continue
			# Only the driver's objects are rebuilt, so every run sees its warnings.
			for o in (bdir / 'drivers/media/usb/go7007').glob('*.o'):
				o.unlink()
			proc = make(bdir, arch, ['drivers/media/usb/go7007/'], ['W=1'], log, srcdir)
			warns = sorted({self._normalise(l) for l in (proc.stdout + proc.stderr).splitlines()
					if WARNING_RE.match(l.strip())})
			base = paths.KUNIT_DIR / 'baselines' / 'go7007-w1' / f'{arch}.txt'
			if self.opts.update_go7007_baseline and proc.returncode == 0:
				atomic.write_text(base, ''.join(w + '\n' for w in warns))
			known = set(base.read_text().splitlines()) if base.exists() else set()
			new = [w for w in warns if w not in known]
			built = sorted(o.name for o in (bdir / 'drivers/media/usb/go7007').glob('*.o'))
			ok = proc.returncode == 0 and not new and bool(built)
			if proc.returncode == 0 and not built:
				new.append('nothing was built: is VIDEO_GO7007 still reachable?')
			detail = (f'W=1: {len(built)} objects, {len(warns)} warning(s), {len(new)} new'
				  if proc.returncode == 0
				  else f'build failed; see {log}\n' + '\n'.join(
					  (proc.stdout + proc.stderr).splitlines()[-15:]))
			if new:
				detail += '\n' + '\n'.join(new[:20])
			report(f'go7007 {arch}', ok, detail, time.time() - t0)

	def check_modules(self, srcdir: Path, build_root: Path, report: AddCheck,
			  make: Callable[..., subprocess.CompletedProcess[str]]) -> None:
		"""The series head (checked out at srcdir) with KUnit and the
		subsystems as modules, on each arch of --build-arches
		(modulescheck.py)."""
		self.logdir.mkdir(parents=True, exist_ok=True)
		head = self.commits[-1] if self.commits else self.pristine
		suites = sorted(self._suite_symbols(srcdir, head))
		for arch in self.opts.build_arches:
			if self._head_stop.is_set():
				return
			r = modulescheck.check(make, srcdir, build_root / 'modules' / arch,
						arch, self.logdir / f'modules-{arch}.log', suites,
						build_env(self.cache))
			report(f'modules {arch}', r.ok, r.detail, r.seconds,
			       note=r.detail.splitlines()[0] if r.ok else '')

	@staticmethod
	def _normalise(line: str) -> str:
		"""file:line:col: warning: msg -> file: warning: msg (lines move)."""
		m = WARNING_RE.match(line.strip())
		if not m:
			return line.strip()
		f = re.sub(r'^.*?(?=(drivers|include|arch)/)', '', m.group('file'))
		return f'{f}: {m.group("kind")}: {m.group("msg")}'


def repository(cache: Path, allow_install: bool = True) -> None:
	"""The prepared repository the checks take the pristine commit and
	their scratch worktree from.  prepare makes it when the cache has none
	(a fresh CI cache); an existing work tree is only read, never rebuilt:
	the checks apply this checkout's kernel-patches/ in their own worktree,
	and prepare would rebuild a clean work tree prepared from another
	checkout's series (2026-12-05: a developer's tree, exported and clean,
	was rebuilt with an older branch's 53 patches by this call, when it
	was tree.prepare(keep_local=True))."""
	try:
		tree.find_prepared(cache)
	except UserError:
		tree.prepare(cache, allow_install=allow_install, quiet=True, keep_local=True)


def main(opts: SeriesOptions, cache: Path) -> int:
	"""`check-series` (cli.py reads its command line into opts, checked
	against the series before anything is written)."""
	checks = opts.checks
	if 'modules' in checks:
		for arch in opts.build_arches:
			for frag in modulescheck.fragments(arch):
				if not frag.is_file():
					raise UserError(f'the modules check needs {frag}')
				modulescheck.read_fragment(frag.read_text(), f'kunit/{frag.name}')
	if opts.results_dir:
		paths.usable_dir(opts.results_dir, '--results-dir', probe=True)
	arches = list(opts.build_arches)
	if 'go7007' in checks:
		try:
			arches += paths.parse_arches(opts.go7007_arch, paths.SERIES_ARCHES)
		except ValueError as e:
			raise UserError(f'--go7007-arch: {e}')
	deps.ensure(deps.for_arches(arches) + deps.CHECK_PACKAGES, allow_install=opts.allow_install)
	repository(cache, allow_install=opts.allow_install)
	with paths.locked(cache / 'series' / 'series.lock', 'the series checks\' worktree'):
		return _checks(Checker(cache, opts), opts)


def _checks(ch: Checker, opts: SeriesOptions) -> int:
	print(f'Series checks: {len(ch.patches)} patches on {ch.main.name}'
	      + opts.range_note(len(ch.patches)), flush=True)
	try:
		_run_checks(ch, opts)
	except BaseException:
		try:
			ch.stop_head()
		finally:
			ch.stop_boots()
		raise
	failed = [c for c in ch.results if not c.ok]
	if ch.record:
		ch.job.complete = True
		write_series_job(ch.record, ch.job)
	print(f'{len(ch.results) - len(failed)} passed, {len(failed)} failed')
	return 1 if failed else 0


def _run_checks(ch: Checker, opts: SeriesOptions) -> None:
	checks = opts.checks
	applied = ch.check_apply()
	if applied:
		ch.start_head(checks)
		if 'checkpatch' in checks:
			ch.check_checkpatch()
		if 'fixes' in checks:
			ch.check_fixes()
		if 'maintainers' in checks:
			ch.check_maintainers()
		if 'build' in checks:
			ch.check_build()
		if 'bkl-scan' in checks:
			tree.git(ch.wt, 'checkout', '-q', '--detach', ch.commits[-1] if ch.commits
				 else ch.pristine)
			ch.check_bkl_scan()
		# go7007 and modules ran beside all that (start_head).
		ch.finish_head()
	if 'mail' in checks:
		mail.check(ch)
	# The head's boot ran beside mail.
	ch.finish_boots()
