# SPDX-License-Identifier: GPL-2.0
"""<rdir>/index.html: a test x arch matrix, self-contained."""

import html
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .junit import arch_problem
from ..model import ArchResult, ArchStatus, ERROR, FAIL, MISS, PASS, SKIP
from ..seriesjob import SeriesJob
from ...base import paths


CELL = {PASS: ('pass', 'pass'), FAIL: ('fail', 'FAIL'), SKIP: ('skip', 'skip'),
	ERROR: ('crash', 'CRASH'), MISS: ('missing', 'missing')}

CSS = '''
body { font: 14px/1.4 sans-serif; margin: 1.5em; color: #111; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #bbb; padding: .25em .6em; text-align: left; vertical-align: top; }
thead th { background: #eee; }
td.num { text-align: right; white-space: nowrap; }
.matrix td { text-align: center; min-width: 6em; }
.matrix th[scope=row] { font-family: monospace; font-weight: normal; }
.pass { background: #d5f5d5; } .fail { background: #f7c6c6; font-weight: bold; }
.skip { background: #fdf0c2; } .crash { background: #e8c4f0; font-weight: bold; }
.missing { background: #e4e4e4; color: #444; font-style: italic; }
.st-PASS { background: #d5f5d5; } .st-FAIL, .st-BUILD_FAILED, .st-CONFIG_FAILED { background: #f7c6c6; }
.st-CRASH, .st-TIMEOUT, .st-ERROR, .st-NOT_RUN { background: #e8c4f0; } .st-NO_TESTS { background: #e4e4e4; }
.st-SKIPPED_PROFILE { background: #fdf0c2; }
.dur, .note { display: block; font-size: .8em; color: #444; font-weight: normal; font-style: normal; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: .5em; overflow-x: auto; margin: .3em 0; }
details { margin: .3em 0; } summary { cursor: pointer; }
code { font-family: monospace; }
'''


def _e(s: Any) -> str:
	return html.escape(str(s), quote=True)


def fmt_duration(d: Optional[float]) -> str:
	if d is None:
		return ''
	return f'{d * 1000:.1f} ms' if d < 1 else f'{d:.2f} s'


def _matrix_rows(runs: List[ArchResult]) -> List[Tuple[str, str]]:
	"""(suite, row) in order: suites as first seen, cases as first seen."""
	suites: Dict[str, List[str]] = {}
	for r in runs:
		for c in r.cases:
			rows = suites.setdefault(c.suite, [])
			if c.row not in rows:
				rows.append(c.row)
	return [(s, row) for s, rows in suites.items() for row in rows]


def endian(arch: str) -> str:
	"""'little' or 'big' ('' for an arch this tool does not know)."""
	a = paths.ARCHES.get(arch)
	return a.endian.value if a else ''


def byte_order_cell(row: str, runs: List[ArchResult], by_arch: List[Dict[str, Any]],
		    order: str) -> str:
	"""The case on the arches of one byte order, one cell: FAIL (or CRASH,
	missing) naming the arches where it was, else pass when it passed on
	every one of them (skip when it was skipped on every one)."""
	got = [(r.name, cases.get(row)) for r, cases in zip(runs, by_arch) if endian(r.arch) == order]
	bad = {st: [a for a, c in got if (c.status if c else MISS) == st] for st in (FAIL, ERROR, MISS)}
	for st in (FAIL, ERROR, MISS):
		if bad[st]:
			cls, text = CELL[st]
			return (f'<td class="{cls}" data-endian="{_e(order)}" data-status="{cls}">{text}'
				f'<span class="note">on {_e(", ".join(bad[st]))}</span></td>')
	skipped = [a for a, c in got if c is not None and c.status == SKIP]
	if len(skipped) == len(got):
		return f'<td class="skip" data-endian="{_e(order)}" data-status="skip">skip</td>'
	note = f'<span class="note">skip on {_e(", ".join(skipped))}</span>' if skipped else ''
	return f'<td class="pass" data-endian="{_e(order)}" data-status="pass">pass{note}</td>'


def html_page(summary: Dict[str, Any], runs: List[ArchResult], origin: str,
	      series: Sequence[SeriesJob] = ()) -> str:
	debver = summary.get('debian_version') or ''
	title = f'KUnit results: Linux {summary.get("kernel_version") or "?"}' + (
		f' (Debian {debver})' if debver else '')
	out = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
	       f'<title>{_e(title)}</title>', f'<style>{CSS}</style>', '</head>', '<body>',
	       f'<h1>{_e(title)}</h1>']
	ok = sum(r.status == ArchStatus.PASS for r in runs)
	out.append(f'<p class="overall">{ok} of {len(runs)} arch(es) PASS: '
		   + ', '.join(f'<span class="st-{_e(r.status)}">{_e(r.name)} {_e(r.status)}</span>'
			       for r in runs) + '</p>')

	out.append('<h2 id="environment">Environment</h2>\n<table class="env">')
	env = [('kernel package', f'linux-source-6.12 {debver}' if debver else 'not a Debian tree'),
	       ('kernel version', summary.get('kernel_version')), ('tree', summary.get('tree')),
	       ('series', summary.get('series')), ('series hash', summary.get('series_hash')),
	       ('head', summary.get('head')), ('filter', summary.get('filter_glob') or '(all suites)'),
	       ('profile', summary.get('profile') or ', '.join(sorted({r.profile for r in runs}))
		or 'default'),
	       ('KCIDB origin', origin)]
	for k, v in env:
		if v:
			out.append(f'<tr><th scope="row">{_e(k)}</th><td><code>{_e(v)}</code></td></tr>')
	out.append('</table>')

	out.append('<h2 id="arches">Arches</h2>\n<table class="arches"><thead><tr>'
		   '<th>arch</th><th>byte order</th><th>status</th><th>pass</th><th>fail</th><th>skip</th>'
		   '<th>crash</th><th>not run</th><th>build</th><th>run</th><th>compiler</th><th>QEMU</th>'
		   '<th>logs</th></tr></thead><tbody>')
	for r in runs:
		links = ' '.join(f'<a href="{_e(rel)}">{_e(name)}</a>' for name, rel in r.logs.items()
				 if name.endswith('.log'))
		links += f' <a href="{_e(r.name)}/junit.xml">junit.xml</a>'
		reason = ''
		if r.reason:
			first, _, rest = r.reason.partition('\n')
			reason = (f'<details><summary>{_e(first)}</summary><pre>{_e(rest)}</pre></details>'
				  if rest else f'<span class="note">{_e(first)}</span>')
		out.append(
			f'<tr data-arch="{_e(r.name)}"><th scope="row">{_e(r.name)}</th>'
			f'<td>{_e(endian(r.arch) or "?")}</td>'
			f'<td class="st-{_e(r.status)}"><b>{_e(r.status)}</b>{reason}</td>'
			+ ''.join(f'<td class="num">{sum(c.status == k for c in r.cases)}</td>'
				  for k in (PASS, FAIL, SKIP, ERROR, MISS))
			+ f'<td class="num">{_e(fmt_duration(r.build_seconds))}</td>'
			f'<td class="num">{_e(fmt_duration(r.run_seconds))}</td>'
			f'<td>{_e(r.compiler or "unknown")}</td><td>{_e(r.qemu or "unknown")}</td>'
			f'<td>{links}</td></tr>')
	out.append('</tbody></table>')

	out += coverage_section(runs)

	out.append('<h2 id="matrix">Cases</h2>')
	out.append('<p>Each cell says what happened; <i>missing</i> means no result on that arch '
		   '(not reached, not built, or not in its output). Times come from the guest\'s '
		   'printk timestamps, when it printed them. When the run has arches of both byte '
		   'orders, the last two columns give each case on all the little-endian and all '
		   'the big-endian ones: a case that passes in one and not in the other is '
		   'a byte-order suspect.</p>')
	orders = [o.value for o in paths.Endian if any(endian(r.arch) == o.value for r in runs)]
	if len(orders) < 2:
		orders = []
	out.append('<table class="matrix"><thead><tr><th>suite.case</th>'
		   + ''.join(f'<th>{_e(r.name)}<span class="note">{_e(endian(r.arch))}</span></th>'
			     for r in runs)
		   + ''.join(f'<th data-endian="{o}">{o}-endian<span class="note">'
			     f'{_e(", ".join(r.name for r in runs if endian(r.arch) == o))}</span></th>'
			     for o in orders)
		   + '</tr></thead><tbody>')
	by_arch = [{c.row: c for c in r.cases} for r in runs]
	for _, row in _matrix_rows(runs):
		cells = []
		for r, cases in zip(runs, by_arch):
			c = cases.get(row)
			if c is None:
				why = ('profile not supported' if r.status == ArchStatus.SKIPPED_PROFILE else
				       'did not build' if not r.built else 'not reported')
				cells.append(f'<td class="missing" data-arch="{_e(r.name)}" '
					     f'data-status="missing" title="{_e(why)}">missing'
					     f'<span class="note">{_e(why)}</span></td>')
				continue
			cls, text = CELL[c.status]
			note = {SKIP: c.message, MISS: 'never reached',
				ERROR: 'was running' if c.running else 'no result'}.get(c.status, '')
			cells.append(f'<td class="{cls}" data-arch="{_e(r.name)}" data-status="{cls}" '
				     f'title="{_e(c.summary() if c.status != PASS else "")}">'
				     f'{text}'
				     + (f'<span class="note">{_e(note)}</span>' if note else '')
				     + (f'<span class="dur">{_e(fmt_duration(c.duration))}</span>'
					if c.duration is not None else '') + '</td>')
		cells += [byte_order_cell(row, runs, by_arch, o) for o in orders]
		out.append(f'<tr><th scope="row">{_e(row)}</th>{"".join(cells)}</tr>')
	out.append('</tbody></table>')

	bad = [(r, c) for r in runs for c in r.cases if c.status in (FAIL, ERROR)]
	problems = [(r, p) for r in runs for p in [arch_problem(r)] if p is not None]
	out.append('<h2 id="failures">Failures</h2>')
	if not bad and not problems:
		out.append('<p>None.</p>')
	for r, c in problems + bad:
		label = f'{r.name}: {c.row}' if c.suite != r.name else f'{r.name}: {c.label}'
		out.append(f'<details class="failure" data-arch="{_e(r.name)}"><summary>'
			   f'<b>{_e(c.kind or CELL[c.status][1])}</b> {_e(label)} — {_e(c.summary())}'
			   '</summary>')
		out.append(f'<pre>{_e(chr(10).join(c.diagnostics) or "(no diagnostic lines)")}</pre>'
			   '</details>')

	if series:
		out += series_section(series)
	out.append('<h2 id="legend">Legend</h2><table><tbody>'
		   '<tr><td class="pass">pass</td><td>ok</td></tr>'
		   '<tr><td class="fail">FAIL</td><td>not ok; the diagnostics are under Failures</td></tr>'
		   '<tr><td class="skip">skip</td><td>ok # SKIP, with its reason</td></tr>'
		   '<tr><td class="crash">CRASH</td><td>running when the guest crashed or hung, '
		   'or never printed its result</td></tr>'
		   '<tr><td class="missing">missing</td><td>announced but never reached, or no '
		   'result on that arch</td></tr></tbody></table>')
	out.append('</body>\n</html>\n')
	return '\n'.join(out)


def _cov_cells(c: Dict[str, Any]) -> str:
	out = []
	for k in ('lines', 'functions', 'branches'):
		v = c.get(k) or {}
		if not v.get('total'):
			out.append('<td class="num">-</td>')
			continue
		out.append(f'<td class="num cov" data-kind="{k}" title="{_e(v["hit"])} of {_e(v["total"])}">'
			   f'{v["percent"]:.1f}%<span class="note">{_e(v["hit"])}/{_e(v["total"])}</span></td>')
	return ''.join(out)


def coverage_section(runs: List[ArchResult]) -> List[str]:
	"""run --coverage: per file (and subsystem, and in all) the lines,
	functions and branches the suites executed, boot subtracted, one column
	group per arch, each arch's genhtml tree linked (docs/coverage.md)."""
	covered = [r for r in runs if r.coverage]
	if not covered:
		return []
	out = ['<h2 id="coverage">Coverage</h2>',
	       '<p>gcov of the suites alone (a boot that runs no suite is subtracted); '
	       '<b>*</b> marks the files the goal (90% of lines) is set for. '
	       'Each arch\'s name links to its lcov/genhtml report.</p>']
	for r in covered:
		if r.coverage.get('error'):
			out.append(f'<p class="st-ERROR" data-arch="{_e(r.name)}">{_e(r.name)}: coverage not '
				   f'measured: {_e(r.coverage["error"])}</p>')
	good = [r for r in covered if not r.coverage.get('error')]
	if not good:
		return out
	head = ''.join(f'<th colspan="3"><a href="{_e(r.name)}/{_e(r.coverage.get("html") or "coverage/html/index.html")}">'
		       f'{_e(r.name)}</a></th>' for r in good)
	sub = ''.join('<th>lines</th><th>functions</th><th>branches</th>' for _ in good)
	out.append('<table class="coverage"><thead><tr><th rowspan="2">file</th>'
		   f'{head}</tr><tr>{sub}</tr></thead><tbody>')
	files: Dict[str, bool] = {}
	for r in good:
		for path, f in r.coverage.get('files', {}).items():
			files[path] = files.get(path, False) or bool(f.get('goal'))
	for path in sorted(files):
		out.append(f'<tr data-file="{_e(path)}"><th scope="row"><code>{_e(path)}</code>'
			   + (' <b>*</b>' if files[path] else '') + '</th>'
			   + ''.join(_cov_cells(r.coverage.get('files', {}).get(path, {})) for r in good)
			   + '</tr>')
	subs = sorted({s for r in good for s in r.coverage.get('subsystems', {})})
	for name in subs:
		out.append(f'<tr data-subsystem="{_e(name)}"><th scope="row">{_e(name)}</th>'
			   + ''.join(_cov_cells(r.coverage.get('subsystems', {}).get(name, {}))
				     for r in good) + '</tr>')
	out.append('<tr data-total="1"><th scope="row">total</th>'
		   + ''.join(_cov_cells(r.coverage.get('total', {})) for r in good) + '</tr>')
	out.append('</tbody></table>')
	return out


def series_section(series: Sequence[SeriesJob]) -> List[str]:
	"""The check-series jobs of a merged results directory: one row per
	job, its failed checks with their detail."""
	out = ['<h2 id="series">Series checks</h2>\n<table class="series"><thead><tr>'
	       '<th>job</th><th>status</th><th>passed</th><th>failed</th><th>seconds</th>'
	       '</tr></thead><tbody>']
	for job in series:
		status = ('FAIL' if job.failed else 'PASS') if job.complete else 'CRASH'
		note = '' if job.complete else (' <span class="note">the job ended before its last '
						 'check: the rest not run</span>')
		out.append(f'<tr data-series="{_e(job.label)}"><th scope="row">{_e(job.label)}'
			   + (f' ({_e(job.shard)})' if job.shard else '') + '</th>'
			   f'<td class="st-{status}"><b>{status}</b>{note}</td>'
			   f'<td class="num">{len(job.checks) - job.failed}</td>'
			   f'<td class="num">{job.failed}</td>'
			   f'<td class="num">{sum(c.seconds for c in job.checks):.0f}</td></tr>')
	out.append('</tbody></table>')
	for job in series:
		for c in job.checks:
			if not c.ok:
				out.append(f'<details class="failure" data-series="{_e(job.label)}"><summary>'
					   f'<b>FAIL</b> {_e(job.label)}: {_e(c.name)}</summary>'
					   f'<pre>{_e(c.detail or "(no detail)")}</pre></details>')
	return out
