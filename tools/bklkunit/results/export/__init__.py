# SPDX-License-Identifier: GPL-2.0
"""Result exporters: JUnit XML, KCIDB v5.3 JSON and a static HTML page.

Everything is read back from a results directory that `kunit.py run` wrote
(summary.json and <arch>/console.log, build.log, ...; rundir.py) and
written next to it:

  <rdir>/<arch>/junit.xml  one arch, for Jenkins or GitLab (junit.py)
  <rdir>/junit.xml         every arch
  <rdir>/kcidb.json        KCIDB v5.3: one checkout, one build per arch, one
                           test per case (kcidb.py)
  <rdir>/index.html        a test x arch matrix, self-contained (html.py)
"""

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import html, junit, kcidb
from .kcidb import DEFAULT_ORIGIN, check_origin
from ..model import ArchResult
from ..rundir import Loaded, load_run
from ..seriesjob import SeriesJob, read_series_job
from ...base import atomic, paths


def write_reports(rdir: Path, kernel_tree: Path, origin: str = DEFAULT_ORIGIN, *,
		  environment: Optional[Dict[str, Dict[str, str]]] = None, probe: bool = True,
		  patch_dir: Path = paths.PATCH_DIR,
		  runs_out: Optional[List[ArchResult]] = None,
		  loaded: Optional[Loaded] = None) -> Dict[str, Path]:
	"""Write <arch>/junit.xml, junit.xml, kcidb.json and index.html into rdir.

	kernel_tree: the tree whose kunit_parser reads the consoles (summary.json's
	"tree" is the one the run used).  environment: {arch: {'compiler': ...,
	'qemu': ...}} to report; what is not given comes from summary.json, the
	kernel banner in the console, or (probe) `<cc> --version` and
	`<qemu> --version` on this host.  Returns {path relative to rdir: path};
	runs_out, if given, gets the arches as read (ArchResult.disagreement: a
	console that does not bear summary.json out).  loaded: what load_run
	already read (`run` reads every console once for all it writes)."""
	rdir = Path(rdir)
	check_origin(origin)             # before anything is written
	summary, runs = loaded or load_run(rdir, kernel_tree, environment, probe)
	if runs_out is not None:
		runs_out.extend(runs)
	written: Dict[str, Path] = {}
	series = series_checks(rdir, summary)
	for r in runs:
		p = rdir / r.name / 'junit.xml'
		junit.write_xml(junit.junit_element([r], summary), p)
		written[f'{r.name}/junit.xml'] = p
	p = rdir / 'junit.xml'
	junit.write_xml(junit.junit_element(runs, summary, series), p)
	written['junit.xml'] = p
	p = rdir / 'kcidb.json'
	atomic.write_text(p, json.dumps(kcidb.kcidb_document(rdir, summary, runs, origin, patch_dir),
					 indent=1) + '\n')
	written['kcidb.json'] = p
	p = rdir / 'index.html'
	atomic.write_text(p, html.html_page(summary, runs, origin, series))
	written['index.html'] = p
	return written


def series_checks(rdir: Path, summary: Dict[str, Any]) -> List[SeriesJob]:
	"""The series checks a merged results directory holds (summary.json
	"series_checks": one file per check-series job, merge.py), read
	back; none for a run's."""
	out: List[SeriesJob] = []
	for e in summary.get('series_checks', []) or []:
		f = e.get('file') if isinstance(e, dict) else None
		if isinstance(f, str) and '..' not in Path(f).parts and not Path(f).is_absolute():
			out.append(read_series_job(Path(rdir) / f))
	return out
