# SPDX-License-Identifier: GPL-2.0
"""`run --json`, `report --json`, `compare --json`: one JSON document on
stdout for scripts, in one shape for the three verbs (docs/results.md, "JSON for scripts");
everything else they print goes to stderr then.

  {"format": 1, "command": "run", "exit_status": 1, "error": null,
   "results_dir": "/.../results/20261207-101500", "complete": true,
   "tree": ..., "kernel_version": ..., "debian_version": ..., "series": ...,
   "series_hash": ..., "head": ..., "profile": "default", "filter_glob": "",
   "arches": [{"arch": "x86_64", "profile": "default", "dir": "x86_64",
               "status": "FAIL", "reason": ..., "passed": 15, "failed": 1,
               "skipped": 0, "crashed": 0, "failures": [...], "flaky": [...]}],
   "reports": {"junit.xml": "/.../junit.xml", ...},
   "compare": null}

"compare" (compare, and run --compare) is {"regressions": N, "arches": [{"arch",
"baseline", "has_baseline", "damaged", "regressions": [{"case", "was", "now"}],
"fixes": [...], "new": [{"case", "now"}], "vanished": [{"case", "was"}],
"new_skips", "flaky", "changed", "environment": [{"what", "was", "now"}]}]}.
A key a verb has nothing for is null ("reports" of compare); an error (exit
status 2) leaves "error" its one line, and what was known before it.
FORMAT changes only when a key changes meaning or goes; keys may be added.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .compare.baseline import Comparison
from .results import rundir

FORMAT = 1
TREE_KEYS = ('tree', 'kernel_version', 'debian_version', 'series', 'series_hash', 'head',
	     'profile', 'filter_glob')
COUNTS = ('passed', 'failed', 'skipped', 'crashed')


def _arch(summary: Dict[str, Any], e: Dict[str, Any]) -> Dict[str, Any]:
	out: Dict[str, Any] = {'arch': e.get('arch'), 'profile': rundir.entry_profile(summary, e),
			       'dir': rundir.entry_dir(e), 'status': e.get('status'),
			       'reason': e.get('reason') or ''}
	for k in COUNTS:
		out[k] = e.get(k, 0) or 0
	for k in ('failures', 'flaky'):
		v = e.get(k)
		out[k] = [str(x) for x in v] if isinstance(v, list) else []
	return out


def _triples(xs: Sequence[Tuple[str, str, str]]) -> List[Dict[str, str]]:
	return [{'case': k, 'was': a, 'now': b} for k, a, b in xs]


def comparison(c: Comparison) -> Dict[str, Any]:
	return {'arch': c.arch, 'baseline': str(c.baseline), 'has_baseline': c.has_baseline,
		'damaged': c.damaged, 'regressions': _triples(c.regressions),
		'fixes': _triples(c.fixes), 'changed': _triples(c.changed),
		'new': [{'case': k, 'now': s} for k, s in c.new],
		'vanished': [{'case': k, 'was': s} for k, s in c.vanished],
		'new_skips': [{'case': k, 'was': s} for k, s in c.new_skips],
		'flaky': [{'case': k, 'was': s} for k, s in c.flaky],
		'environment': [{'what': w, 'was': a, 'now': b} for w, a, b in c.env_diffs]}


def document(command: str, exit_status: int, rdir: Optional[Path] = None,
	     error: Optional[str] = None, reports: Optional[Dict[str, Path]] = None,
	     comparisons: Optional[Sequence[Comparison]] = None) -> Dict[str, Any]:
	"""The --json document of a verb that ended with exit_status (error:
	its one line) over the results directory rdir (None: it had none)."""
	doc: Dict[str, Any] = {'format': FORMAT, 'command': command, 'exit_status': exit_status,
			       'error': error, 'results_dir': str(rdir) if rdir else None,
			       'complete': None}
	summary: Optional[Dict[str, Any]] = None
	if rdir is not None:
		try:
			summary = rundir.load_summary(rdir)
		except Exception as e:  # what cannot be read is said, never a traceback
			doc['error'] = doc['error'] or str(e)
	for k in TREE_KEYS:
		doc[k] = summary.get(k) if summary else None
	doc['complete'] = bool(summary.get('complete', True)) if summary else None
	doc['arches'] = [_arch(summary, e) for e in summary['arches']] if summary else []
	doc['reports'] = {k: str(v) for k, v in reports.items()} if reports is not None else None
	doc['compare'] = None
	if comparisons is not None:
		doc['compare'] = {'regressions': sum(len(c.regressions) for c in comparisons),
				  'arches': [comparison(c) for c in comparisons]}
	return doc
