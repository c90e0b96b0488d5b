# SPDX-License-Identifier: GPL-2.0
"""`kunit.py mutate`: each lock site of ufs, appletalk and autofs taken out
in turn, the kernel rebuilt and that subsystem's suites booted: a site is
KILLED when some case that passed without the mutation fails or crashes
with it, SURVIVED when none does, BUILD_FAILED when the mutant does not
compile (docs/mutate.md).

The sites come from the prepared tree's source (mutsites.py).  One file of
the work tree is changed at a time, and always put back: on the way out of
each site (an exception, ^C, SIGTERM and SIGHUP included: cli.main makes
those exceptions), and at the start of the next `mutate` from the journal
(<tree>/.git/bkl-kunit-mutate.json, written before the file is touched: the
file, its original content and the hashes of both versions) when the
process was killed outright.  The build directory of run (that arch and
profile) is reused, with ccache: a mutant rebuilds the object of its file
and the one put back before it (a ccache hit), then links.

<rdir> (<cache>/results/<timestamp>-mutate, or --results-dir):
  baseline/<subsystem>/<arch>/   the unmutated tree, each subsystem's suites
  sites/<NNN>-<name>/<arch>/     each mutant's build and boot (run's files)
  mutate.json                    per site: where, what, verdict, the cases that killed it
  mutate.html                    the same as a page
"""

import argparse
import base64
import contextlib
import enum
import glob
import hashlib
import html
import json
import os
import re
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .mutsites import SUBSYSTEMS, Site, discover, mutate_text, select
from ..base import argtypes, atomic, deps, paths
from ..base.errors import UserError
from ..results import rundir
from ..results.cases import parse_console
from ..results.model import (
	ArchResult, ArchStatus, BUILT, Case, ERROR, FAIL, MISS, NOT_BUILT, PASS, now,
	stopped_note)
from ..run import plan, profiles, progress, runner
from ..series.checkplan import SKIP_SLOW
from ..source import tree

# The profiles lock removal runs in: lockdep (default) and KCSAN.
MUTATE_PROFILES = (profiles.DEFAULT, 'kcsan')
JOURNAL_VERSION = 1
# The version of mutate.json ("version"): --report refuses a newer one.
RESULTS_VERSION = 1
TMP_SUFFIX = '.bkl-kunit-mutate.tmp'


class Verdict(enum.StrEnum):
	"""What became of one mutant."""
	KILLED = 'KILLED'              # a case that passed unmutated failed, crashed or went missing
	SURVIVED = 'SURVIVED'          # every such case still passed
	BUILD_FAILED = 'BUILD_FAILED'  # the mutant did not compile (or configure)
	ERROR = 'ERROR'                # the tool's own trouble, or a baseline that did not boot
	NOT_RUN = 'NOT_RUN'            # interrupted before it
	UNCALLED = 'UNCALLED'          # its static function has no caller: not built, nothing can run it


# ------------------------------------------------------------------ journal

def journal_path(ktree: Path) -> Path:
	"""The journal of the file being mutated, beside prepare's state in the
	work tree's .git (tree.mutate_journal; run and ab refuse a tree that has one)."""
	return tree.mutate_journal(ktree)


def _sha(b: bytes) -> str:
	return hashlib.sha256(b).hexdigest()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
	"""^C, SIGTERM and SIGHUP held back for the block (the file put back
	whole); delivered when it ends.  Only the main thread can."""
	sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
	try:
		old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
	except (ValueError, OSError):
		old = None
	try:
		yield
	finally:
		if old is not None:
			signal.pthread_sigmask(signal.SIG_SETMASK, old)


def recover(ktree: Path) -> str:
	"""Put back the file a killed `mutate` left mutated (the journal), if
	any; what was done ('' for nothing).  A file that is neither the
	original nor the mutant the journal recorded is left alone: a
	UserError says so.  The caller holds the work tree's lock."""
	jp = journal_path(ktree)
	try:
		j = json.loads(jp.read_text())
	except FileNotFoundError:
		return ''
	except (OSError, ValueError) as e:
		raise UserError(f'{jp}: the mutate journal cannot be read ({e}); check the work '
				'tree with `git status`, then delete it')
	if not isinstance(j, dict) or j.get('version') != JOURNAL_VERSION:
		raise UserError(f'{jp}: not a mutate journal of version {JOURNAL_VERSION} (a newer '
				'kunit.py\'s?); check the work tree with `git status`, then delete it')
	try:
		where = Path(j['tree']) / j['file']
		original = base64.b64decode(j['original'])
		want_orig, want_mut = j['original_sha256'], j['mutated_sha256']
	except (KeyError, TypeError, ValueError) as e:
		raise UserError(f'{jp}: not a mutate journal ({e}); check the work tree with '
				'`git status`, then delete it')
	if Path(j['tree']).resolve() != Path(ktree).resolve():
		raise UserError(f'{jp} is about another tree ({j["tree"]}), not {ktree}')
	if _sha(original) != want_orig:
		raise UserError(f'{jp}: its original content does not match its own hash')
	with _signals_held():
		# What a mutate killed in the middle of a write left (atomic.py's
		# temporary files; TMP_SUFFIX those of older versions).
		for tmp in [where.with_name(where.name + TMP_SUFFIX),
			    *where.parent.glob(f'.{glob.escape(where.name)}.*.tmp')]:
			if tmp.is_file():
				tmp.unlink()
		try:
			have: Optional[str] = _sha(where.read_bytes())
		except FileNotFoundError:
			have = None
		if have == want_orig:
			done = f'{j["file"]} was already as it was before site {j.get("site")}'
		elif have in (want_mut, None):
			atomic.write_bytes(where, original)
			done = f'put back {j["file"]}, left mutated (site {j.get("site")}) by an interrupted mutate'
		else:
			raise UserError(f'{where} was left mutated by an interrupted mutate (site '
					f'{j.get("site")}) and has been changed since: neither the '
					f'original nor the mutant of {jp}; restore it by hand (`git -C '
					f'{j["tree"]} checkout -- {j["file"]}`) and delete the journal')
		jp.unlink()
	return done


def apply(ktree: Path, site: Site) -> Tuple[Path, bytes, List[int]]:
	"""The site's file mutated, its journal written first: (the file, its
	original content, the lines changed).  put_back() undoes it."""
	path = Path(ktree) / site.file
	original = path.read_bytes()
	text = original.decode('utf-8', 'surrogateescape')
	new = mutate_text(text, site).encode('utf-8', 'surrogateescape')
	changed = [n for n, (a, b) in enumerate(zip(text.split('\n'),
						    new.decode('utf-8', 'surrogateescape').split('\n')),
						1) if a != b]
	journal = {'version': JOURNAL_VERSION, 'tree': str(ktree), 'file': site.file,
		   'site': site.id, 'pid': os.getpid(), 'started': now(),
		   'original_sha256': _sha(original), 'mutated_sha256': _sha(new),
		   'original': base64.b64encode(original).decode()}
	with _signals_held():
		atomic.write_text(journal_path(ktree), json.dumps(journal, indent=1) + '\n')
		atomic.write_bytes(path, new)
	return path, original, changed


def put_back(ktree: Path, path: Path, original: bytes) -> None:
	"""The file as it was, then its journal gone."""
	with _signals_held():
		atomic.write_bytes(path, original)
		journal_path(ktree).unlink()


@contextlib.contextmanager
def mutated(ktree: Path, site: Site) -> Iterator[List[int]]:
	"""The site's file mutated for the block, put back after it whatever
	happens (an exception, ^C, SIGTERM as cli.main raises it); yields the
	lines changed."""
	path, original, changed = apply(ktree, site)
	try:
		yield changed
	finally:
		put_back(ktree, path, original)


# ------------------------------------------------------------------ verdicts

@dataclass
class SiteResult:
	"""One site of mutate.json."""
	id: str
	subsystem: str
	file: str
	function: str
	line: int
	lock: str
	kind: str
	calls: int
	lines_changed: List[int]
	suites: str = ''                # the kunit filter it was booted with
	verdict: str = Verdict.NOT_RUN
	killed_by: List[str] = field(default_factory=list)   # 'suite.case: pass -> FAIL (why)'
	arch_status: str = ''           # run's status of the mutant's boot
	reason: str = ''
	build_seconds: float = 0.0
	run_seconds: float = 0.0
	# Why a verdict may not mean what it seems: a callee lets go of the lock
	# (mutsites.Site.released_by), lockdep saw an unbalanced unlock.
	notes: List[str] = field(default_factory=list)
	wall_seconds: float = 0.0       # the whole site: mutate, build, boot, judge, put back
	started: str = ''
	results: str = ''               # its directory, relative to the results directory


def case_outcomes(ktree: Path, res: ArchResult, adir: Path) -> Dict[str, Case]:
	"""{suite.case[/param]: Case} of one boot's console, kernel reports
	given to the case they were printed in (as run judges them)."""
	try:
		lines = (adir / 'console.log').read_text(errors='replace').splitlines()
	except OSError:
		return {}
	suites = parse_console(ktree, lines, stopped_note(res.status, res.reason))
	return {c.row: c for s in suites for c in s.cases}


def failure_text(c: Case) -> str:
	"""Why a case failed, one line: the message after its first
	EXPECTATION/ASSERTION FAILED line (which only says where), else
	Case.summary()."""
	lines = [l.strip() for l in c.diagnostics if l.strip()]
	for i, line in enumerate(lines):
		if 'FAILED at ' not in line:
			continue
		# The expectation, its values and the case's own message, up to
		# the next failure or the next line the test printed itself.
		block = []
		for l in lines[i + 1:]:
			if 'FAILED at ' in l or l.startswith('#'):
				break
			block.append(l)
		if block:
			return ' '.join(block)[:300]
	return c.summary()[:300]


UNBALANCED = 'WARNING: bad unlock balance detected!'


def console_notes(adir: Path) -> List[str]:
	"""What a mutant's console says that its verdict should be read with."""
	try:
		text = (adir / 'console.log').read_text(errors='replace')
	except OSError:
		return []
	if UNBALANCED in text:
		return ['lockdep saw an unbalanced unlock (a function it calls lets go of the lock): '
			'killed by that report, which shows no exclusion']
	return []


# Verdicts that need no case: a site nothing can run is not a gap of the suites.
ACCOUNTED = (Verdict.KILLED, Verdict.UNCALLED)


def site_notes(s: Site) -> List[str]:
	if s.uncalled:
		return [f'{s.function}() is static and nothing in the subsystem calls it or takes its '
			'address: dead code, which no case can run']
	if s.released_by:
		return [f'{", ".join(f + "()" for f in s.released_by)}, which it calls, lets go of '
			'the lock: without it here that unlock is unbalanced']
	return []


def judge(base: Dict[str, Case], mutant: Dict[str, Case], status: str,
	  reason: str = '') -> Tuple[Verdict, List[str]]:
	"""The verdict of a mutant from the cases of its boot against the
	unmutated boot's: each case that passed there and here failed, crashed
	(ERROR), was not reached (MISS) or is missing kills it; a boot that
	crashed or hung kills it too (with the case that was running, if any).
	A case that did not pass unmutated never counts."""
	if status in NOT_BUILT:
		return Verdict.BUILD_FAILED, []
	if status not in BUILT and status != ArchStatus.FLAKY:
		return Verdict.ERROR, []
	killers = []
	for row, b in base.items():
		if b.status != PASS:
			continue
		m = mutant.get(row)
		if m is None:
			killers.append(f'{row}: PASS -> missing')
		elif m.status in (FAIL, ERROR, MISS):
			why = failure_text(m)
			killers.append(f'{row}: PASS -> {m.status}' + (f' ({why})' if why else ''))
	if killers:
		return Verdict.KILLED, killers
	if status in (ArchStatus.CRASH, ArchStatus.TIMEOUT):
		first = reason.split('\n')[0]
		return Verdict.KILLED, [f'{status}' + (f': {first}' if first else '')]
	return Verdict.SURVIVED, []


# ------------------------------------------------------------------ options

def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('--arch', default='x86_64',
		       help=f'the one arch to build and boot ({", ".join(paths.QEMU_ARCHES)}; default x86_64)')
	p.add_argument('--profile', default=profiles.DEFAULT,
		       help=f'{" or ".join(MUTATE_PROFILES)} (default: default; the build directory '
			    'of run with that profile is reused)')
	p.add_argument('--subsystem', action='append', default=[], metavar='NAME',
		       help=f'{", ".join(SUBSYSTEMS)}; repeatable or a comma list (default: all three)')
	p.add_argument('--site', action='append', default=[], metavar='FILTER',
		       help='only the sites whose file:function:lock matches: a glob with * ? [, '
			    'else a substring (repeatable: any of them)')
	p.add_argument('--list', action='store_true',
		       help='print the sites found and exit; nothing is built')
	p.add_argument('--report', metavar='DIR', default=None,
		       help='nothing built: judge the sites of an earlier mutate results directory '
			    'again from its consoles and rewrite its mutate.json and mutate.html')
	p.add_argument('--slow', action='store_true',
		       help='boot the slow cases too (default: skipped, KUnit attribute speed>slow)')
	p.add_argument('--jobs', type=argtypes.at_least(1), default=os.cpu_count() or 1, help='make -j')
	p.add_argument('--timeout', type=argtypes.at_least(1), default=None,
		       help='seconds a guest may run (default: the profile\'s, else '
			    f'{plan.DEFAULT_TIMEOUT})')
	p.add_argument('--results-dir', default=None,
		       help='where results go (default: <cache>/results/<timestamp>-mutate)')
	p.add_argument('--ccache-dir', default=None, metavar='DIR',
		       help='the ccache directory (default: <cache>/ccache)')
	p.add_argument('--build-dir', default=None, metavar='DIR',
		       help='build in DIR/<arch> (default: run\'s, <cache>/build/debian[-<profile>]/<arch>)')
	p.add_argument('-v', '--verbose', action='store_true',
		       help='stream build and guest output instead of progress lines')


@dataclass(frozen=True)
class MutateOptions:
	"""`mutate`'s command line, read once and checked (from_args)."""
	arch: str
	profile: profiles.Profile
	subsystems: Tuple[str, ...]
	sites: Tuple[str, ...]
	slow: bool
	list_only: bool = False                 # --list
	results_dir: Optional[Path] = None
	build_dir: Optional[Path] = None
	ccache_dir: Optional[Path] = None
	timeout: Optional[int] = None
	jobs: int = 1
	verbose: bool = False
	allow_install: bool = True              # not --no-install

	@classmethod
	def from_args(cls, args: argparse.Namespace, cache: Path) -> 'MutateOptions':
		"""The command line, checked before anything is written: bad
		input is a UserError (one line, exit 2)."""
		try:
			arches = paths.parse_arches(args.arch)
		except ValueError as e:
			raise UserError(str(e))
		if len(arches) != 1 or arches[0] not in paths.QEMU_ARCHES:
			raise UserError(f'--arch takes one of {", ".join(paths.QEMU_ARCHES)}, not {args.arch!r}')
		arch = arches[0]
		if args.profile not in MUTATE_PROFILES:
			raise UserError(f'--profile: lock removal runs in {" or ".join(MUTATE_PROFILES)}, '
					f'not {args.profile!r}')
		prof = profiles.get(args.profile)
		if not prof.supports(arch):
			raise UserError(f'--profile {prof.name} on {arch}: {prof.why_not(arch)}')
		subs: List[str] = []
		for part in ','.join(args.subsystem).split(','):
			part = part.strip()
			if not part:
				continue
			if part not in SUBSYSTEMS:
				raise UserError(f'--subsystem: unknown subsystem {part!r}; choose from '
						f'{", ".join(SUBSYSTEMS)}')
			if part not in subs:
				subs.append(part)
		if args.subsystem and not subs:
			raise UserError('--subsystem: no subsystem given')
		if any(not f.strip() for f in args.site):
			raise UserError('--site: an empty filter')
		if not args.list:
			plan.kunitconfigs(arch, [], prof.name)
			if args.results_dir:
				paths.usable_dir(Path(args.results_dir).resolve(), '--results-dir', probe=True)
			else:
				paths.usable_dir(cache / 'results', 'the results directory', probe=True)
			for value, opt in ((args.build_dir, '--build-dir'), (args.ccache_dir, '--ccache-dir')):
				if value:
					paths.usable_dir(Path(value).resolve(), opt, probe=True)
		ordered = tuple(s for s in SUBSYSTEMS if s in subs) if subs else tuple(SUBSYSTEMS)

		def resolved(v: Optional[str]) -> Optional[Path]:
			return Path(v).resolve() if v else None
		return cls(arch, prof, ordered, tuple(args.site), bool(args.slow),
			   list_only=bool(args.list), results_dir=resolved(args.results_dir),
			   build_dir=resolved(args.build_dir),
			   ccache_dir=resolved(getattr(args, 'ccache_dir', None)),
			   timeout=args.timeout, jobs=args.jobs, verbose=bool(args.verbose),
			   allow_install=not args.no_install)


# ------------------------------------------------------------------ the run

def _slug(site: Site, n: int) -> str:
	name = re.sub(r'[^A-Za-z0-9_.-]+', '_', f'{Path(site.file).stem}-{site.function}-{site.lock}')
	return f'{n:03d}-{name[:80]}'


def results_dir(o: MutateOptions, cache: Path) -> Path:
	if o.results_dir:
		d = o.results_dir
		d.mkdir(parents=True, exist_ok=True)
		return d
	return paths.new_stamped_dir(cache / 'results', '-mutate')


def format_list(sites: Sequence[Site], unpaired: Sequence[Site], problems: Sequence[str]) -> str:
	lines = []
	for sub in SUBSYSTEMS:
		mine = [s for s in sites if s.subsystem == sub]
		if not mine:
			continue
		lines.append(f'{sub}: {len(mine)} site(s), suites {SUBSYSTEMS[sub].glob}')
		for s in mine:
			lines.append(f'  {s.id}  [{s.kind}, lines {",".join(map(str, s.lines))}]'
				     + (f' (let go in {", ".join(s.released_by)})' if s.released_by else '')
				     + (' (no caller)' if s.uncalled else ''))
	if unpaired:
		lines.append(f'not sites (a lock only taken or only let go in that function: '
			     f'{len(unpaired)}):')
		lines += [f'  {s.id}  [{s.kind}, lines {",".join(map(str, s.lines))}]' for s in unpaired]
	for p in problems:
		lines.append(f'not read: {p}')
	return '\n'.join(lines)


def _tree_path(cache: Path) -> Path:
	debver = tree.debian_version()
	if not debver:
		raise UserError(f'{paths.SOURCE_PACKAGE} is not installed: run `./tools/kunit.py prepare`')
	return tree.tree_path(cache, debver)


def main(o: MutateOptions, cache: Path) -> int:
	"""`mutate` (cli.py reads its command line into o)."""
	ktree = _tree_path(cache)
	lock = tree.lock_path(ktree)
	if journal_path(ktree).exists():
		with paths.locked(lock, f'the work tree {ktree}'):
			done = recover(ktree)
		if done:
			print(f'mutate: {done}', flush=True)
	if o.list_only:
		ktree = tree.find_prepared(cache)
		with paths.locked(lock, f'the work tree {ktree}', shared=True):
			sites, unpaired, problems = discover(ktree, o.subsystems)
		print(format_list(select(sites, o.sites), [] if o.sites else unpaired, problems))
		return 0
	deps.ensure(deps.for_arches([o.arch]), allow_install=o.allow_install)
	prep = tree.prepare(cache, allow_install=o.allow_install, quiet=True, keep_local=True)
	with paths.locked(lock, f'the work tree {prep.path}'):
		done = recover(prep.path)
		if done:
			print(f'mutate: {done}', flush=True)
		if tree.head(prep.path) != prep.head:
			raise UserError(f'the work tree {prep.path} changed after this command prepared '
					'it: another kunit.py prepared it from another series; run again')
		dirty = tree.dirty_files(prep.path)
		if dirty:
			raise UserError(f'the work tree {prep.path} has uncommitted changes, which a '
					'mutation would be mixed with:\n' + '\n'.join('  ' + d for d in dirty[:20])
					+ '\ncommit them (or `git stash`) first')
		return _mutate(o, cache, prep)


def _options(o: MutateOptions, glob: str, always_build: bool) -> plan.RunOptions:
	return plan.RunOptions(profile=o.profile, filter_glob=glob, timeout=o.timeout,
			       jobs=o.jobs, ccache_dir=o.ccache_dir,
			       always_build=always_build, verbose=o.verbose, crash_rerun=False,
			       attr_filter='' if o.slow else SKIP_SLOW)


def _mutate(o: MutateOptions, cache: Path, prep: tree.Prepared) -> int:
	ktree = prep.path
	sites, unpaired, problems = discover(ktree, o.subsystems)
	chosen = select(sites, o.sites)
	for p in problems:
		print(f'mutate: not read: {p}', file=sys.stderr)
	if not chosen:
		raise UserError('no lock site matches ' + (', '.join(map(repr, o.sites)) or
							  'the subsystems given'))
	if o.build_dir:
		bdir = o.build_dir / o.arch
	else:
		bdir = cache / 'build' / profiles.build_key('debian', o.profile.name) / o.arch
	bdir.parent.mkdir(parents=True, exist_ok=True)
	rdir = results_dir(o, cache)
	print(f'Tree {ktree} ({prep.debian_version} + {len(prep.patches)} patches); '
	      f'{len(chosen)} site(s) of {", ".join(o.subsystems)} on {o.arch}, profile '
	      f'{o.profile.name}; results {rdir}', flush=True)
	doc: Dict[str, Any] = {
		'version': RESULTS_VERSION, 'tree': str(ktree), 'head': prep.head,
		'kernel_version': prep.upstream, 'debian_version': prep.debian_version,
		'arch': o.arch, 'profile': o.profile.name, 'build_dir': str(bdir),
		'slow_cases': o.slow, 'site_filter': list(o.sites), 'subsystems': list(o.subsystems),
		'started': now(), 'finished': '', 'baseline': {}, 'sites': [],
		# the host's 1-minute load average at the start and the end: the
		# times of a shared machine are read with it
		'load_average': [round(os.getloadavg()[0], 2)],
		'sites_found': {s: sum(x.subsystem == s for x in sites) for s in o.subsystems},
		'unpaired': [s.id for s in unpaired], 'counts': {}}
	results: List[SiteResult] = []
	for n, s in enumerate(chosen, 1):
		results.append(SiteResult(s.id, s.subsystem, s.file, s.function, s.line, s.lock, s.kind,
					  len(s.calls), [], SUBSYSTEMS[s.subsystem].glob,
					  notes=site_notes(s), results=f'sites/{_slug(s, n)}/{o.arch}'))

	def save() -> None:
		doc['sites'] = [asdict(r) for r in results]
		doc['counts'] = {v.value: sum(r.verdict == v for r in results) for v in Verdict}
		write_json(rdir, doc)
		write_html(rdir, doc)

	base_cases: Dict[str, Dict[str, Case]] = {}
	try:
		for sub in dict.fromkeys(s.subsystem for s in chosen):
			glob = SUBSYSTEMS[sub].glob
			out = rdir / 'baseline' / sub / o.arch
			progress.say(f'{o.arch} baseline {sub}', f'unmutated, {glob}')
			res = runner.run_arch(ktree, o.arch, bdir, out, _options(o, glob, False), cache)
			rundir.write_verdict(out.parent, res)
			cases = case_outcomes(ktree, res, out)
			doc['baseline'][sub] = {'status': res.status, 'reason': res.reason,
						'passed': sum(c.status == PASS for c in cases.values()),
						'cases': len(cases),
						'build_seconds': round(res.build_seconds or 0.0, 1),
						'run_seconds': round(res.run_seconds or 0.0, 1),
						'results': f'baseline/{sub}/{o.arch}'}
			if res.status in NOT_BUILT or not any(c.status == PASS for c in cases.values()):
				raise UserError(f'the unmutated tree did not build or boot with {glob} '
						f'({res.status}: {res.reason.splitlines()[0] if res.reason else ""}); '
						f'see {out}')
			base_cases[sub] = cases
			save()
		for n, (s, r) in enumerate(zip(chosen, results), 1):
			out = rdir / r.results
			progress.say(f'{o.arch} [{n}/{len(chosen)}]', f'{s.label()} ({s.id})')
			if s.uncalled:
				r.verdict = Verdict.UNCALLED
				progress.say(f'{o.arch} [{n}/{len(chosen)}]',
					     f'{r.verdict}: not built ({r.notes[0]})')
				save()
				continue
			r.started, t0 = now(), time.time()
			try:
				with mutated(ktree, s) as changed:
					r.lines_changed = changed
					res = runner.run_arch(ktree, o.arch, bdir, out,
							   _options(o, r.suites, True), cache)
			except Exception as e:  # one site's trouble must not stop the others
				r.verdict, r.reason = Verdict.ERROR, f'{type(e).__name__}: {e}'
				r.wall_seconds = round(time.time() - t0, 1)
				save()
				continue
			rundir.write_verdict(out.parent, res)
			r.arch_status, r.reason = res.status, res.reason
			r.build_seconds = round(res.build_seconds or 0.0, 1)
			r.run_seconds = round(res.run_seconds or 0.0, 1)
			verdict, r.killed_by = judge(base_cases[s.subsystem],
						     case_outcomes(ktree, res, out), res.status, res.reason)
			r.verdict = verdict
			r.notes += [x for x in console_notes(out) if x not in r.notes]
			r.wall_seconds = round(time.time() - t0, 1)
			progress.say(f'{o.arch} [{n}/{len(chosen)}]', f'{verdict}'
				     + (f': {r.killed_by[0]}' + (f' (+{len(r.killed_by) - 1})'
								  if len(r.killed_by) > 1 else '')
					if r.killed_by else '')
				     + f' (build {r.build_seconds:.0f} s, boot {r.run_seconds:.0f} s)')
			save()
	finally:
		doc['finished'] = now()
		doc['load_average'] = doc['load_average'][:1] + [round(os.getloadavg()[0], 2)]
		save()
	print()
	print(format_table(results))
	print(f'\nResults: {rdir / "mutate.html"}')
	bad = [r for r in results if r.verdict not in ACCOUNTED]
	return 1 if bad else 0


def report(rdir: Path) -> int:
	"""--report: every site of a results directory judged again from the
	consoles it holds (the tree's kunit_parser, as now), mutate.json and
	mutate.html rewritten."""
	f = rdir / 'mutate.json'
	try:
		doc = json.loads(f.read_text())
		ktree = Path(doc['tree'])
		sites = doc['sites']
		bases = doc['baseline']
	except FileNotFoundError:
		raise UserError(f'{f} not found: is {rdir} a results directory of `kunit.py mutate`?')
	except (OSError, ValueError, KeyError, TypeError) as e:
		raise UserError(f'{f}: not a mutate.json ({type(e).__name__}: {e})')
	v = doc.get('version', RESULTS_VERSION)
	if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= RESULTS_VERSION:
		raise UserError(f'{f}: version {v!r}, not one this kunit.py reads (1 to '
				f'{RESULTS_VERSION}): written by a newer one?')
	if not (ktree / 'tools' / 'testing' / 'kunit' / 'kunit_parser.py').is_file():
		raise UserError(f'{ktree} (the tree of {f}) has no kunit_parser to read the consoles with')
	base_cases = {sub: case_outcomes(ktree, ArchResult(doc.get('arch', ''), b.get('status', '')),
					 rdir / b['results'])
		      for sub, b in bases.items()}
	results = []
	for d in sites:
		r = SiteResult(**d)
		if r.arch_status and r.subsystem in base_cases:
			res = ArchResult(doc.get('arch', ''), r.arch_status, r.reason)
			verdict, r.killed_by = judge(base_cases[r.subsystem],
						     case_outcomes(ktree, res, rdir / r.results),
						     r.arch_status, r.reason)
			r.verdict = verdict
			r.notes += [x for x in console_notes(rdir / r.results) if x not in r.notes]
		results.append(r)
	doc['sites'] = [asdict(r) for r in results]
	doc['counts'] = {v.value: sum(r.verdict == v for r in results) for v in Verdict}
	write_json(rdir, doc)
	write_html(rdir, doc)
	print(format_table(results))
	return 1 if any(r.verdict not in ACCOUNTED for r in results) else 0


def format_table(results: Sequence[SiteResult]) -> str:
	counts = {v: sum(r.verdict == v for r in results) for v in Verdict}
	lines = [f'{r.verdict:<12} {r.id}' + (f'  <- {r.killed_by[0]}' if r.killed_by else '')
		 + ''.join(f'\n{"":<13}note: {x}' for x in r.notes) for r in results]
	lines.append(', '.join(f'{n} {v.lower()}' for v, n in counts.items() if n)
		     + f' of {len(results)} site(s)')
	return '\n'.join(lines)


# ------------------------------------------------------------------ writing

def write_json(rdir: Path, doc: Dict[str, Any]) -> Path:
	p = Path(rdir) / 'mutate.json'
	atomic.write_text(p, json.dumps(doc, indent=1) + '\n')
	return p


def _e(s: Any) -> str:
	return html.escape(str(s), quote=True)


CSS = '''
body { font: 14px/1.4 sans-serif; margin: 1.5em; color: #111; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #bbb; padding: .25em .6em; text-align: left; vertical-align: top; }
thead th { background: #eee; } td.num { text-align: right; white-space: nowrap; }
.v-KILLED { background: #d5f5d5; } .v-SURVIVED { background: #f7c6c6; font-weight: bold; }
.v-BUILD_FAILED, .v-ERROR { background: #e8c4f0; } .v-NOT_RUN, .v-UNCALLED { background: #e4e4e4; }
code { font-family: monospace; } ul { margin: 0; padding-left: 1.2em; }
.note { font-size: .85em; color: #444; margin: .2em 0 0; }
'''


def html_page(doc: Dict[str, Any]) -> str:
	title = (f'Lock removal: Linux {doc.get("kernel_version") or "?"} on {doc.get("arch")}, '
		 f'profile {doc.get("profile")}')
	out = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
	       f'<title>{_e(title)}</title>', f'<style>{CSS}</style>', '</head>', '<body>',
	       f'<h1>{_e(title)}</h1>']
	counts = doc.get('counts') or {}
	out.append('<p class="overall">' + ', '.join(
		f'<span class="v-{_e(k)}">{_e(n)} {_e(k)}</span>' for k, n in counts.items() if n)
		+ f' of {len(doc.get("sites") or [])} site(s). A site is KILLED when a case that '
		'passed on the unmutated tree fails, crashes or goes missing without it.</p>')
	out.append('<table class="env">')
	for k in ('tree', 'head', 'debian_version', 'build_dir', 'started', 'finished'):
		if doc.get(k):
			out.append(f'<tr><th scope="row">{_e(k)}</th><td><code>{_e(doc[k])}</code></td></tr>')
	out.append('</table>')
	out.append('<h2 id="baseline">Unmutated</h2>\n<table><thead><tr><th>subsystem</th>'
		   '<th>status</th><th>passed</th><th>cases</th><th>build</th><th>boot</th>'
		   '<th>logs</th></tr></thead><tbody>')
	for sub, b in (doc.get('baseline') or {}).items():
		out.append(f'<tr><th scope="row">{_e(sub)}</th><td>{_e(b.get("status"))}</td>'
			   f'<td class="num">{_e(b.get("passed"))}</td><td class="num">{_e(b.get("cases"))}</td>'
			   f'<td class="num">{_e(b.get("build_seconds"))} s</td>'
			   f'<td class="num">{_e(b.get("run_seconds"))} s</td>'
			   f'<td><a href="{_e(b.get("results"))}/console.log">console.log</a></td></tr>')
	out.append('</tbody></table>')
	out.append('<h2 id="sites">Sites</h2>\n<table class="sites"><thead><tr><th>#</th>'
		   '<th>subsystem</th><th>file:line</th><th>function</th><th>lock</th><th>kind</th>'
		   '<th>lines changed</th><th>verdict</th><th>killed by</th><th>build</th><th>boot</th>'
		   '<th>logs</th></tr></thead><tbody>')
	for n, s in enumerate(doc.get('sites') or [], 1):
		killers = s.get('killed_by') or []
		shown = ''.join(f'<li><code>{_e(k)}</code></li>' for k in killers[:8])
		if len(killers) > 8:
			shown += f'<li>and {len(killers) - 8} more</li>'
		why = '' if killers or not s.get('reason') else _e(s['reason'].split('\n')[0])
		notes = ''.join(f'<p class="note">note: {_e(x)}</p>' for x in s.get('notes') or [])
		logs = ' '.join(f'<a href="{_e(s.get("results"))}/{name}">{name}</a>'
				for name in ('build.log', 'console.log'))
		out.append(
			f'<tr id="site-{n}" data-verdict="{_e(s.get("verdict"))}"><td class="num">{n}</td>'
			f'<td>{_e(s.get("subsystem"))}</td><td><code>{_e(s.get("file"))}:{_e(s.get("line"))}'
			f'</code></td><td><code>{_e(s.get("function"))}</code></td>'
			f'<td><code>{_e(s.get("lock"))}</code></td><td>{_e(s.get("kind"))}</td>'
			f'<td>{_e(",".join(map(str, s.get("lines_changed") or [])))}</td>'
			f'<td class="v-{_e(s.get("verdict"))}"><b>{_e(s.get("verdict"))}</b></td>'
			f'<td>{"<ul>" + shown + "</ul>" if shown else why}{notes}</td>'
			f'<td class="num">{_e(s.get("build_seconds"))} s</td>'
			f'<td class="num">{_e(s.get("run_seconds"))} s</td><td>{logs}</td></tr>')
	out.append('</tbody></table>')
	if doc.get('unpaired'):
		out.append('<h2 id="unpaired">Not sites</h2><p>A lock only taken, or only let go, in '
			   'that function (its caller holds it): never mutated.</p><ul>'
			   + ''.join(f'<li><code>{_e(u)}</code></li>' for u in doc['unpaired']) + '</ul>')
	out += ['</body>', '</html>', '']
	return '\n'.join(out)


LINK = '<p class="mutate"><a href="mutate.html">Lock removal (mutate.html)</a></p>'


def write_html(rdir: Path, doc: Dict[str, Any]) -> Path:
	"""mutate.html, and a link to it in index.html when the directory has one."""
	p = Path(rdir) / 'mutate.html'
	atomic.write_text(p, html_page(doc))
	index = Path(rdir) / 'index.html'
	if index.is_file():
		text = index.read_text(errors='replace')
		if LINK not in text and '</body>' in text:
			atomic.write_text(index, text.replace('</body>', LINK + '\n</body>', 1))
	return p
