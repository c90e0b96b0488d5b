# SPDX-License-Identifier: GPL-2.0
"""`kunit.py merge OUT DIR...`: the results of many jobs as one results
directory.

Each DIR is a results directory of `run` (summary.json; `run
--results-dir`, one arch x profile or more, from this machine or another),
what a `run` that died left (run.json and the verdict.json of the arches it
finished), a check-series results directory (series.json, `check-series
--results-dir`), or a directory holding such directories (a CI job's
artifacts, e.g. ci-results/).  OUT gets one results directory as `run`
writes it, that `report`, `compare` and `baseline` read:

  summary.json        the tree of the jobs, one entry per arch x profile, each
                      with its "profile" and its "dir"; "profiles",
                      "merged_from" (every job read), "series_checks"
  <arch>/             the default profile's arch directory of its job, copied
  <arch>-<profile>/   another profile's (model.slot_name)
  series/<n>.json     each check-series job's checks
  junit.xml, kcidb.json, index.html, <dir>/junit.xml   (export.write_reports)

Refused, with one line and exit status 2, before anything is written: jobs
of different trees or series (kernel and Debian version, series hash, the
tree's HEAD: the KCIDB checkout), of different filters, one arch x profile
in two jobs, a damaged summary.json, run.json or series.json (or one of a newer
format, or with an unknown status), an OUT that
exists and is not empty.  A job that died is never a pass: an arch its
run.json names without a verdict is ERROR when it had started (its
console, if any, read as far as it goes) and NOT_RUN when the job ended
before it (rundir.unfinished_entry); an arch x profile --expect names that no job has is
NOT_RUN; a series job that did not finish is reported as such.  OUT is
written in a temporary directory beside it and renamed into place.
"""

import argparse
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..base import paths
from ..base.errors import UserError
from ..results import export, rundir, seriesjob
from ..results.export import kcidb
from ..results.model import (
	ArchStatus, DEFAULT_PROFILE, ERROR, FAIL, PASS, SKIP, parse_time, slot_name)
from ..results.seriesjob import SeriesJob
from ..run import profiles
from ..series import checkplan
from ..source import tree

# What names the checkout the jobs ran (KCIDB's checkout id: HEAD and the
# series hash): every job must agree where it recorded one.
IDENTITY = ('kernel_version', 'debian_version', 'series_hash', 'head')
COUNTS = ('passed', 'failed', 'skipped', 'crashed')


@dataclass
class Job:
	"""One DIR of the command line (or one directory inside it)."""
	path: Path
	kind: str                          # 'run', 'died' (run.json only), 'series'
	info: Dict[str, Any]               # its summary.json, run.json or series.json
	entries: List[Tuple[Dict[str, Any], Path]] = field(default_factory=list)   # (entry, its dir)
	series: List[SeriesJob] = field(default_factory=list)     # check-series' (a merged one's too)


def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('out', help='the merged results directory to write (new, or empty)')
	p.add_argument('dirs', nargs='+', metavar='DIR',
		       help='results directories of run or check-series jobs, or directories '
			    'holding them')
	p.add_argument('--expect', default='', metavar='ARCH[:PROFILE],...',
		       help='every arch x profile the jobs were to run: one no job has is '
			    'NOT_RUN (e.g. x86_64,arm,x86_64:kasan)')
	p.add_argument('--expect-shards', default=None, metavar='N',
		       help='the check-series jobs were N shards (--shard K/N): a shard no job '
			    'has is reported as not run')
	p.add_argument('--tree', default=None,
		       help='kernel tree whose kunit_parser reads the consoles (default: the '
			    'first tree a job names that is on this machine, else the one prepared '
			    'in the cache)')
	p.add_argument('--origin', default=kcidb.DEFAULT_ORIGIN,
		       help=f'KCIDB origin (default: {kcidb.DEFAULT_ORIGIN})')


def expected(spec: str) -> List[Tuple[str, str]]:
	"""--expect as (arch, profile) pairs; a UserError for a bad one."""
	out: List[Tuple[str, str]] = []
	for item in (x.strip() for x in spec.split(',')):
		if not item:
			continue
		arch, _, prof = item.partition(':')
		prof = prof or DEFAULT_PROFILE
		if arch not in paths.ARCHES:
			raise UserError(f'--expect: unknown arch {arch!r}; choose from '
					f'{", ".join(paths.ARCHES)}')
		if prof not in profiles.PROFILES:
			raise UserError(f'--expect: unknown profile {prof!r}; choose from '
					f'{", ".join(profiles.PROFILES)}')
		if (arch, prof) not in out:
			out.append((arch, prof))
	return out


def read_job(d: Path) -> Optional[Job]:
	"""The job a directory holds, None when it holds none."""
	if (d / 'summary.json').is_file():
		summary = rundir.load_summary(d)       # a UserError naming it when damaged
		job = Job(d, 'run', summary)
		for e in summary['arches']:
			prof = rundir.entry_profile(summary, e)
			job.entries.append((dict(e, profile=prof), d / rundir.entry_dir(e)))
		job.series = export.series_checks(d, summary)     # a merged directory's
		return job
	if (d / rundir.PLAN).is_file():
		plan = rundir.load_plan(d)             # a UserError naming it when damaged
		job = Job(d, 'died', plan)
		for e in rundir.unfinished_entries(d, plan):
			job.entries.append((e, d / str(e['arch'])))
		return job
	if (d / seriesjob.FILE).is_file():
		s = seriesjob.read_series_job(d / seriesjob.FILE)
		return Job(d, 'series', s.document(), series=[s])
	return None


def find_jobs(dirs: Sequence[str], out: Path) -> Tuple[List[Job], List[str]]:
	"""The jobs of the DIR arguments (a directory holding results
	directories gives each of them), and notes on what was passed over."""
	jobs: List[Job] = []
	notes: List[str] = []
	for name in dirs:
		d = Path(name).resolve()
		if not d.is_dir():
			raise UserError(f'{name}: ' + ('not a directory' if d.exists() else 'no such directory'))
		if d == out:
			continue
		job = read_job(d)
		if job:
			jobs.append(job)
			continue
		inner = sorted(c for c in d.iterdir() if c.is_dir() and c.resolve() != out)
		found = [j for j in (read_job(c) for c in inner) if j]
		# An earlier merge's output beside the jobs (a merged directory
		# named on its own is a job like any other).
		merged = [j for j in found if j.info.get('merged_from')]
		found = [j for j in found if j not in merged]
		jobs += found
		for j in merged:
			notes.append(f'{j.path}: the output of an earlier merge, passed over')
		for c in inner:
			if not any(j.path == c for j in found + merged):
				notes.append(f'{c}: no summary.json, {rundir.PLAN} or {seriesjob.FILE}: '
					     'not a job\'s results, passed over')
		if not found:
			notes.append(f'{d}: no results in it')
	return jobs, notes


def check_same_tree(jobs: Sequence[Job]) -> None:
	"""One line and exit 2 when two jobs ran different trees, series or filters."""
	for key in IDENTITY + ('filter_glob',):
		seen: Dict[str, Path] = {}
		for j in jobs:
			if j.kind == 'series' and key not in seriesjob.IDENTITY:
				continue
			v = j.info.get(key)
			if key == 'filter_glob':
				if j.kind == 'series':
					continue
				v = v or ''
			elif not v:
				continue
			seen.setdefault(str(v), j.path)
		if len(seen) > 1:
			(a, pa), (b, pb) = list(seen.items())[:2]
			what = 'filters' if key == 'filter_glob' else 'trees or series'
			raise UserError(f'the jobs ran different {what}: {key} {a!r} in {pa}, {b!r} in {pb}; '
					'not merged')


def kernel_tree(jobs: Sequence[Job], named: Optional[str], cache: Path) -> Path:
	"""The tree whose kunit_parser reads the consoles: --tree, else the
	first tree a job names that is on this machine, else the tree
	prepared in this machine's cache (the jobs ran elsewhere)."""
	if named:
		want = [Path(named)]
	else:
		want = [Path(str(j.info['tree'])) for j in jobs if j.kind != 'series' and j.info.get('tree')]
		try:
			want.append(tree.find_prepared(cache))
		except UserError:
			pass
	for t in want:
		if (t / 'tools' / 'testing' / 'kunit' / 'kunit_parser.py').is_file():
			return t.resolve()
	raise UserError((f'{want[0]} has no' if want else 'no job names a tree with a')
			+ ' tools/testing/kunit/kunit_parser.py to read the consoles with, and this '
			'machine\'s cache has no prepared tree; run `./tools/kunit.py prepare` or name '
			'a kernel tree with --tree')


def _order(entry: Dict[str, Any]) -> Tuple[int, int, str]:
	arch, prof = str(entry['arch']), str(entry['profile'])
	archs = list(paths.ARCHES)
	profs = list(profiles.PROFILES)
	return (profs.index(prof) if prof in profs else len(profs),
		archs.index(arch) if arch in archs else len(archs), arch)


def plan_merge(jobs: Sequence[Job], expect: Sequence[Tuple[str, str]],
	       shards: int, patches: int) -> Tuple[List[Tuple[Dict[str, Any], Optional[Path]]],
						   List[SeriesJob]]:
	"""Every arch x profile (entry with its "dir", and the directory to copy)
	and every series job, checked: one arch x profile in two jobs is a
	UserError."""
	where: Dict[str, Path] = {}
	entries: List[Tuple[Dict[str, Any], Optional[Path]]] = []
	for j in jobs:
		for e, src in j.entries:
			slot = slot_name(str(e['arch']), str(e['profile']))
			if slot in where:
				raise UserError(f'{e["arch"]} ({e["profile"]}) is in two jobs, {where[slot]} and '
						f'{j.path}: one job per arch x profile; not merged')
			where[slot] = j.path
			entries.append((dict(e, dir=slot), src))
	for arch, prof in expect:
		slot = slot_name(arch, prof)
		if slot not in where:
			entries.append(({'arch': arch, 'profile': prof, 'dir': slot,
					 'status': ArchStatus.NOT_RUN, **dict.fromkeys(COUNTS, 0),
					 'reason': f'no results: no job left any for {arch} ({prof}) (it did '
						   'not start, or died before run wrote anything)'}, None))
	entries.sort(key=lambda x: _order(x[0]))
	series = [s for j in jobs for s in j.series]
	ranges: Dict[str, SeriesJob] = {}
	for s in series:
		key = s.shard or s.label
		if key in ranges:
			raise UserError(f'two check-series jobs checked {key}; not merged')
		ranges[key] = s
	for k in range(1, shards + 1):
		key = f'{k}/{shards}'
		if key not in ranges:
			first, last = checkplan.shard_range(k, shards, patches)
			series.append(SeriesJob(patches=patches, from_patch=first, to_patch=last,
						shard=key, complete=False))
	series.sort(key=lambda s: (s.from_patch, s.to_patch or s.patches, s.name))
	return entries, series


def series_length() -> int:
	"""The patches of this checkout's series (the shards' ranges)."""
	return len(tree.read_series(paths.PATCH_DIR))


def counts_from_cases(entry: Dict[str, Any], cases: Sequence[Any]) -> None:
	"""An arch whose job died has no counts of its own: those of the cases
	its console shows (so that summary.json, JUnit and KCIDB agree)."""
	entry.update(passed=sum(c.status == PASS for c in cases),
		     failed=sum(c.status == FAIL for c in cases),
		     skipped=sum(c.status == SKIP for c in cases),
		     crashed=sum(c.status == ERROR for c in cases))


def merge(out: Path, dirs: Sequence[str], expect_spec: str = '', shards: Optional[str] = None,
	  named_tree: Optional[str] = None, origin: str = kcidb.DEFAULT_ORIGIN,
	  cache: Optional[Path] = None) -> Tuple[Dict[str, Any], List[Any], List[str]]:
	"""Merge the jobs of dirs into out.  Returns (summary, the arches as
	read, notes)."""
	out = Path(out).resolve()
	kcidb.check_origin(origin)
	expect = expected(expect_spec)
	n_shards = 0
	if shards is not None:
		n_shards = checkplan.whole(shards, '--expect-shards', 1)
	if out.exists() and (not out.is_dir() or any(out.iterdir())):
		raise UserError(f'{out} exists and is not an empty directory: merge writes a new one')
	paths.usable_dir(out.parent, 'the merged results directory', probe=True)
	jobs, notes = find_jobs(dirs, out)
	if not jobs:
		raise UserError('no results in ' + ', '.join(dirs))
	check_same_tree(jobs)
	runs = [j for j in jobs if j.kind != 'series']
	patches = series_length() if n_shards else 0
	entries, series = plan_merge(jobs, expect, n_shards, patches)
	if not entries:
		raise UserError('no run among the jobs (only check-series results): nothing to merge '
				'them with; give --expect')
	ktree = kernel_tree(jobs, named_tree, cache or paths.cache_dir())
	first = runs[0].info if runs else jobs[0].info
	starts = [t for t in (parse_time(j.info.get('started')) for j in jobs) if t is not None]
	profs: List[str] = []
	for e, _ in entries:
		if e['profile'] not in profs:
			profs.append(str(e['profile']))
	summary: Dict[str, Any] = {
		k: first.get(k) for k in ('kernel_version', 'debian_version', 'series', 'series_hash',
					  'head') if first.get(k) is not None}
	summary.update(tree=str(ktree), arches=[e for e, _ in entries], results_dir=str(out),
		       filter_glob=str(first.get('filter_glob') or ''), profiles=profs,
		       merged_from=[{'dir': str(j.path), 'kind': j.kind,
				     'dirs': [slot_name(str(e['arch']), str(e['profile']))
					      for e, _ in j.entries]} for j in jobs])
	if len(profs) == 1:
		summary['profile'] = profs[0]
	if starts:
		summary['started'] = min(starts).isoformat(timespec='milliseconds')
	# Written beside OUT, under OUT's own name (KCIDB's ids take it), and
	# renamed into place once complete.
	stage = out.parent / f'.{out.name}.merging-{os.getpid()}'
	tmp = stage / out.name
	try:
		tmp.mkdir(parents=True)
		for e, src in entries:
			if src is not None and src.is_dir():
				shutil.copytree(src, tmp / e['dir'], symlinks=True)
			else:
				(tmp / e['dir']).mkdir()
		checks = []
		for n, s in enumerate(series, 1):
			rel = f'series/{n}.json'
			seriesjob.write_series_job(tmp / rel, s)
			checks.append({'file': rel, 'name': s.label, 'shard': s.shard or None,
				       'complete': s.complete, 'passed': len(s.checks) - s.failed,
				       'failed': s.failed})
		if checks:
			summary['series_checks'] = checks
		loaded = rundir.load_run(tmp, ktree, probe=False, summary=summary)
		for e, r in zip(summary['arches'], loaded[1]):
			if e.get('died') or e.get('status') == ArchStatus.NOT_RUN:
				counts_from_cases(e, r.cases)
		rundir.write_summary(tmp, summary)
		export.write_reports(tmp, ktree, origin, probe=False, loaded=loaded)
		if out.exists():
			out.rmdir()           # empty (checked above)
		os.rename(tmp, out)
	finally:
		shutil.rmtree(stage, ignore_errors=True)
	return summary, loaded[1], notes


@dataclass(frozen=True)
class MergeOptions:
	"""`merge`'s command line, read once (from_args)."""
	out: Path
	dirs: Tuple[str, ...]
	expect: str
	expect_shards: Optional[str]
	tree: Optional[str]
	origin: str
	cache: Path

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'MergeOptions':
		return cls(Path(args.out), tuple(args.dirs), args.expect, args.expect_shards,
			   args.tree, args.origin, paths.cache_dir(args.cache_dir))


def cmd(o: MergeOptions) -> int:
	"""`merge` (cli.py reads its command line into o)."""
	summary, runs, notes = merge(o.out, o.dirs, o.expect, o.expect_shards, o.tree, o.origin,
				     o.cache)
	for n in notes:
		print(f'note: {n}', file=sys.stderr)
	out = Path(summary['results_dir'])
	print(f'Merged {len(summary["merged_from"])} job(s) into {out}')
	bad = []
	rows = [(e['dir'], r.status, ' '.join(f'{e.get(k, 0)} {k}' for k in COUNTS))
		for e, r in zip(summary['arches'], runs)]
	for c in summary.get('series_checks', []):
		rows.append((f'series {c["name"]}',
			     ('FAIL' if c['failed'] else 'PASS') if c['complete'] else 'CRASH (did not finish)',
			     f'{c["passed"]} passed {c["failed"]} failed'))
	width = max(len(r[0]) for r in rows)
	for name, status, counts in rows:
		print(f'  {name:<{width}}  {status:<8} {counts}')
	for e, r in zip(summary['arches'], runs):
		if r.status not in (ArchStatus.PASS, ArchStatus.SKIPPED_PROFILE):
			bad.append(e['dir'])
		if r.disagreement:
			print(f'kunit.py merge: {e["dir"]}: {r.disagreement}; reported as {r.status}',
			      file=sys.stderr)
	for c in summary.get('series_checks', []):
		if c['failed'] or not c['complete']:
			bad.append(f'series {c["name"]}')
	for name in ('index.html', 'junit.xml', 'kcidb.json'):
		print(out / name)
	if bad:
		print(f'merge: not a pass: {", ".join(bad)}')
	return 1 if bad else 0
