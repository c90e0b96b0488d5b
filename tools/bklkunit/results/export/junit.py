# SPDX-License-Identifier: GPL-2.0
"""JUnit XML: <rdir>/<arch>/junit.xml (one arch, for Jenkins or GitLab) and
<rdir>/junit.xml (every arch)."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..model import ArchResult, ArchStatus, Case, ERROR, FAIL, MISS, Outcome, PASS, SKIP
from ..seriesjob import SeriesJob
from ...base import atomic

XML_BAD = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')


def _xml(s: str) -> str:
	return XML_BAD.sub('\ufffd', s)


def _attr(s: str, limit: int = 1000) -> str:
	s = _xml(s)
	return s if len(s) <= limit else s[:limit - 3] + '...'


def _fmt_time(t: float) -> str:
	return f'{t:.6f}'.rstrip('0').rstrip('.') if t else '0'


def _testsuite(parent: ET.Element, name: str, cases: List[Tuple[str, Case]],
	       duration: Optional[float], props: Dict[str, str]) -> Dict[str, int]:
	"""cases: (classname, case)."""
	n = {'tests': len(cases),
	     'failures': sum(c.status == FAIL for _, c in cases),
	     'errors': sum(c.status == ERROR for _, c in cases),
	     'skipped': sum(c.status in (SKIP, MISS) for _, c in cases)}
	ts = ET.SubElement(parent, 'testsuite', {'name': _attr(name),
						 **{k: str(v) for k, v in n.items()}})
	if duration is not None:
		ts.set('time', _fmt_time(duration))
	if props:
		pe = ET.SubElement(ts, 'properties')
		for k, v in props.items():
			ET.SubElement(pe, 'property', name=k, value=_attr(v))
	for classname, c in cases:
		tc = ET.SubElement(ts, 'testcase', classname=_attr(classname), name=_attr(c.label))
		if c.duration is not None:
			tc.set('time', _fmt_time(c.duration))
		text = _xml('\n'.join(c.diagnostics))
		if c.status == FAIL:
			el = ET.SubElement(tc, 'failure', message=_attr(c.summary()), type=c.kind or Outcome.FAIL)
			el.text = text
		elif c.status == ERROR:
			el = ET.SubElement(tc, 'error', message=_attr(c.summary()),
					   type=c.kind or ArchStatus.CRASH)
			el.text = text
		elif c.status == SKIP:
			ET.SubElement(tc, 'skipped', message=_attr(c.message))
		elif c.status == MISS:
			ET.SubElement(tc, 'skipped', message=_attr('not run: ' + c.message))
	return n


def arch_problem(r: ArchResult) -> Optional[Case]:
	"""A testcase for an arch that is not PASS while no case says why:
	"build" when it did not build, "run" otherwise (no KTAP, a crash after
	the last case, a timeout, no tests)."""
	if r.status == ArchStatus.PASS or r.blamed():
		return None
	if r.status == ArchStatus.SKIPPED_PROFILE:
		return Case(r.name, 'profile', status=SKIP, message=r.reason.split('\n')[0])
	name = 'run' if r.built else 'build'
	text = r.build_tail if not r.built and r.build_tail else r.reason
	c = Case(r.name, name, status=ERROR, message=f'{r.status}: {r.reason}'.split('\n')[0],
		 diagnostics=text.splitlines(), kind=r.status)
	if r.status == ArchStatus.FAIL:
		c.status = FAIL
	return c


def series_suite(job: SeriesJob) -> Tuple[str, List[Tuple[str, Case]], Dict[str, str]]:
	"""A check-series job (merged results) as one testsuite: a testcase
	per check, and one error when the job ended before its last check."""
	name = f'series.{job.label.replace(" ", "_")}'
	cases = [(name, Case('series', c.name, status=PASS if c.ok else FAIL,
			     diagnostics=c.detail.splitlines(), duration=c.seconds or None))
		 for c in job.checks]
	if not job.complete:
		cases.append((name, Case('series', 'job', status=ERROR, kind=ArchStatus.CRASH,
					 message=f'the check-series job of {job.label} ended before its '
						 f'last check: {len(job.checks)} check(s) recorded, the '
						 'rest not run')))
	props = {k: v for k, v in (('series_hash', job.series_hash), ('shard', job.shard)) if v}
	return name, cases, props


def junit_element(runs: List[ArchResult], summary: Dict[str, Any],
		  series: Sequence[SeriesJob] = ()) -> ET.Element:
	root = ET.Element('testsuites', name='bkl-kunit')
	# <testsuites> has tests, failures and errors; skipped is a <testsuite>'s
	# attribute only (the JUnit schema Jenkins and GitLab read).
	totals = {'tests': 0, 'failures': 0, 'errors': 0}
	for r in runs:
		props = {'arch': r.arch, 'arch_status': r.status}
		for k in ('kernel_version', 'debian_version', 'series_hash'):
			if summary.get(k):
				props[k] = str(summary[k])
		props['profile'] = r.profile
		if r.compiler:
			props['compiler'] = r.compiler
		if r.qemu:
			props['qemu'] = r.qemu
		problem = arch_problem(r)
		if problem:
			n = _testsuite(root, r.name, [(r.name, problem)], None, props)
			for k in totals:
				totals[k] += n[k]
		for s in r.suites:
			cls = f'{r.name}.{s.name}'
			n = _testsuite(root, cls, [(cls, c) for c in s.cases], s.duration, props)
			for k in totals:
				totals[k] += n[k]
	for job in series:
		name, cases, props = series_suite(job)
		n = _testsuite(root, name, cases, None, props)
		for k in totals:
			totals[k] += n[k]
	for k, v in totals.items():
		root.set(k, str(v))
	return root


def write_xml(root: ET.Element, path: Path) -> None:
	ET.indent(root)
	atomic.write_text(path, ET.tostring(root, encoding='utf-8', xml_declaration=True)
			   .decode('utf-8') + '\n')
