# SPDX-License-Identifier: GPL-2.0
"""check-series' results file, <dir>/series.json (`check-series
--results-dir DIR`): one job's checks, for `merge` to gather with the runs.

  {"kind": "series", "format": 1, "series_hash": ..., "kernel_version": ...,
   "debian_version": ..., "patches": 68, "from_patch": 1, "to_patch": 34,
   "shard": "1/2", "name": "", "started": ..., "complete": false,
   "checks": [{"name": "build 0001-...", "ok": true, "detail": "", "seconds": 12.3}]}

It is written when the checks start and again after every check, whole
each time (atomic.write_text), with "complete" true only after the last:
a job killed half-way leaves the checks it finished, and `merge` reports
the rest as not run, never as passed.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List

from . import rundir
from ..base import atomic
from ..base.errors import UserError

FILE = 'series.json'
FORMAT = 1
# What names the series a job checked: jobs of other series are not merged.
IDENTITY = ('series_hash', 'kernel_version', 'debian_version')


@dataclass
class SeriesCheck:
	name: str
	ok: bool
	detail: str = ''
	seconds: float = 0.0


@dataclass
class SeriesJob:
	"""One check-series job's results."""
	series_hash: str = ''
	kernel_version: str = ''
	debian_version: str = ''
	patches: int = 0
	from_patch: int = 1
	to_patch: int = 0             # 0: the last
	shard: str = ''               # '1/4' when started with --shard
	name: str = ''                # what it checked, when not a range of patches ('head checks')
	started: str = ''
	complete: bool = False
	checks: List[SeriesCheck] = field(default_factory=list)

	@property
	def label(self) -> str:
		"""Its name, else 'patches 1-34' (the per-patch range it checked)."""
		return self.name or f'patches {self.from_patch}-{self.to_patch or self.patches}'

	@property
	def failed(self) -> int:
		return sum(not c.ok for c in self.checks)

	def document(self) -> Dict[str, Any]:
		return dict({'kind': 'series', 'format': FORMAT}, **asdict(self))


def write_series_job(path: Path, job: SeriesJob) -> None:
	atomic.write_text(Path(path), json.dumps(job.document(), indent=1) + '\n')


def _problem(doc: Any) -> str:
	if not isinstance(doc, dict) or doc.get('kind') != 'series':
		return 'not a check-series results file (no "kind": "series")'
	problem = rundir.version_problem(doc.get('format', FORMAT), FORMAT)
	if problem:
		return problem
	for k in IDENTITY + ('shard', 'started', 'name'):
		if not isinstance(doc.get(k, ''), str):
			return f'"{k}" is not text'
	for k in ('patches', 'from_patch', 'to_patch'):
		v = doc.get(k, 0)
		if isinstance(v, bool) or not isinstance(v, int) or v < 0:
			return f'"{k}" is not a count ({v!r})'
	if not isinstance(doc.get('checks'), list):
		return '"checks" is missing or not a list'
	for n, c in enumerate(doc['checks'], 1):
		if (not isinstance(c, dict) or not isinstance(c.get('name'), str)
		    or not isinstance(c.get('ok'), bool)):
			return f'check {n} has no name or no ok'
	return ''


def read_series_job(path: Path) -> SeriesJob:
	"""A series.json, checked: anything else is a UserError naming it."""
	try:
		doc = json.loads(Path(path).read_text())
	except OSError as e:
		raise UserError(f'{path}: cannot read it ({e.strerror})')
	except ValueError as e:         # UnicodeDecodeError too
		raise UserError(f'{path}: not JSON ({e})')
	problem = _problem(doc)
	if problem:
		raise UserError(f'{path}: {problem}')
	checks = [SeriesCheck(c['name'], c['ok'], str(c.get('detail') or ''),
			      float(c.get('seconds') or 0)) for c in doc['checks']]
	return SeriesJob(**{k: doc.get(k, getattr(SeriesJob(), k)) for k in
			    IDENTITY + ('patches', 'from_patch', 'to_patch', 'shard', 'started',
					   'name')},
			 complete=bool(doc.get('complete')), checks=checks)
