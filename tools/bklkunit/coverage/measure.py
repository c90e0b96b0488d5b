# SPDX-License-Identifier: GPL-2.0
"""An arch's coverage, from its .gcda files to the numbers and the HTML.

<results>/<arch>/coverage/:
  suites/gcda/...      the counters after the suites (the first boot)
  boot/gcda/...        the counters of the boot that ran no suite
  suites.info, boot.info   lcov's capture of each (geninfo, through the
                       arch's gcov), only the profiled directories
  coverage.info        suites minus boot (lcovinfo.subtract), measured files only
  coverage.json        per file and per subsystem: lines, functions, branches
  html/index.html      genhtml of coverage.info
  lcov.log             what lcov and genhtml printed
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import lcovinfo, scope
from ..base import atomic, paths
from ..base.errors import UserError

LCOV_RC = ['--rc', 'lcov_branch_coverage=1', '--rc', 'geninfo_auto_base=1']
# Uncovered regions listed per file in coverage.json (largest first).
REGIONS = 8


class CoverageError(Exception):
	"""A step of the coverage report failed; the message says which."""


def gcov_tool(arch: str) -> str:
	"""The gcov of the compiler that built arch (its .gcno format)."""
	cross = paths.ARCHES[arch].cross_compile
	tool = cross + 'gcov'
	return tool if shutil.which(tool) else 'gcov'


def _run(cmd: Sequence[str], log: Path, what: str) -> None:
	with open(log, 'a') as f:
		f.write('$ ' + ' '.join(cmd) + '\n')
		f.flush()
		proc = subprocess.run(list(cmd), stdout=f, stderr=subprocess.STDOUT)
	if proc.returncode != 0:
		raise CoverageError(f'{what} failed (exit {proc.returncode}); see {log}')


def stage(gcda_root: Path, build_dir: Path, capture: Path) -> int:
	"""The .gcda files of a dump (gcda_root/<build dir>/<obj>.gcda, as
	debugfs names them) placed under capture/<obj>.gcda beside a link to
	their .gcno in the build directory, for geninfo.  UML's files are
	already at their build-directory paths (gcda_root is then the build
	directory's copy).  Returns how many."""
	if capture.exists():
		shutil.rmtree(capture)
	n = 0
	for f in sorted(gcda_root.rglob('*.gcda')):
		rel = build_relative(f.relative_to(gcda_root), build_dir)
		if rel is None:
			continue
		dest = capture / rel
		dest.parent.mkdir(parents=True, exist_ok=True)
		shutil.copyfile(f, dest)
		gcno = build_dir / rel.with_suffix('.gcno')
		if gcno.is_file():
			os.symlink(gcno, dest.with_suffix('.gcno'))
			n += 1
	return n


def build_relative(rel: Path, build_dir: Path) -> Optional[Path]:
	"""A dumped path (the absolute object path without its leading /, or
	already relative to the build directory) relative to the build
	directory; None when it is not one of the profiled directories."""
	s = rel.as_posix()
	b = build_dir.as_posix().lstrip('/') + '/'
	if s.startswith(b):
		s = s[len(b):]
	if not any(s.startswith(d + '/') for d in scope.DIRS):
		return None
	return Path(s)


def capture(arch: str, gcda_root: Path, build_dir: Path, ktree: Path, work: Path,
	    name: str, log: Path) -> Dict[str, lcovinfo.FileCov]:
	"""lcov's capture of one set of counters, source paths relative to the tree."""
	cap = work / f'{name}.capture'
	if stage(gcda_root, build_dir, cap) == 0:
		raise CoverageError(f'no .gcda file of {", ".join(scope.DIRS)} in the {name} '
				    'counters (was the kernel built with --coverage?)')
	info = work / f'{name}.info'
	_run(['lcov', '--quiet', '--capture', '--directory', str(cap), '--base-directory',
	      str(build_dir), '--gcov-tool', gcov_tool(arch), '--output-file', str(info)]
	     + LCOV_RC, log, f'lcov --capture of the {name} counters')
	shutil.rmtree(cap, ignore_errors=True)
	return relative(lcovinfo.parse(info.read_text()), ktree)


def relative(files: Dict[str, lcovinfo.FileCov], ktree: Path) -> Dict[str, lcovinfo.FileCov]:
	"""The files of the tree, by their path in it (others dropped: headers
	inlined into the profiled objects are counted where they are defined,
	which is not what is measured)."""
	out: Dict[str, lcovinfo.FileCov] = {}
	root = os.path.realpath(ktree) + '/'
	for path, f in files.items():
		real = os.path.realpath(path)
		if real.startswith(root):
			rel = real[len(root):]
			f.path = rel
			out[rel] = f
	return out


def series_kunit_files(ktree: Path) -> List[str]:
	"""lib/kunit's files the series adds (git, pristine..HEAD), its tests
	left out; [] when the tree has no pristine reference."""
	proc = subprocess.run(['git', '-C', str(ktree), 'diff', '--name-only', '--diff-filter=A',
			       'refs/bkl-kunit/pristine..HEAD', '--', 'lib/kunit'],
			      capture_output=True, text=True)
	if proc.returncode != 0:
		return []
	return sorted(p for p in proc.stdout.split()
		      if p.endswith('.c') and not scope.is_test_file(p))


def summarize(files: Dict[str, lcovinfo.FileCov], kunit_files: Sequence[str],
	      boot: Optional[Dict[str, lcovinfo.FileCov]] = None) -> Dict[str, Any]:
	"""coverage.json: per measured file and subsystem, the totals, the goal
	files against scope.GOAL, each file's largest uncovered regions, and
	(boot: the boot that ran no suite) its lines only boot executed: the
	initcalls, which no suite can reach."""
	boot = boot or {}
	per_file: Dict[str, Any] = {}
	subs: Dict[str, lcovinfo.Counts] = {}
	total = lcovinfo.Counts()
	for path in sorted(files):
		if not scope.measured(path, list(kunit_files)):
			continue
		f = files[path]
		c = f.counts()
		entry: Dict[str, Any] = dict(c.as_dict())
		entry['subsystem'] = scope.subsystem_of(path)
		entry['goal'] = path in scope.GOAL_FILES
		entry['uncovered'] = [{'lines': [a, b], 'count': n, 'function': fn}
				      for a, b, n, fn in f.uncovered_regions()[:REGIONS]]
		entry['uncovered_functions'] = sorted(n for n, k in f.functions.items() if k == 0)
		b = boot.get(path)
		only = sum(1 for ln, k in f.lines.items() if k == 0 and b and b.lines.get(ln, 0) > 0)
		entry['boot_only_lines'] = only
		entry['lines']['percent_without_boot_only'] = lcovinfo.percent(
			c.lines_hit, c.lines - only)
		per_file[path] = entry
		subs.setdefault(scope.subsystem_of(path), lcovinfo.Counts()).add(c)
		total.add(c)
	# Goal files and the series' kunit files this configuration does not
	# build (e.g. lib/kunit/fault.c needs FAILSLAB or FAIL_PAGE_ALLOC).
	goal_missing = [g for g in list(scope.GOAL_FILES) + list(kunit_files) if g not in per_file]
	below = [g for g in scope.GOAL_FILES if g in per_file
		 and (per_file[g]['lines']['percent'] or 0) < scope.GOAL]
	return {'total': total.as_dict(),
		'subsystems': {k: v.as_dict() for k, v in sorted(subs.items())},
		'files': per_file,
		'goal': {'percent': scope.GOAL, 'files': list(scope.GOAL_FILES),
			 'below': below, 'not_built': goal_missing},
		'kunit_files': list(kunit_files)}


def arch_coverage(arch: str, cov_dir: Path, build_dir: Path, ktree: Path, suites_gcda: Path,
		  boot_gcda: Path) -> Dict[str, Any]:
	"""coverage.info, coverage.json and html/ of an arch; returns coverage.json."""
	log = cov_dir / 'lcov.log'
	log.write_text('')
	full = capture(arch, suites_gcda, build_dir, ktree, cov_dir, 'suites', log)
	boot = capture(arch, boot_gcda, build_dir, ktree, cov_dir, 'boot', log)
	kunit_files = series_kunit_files(ktree)
	mine = lcovinfo.subtract(full, boot)
	kept = {p: f for p, f in mine.items() if scope.measured(p, kunit_files)}
	info = cov_dir / 'coverage.info'
	# genhtml reads the sources by absolute path.
	absolute = [lcovinfo.FileCov(str(ktree / f.path), f.lines, f.functions, f.function_lines,
				     f.branches) for f in kept.values()]
	atomic.write_text(info, lcovinfo.dumps(absolute, test_name=f'kunit_{arch}'))
	html = cov_dir / 'html'
	if html.exists():
		shutil.rmtree(html)
	_run(['genhtml', '--quiet', '--branch-coverage', '--function-coverage', '--legend',
	      '--prefix', str(ktree), '--title', f'KUnit suites on {arch}, boot subtracted',
	      '--output-directory', str(html), str(info)] + LCOV_RC[:2], log, 'genhtml')
	doc = summarize(mine, kunit_files, boot)
	doc['arch'] = arch
	doc['html'] = 'coverage/html/index.html'
	atomic.write_text(cov_dir / 'coverage.json', json.dumps(doc, indent=1) + '\n')
	return doc


def entry(doc: Dict[str, Any]) -> Dict[str, Any]:
	"""What summary.json and verdict.json keep of coverage.json: the totals,
	per subsystem and per file (no regions), the link."""
	return {'total': doc['total'], 'subsystems': doc['subsystems'],
		'files': {p: {k: v[k] for k in ('lines', 'functions', 'branches', 'subsystem', 'goal')}
			  for p, v in doc['files'].items()},
		'goal_below': doc['goal']['below'], 'not_built': doc['goal'].get('not_built', []),
		'html': doc.get('html', '')}


def load(adir: Path) -> Optional[Dict[str, Any]]:
	p = adir / 'coverage' / 'coverage.json'
	if not p.is_file():
		return None
	try:
		doc = json.loads(p.read_text())
	except (OSError, ValueError) as e:
		raise UserError(f'{p}: not readable as JSON ({e})')
	return doc if isinstance(doc, dict) else None
