# SPDX-License-Identifier: GPL-2.0
"""`kunit.py run`: each arch built and booted through the tree's own kunit.py.

Per arch, in <results>/<arch>/:
  build.log     kunit.py build (config + make) output
  kunit.log     kunit.py exec output (its own parsed view)
  console.log   everything the guest printed (kunit_tool's test.log)
  ktap.log      the KTAP lines of that console, as kunit_tool extracts them
  results.json  kunit_tool's --json output
  verdict.json  our per-arch verdict (counts, status, reason, timings)
and <results>/summary.json for the whole run.  Boots after the first (the
suites a crash cut off, --rerun-failures) are laterboots.py's: console.N.log etc.
"""

import argparse
import contextlib
import hashlib
import os
import re
import shlex
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from . import buildinputs, covboots, laterboots, profiles, progress
from .plan import (RunRequest, 
	ArchPlan, DEFAULT_SMP, DEFAULT_SUITE_TIMEOUT, DEFAULT_TIMEOUT, PROGRESS_INTERVAL,
	RunOptions, build_env, kunitconfigs)
from ..base import atomic, deps, digest, paths
from ..base.argtypes import at_least
from ..base.errors import UserError
from ..compare import baseline
from ..coverage import gcovinit, scope, table, umlgcov
from ..results import export, kernel_reports, kunit_tool, rundir, verdicts
from ..results.cases import parse_console
from ..results.model import ArchResult, ArchStatus, now, stopped_note
from ..source import tree

T = TypeVar('T')
# An arch running alongside others gets at least this many CPUs.
CPUS_PER_ARCH = 4


_SMP_ARG_RE = re.compile(r'(?:^|\s)-smp\s+(?:cpus=)?(\d+)')
_CPUS_UP_RE = re.compile(r'smp: Brought up \d+ nodes?, (\d+) CPUs?')


def asked_cpus(exec_cmd: List[str]) -> int:
	"""The vCPUs a kunit.py exec command gives the guest (its last -smp)."""
	n = 1
	for a in exec_cmd:
		if a.startswith('--qemu_args='):
			for m in _SMP_ARG_RE.finditer(a[len('--qemu_args='):]):
				n = int(m.group(1))
	return n


def smp_config_problem(config: Path, asked: int) -> str:
	"""Why a guest given `asked` vCPUs would still run on one, or ''."""
	if asked < 2 or not config.is_file():
		return ''
	if '# CONFIG_SMP is not set' in config.read_text(errors='replace').splitlines():
		return (f'the guest is given {asked} vCPUs but {config} has no CONFIG_SMP: '
			'the race cases would run on one CPU (set CONFIG_SMP=y in '
			'kunit/arch/<arch>.config)')
	return ''


def guest_cpus(console: List[str]) -> Optional[int]:
	"""CPUs the guest brought up ("smp: Brought up 1 node, 2 CPUs"), or
	None when the console does not say (a UP kernel prints nothing)."""
	for line in console:
		m = _CPUS_UP_RE.search(line)
		if m:
			return int(m.group(1))
	return None


def add_arguments(p: argparse.ArgumentParser, one_tree: bool = True) -> None:
	"""The options of run; one_tree=False (ab) leaves out those that pick
	the tree (--tree, --apply-series) and compare with baselines."""
	p.add_argument('filter_glob', nargs='?', default='',
		       help='suite[.case] glob passed to kunit.py (default: every suite)')
	p.add_argument('--arch', default=','.join(paths.DEFAULT_ARCHES),
		       help=f'{", ".join(paths.ARCHES)}, a comma list, or all (the '
			    f'{len(paths.QEMU_ARCHES)} QEMU arches; default: '
			    f'{",".join(paths.DEFAULT_ARCHES)}, one of each byte order)')
	p.add_argument('--results-dir', default=None,
		       help='where results go (default: <cache>/results/<timestamp>, '
			    'with <cache>/results/latest pointing at it)')
	if one_tree:
		p.add_argument('--tree', default=None,
			       help='run against this kernel tree instead of the prepared one')
		p.add_argument('--apply-series', action='store_true',
			       help='with --tree: apply kernel-patches/ to that (clean, same '
				    'version) tree first, with git am')
	else:
		p.set_defaults(tree=None, apply_series=False, compare=False, baseline_dir=None)
	p.add_argument('--timeout', type=at_least(1), default=None,
		       help=f'seconds a guest may run before it is killed (default {DEFAULT_TIMEOUT}, '
		       'or the profile\'s own: kasan 900)')
	p.add_argument('--jobs', type=at_least(1), default=os.cpu_count() or 1, help='make -j')
	p.add_argument('--parallel', type=at_least(0), default=0, metavar='N',
		       help='arches built and booted at once (default: one per '
		       f'{CPUS_PER_ARCH} CPUs, at least 1); each gets --jobs / N make jobs')
	p.add_argument('--kunitconfig', action='append', default=[],
		       help='an extra kunitconfig fragment (repeatable)')
	p.add_argument('--kconfig-add', action='append', default=[],
		       help='an extra CONFIG_X=y line (repeatable)')
	p.add_argument('--qemu-args', action='append', default=[],
		       help='extra QEMU arguments, shell-quoted (repeatable)')
	p.add_argument('--no-ccache', action='store_true', help='build without ccache')
	p.add_argument('--ccache-dir', default=None, metavar='DIR',
		       help='the ccache directory (default: <cache>/ccache)')
	p.add_argument('--build-dir', default=None, metavar='DIR',
		       help='build each arch in DIR/<arch> (default: <cache>/build/<tree key>'
			    '[-<profile>]/<arch>)')
	p.add_argument('--always-build', action='store_true',
		       help='run `kunit.py build` even when none of its inputs changed since '
			    'the last successful build in that directory (docs/speed.md)')
	p.add_argument('-v', '--verbose', action='store_true',
		       help='stream build and guest output instead of progress lines')
	p.add_argument('--progress-interval', type=at_least(1), default=PROGRESS_INTERVAL, metavar='S',
		       help='without -v and when the output is not a terminal (CI logs): a '
			    f'progress line every S seconds (default {PROGRESS_INTERVAL}); on a '
			    'terminal one line is rewritten in place')
	p.add_argument('--rerun-failures', type=at_least(0), default=0, metavar='N',
		       help='run each failed or crashed case again on its own, up to N boots; '
			    'one that passes then is FLAKY (default 0: off)')
	p.add_argument('--suite-timeout', type=at_least(1), default=DEFAULT_SUITE_TIMEOUT, metavar='S',
		       help='kunit.py exec --timeout of every boot after the first (suites re-run '
			    f'after a crash, --rerun-failures; default {DEFAULT_SUITE_TIMEOUT})')
	p.add_argument('--no-crash-rerun', action='store_true',
		       help='after a crash or hang, do not boot again for the suites it cut off')
	if one_tree:
		p.add_argument('--compare', action='store_true',
			       help='compare with the baselines afterwards (as `kunit.py compare`); '
				    'a regression makes the run fail')
		p.add_argument('--baseline-dir', default=None,
			       help='with --compare: where the baselines are (default: '
				    'kunit/baselines)')
	# The UFS images are carried in the kernel now; accepted so that older
	# command lines keep working, and has no effect.
	p.add_argument('--no-fixtures', action='store_true', help=argparse.SUPPRESS)
	p.add_argument('--smp', type=at_least(1), default=DEFAULT_SMP, metavar='N',
		       help=f'vCPUs of every guest (default {DEFAULT_SMP}: the race and stress '
			    'cases need a second CPU to race on)')
	if not one_tree:
		p.set_defaults(coverage=False)
	else:
		p.add_argument('--coverage', action='store_true',
			       help='gcov line, function and branch coverage of fs/ufs, '
				    'net/appletalk, fs/autofs and the series\' lib/kunit files, from the '
				    'suites alone (a second boot that runs none is subtracted); built in '
				    'a directory of its own; HTML per arch and a table on the page '
				    '(docs/coverage.md)')
	p.add_argument('--profile', default=profiles.DEFAULT, choices=list(profiles.PROFILES),
		       help='debug profile: kunit/profiles/default.config plus <profile>.config, '
			    'built in a directory of its own; an arch that cannot have it is '
			    'SKIPPED_PROFILE, not counted (default: default; docs/profiles.md)')


def _tail(path: Path, n: int = 20) -> str:
	try:
		return '\n'.join(path.read_text(errors='replace').splitlines()[-n:])
	except OSError:
		return ''


def run_arch(ktree: Path, arch: str, build_dir: Path, out: Path, options: RunOptions,
	     cache: Path, fragments: Optional[List[Path]] = None, tag: str = '') -> ArchResult:
	"""Build and boot one arch.  options: the run's; fragments: the kunitconfigs to build with
	(default kunitconfigs()); tag: shown after the arch in progress lines.
	The build directory is locked while it is built and booted (<build
	dir>.lock): another kunit.py on the same cache waits for it."""
	if fragments is None:
		fragments = kunitconfigs(arch, options.kunitconfig, options.profile.name,
					 options.coverage)
	p = ArchPlan(ktree, arch, build_dir, out, options, fragments, tag)
	with paths.locked(build_dir.parent / f'{build_dir.name}.lock',
			  f'the build directory {build_dir}'):
		return _run_arch(p, cache)


def _run_arch(p: ArchPlan, cache: Path) -> ArchResult:
	o, arch, build_dir, out, ktree, name = p.options, p.arch, p.build_dir, p.out, p.ktree, p.name
	res = ArchResult(arch, profile=o.profile.name)
	out.mkdir(parents=True, exist_ok=True)
	env = build_env(cache, o.ccache_dir)

	cmd = p.build_command()
	frags = p.fragments
	t0 = time.time()
	res.build_started = now()
	want = None
	if not o.always_build:
		want = buildinputs.inputs(tree_fingerprint(o, ktree), cmd[1:], frags,
					 paths.ARCHES[arch].cross_compile, env)
	if buildinputs.unchanged(build_dir, want):
		progress.say(name, 'build skipped: no input changed since the last build')
		atomic.write_text(out / 'build.log',
			'$ ' + shlex.join(cmd) + '\nnot run: the tree, the kunitconfigs, the command, '
			f'the toolchain and {build_dir}/.config and vmlinux are as the last successful '
			f'build left them ({build_dir / buildinputs.STAMP}); --always-build runs it\n')
		res.build_skipped = True
		rc = 0
	else:
		buildinputs.forget(build_dir)
		if o.coverage and arch == 'um':
			umlgcov.prepare(build_dir)      # gcc >= 8's libgcov and the kernel: one symbol
		progress.say(name, 'build')
		rc = progress.stream(cmd, out / 'build.log', env, o.verbose, f'{name} build',
			     o.progress_interval)
		if rc == 0:
			buildinputs.record(build_dir, want)
	res.build_seconds = time.time() - t0
	if rc != 0:
		log = (out / 'build.log').read_text(errors='replace')
		res.status = ArchStatus.CONFIG_FAILED if kunit_tool.config_failed(log) else ArchStatus.BUILD_FAILED
		res.reason = f'kunit.py build exited {rc}; see {out / "build.log"}:\n' + _tail(
			out / 'build.log', 15)
		return res
	res.config_hash = digest.file_sha256(build_dir / '.config')
	if not o.coverage:
		return boot(p, res, env)
	problem = ''
	try:
		covboots.prepare(p)
	except UserError as e:
		problem = str(e)
	if problem:
		res = boot(p, res, env)
		res.coverage = {'error': problem}
		return res
	res = boot(p, res, env)
	covboots.finish(p, res, env, res.coverage.get('error'))
	return res


def boot(p: ArchPlan, res: ArchResult, env: Dict[str, str]) -> ArchResult:
	"""The first boot of a built arch, into res: `kunit.py exec` of p (its
	filter glob), the console read once by the tree's kunit_parser
	(verdicts.judge, then cases.parse_console of the same parse), kernel
	reports given to the case they were printed in, and the boots after
	it (laterboots.py) where p's options ask for them.  run's arches and
	check-series' boot of each patch's build (bootcheck.py) both boot here."""
	o, arch, build_dir, out, ktree, name = p.options, p.arch, p.build_dir, p.out, p.ktree, p.name
	out.mkdir(parents=True, exist_ok=True)
	cmd = p.exec_command([o.filter_glob] if o.filter_glob else [], json=out / 'results.json')
	asked = asked_cpus(cmd)
	problem = smp_config_problem(build_dir / '.config', asked)
	if problem:
		res.status, res.reason = ArchStatus.CONFIG_FAILED, problem
		return res
	console_src = build_dir / 'test.log'
	if console_src.exists():
		console_src.unlink()
	progress.say(name, 'boot')
	t0 = time.time()
	# The guest's printk clock starts (about) now: a case's start time is
	# this plus its printk time (rundir.py).
	res.boot_started = now()
	# An outer deadline: kunit.py exec parses the live console with the
	# tree's kunit_parser, which loops for ever on some garbled consoles.
	rc = progress.stream(cmd, out / 'kunit.log',
		     covboots.boot_env(p, env, covboots.SUITES) if o.coverage else env,
		     o.verbose, f'{name} boot', o.progress_interval, deadline=p.exec_deadline())
	res.run_seconds = time.time() - t0
	t0 = time.time()
	atomic.write_bytes(out / 'console.log',
			   console_src.read_bytes() if console_src.exists() else b'')
	if o.coverage:
		# The counters out of the console (QEMU) or the build directory
		# (UML) before anything reads it.
		problem = covboots.after_boot(p, out / 'console.log', covboots.SUITES)
		res.coverage = {'error': problem} if problem else {}
	console = (out / 'console.log').read_text(errors='replace').splitlines(keepends=True)
	# One pass of the tree's kunit_parser for the verdict and the cases.
	parsed = kunit_tool.documents(ktree, console)
	v = verdicts.judge(ktree, console, (out / 'kunit.log').read_text(errors='replace'), parsed)
	atomic.write_text(out / 'ktap.log', ''.join(l + '\n' for l in v.ktap))
	res.passed, res.failed, res.skipped, res.crashed = v.passed, v.failed, v.skipped, v.crashed
	res.status, res.reason, res.failures = v.status, v.reason, v.failures
	if rc == progress.PAST_DEADLINE:
		# Never a pass, whatever the console shows (it may end where
		# kunit.py stopped writing it); what it shows stays, below.
		res.status = ArchStatus.CRASH
		res.reason = p.exec_killed() + (f'\n{v.reason}' if v.reason else '')
	elif res.status == ArchStatus.PASS and rc == 1 and parsed.untangled:
		# kunit.py exec reads the console with kunit_parser as it is: a
		# line of other output inside a KTAP header (a clocksource switch
		# printed as the suites start) makes it call the suite crashed and
		# exit 1.  The verdict above read the same console with those
		# lines moved out (kunit_tool.untangle_headers): it stands.
		res.reason = (f'kunit.py exec exited 1: kunit_parser read {parsed.untangled} '
			      'line(s) of other kernel output inside a KTAP header; '
			      'judged with them moved out')
	elif res.status == ArchStatus.PASS and rc != 0:
		res.status, res.reason = ArchStatus.FAIL, f'kunit.py exec exited {rc}'
	cpus = guest_cpus(console)
	if res.status == ArchStatus.PASS and cpus is not None and cpus < asked:
		res.status, res.reason = ArchStatus.FAIL, (f'the guest brought up {cpus} of the {asked} '
						  'vCPUs it was given: the race cases had fewer CPUs')
	# The console's cases, read once: kernel reports are given to them here,
	# and the boots after this one start from them.
	suites = parse_console(ktree, console, stopped_note(res.status, res.reason), attribute=False,
			       parsed=parsed)
	# Lockdep, KASAN, KCSAN, UBSAN, WARN ...: the case they happened in fails.
	if kernel_reports.needed(console):
		kernel_reports.judge(console, suites, res)
	try:
		res.qemu = rundir.probe_tools(arch).get('qemu', '')
	except Exception:
		pass
	res.judge_seconds = time.time() - t0
	crashed = res.status in (ArchStatus.CRASH, ArchStatus.TIMEOUT) and v.ktap and o.crash_rerun
	failed = o.rerun_failures > 0 and res.status in (ArchStatus.FAIL, ArchStatus.CRASH,
							 ArchStatus.TIMEOUT)
	if crashed or failed:
		laterboots.after_first_boot(laterboots.Booter(p, env), res, v, suites)
	return res


def resolve_tree(req: RunRequest) -> Tuple[Path, str, Dict[str, str]]:
	"""The kernel tree to run, a key for its build directories, and facts
	about it for the summary."""
	patches = tree.read_series(paths.PATCH_DIR)
	if not req.tree:
		prep = tree.prepare(req.cache, allow_install=req.allow_install, quiet=True,
				    keep_local=True)
		info = {'tree': str(prep.path), 'kernel_version': prep.upstream,
			'debian_version': prep.debian_version,
			'series': 'applied + local work' if prep.local else 'applied',
			'series_hash': tree.series_hash(patches), 'head': prep.head}
		print(f'Tree {prep.path} ({prep.debian_version} + {len(prep.patches)} patches)')
		return prep.path, 'debian', info
	ktree = req.tree
	if not (ktree / 'tools/testing/kunit/kunit.py').exists():
		raise UserError(f'{ktree} is not a kernel tree with tools/testing/kunit/kunit.py')
	version = tree.version_from_makefile(ktree)
	status = tree.series_status(ktree, patches)
	summary = ('applied' if status and all(s == 'applied' for s in status) else
		   'not applied' if all(s == 'not applied' for s in status) else 'partly applied')
	print(f'Tree {ktree}: Linux {version or "?"}; our series ({len(patches)} patches): '
	      f'{summary}')
	for p, s in zip(patches, status):
		if s != summary:
			print(f'  {p.name}: {s}')
	if req.apply_series and summary != 'applied':
		want = tree.upstream_version(tree.debian_version() or '')
		if want and version != want:
			raise UserError(f'the series is for Linux {want}; {ktree} is {version}')
		if summary != 'not applied':
			raise UserError('the tree carries part of the series or conflicts with it; '
					'apply by hand or start from a clean tree')
		if not (ktree / '.git').exists():
			raise UserError(f'{ktree} is not a git repository; --apply-series uses git am')
		dirty = tree.git(ktree, 'status', '--porcelain', '--untracked-files=no').stdout
		if dirty.strip():
			raise UserError(f'{ktree} has uncommitted changes; commit or stash them first')
		tree.apply_series(ktree, patches)
		summary = 'applied'
		print(f'  applied {len(patches)} patches with git am')
	key = 'tree-' + hashlib.sha1(str(ktree).encode()).hexdigest()[:10]
	return ktree, key, {'tree': str(ktree), 'kernel_version': version,
			    'series': summary, 'series_hash': tree.series_hash(patches)}


def check_arguments(req: RunRequest) -> None:
	"""Every check of run's (and ab's) arguments that can be made before
	anything is written: before packages, the tree, the
	results directory or `latest` are touched, bad input is a UserError."""
	arches, prof, cache = req.arches, req.profile, req.cache
	if req.options.coverage:
		problem = scope.profile_problem(prof.name)
		if problem:
			raise UserError(problem)
		# The counters of a QEMU guest come out through a /init built
		# for it (gcovinit): not made for s390x, powerpc64, riscv64, m68k.
		no_init = [a for a in arches if a != 'um' and a not in gcovinit.HEADER_ARCH]
		if no_init:
			raise UserError(f'--coverage on {", ".join(no_init)}: no coverage /init for '
					f'{"it" if len(no_init) == 1 else "them"} yet (--coverage runs on '
					f'{", ".join(list(gcovinit.HEADER_ARCH) + ["um"])})')
	for arch in arches:
		if prof.supports(arch):
			kunitconfigs(arch, req.options.kunitconfig, prof.name, req.options.coverage)
	if req.tree:
		if not (req.tree / 'tools/testing/kunit/kunit.py').exists():
			raise UserError(f'{req.tree} is not a kernel tree with tools/testing/kunit/kunit.py')
	if req.compare:
		baseline.check_baseline_dir(req.baseline_dir)
	if req.results_dir:
		paths.usable_dir(req.results_dir, '--results-dir', probe=True)
	else:
		paths.usable_dir(cache / 'results', 'the results directory', probe=True)
	for value, opt in ((req.build_dir, '--build-dir'), (req.options.ccache_dir, '--ccache-dir')):
		if value:
			paths.usable_dir(value, opt, probe=True)


def results_dir(req: RunRequest, point_latest: bool = True) -> Path:
	"""--results-dir, else a new <cache>/results/<timestamp>.  point_latest:
	<cache>/results/latest points at it at once; run and ab leave that to
	set_latest(), once the directory has its summary."""
	cache = req.cache
	if req.results_dir:
		d = req.results_dir
		d.mkdir(parents=True, exist_ok=True)
		return d
	d = paths.new_stamped_dir(cache / 'results')
	if point_latest:
		set_latest(cache, d)
	return d


def set_latest(cache: Path, rdir: Path) -> None:
	"""<cache>/results/latest -> rdir, when rdir is a timestamped directory
	there (not a --results-dir elsewhere).  Replaced in one rename, so a
	reader never finds it missing."""
	base = cache / 'results'
	if Path(rdir).parent != base:
		return
	latest = base / 'latest'
	tmp = base / f'.latest.{os.getpid()}'
	if tmp.is_symlink() or tmp.exists():
		tmp.unlink()
	tmp.symlink_to(Path(rdir).name)
	tmp.replace(latest)


def format_table(results: List[ArchResult]) -> str:
	flaky = any(r.flaky for r in results)      # the column only when there are flakes
	rows = [('arch', 'status', 'passed', 'failed', 'skipped', 'crashed')
		+ (('flaky',) if flaky else ()) + ('build s', 'run s')]
	for r in results:
		rows.append((r.arch, r.status, str(r.passed), str(r.failed), str(r.skipped),
			     str(r.crashed)) + ((str(len(r.flaky)),) if flaky else ())
			    + (f'{r.build_seconds:.0f}', f'{r.run_seconds:.0f}'))
	widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
	lines = []
	for i, row in enumerate(rows):
		lines.append('  '.join(c.ljust(w) if j < 2 else c.rjust(w)
				       for j, (c, w) in enumerate(zip(row, widths))))
		if i == 0:
			lines.append('  '.join('-' * w for w in widths))
	return '\n'.join(lines)


def tree_fingerprint(options: RunOptions, ktree: Path) -> str:
	"""buildinputs' fingerprint of ktree, taken once per run and kept in
	its options (an edit during the run only costs a build next time)."""
	fp = options.fingerprints
	if str(ktree) not in fp:
		fp[str(ktree)] = buildinputs.tree_fingerprint(ktree) or ''
	return fp[str(ktree)]


def parallel_workers(asked: int, arches: int) -> int:
	"""How many arches run at once: --parallel N, or one per CPUS_PER_ARCH
	usable CPUs (a 2-CPU machine runs them one after the other)."""
	n = asked if asked > 0 else len(os.sched_getaffinity(0)) // CPUS_PER_ARCH
	return max(1, min(n, arches))


def run_concurrently(arches: List[str], workers: int, options: RunOptions, ktree: Path,
		     one: Callable[[str, RunOptions], T]) -> Dict[str, T]:
	"""one(arch, options) for each arch, workers at a time, each with --jobs /
	workers make jobs.  The tree's fingerprint is taken once before
	(buildinputs), progress lines are not rewritten in place."""
	if not options.always_build:
		tree_fingerprint(options, ktree)
	jobs = max(1, options.jobs // workers)
	print(f'Running {len(arches)} arches, {workers} at a time '
	      f'({jobs} make jobs each)', flush=True)
	progress.LINES_ONLY = True
	try:
		with ThreadPoolExecutor(max_workers=workers) as ex:
			futures = {}
			try:
				for arch in arches:
					futures[arch] = ex.submit(one, arch, options.with_jobs(jobs))
				return {arch: f.result() for arch, f in futures.items()}
			except BaseException:
				# ^C (or SIGTERM) here: the commands of the other
				# threads run in sessions of their own, which it does
				# not reach.  Stop them, and start none, before the
				# pool waits for its threads.
				progress.stop_all()
				raise
	finally:
		progress.stop_all_done()
		progress.LINES_ONLY = False


def skipped_profile(arch: str, prof: profiles.Profile) -> ArchResult:
	"""An arch the profile does not exist on: not built, not booted."""
	return ArchResult(arch, status=profiles.SKIPPED, profile=prof.name,
			  reason=f'profile {prof.name} not run: {prof.why_not(arch)}')


@dataclass
class Finished:
	"""A results directory whose arches are done, as finish() left it."""
	summary: Dict[str, Any]                   # as written to summary.json
	loaded: Optional[rundir.Loaded] = None    # every console, read once (None: unreadable)
	divergence: Optional[Dict[str, Any]] = None
	reports: Dict[str, Path] = field(default_factory=dict)   # what export wrote
	problems: List[str] = field(default_factory=list)        # what could not be done, and why


def finish(rdir: Path, ktree: Path, summary: Dict[str, Any], timings: Dict[str, float],
	   t0: float) -> Finished:
	"""What `run`, and each side of `ab`, does once its arches are done and
	their verdict.json written: every console read once (rundir.load_run)
	for the cross-arch divergence (more than one arch that counts) and
	every report (export), then summary.json, written once, with timings
	(the caller's, plus divergence, reports and the total since t0).
	Neither the divergence nor a report may cost the run its verdict:
	what fails is in Finished.problems."""
	done = Finished(summary)
	t1 = time.time()
	unread: Optional[Exception] = None
	try:
		done.loaded = rundir.load_run(rdir, ktree, summary=summary)
	except Exception as e:  # never at the cost of the verdict
		unread = e
	counted = [e for e in summary['arches'] if e.get('status') != profiles.SKIPPED]
	if len(counted) > 1:
		try:
			if done.loaded is None:
				raise unread or RuntimeError('results not read')
			_, cases = baseline.load_results(rdir, ktree, probe=False, loaded=done.loaded)
			done.divergence = summary['divergence'] = baseline.divergence(cases)
		except Exception as e:
			done.problems.append(f'cross-arch divergence not computed: {type(e).__name__}: {e}')
	timings['divergence'] = time.time() - t1
	t1 = time.time()
	try:
		if done.loaded is None:
			raise unread or RuntimeError('results not read')
		done.reports = export.write_reports(rdir, ktree, loaded=done.loaded)
	except Exception as e:  # a report must never cost the run its verdict
		done.problems.append(f'reports not written: {type(e).__name__}: {e}')
	timings['reports'] = time.time() - t1
	timings['total'] = time.time() - t0
	summary['timings'] = {k: round(v, 3) for k, v in timings.items()}
	rundir.write_summary(rdir, summary)
	return done


def hold_tree(held: contextlib.ExitStack, req: RunRequest, ktree: Path,
	      info: Dict[str, str]) -> None:
	"""The prepared work tree (not a --tree: resolve_tree gives its HEAD)
	held shared for the rest of the command (tree.reading): another
	kunit.py's prepare does not rebuild it under this one's builds."""
	if not req.tree and info.get('head'):
		held.enter_context(tree.reading(ktree, info['head']))
		tree.refuse_mutated(ktree)


def main(req: RunRequest, used: Optional[List[Path]] = None) -> int:
	"""`run` (cli.py reads its command line into req).  used, when given,
	gets the results directory as soon as it is made (`run --json`)."""
	held = contextlib.ExitStack()
	try:
		return _main(req, held, [] if used is None else used)
	finally:
		held.close()


def _main(req: RunRequest, held: contextlib.ExitStack, used: List[Path]) -> int:
	arches, prof, cache, filter_glob = list(req.arches), req.profile, req.cache, req.options.filter_glob
	check_arguments(req)
	with_coverage = req.options.coverage
	# Where the run's own time goes (summary.json "timings"; `bench` reads it).
	timings: Dict[str, float] = {}
	t0 = time.time()
	started = now()
	deps.ensure(deps.for_arches([a for a in arches if prof.supports(a)] or arches)
		    + (deps.COVERAGE_PACKAGES if with_coverage else []),
		    allow_install=req.allow_install)
	timings['deps'] = time.time() - t0
	t1 = time.time()
	ktree, key, info = resolve_tree(req)
	hold_tree(held, req, ktree, info)
	timings['tree'] = time.time() - t1
	rdir = results_dir(req, point_latest=False)
	used.append(rdir)      # for `run --json` (cli)
	# What this run is to do, before it does any: a job that dies leaves
	# this and the verdicts of the arches it finished (`merge`).
	rundir.write_plan(rdir, info, arches, prof.name, filter_glob, started)
	if prof.name != profiles.DEFAULT:
		print(f'Profile {prof.name}: {prof.what}')

	options = req.options

	def one(arch: str, arch_options: RunOptions) -> ArchResult:
		if req.build_dir:
			bdir = req.build_dir / arch
		else:
			bdir = (cache / 'build' / (profiles.build_key(key, prof.name)
						   + (scope.BUILD_SUFFIX if with_coverage else '')) / arch)
		bdir.parent.mkdir(parents=True, exist_ok=True)
		try:
			r = run_arch(ktree, arch, bdir, rdir / arch, arch_options, cache)
		except UserError:
			raise
		except Exception as e:  # one arch's trouble must not hide the others
			r = ArchResult(arch, status=ArchStatus.ERROR, reason=f'{type(e).__name__}: {e}',
				       profile=prof.name)
		rundir.write_verdict(rdir, r)
		progress.say(arch, f'{r.status} ({r.passed} passed, {r.failed} failed, '
			  f'{r.skipped} skipped, {r.crashed} crashed)')
		return r

	by_arch: Dict[str, ArchResult] = {}
	for arch in arches:
		if not prof.supports(arch):
			r = by_arch[arch] = skipped_profile(arch, prof)
			rundir.write_verdict(rdir, r)
			progress.say(arch, f'{r.status}: {prof.why_not(arch)}')
	todo = [a for a in arches if a not in by_arch]
	workers = parallel_workers(req.parallel, len(todo))
	if workers <= 1:
		for arch in todo:
			by_arch[arch] = one(arch, options)
	else:
		by_arch.update(run_concurrently(todo, workers, options, ktree, one))
	results: List[ArchResult] = [by_arch[a] for a in arches]
	done = finish(rdir, ktree, rundir.summary_of(info, results, rdir, filter_glob, prof.name,
						     started), timings, t0)
	for problem in done.problems:
		print(problem, file=sys.stderr)
	if done.reports:
		print('Reports: ' + ', '.join(sorted(done.reports)))
	if not req.results_dir:
		set_latest(cache, rdir)
	print()
	print(format_table(results))
	for r in results:
		if not r.ok:
			print(f'\n{r.arch}: {r.status}' + (f': {r.reason}' if r.reason else ''))
			for f in r.failures[:20]:
				print(f'  {f}')
			for f in r.flaky[:20]:
				print(f'  FLAKY {f}: failed, then passed on its own')
	if any(r.flaky for r in results):
		print('\nWARNING: flaky cases (failed, then passed when run again) fail the run: '
		      'a flaky test is a defect to fix')
	div = done.divergence
	if div and (div['cases'] or div['no_results']):
		print('\nCross-arch divergence (pass on one arch, not on another):')
		print('\n'.join(baseline.format_divergence(div, limit=30)))
	print(f'\nResults: {rdir}')
	bad = [r.arch for r in results if not r.ok and r.counted]
	skipped = [r.arch for r in results if not r.counted]
	print(f'{len(results) - len(bad) - len(skipped)} arch(es) passed, {len(bad)} failed'
	      + (f': {", ".join(bad)}' if bad else '')
	      + (f'; profile {prof.name} not supported (SKIPPED_PROFILE, not counted): '
		 f'{", ".join(skipped)}' if skipped else ''))
	rc = 1 if bad else 0
	if with_coverage:
		print()
		print(table.format_run(results))
		if any(r.counted and r.coverage.get('error') for r in results):
			rc = 1
	if req.compare:
		print()
		bdir = (Path(req.baseline_dir).resolve() if req.baseline_dir
			else baseline.default_dir(prof.name))
		crc, _, _ = baseline.compare(rdir, ktree, bdir, show_divergence=False)
		rc = max(rc, crc)
	return rc
