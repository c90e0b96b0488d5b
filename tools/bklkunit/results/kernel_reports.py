# SPDX-License-Identifier: GPL-2.0
"""Kernel reports on the console, and the case each one belongs to.

A lockdep, KASAN, KCSAN or UBSAN report, a WARN, list corruption, a
sleeping-in-atomic BUG, a spinlock BUG, a hung task or kmemleak's leak count
is never just a log line next to a green result: the case that was running
when it was printed fails.

Attribution is by console line, with the positions cases.py already keeps
for each case (the line its diagnostics start after: the previous result,
or the header or plan of its suite; and its own `ok`/`not ok` line):

  - a report whose first line falls after a case's start and before its
    result line belongs to that case; a case that never printed its result
    (it was running when the guest died) owns everything after its start;
  - a report anywhere else (during boot, between suites, after the last
    case) belongs to no case and fails the arch, with a reason naming it;
  - a case whose KUnit name contains `expect_report` triggers a report on
    purpose: its reports do not fail it, and without one it fails
    ("expected a report, none seen");
  - a suite that tests a detector (EXPECTED_KINDS: `kmemleak`, the suite of
    kmemleak_scan_now(), leaks on purpose and counts what kmemleak found
    itself) expects that detector's reports in its cases: they are kept,
    marked expected, and fail nothing; any other kind still fails the case.

Consecutive matches within one report (a `list_add corruption` line and
the WARNING under it, lockdep's WARN inside its own splat) are one report.
"""

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .model import ArchStatus, Outcome

EXPECT = 'expect_report'
# {suite: the report kinds its cases make on purpose and check themselves}.
EXPECTED_KINDS: Dict[str, Tuple[str, ...]] = {'kmemleak': ('kmemleak',)}
EXCERPT_LINES = 8           # the first lines of a report shown as a failure message
MAX_REPORT_LINES = 80       # a report without an end marker ends here at the latest

# printk's "[    1.234567] " and the caller id "[    T1] ", any indentation.
_PREFIX = r'^\s*(?:\[[^\]]*\]\s*)*'
PATTERNS: List[Tuple[str, 're.Pattern[str]']] = [(k, re.compile(_PREFIX + p)) for k, p in (
	('lockdep', r'WARNING: possible circular locking dependency'),
	('lockdep', r'WARNING: possible recursive locking'),
	('lockdep', r'WARNING: inconsistent lock state'),
	('atomic sleep', r'BUG: sleeping function called from invalid context'),
	('KASAN', r'BUG: KASAN:'),
	('KCSAN', r'BUG: KCSAN:'),
	('UBSAN', r'UBSAN:'),
	('list corruption', r'list_(?:add|del) corruption'),
	('kmemleak', r'kmemleak: \d+ new suspected memory leaks?'),
	('spinlock', r'BUG: spinlock'),
	('hung task', r'INFO: task .* blocked for more than'),
	('WARN', r'WARNING: CPU: \d+ PID: \d+ at'),
)]
# Where a report ends: KTAP again, the end of a trace, KASAN/KCSAN/UBSAN's
# closing rule.
_KTAP = re.compile(_PREFIX + r'(?:(?:not )?ok \d+|# Subtest:|K?TAP version \d+|\d+\.\.\d+$)')
_KTAP_VERSION = re.compile(_PREFIX + r'K?TAP version \d+')
_END = re.compile(_PREFIX + r'(?:---\[ end trace|={20,}\s*$)')
# What is left of a line to show: without printk's time and caller, with
# the indentation of the stack traces.
_STRIP = re.compile(r'^\s*(?:\[\s*\d+\.\d+\])?(?:\[\s*[TC]\d+\])? ?')


@dataclass
class Report:
	line: int                   # console line (1-based) of its first matching line
	kind: str                   # 'lockdep', 'KASAN', ... (the first match)
	title: str                  # that line without the printk prefix
	lines: List[str] = field(default_factory=list)    # the report, prefix stripped
	kinds: List[str] = field(default_factory=list)    # every kind matched inside it
	expected: bool = False      # made on purpose by the case that owns it (attach)

	@property
	def label(self) -> str:
		return f'{self.kind} report'

	def excerpt(self) -> List[str]:
		return self.lines[:EXCERPT_LINES]

	def where(self) -> str:
		return f'console line {self.line}'

	def as_dict(self, case: Optional[str] = None) -> Dict[str, Any]:
		return {'case': case, 'kind': self.kind, 'line': self.line, 'title': self.title,
			'expected': self.expected}


def kind_of(line: str) -> Optional[str]:
	for kind, pat in PATTERNS:
		if pat.match(line):
			return kind
	return None


def find(lines: Sequence[str]) -> List[Report]:
	"""Every report of a console, in order."""
	out: List[Report] = []
	cur: Optional[Report] = None
	for n, raw in enumerate(lines, 1):
		line = raw.rstrip('\r\n')
		kind = kind_of(line)
		if cur is not None:
			if kind is None and (_KTAP.match(line) or len(cur.lines) >= MAX_REPORT_LINES):
				cur = None
			else:
				if kind and kind not in cur.kinds:
					cur.kinds.append(kind)
				cur.lines.append(_STRIP.sub('', line))
				if kind is None and _END.match(line):
					cur = None
				continue
		if kind is not None:
			title = _STRIP.sub('', line).strip()
			cur = Report(n, kind, title, [title], [kind])
			out.append(cur)
	return out


def _span(c: Any, last_end: int) -> Optional[Tuple[int, float]]:
	"""(start, end) console lines of a case, exclusive; end inf for a case
	that was running when the guest stopped."""
	if c.span is not None:
		return c.span[0], c.span[1]
	if c.status == Outcome.ERROR and (c.running or c.message.startswith('no result line')):
		return last_end, float('inf')
	return None


def ktap_start(lines: Sequence[str]) -> int:
	"""The console line of the first `KTAP version` (0 without one)."""
	return next((n for n, l in enumerate(lines, 1) if _KTAP_VERSION.match(l)), 0)


def expected_kind(row: str, kind: str) -> bool:
	"""Whether the case row ('suite.case') makes reports of that kind on
	purpose (EXPECTED_KINDS)."""
	return kind in EXPECTED_KINDS.get(row.split('.', 1)[0], ())


def attach(suites: Any, found: List[Report],
	   first_ktap: int = 0) -> Tuple[List[Tuple[Any, str]], List[Report]]:
	"""Give each report to its case (model.Case, changed in place).
	first_ktap: where KTAP starts (a case that crashed before any result
	owns nothing printed before it).  Returns ([(case, its status before)]
	for every case this changed or that has a report, reports that belong
	to no case)."""
	owned: Dict[int, List[Report]] = {}
	cases = []
	last_end = first_ktap
	for s in suites:
		for c in s.cases:
			sp = _span(c, last_end)
			if sp is None:
				continue
			cases.append((c, sp))
			if sp[1] != float('inf'):
				last_end = max(last_end, int(sp[1]))
	strays: List[Report] = []
	for r in found:
		owner = next((c for c, (a, b) in cases if a < r.line < b), None)
		if owner is None:
			strays.append(r)
		else:
			owned.setdefault(id(owner), []).append(r)
	touched = []
	for c, _ in cases:
		mine = owned.get(id(c), [])
		before = c.status
		if EXPECT in c.row:
			for r in mine:
				r.expected = True
			c.reports = mine
			if not mine and c.status == Outcome.PASS:
				c.status = Outcome.FAIL
				c.flagged = c.message = 'expected a report, none seen'
				touched.append((c, before))
			elif mine:
				touched.append((c, before))
			continue
		for r in mine:
			r.expected = expected_kind(c.row, r.kind)
		meant = [r for r in mine if r.expected]
		mine = [r for r in mine if not r.expected]
		if not mine:
			if meant:
				c.reports = meant
				touched.append((c, before))
			continue
		c.reports = mine + meant
		kinds: List[str] = []
		for r in mine:
			if r.kind not in kinds:
				kinds.append(r.kind)
		c.flagged = ', '.join(f'{k} report' for k in kinds)
		text = []
		for r in mine:
			text += r.excerpt() + ['']
		c.diagnostics = text + list(c.diagnostics)
		if c.status in (Outcome.PASS, Outcome.SKIP, Outcome.FAIL):
			c.message = f'{c.flagged}: {mine[0].title}'
			c.kind = c.kind or kinds[0]
		if c.status in (Outcome.PASS, Outcome.SKIP):
			c.status = Outcome.FAIL
		touched.append((c, before))
	return touched, strays


def stray_reason(strays: List[Report]) -> str:
	return '\n'.join(f'{r.label} outside any case ({r.where()}): {r.title}' for r in strays)


def needed(console: Sequence[str]) -> bool:
	"""Whether judge has anything to do: a report, or a case that expects one."""
	return bool(find(console)) or EXPECT in ''.join(console)


def judge(console: Sequence[str], suites: List[Any], res: Any) -> None:
	"""Apply the reports of a first boot's console to its ArchResult:
	counts, failures, status, reason, and res.reports for verdict.json.
	suites: that console as report.parse_console(..., attribute=False) reads
	it (the case that was running told why the guest stopped: stopped_note)."""
	touched, strays = attach(suites, find(console), ktap_start(console))
	for c, before in touched:
		for r in c.reports:
			res.reports.append(r.as_dict(c.row))
		if before == c.status:
			if c.flagged and f'{c.row}: FAILURE' in res.failures:
				# Failed anyway (KASAN and UBSAN fail the running test
				# themselves): name the report rather than FAILURE.
				res.failures[res.failures.index(f'{c.row}: FAILURE')] = f'{c.row}: {c.flagged}'
			continue
		res.failed += 1
		if before == Outcome.PASS:
			res.passed -= 1
		elif before == Outcome.SKIP:
			res.skipped -= 1
		res.failures.append(f'{c.row}: {c.flagged}')
	for r in strays:
		res.reports.append(r.as_dict())
	changed = any(before != c.status for c, before in touched)
	if (changed or strays) and res.status == ArchStatus.PASS:
		res.status = ArchStatus.FAIL
	if strays:
		res.reason = '\n'.join(x for x in (res.reason, stray_reason(strays)) if x)
