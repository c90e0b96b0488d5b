# SPDX-License-Identifier: GPL-2.0
"""`kunit.py baseline` and `kunit.py compare`: per-case results kept in the
repository, and what changed since.

A baseline is kunit/baselines/<arch>.json:

  {"arch": "x86_64", "format": 1, "status": "PASS",
   "environment": {"kernel": ..., "compiler": ..., "qemu": ...,
                   "config_hash": ..., "series_hash": ...},
   "cases": {"suite.case": "pass", "suite.case/param": "fail", ...}}

written with sorted keys, so it diffs well in git.  A case is one of pass,
fail, skip, crash (running when the guest died, or it never printed its
result), missing (announced but never reached, or no result where one was
due) and flaky (failed, then passed when run again: `run --rerun-failures`).

The cases come from cases.py's reading of the consoles (the kernel tree's
own kunit_parser), not from a parser of our own.  When `run` booted again
after a crash to run the suites the crash cut off (verdict.json "boots"
with purpose "continue"), those consoles are read too and their suites take
the place of the never-started ones of the first boot.

compare: per arch, regressions (baseline pass, now fail, crash or missing),
fixes, new and vanished cases, new skips and flaky cases; and across the
arches of the run, a case that passes on one and not on another (i386 vs
x86_64 and arm vs arm64 flagged as word-size suspects; a case that passes on
every arch of one byte order and not on one of the other, flagged as a
byte-order suspect).  Only regressions
make it exit 1, also across a changed environment, which it names.
"""

import argparse
import fnmatch
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, cast

from . import covbaseline
from ..base import atomic, digest, paths
from ..base.errors import UserError
from ..results import model, rundir
from ..results.model import ArchResult, ArchStatus, RAN_TO_THE_END, Recorded

FORMAT = 1
PASS, FAIL, SKIP, CRASH, MISSING, FLAKY = (Recorded.PASS, Recorded.FAIL, Recorded.SKIP,
					   Recorded.CRASH, Recorded.MISSING, Recorded.FLAKY)
# The statuses that are not a pass.
BAD = (FAIL, CRASH, MISSING)
# The parts of the environment that change results without a code change.
ENVIRONMENT = (('kernel', 'kernel package'), ('compiler', 'compiler'), ('qemu', 'QEMU'),
	       ('config_hash', 'config hash'))
# 32- and 64-bit builds of one architecture: a case that passes on one of a
# pair and not on the other smells of long/pointer size assumptions.
WORD_SIZE_PAIRS = (('i386', 'x86_64'), ('arm', 'arm64'))


def endian_of(arch: str) -> str:
	"""'little' or 'big' (paths.Endian), '' for an arch this tool does not know."""
	a = paths.ARCHES.get(arch)
	return a.endian.value if a else ''


def byte_order_suspect(statuses: Dict[str, str]) -> str:
	"""The byte order a case fails on when it passes on every arch of the
	other and fails, crashes or is missing on an arch of this one: 'big',
	'little', or '' (both byte orders not in the run, or no such split)."""
	by: Dict[str, List[str]] = {}
	for arch, s in statuses.items():
		e = endian_of(arch)
		if e:
			by.setdefault(e, []).append(s)
	if len(by) < 2:
		return ''
	bad = [e for e, ss in by.items() if any(s in BAD for s in ss)]
	good = [e for e, ss in by.items() if all(s == PASS for s in ss)]
	return bad[0] if len(bad) == 1 and len(good) == 1 else ''


def default_dir(profile: str = 'default') -> Path:
	"""kunit/baselines for the default profile, kunit/baselines/<profile>
	for the others (a KASAN run is not compared with a lockdep-only one)."""
	base = paths.KUNIT_DIR / 'baselines'
	return base if profile in ('', 'default') else base / profile


# ------------------------------------------------------------ cases of a run


def read_lines(p: Path) -> List[str]:
	try:
		return p.read_text(errors='replace').splitlines()
	except OSError:
		return []


@dataclass
class ArchCases:
	"""One arch of a results directory as a baseline sees it: the arch
	(its ArchResult, as rundir.load_run read it back), its cases as a
	baseline records them ({'suite.case[/param]': status}, model.case_map)
	and the environment they ran in."""
	run: ArchResult
	cases: Dict[str, str] = field(default_factory=dict)
	environment: Dict[str, str] = field(default_factory=dict)

	@property
	def arch(self) -> str:
		return self.run.arch

	@property
	def status(self) -> str:
		return self.run.status

	@status.setter
	def status(self, status: str) -> None:
		self.run.status = status

	@property
	def built(self) -> bool:
		return self.run.built

	@property
	def damaged(self) -> str:
		"""Why the console does not bear summary.json out (rundir.py), or ''."""
		return self.run.disagreement

	@property
	def profile(self) -> str:
		return self.run.profile

	@property
	def name(self) -> str:
		"""Its subdirectory: the arch, or <arch>-<profile> (merged results)."""
		return self.run.name

	@property
	def complete(self) -> bool:
		return self.status in RAN_TO_THE_END


def kernel_tree_for(summary: Dict[str, Any], tree: Optional[str]) -> Path:
	ktree = Path(tree or summary.get('tree') or '')
	if not (ktree / 'tools' / 'testing' / 'kunit' / 'kunit_parser.py').is_file():
		raise UserError(f'{ktree} has no tools/testing/kunit/kunit_parser.py to read the '
				'consoles with; name a kernel tree with --tree')
	return ktree


def build_config_hash(cache: Path, summary: Dict[str, Any], arch: str, rdir: Path) -> str:
	"""For results from before run recorded config_hash: the sha256 of the
	arch's build directory .config, if it was not rebuilt after the run."""
	tree = str(summary.get('tree') or '')
	key = ('debian' if summary.get('debian_version') else
	       'tree-' + hashlib.sha1(tree.encode()).hexdigest()[:10])
	cfg = Path(cache) / 'build' / key / arch / '.config'
	try:
		if cfg.stat().st_mtime > (Path(rdir) / 'summary.json').stat().st_mtime:
			return ''
	except OSError:
		return ''
	return digest.file_sha256(cfg)


def load_results(rdir: Path, kernel_tree: Path, probe: bool = True,
		 cache: Optional[Path] = None,
		 loaded: Optional[rundir.Loaded] = None) -> Tuple[Dict[str, Any], List[ArchCases]]:
	"""summary.json and each arch's cases and environment.  cache: where to
	look for a build's .config when verdict.json has no config_hash.
	loaded: what rundir.load_run already read of rdir."""
	rdir = Path(rdir)
	summary, runs = loaded or rundir.load_run(rdir, kernel_tree, probe=probe)
	entries = {rundir.entry_dir(e): e for e in summary.get('arches', [])}
	kernel = (str(summary.get('debian_version') or '')
		  or (f'Linux {summary["kernel_version"]}' if summary.get('kernel_version') else ''))
	out = []
	for r in runs:
		if r.status == ArchStatus.SKIPPED_PROFILE:
			continue      # not run: the profile does not exist on that arch
		entry = entries.get(r.name, {})
		adir = rdir / r.name
		verdict = rundir.load_verdict(adir, entry)
		suites = r.suites           # every boot's (rundir.load_run merges them)
		flaky: List[Any] = next((f for f in (verdict.get('flaky'), entry.get('flaky'))
			      if isinstance(f, list) and f), [])
		cases = model.case_map(suites, [str(x) for x in flaky])
		config = str(verdict.get('config_hash') or entry.get('config_hash') or '')
		if 'config_hash' not in verdict and 'config_hash' not in entry and cache and r.built:
			config = build_config_hash(cache, summary, r.arch, rdir)
		env = {'kernel': kernel, 'compiler': r.compiler, 'qemu': r.qemu,
		       'config_hash': config, 'series_hash': str(summary.get('series_hash') or '')}
		out.append(ArchCases(r, cases, env))
	return summary, out


def profile_dirs(named: Optional[Path], summary: Dict[str, Any]) -> Dict[str, Path]:
	"""Where the baselines of each profile of a results directory are.
	Without --baseline-dir: kunit/baselines for the default profile,
	kunit/baselines/<profile> for the others (default_dir).  With
	--baseline-dir D: for a results directory of one profile (every run's),
	D itself, as always; for one of several (`merge`), D is laid out as
	kunit/baselines: D for default, D/<profile> for the others."""
	profiles = rundir.profiles_of(summary) or [str(summary.get('profile') or 'default')]
	if named is None:
		return {p: default_dir(p) for p in profiles}
	if len(profiles) == 1:
		return {profiles[0]: Path(named)}
	return {p: Path(named) if p == 'default' else Path(named) / p for p in profiles}


# ------------------------------------------------------------------ baseline


def baseline_document(a: ArchCases) -> Dict[str, Any]:
	return {'format': FORMAT, 'arch': a.arch, 'status': a.status,
		'environment': dict(a.environment), 'cases': dict(a.cases)}


def dumps(doc: Dict[str, Any]) -> str:
	"""Deterministic JSON: sorted keys, one entry a line, a final newline."""
	return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + '\n'


def baseline_path(bdir: Path, arch: str) -> Path:
	return Path(bdir) / f'{arch}.json'


def load_baseline(bdir: Path, arch: str) -> Optional[Dict[str, Any]]:
	p = baseline_path(bdir, arch)
	if not p.is_file():
		return None
	try:
		doc = json.loads(p.read_text())
	except OSError as e:
		raise UserError(f'{p}: cannot read it ({e.strerror})')
	except ValueError as e:       # UnicodeDecodeError too
		raise UserError(f'{p}: not JSON ({e})')
	problem = baseline_problem(doc, arch)
	if problem:
		raise UserError(f'{p}: not a baseline ({problem})')
	return cast(Dict[str, Any], doc)


def baseline_problem(doc: Any, arch: str) -> str:
	"""What makes a loaded baseline unusable, or ''."""
	if not isinstance(doc, dict) or not isinstance(doc.get('cases'), dict):
		return 'no "cases"'
	problem = rundir.version_problem(doc.get('format', FORMAT), FORMAT)
	if problem:
		return problem
	bad = [k for k, v in doc['cases'].items() if not isinstance(v, str)]
	if bad:
		return f'case {bad[0]} has no status text'
	known = [r.value for r in Recorded]
	bad = [k for k, v in doc['cases'].items() if v not in known]
	if bad:
		return (f'case {bad[0]}: unknown status {doc["cases"][bad[0]]!r} '
			f'(known: {", ".join(known)})')
	if doc.get('status') is not None and doc['status'] not in rundir.STATUSES:
		return f'unknown arch status {doc["status"]!r}'
	if not isinstance(doc.get('environment', {}) or {}, dict):
		return '"environment" is not an object'
	if doc.get('arch') is not None and doc['arch'] != arch:
		return f'it is the baseline of {doc["arch"]!r}, not of {arch}'
	return ''


def write_baselines(rdir: Path, kernel_tree: Path, bdir: Optional[Path],
		    arches: Optional[List[str]] = None, probe: bool = True,
		    cache: Optional[Path] = None) -> Tuple[List[Path], List[str]]:
	"""Write <bdir>/<arch>.json for each arch of the run that has case
	results (bdir None: kunit/baselines[/<profile>]; a results directory of
	several profiles: profile_dirs).  Returns (written, messages about
	arches left out)."""
	summary, results = load_results(rdir, kernel_tree, probe, cache)
	dirs = profile_dirs(Path(bdir) if bdir is not None else None, summary)
	written, skipped = [], []
	known = sorted({a.arch for a in results}, key=[a.arch for a in results].index)
	for want in arches or []:
		if want not in known:
			skipped.append(f'{want}: not in this run ({", ".join(known) or "no arch"})')
	damaged = [a for a in results if a.damaged and (not arches or a.arch in arches)]
	if damaged:
		# A baseline is what later runs are judged by: only from a run
		# whose every console bears out its summary, and then all of it.
		raise UserError('not recording baselines from damaged results in '
				f'{rdir}: ' + '; '.join(f'{a.arch}: {a.damaged}' for a in damaged),
				exit_code=1)
	died = {rundir.entry_dir(e) for e in summary.get('arches', []) if e.get('died')}
	for a in results:
		if arches and a.arch not in arches:
			continue
		if a.name in died:
			skipped.append(f'{a.name}: the run ended before it had a verdict ({a.status}); '
				       'baseline not recorded')
			continue
		if not a.cases:
			skipped.append(f'{a.name}: no case results ({a.status}); baseline not recorded')
			continue
		p = baseline_path(dirs.get(a.profile) or default_dir(a.profile), a.arch)
		atomic.write_text(p, dumps(baseline_document(a)))
		written.append(p)
	# run --coverage: each arch's per-file coverage beside its cases.
	cw, cs = covbaseline.write(summary, dirs, default_dir(str(summary.get('profile') or 'default')),
				   arches)
	return written + cw, skipped + cs


# ------------------------------------------------------------------- compare


def in_filter(key: str, glob: str) -> bool:
	"""Whether kunit's filter_glob ('suite_glob[.case_glob]') selects key."""
	if not glob:
		return True
	suite_glob, _, case_glob = glob.partition('.')
	suite, _, case = key.partition('.')
	if not fnmatch.fnmatchcase(suite, suite_glob):
		return False
	return not case_glob or not case or fnmatch.fnmatchcase(case.split('/')[0], case_glob)


@dataclass
class Comparison:
	arch: str
	baseline: Path
	has_baseline: bool = True
	status: str = ''              # the arch's status in this run
	damaged: str = ''             # the console does not bear summary.json out
	env_diffs: List[Tuple[str, str, str]] = field(default_factory=list)   # label, then, now
	env_unknown: List[str] = field(default_factory=list)
	series: Tuple[str, str] = ('', '')
	regressions: List[Tuple[str, str, str]] = field(default_factory=list)
	fixes: List[Tuple[str, str, str]] = field(default_factory=list)
	new: List[Tuple[str, str]] = field(default_factory=list)
	vanished: List[Tuple[str, str]] = field(default_factory=list)
	new_skips: List[Tuple[str, str]] = field(default_factory=list)
	flaky: List[Tuple[str, str]] = field(default_factory=list)
	changed: List[Tuple[str, str, str]] = field(default_factory=list)

	@property
	def across_environments(self) -> bool:
		return bool(self.env_diffs)


def compare_environment(then: Dict[str, str], now: Dict[str, str],
			c: Comparison) -> None:
	for key, label in ENVIRONMENT:
		a, b = str(then.get(key) or ''), str(now.get(key) or '')
		if a and b and a != b:
			c.env_diffs.append((label, a, b))
		elif a != b:
			c.env_unknown.append(f'{label} unknown {"now" if a else "in the baseline"}')
	a, b = str(then.get('series_hash') or ''), str(now.get('series_hash') or '')
	if a != b:
		c.series = (a, b)


def compare_arch(base: Dict[str, Any], now: ArchCases, bpath: Path,
		 filter_glob: str = '') -> Comparison:
	c = Comparison(now.name, bpath, status=now.status, damaged=now.damaged)
	compare_environment(base.get('environment') or {}, now.environment, c)
	old_cases: Dict[str, str] = {str(k): str(v) for k, v in base['cases'].items()}
	for key in sorted(set(old_cases) | set(now.cases)):
		if not in_filter(key, filter_glob):
			continue
		old, new = old_cases.get(key), now.cases.get(key)
		if old is None:
			c.new.append((key, new or MISSING))
			continue
		if new is None:
			if now.complete:
				c.vanished.append((key, old))
				continue
			new = MISSING          # cut off by a crash, a hang or the build
		if new == old:
			continue
		if new == FLAKY:
			c.flaky.append((key, old))
		elif old == PASS and new in BAD:
			c.regressions.append((key, old, new))
		elif new == PASS and old in BAD + (FLAKY,):
			c.fixes.append((key, old, new))
		elif new == SKIP:
			c.new_skips.append((key, old))
		else:
			c.changed.append((key, old, new))
	return c


def slot_of(arch: str, profile: str) -> str:
	return model.slot_name(arch, profile)


def divergence(results: Sequence[ArchCases]) -> Dict[str, Any]:
	"""Cases that pass on one arch and fail, crash or are missing on another.

	{'cases': [{'case', 'statuses': {arch: status}, 'word_size_suspect':
	['i386<->x86_64'], 'byte_order_suspect': 'big'}], 'no_results': {arch:
	status}}.  byte_order_suspect: byte_order_suspect() of the statuses.  An arch with no case
	results at all (it did not build, or printed no KTAP) is named once in
	no_results instead of making every case diverge."""
	with_cases = [a for a in results if a.cases]
	out: Dict[str, Any] = {'cases': [], 'no_results': {a.arch: a.status for a in results
							   if not a.cases}}
	if len(with_cases) < 2:
		return out
	keys = sorted({k for a in with_cases for k in a.cases})
	for key in keys:
		st = {a.arch: a.cases.get(key, MISSING) for a in with_cases}
		if not (any(s == PASS for s in st.values()) and any(s in BAD for s in st.values())):
			continue
		suspects = [f'{x}<->{y}' for x, y in WORD_SIZE_PAIRS
			    if x in st and y in st and {st[x], st[y]} & {PASS}
			    and {st[x], st[y]} & set(BAD)]
		out['cases'].append({'case': key, 'statuses': st, 'word_size_suspect': suspects,
				     'byte_order_suspect': byte_order_suspect(st)})
	return out


def format_divergence(div: Dict[str, Any], limit: int = 0) -> List[str]:
	lines = []
	for arch, status in div.get('no_results', {}).items():
		lines.append(f'  {arch}: no case results ({status}); every case is missing there')
	rows = div.get('cases', [])
	for d in rows[:limit or len(rows)]:
		groups: Dict[str, List[str]] = {}
		for arch, s in d['statuses'].items():
			groups.setdefault(s, []).append(arch)
		order = [PASS, FAIL, CRASH, MISSING, FLAKY, SKIP]
		text = '; '.join(f'{s if s in (PASS, SKIP, MISSING) else s.upper()} on '
				 f'{", ".join(groups[s])}' for s in order if s in groups)
		sus = (f'  [word-size suspect: {", ".join(d["word_size_suspect"])}]'
		       if d['word_size_suspect'] else '')
		if d.get('byte_order_suspect'):
			sus += (f'  [byte-order suspect: fails on {d["byte_order_suspect"]}-endian, '
				'passes on every arch of the other byte order]')
		lines.append(f'  {d["case"]}: {text}{sus}')
	if limit and len(rows) > limit:
		lines.append(f'  ... and {len(rows) - limit} more (summary.json "divergence")')
	return lines


def format_comparison(c: Comparison) -> List[str]:
	warn = ([f'  WARNING: {c.damaged}; judged {c.status} from the console: the cases '
		 'it does not show are missing (regressions where the baseline passed)']
		if c.damaged else [])
	if not c.has_baseline:
		return [f'{c.arch}: no baseline ({c.baseline} does not exist): nothing to compare, '
			'not a regression; record one with `./tools/kunit.py baseline`'] + warn
	lines = [f'{c.arch} ({c.status or "?"}): compared with {c.baseline}'] + warn
	if c.env_diffs:
		lines.append('  WARNING: comparison across environments: '
			     + '; '.join(f'{label} differs (baseline {a!r}, now {b!r})'
					 for label, a, b in c.env_diffs))
		lines.append('  WARNING: a difference below may come from the environment change, '
			     'not from the code; regressions still count')
	else:
		lines.append('  environment: same as the baseline'
			     + (f' ({"; ".join(c.env_unknown)})' if c.env_unknown else ''))
	if c.env_diffs and c.env_unknown:
		lines.append(f'  ({"; ".join(c.env_unknown)})')
	if any(c.series):
		lines.append(f'  series changed since the baseline: {c.series[0][:12] or "?"} -> '
			     f'{c.series[1][:12] or "?"}')
	for key, a, b in c.regressions:
		lines.append(f'  REGRESSION  {key}: {a} -> {b}')
	for key, a, b in c.fixes:
		lines.append(f'  fixed       {key}: {a} -> {b}')
	for key, s in c.new:
		lines.append(f'  new         {key}: {s}')
	for key, s in c.vanished:
		lines.append(f'  vanished    {key} (was {s})')
	for key, s in c.new_skips:
		lines.append(f'  new skip    {key} (was {s})')
	for key, s in c.flaky:
		lines.append(f'  FLAKY       {key} (was {s})')
	for key, a, b in c.changed:
		lines.append(f'  changed     {key}: {a} -> {b}')
	lines.append(f'  {len(c.regressions)} regression(s), {len(c.fixes)} fixed, {len(c.new)} new, '
		     f'{len(c.vanished)} vanished, {len(c.new_skips)} new skip(s), '
		     f'{len(c.flaky)} flaky, {len(c.changed)} other change(s)'
		     + (' [across environments]' if c.env_diffs else ''))
	return lines


def compare(rdir: Path, kernel_tree: Path, bdir: Optional[Path], probe: bool = True,
	    out: Optional[TextIO] = None, show_divergence: bool = True,
	    cache: Optional[Path] = None) -> Tuple[int, List[Comparison], Dict[str, Any]]:
	"""Print the comparison of a results directory with the baselines (and,
	unless run printed it already, the cross-arch divergence).
	Returns (exit status: 1 on any regression, else 0, comparisons, divergence)."""
	out = out or sys.stdout
	summary, results = load_results(rdir, kernel_tree, probe, cache)
	dirs = profile_dirs(Path(bdir) if bdir is not None else None, summary)
	comps = []
	print(f'Comparing {rdir} with the baselines in '
	      + ', '.join(f'{d}' + (f' ({p})' if len(dirs) > 1 else '') for p, d in dirs.items()),
	      file=out)
	for a in results:
		pdir = dirs.get(a.profile) or default_dir(a.profile)
		bpath = baseline_path(pdir, a.arch)
		base = load_baseline(pdir, a.arch)
		if base is None:
			c = Comparison(a.name, bpath, has_baseline=False, status=a.status,
				       damaged=a.damaged)
		else:
			c = compare_arch(base, a, bpath, str(summary.get('filter_glob') or ''))
		comps.append(c)
		print('\n'.join(format_comparison(c)), file=out)
	# Across the arches of one profile (a KASAN case against a lockdep-only
	# one says nothing of word size).
	groups = {p: [a for a in results if a.profile == p] for p in dirs}
	div: Dict[str, Any] = {'cases': [], 'no_results': {}}
	for p, group in groups.items():
		d = divergence(group)
		div['cases'] += [dict(x, profile=p) for x in d['cases']] if len(groups) > 1 else d['cases']
		div['no_results'].update({(a if len(groups) == 1 else slot_of(a, p)): s
					  for a, s in d['no_results'].items()})
		if show_divergence and (d['cases'] or (d['no_results'] and len(group) > 1)):
			print('\nCross-arch divergence (this run' + (f', profile {p}' if len(groups) > 1
								     else '') + '):', file=out)
			print('\n'.join(format_divergence(d)), file=out)
	cov_dropped = covbaseline.compare(summary, dirs,
					  default_dir(str(summary.get('profile') or 'default')), out)
	bad = [c for c in comps if c.regressions or c.damaged]
	if cov_dropped:
		print('\ncompare: coverage dropped on ' + ', '.join(cov_dropped), file=out)
	if bad:
		print('\ncompare: ' + ', '.join(
			f'{c.arch} {len(c.regressions)} regression(s)'
			+ (' across environments (' + ', '.join(l for l, _, _ in c.env_diffs) + ' changed)'
			   if c.env_diffs else '')
			+ (' (damaged results: the console does not bear summary.json out)'
			   if c.damaged else '') for c in bad), file=out)
	else:
		print('\ncompare: no regressions', file=out)
	return (1 if bad or cov_dropped else 0), comps, div


# ------------------------------------------------------------------- the verbs


def add_arguments(p: argparse.ArgumentParser, verb: str) -> None:
	p.add_argument('results_dir', nargs='?', default=None,
		       help='a results directory of `run` (default: <cache>/results/latest)')
	p.add_argument('--baseline-dir', default=None,
		       help='where the baselines are (default: kunit/baselines in the repository)')
	p.add_argument('--tree', default=None,
		       help='kernel tree whose kunit_parser reads the consoles '
			    '(default: the tree in summary.json)')
	if verb == 'baseline':
		p.add_argument('--arch', default=None,
			       help='record only these arches (comma list; default: every arch of the run)')
		p.add_argument('--coverage-only', action='store_true',
			       help='of a `run --coverage`, record only the coverage baselines '
				    '(<baseline dir>/coverage/<arch>.json), not the cases')


@dataclass(frozen=True)
class BaselineOptions:
	"""`baseline`'s and `compare`'s command line, read once (from_args)."""
	rdir: Path                            # --results-dir, else <cache>/results/latest
	cache: Path
	tree: Optional[str] = None            # --tree, as given
	baseline_dir: Optional[str] = None    # --baseline-dir, as given
	arch: str = ''                        # baseline --arch
	coverage_only: bool = False           # baseline --coverage-only

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'BaselineOptions':
		a = vars(args)
		cache = paths.cache_dir(a.get('cache_dir'))
		rdir = (Path(a['results_dir']).resolve() if a.get('results_dir')
			else (cache / 'results' / 'latest').resolve())
		return cls(rdir, cache, tree=a.get('tree'), baseline_dir=a.get('baseline_dir'),
			   arch=a.get('arch') or '', coverage_only=bool(a.get('coverage_only', False)))


def cmd_baseline(o: BaselineOptions) -> int:
	"""`baseline` (cli.py reads its command line into o)."""
	rdir = o.rdir
	summary = rundir.load_summary(rdir)
	coverage_only = o.coverage_only
	# The consoles are not read for coverage baselines alone.
	ktree = Path(o.tree or '') if coverage_only else kernel_tree_for(summary, o.tree)
	arches = None
	if o.arch:
		try:
			arches = paths.parse_arches(o.arch)
		except ValueError as e:
			raise UserError(str(e))
	named = Path(o.baseline_dir).resolve() if o.baseline_dir else None
	for d in profile_dirs(named, summary).values():
		paths.usable_dir(d, 'baseline directory')
	if coverage_only:
		written, skipped = covbaseline.write(
			summary, profile_dirs(named, summary),
			default_dir(str(summary.get('profile') or 'default')), arches)
	else:
		written, skipped = write_baselines(rdir, ktree, named, arches, cache=o.cache)
	for p in written:
		doc = json.loads(p.read_text())
		if 'cases' not in doc:
			total = (doc.get('total') or {}).get('lines') or {}
			print(f'{p}: coverage of {len(doc.get("files", {}))} files '
			      f'({total.get("hit")}/{total.get("total")} lines)')
			continue
		counts: Dict[str, int] = {}
		for s in doc['cases'].values():
			counts[s] = counts.get(s, 0) + 1
		print(f'{p}: {len(doc["cases"])} cases ('
		      + ', '.join(f'{n} {s}' for s, n in sorted(counts.items())) + ')')
	for m in skipped:
		print(m)
	if not written:
		raise UserError(f'no baseline written from {rdir}', exit_code=1)
	return 0


def check_baseline_dir(named: Optional[str]) -> None:
	"""A --baseline-dir given to compare must be a directory that exists:
	a mistyped one would otherwise read as "no baseline", exit 0."""
	if named and not Path(named).is_dir():
		raise UserError(f'--baseline-dir {named}: '
				+ ('not a directory' if Path(named).exists() else 'no such directory')
				+ ' (record baselines with `./tools/kunit.py baseline`)')


def compare_command(o: BaselineOptions) -> Tuple[int, List[Comparison], Path]:
	"""`kunit.py compare`: (exit status, the comparisons, the results
	directory)."""
	check_baseline_dir(o.baseline_dir)
	rdir = o.rdir
	summary = rundir.load_summary(rdir)
	ktree = kernel_tree_for(summary, o.tree)
	named = Path(o.baseline_dir).resolve() if o.baseline_dir else None
	rc, comps, _ = compare(rdir, ktree, named, cache=o.cache)
	return rc, comps, rdir


def cmd_compare(o: BaselineOptions) -> int:
	"""`compare` (cli.py reads its command line into o)."""
	return compare_command(o)[0]
