# SPDX-License-Identifier: GPL-2.0
"""Coverage baselines: `baseline` of a `run --coverage` records each arch's
per-file coverage as <baseline dir>/coverage/<arch>.json; `compare` flags a
drop against it (docs/coverage.md#compare).

A drop is a measured file whose lines, functions or branches percentage is
more than DROP_POINTS below the baseline's, or a file the baseline measured
and the run does not; an arch whose coverage could not be measured while it
has a baseline is a drop too.  Gains and new files are noted, never fatal.
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from ..base import atomic
from ..base.errors import UserError
from ..results import rundir

KINDS = ('lines', 'functions', 'branches')
# Percentage points a file may lose before it is a drop: a timer or a
# worker that runs a little more or less during the boot that runs no
# suite moves a line or two (docs/coverage.md).
DROP_POINTS = 1.0
SUBDIR = 'coverage'


def baseline_path(bdir: Path, arch: str) -> Path:
	return bdir / SUBDIR / f'{arch}.json'


def document(arch: str, cov: Dict[str, Any], summary: Dict[str, Any]) -> Dict[str, Any]:
	return {'arch': arch, 'kernel_version': summary.get('kernel_version'),
		'series_hash': summary.get('series_hash'), 'total': cov.get('total'),
		'files': {p: {k: f.get(k) for k in KINDS} for p, f in sorted(cov.get('files', {}).items())}}


def _entries(summary: Dict[str, Any]) -> List[Tuple[str, str, Dict[str, Any]]]:
	"""(arch, profile, coverage) of every arch of the run that has coverage."""
	out = []
	for e in summary.get('arches', []):
		cov = e.get('coverage')
		if isinstance(cov, dict) and cov:
			out.append((str(e.get('arch')), rundir.entry_profile(summary, e), cov))
	return out


def write(summary: Dict[str, Any], dirs: Dict[str, Path], default: Path,
	  arches: Optional[Sequence[str]] = None) -> Tuple[List[Path], List[str]]:
	"""The coverage baselines of a run; (written, messages)."""
	written, skipped = [], []
	for arch, profile, cov in _entries(summary):
		if arches and arch not in arches:
			continue
		if cov.get('error'):
			skipped.append(f'{arch}: coverage not measured ({cov["error"]}); '
				       'coverage baseline not recorded')
			continue
		p = baseline_path(dirs.get(profile) or default, arch)
		atomic.write_text(p, json.dumps(document(arch, cov, summary), indent=1,
						 sort_keys=True) + '\n')
		written.append(p)
	return written, skipped


def load(bdir: Path, arch: str) -> Optional[Dict[str, Any]]:
	p = baseline_path(bdir, arch)
	if not p.is_file():
		return None
	try:
		doc = json.loads(p.read_text())
	except ValueError as e:
		raise UserError(f'{p}: not JSON ({e})')
	if not isinstance(doc, dict) or not isinstance(doc.get('files'), dict):
		raise UserError(f'{p}: not a coverage baseline (no "files" object)')
	return doc


def _pct(v: Any) -> Optional[float]:
	return v.get('percent') if isinstance(v, dict) else None


def drops(base: Dict[str, Any], cov: Dict[str, Any]) -> Tuple[List[str], List[str]]:
	"""(drops, notes) of a run's coverage against a baseline."""
	if cov.get('error'):
		return [f'coverage not measured: {cov["error"]}'], []
	bad, notes = [], []
	files = cov.get('files', {})
	for path, b in sorted(base.get('files', {}).items()):
		now = files.get(path)
		if now is None:
			bad.append(f'{path}: measured in the baseline, not in this run')
			continue
		for k in KINDS:
			was, is_ = _pct(b.get(k)), _pct(now.get(k))
			if was is None or is_ is None:
				continue
			if is_ < was - DROP_POINTS:
				bad.append(f'{path}: {k} {was:.1f}% -> {is_:.1f}% '
					   f'({now[k]["hit"]}/{now[k]["total"]})')
			elif is_ > was + DROP_POINTS:
				notes.append(f'{path}: {k} {was:.1f}% -> {is_:.1f}%')
	for path in sorted(set(files) - set(base.get('files', {}))):
		notes.append(f'{path}: new ({files[path]["lines"]["percent"]}% of lines)')
	return bad, notes


def compare(summary: Dict[str, Any], dirs: Dict[str, Path], default: Path,
	    out: TextIO) -> List[str]:
	"""Print each arch's coverage against its baseline; the arches with a drop."""
	dropped = []
	for arch, profile, cov in _entries(summary):
		bdir = dirs.get(profile) or default
		base = load(bdir, arch)
		if base is None:
			print(f'{arch}: coverage: no baseline ({baseline_path(bdir, arch)})', file=out)
			continue
		bad, notes = drops(base, cov)
		if bad:
			dropped.append(arch)
			print(f'{arch}: coverage DROPPED against {baseline_path(bdir, arch)}:', file=out)
			for line in bad:
				print(f'  {line}', file=out)
		else:
			print(f'{arch}: coverage: no drop against the baseline', file=out)
		for line in notes:
			print(f'  coverage {line}', file=out)
	return dropped
