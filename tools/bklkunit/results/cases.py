# SPDX-License-Identifier: GPL-2.0
"""A guest's console read into Suites and Cases (model.py), in order.

The consoles are read by the kernel tree's own kunit_parser (kunit_tool.py
loads it); nothing here parses KTAP by itself.  What the parser does not keep is
taken from the lines it consumed, which it hands over in order with their
console line numbers: the '# SKIP' reason of a result line and the printk
timestamps ("[    1.234567] ", printed because every boot passes
printk.time=1: plan.GUEST_KERNEL_ARGS) that give each case its duration and
the guest time it started at (Case.clock; rundir.py turns that into a
wall-clock start_time).  Without timestamps there is no duration and no
start, never a guessed one.

Case statuses use KCIDB's names: PASS, FAIL, SKIP, ERROR (the case that was
running when the guest crashed or hung, or that never printed its result)
and MISS (announced by a plan but never reached).  A kernel report printed
while a case ran fails it (kernel_reports.py).
"""

import re
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import kernel_reports, kunit_tool
from .model import Case, ERROR, FAIL, MISS, PASS, SKIP, Suite

# printk's "[    1.234567] " (also "[    1.234567][    T1] " with the caller).
TIMESTAMP = re.compile(r'^\s*\[\s*(\d+\.\d+)\]')
# kunit_info()/kunit_err() print "# <case name>: ..." while a case runs.
CASE_MESSAGE = re.compile(r'^\s*# ([A-Za-z_][A-Za-z0-9_]*): ')


def _timestamps(lines: Sequence[str]) -> Dict[int, float]:
	"""Console line number (1-based, as extract_tap_lines counts) -> printk time."""
	out = {}
	for n, line in enumerate(lines, 1):
		m = TIMESTAMP.match(line)
		if m:
			out[n] = float(m.group(1))
	return out


def _dedent(log: Sequence[str]) -> List[str]:
	text = textwrap.dedent('\n'.join(l.rstrip() for l in log))
	return text.strip('\n').splitlines() if text.strip() else []


class _Reader:
	"""Turns parsed documents into Suites and Cases."""

	def __init__(self, parsed: kunit_tool.Documents, stamps: Dict[int, float], stopped: str):
		self.parsed, self.marks = parsed, parsed.marks
		self.stamps, self.stopped = stamps, stopped

	def placeholder(self, t: Any) -> bool:
		"""A Test the parser made up for a subtest its plan announced."""
		return (not t.subtests and id(t) not in self.marks.header
			and id(t) not in self.marks.result)

	def duration(self, start: Optional[int], end: Optional[int]) -> Optional[float]:
		if start is None or end is None or start not in self.stamps or end not in self.stamps:
			return None
		d = self.stamps[end] - self.stamps[start]
		return round(d, 6) if d >= 0 else None

	def first_line(self, t: Any) -> Optional[int]:
		"""The console line a Test's time counts from: its header, else the
		line it began after."""
		return self.marks.header.get(id(t), self.marks.start.get(id(t)))

	def span(self, t: Any) -> Optional[float]:
		end = self.marks.result.get(id(t), (None, ''))[0]
		return self.duration(self.first_line(t), end)

	def clock(self, t: Any) -> Optional[float]:
		"""The printk time its duration counts from (None without one)."""
		n = self.first_line(t)
		return self.stamps.get(n) if n is not None else None

	def leaf(self, t: Any, suite: str, name: str, params: Tuple[str, ...]) -> Case:
		c = Case(suite, name, params, diagnostics=_dedent(t.log), duration=self.span(t),
			 clock=self.clock(t))
		start = self.marks.start.get(id(t))
		if id(t) in self.marks.result and start is not None:
			c.span = (start, self.marks.result[id(t)][0])
			if not t.log and params:
				# A parameterised case's first parameter: kunit_parser gives
				# what it printed (after "# Subtest: <case>", before its
				# "not ok 1") to the case, not to the parameter.
				c.diagnostics = _dedent(self.parsed.diagnostics_between(*c.span))
		if id(t) not in self.marks.result:
			c.status = ERROR
			c.message = 'no result line: it did not finish' + self.stopped
			c.duration = None
		elif t.status.name == 'SUCCESS':
			c.status = PASS
		elif t.status.name == 'FAILURE':
			c.status = FAIL
		elif t.status.name in ('SKIPPED', 'NO_TESTS'):
			c.status = SKIP
			c.message = (self.parsed.skip_reason(self.marks.result[id(t)][1])
				     if t.status.name == 'SKIPPED' else 'no tests run')
		else:
			c.status = ERROR
			c.message = f'kunit_parser: {t.status.name}'
		return c

	def case(self, t: Any, suite: str, params: Tuple[str, ...], out: List[Case]) -> None:
		"""A case and, when it is parameterised, one row per parameter."""
		name = params[0] if params else t.name
		if not t.subtests:
			out.append(self.leaf(t, suite, name, params[1:]))
			return
		for m, sub in enumerate(t.subtests, 1):
			if self.placeholder(sub):
				# KUnit prints no plan for parameters, but KTAP may.
				out.append(Case(suite, name, params[1:] + (f'param{m}',), status=MISS,
						named=False, diagnostics=_dedent(sub.log),
						message=f'never reached: subtest {m} of the plan 1..{t.expected_count}'))
				continue
			self.case(sub, suite, (params or (t.name,)) + (sub.name,), out)
		if id(t) not in self.marks.result:
			# Its header and some parameters were printed, its result not:
			# it was running (the parameter has no name yet).
			c = self.leaf(t, suite, name, params[1:])
			c.message = (f'running when the guest stopped, after {len(t.subtests)} '
				     'parameter(s)' + self.stopped)
			c.running = True
			out.append(c)

	def suite(self, t: Any) -> Suite:
		s = Suite(t.name, duration=self.span(t), clock=self.clock(t))
		if not t.subtests and id(t) not in self.marks.header:
			# "not ok N suite" alone: its suite_init failed (Linux prints
			# "# failed to initialize (-N)" and no plan), or KTAP without cases.
			s.cases.append(self.leaf(t, t.name, '', ()))
			return s
		expected = s.planned = t.expected_count
		made_up = []
		for m, sub in enumerate(t.subtests, 1):
			if self.placeholder(sub):
				# The plan announced it but its name was never printed: it
				# is known only by its position.
				c = Case(t.name, f'case{m}', status=MISS, named=False,
					 diagnostics=_dedent(sub.log), position=m,
					 message=f'never reached: case {m} of the plan 1..{expected}')
				s.cases.append(c)
				made_up.append(c)
			else:
				n = len(s.cases)
				self.case(sub, t.name, (), s.cases)
				for c in s.cases[n:]:
					c.position = m
		unfinished = id(t) not in self.marks.result
		if unfinished and made_up and not any(c.status == ERROR for c in s.cases):
			# The suite never printed its result: the first case it did not
			# report is the one that was running when the guest stopped.
			c = made_up[0]
			c.status, c.running = ERROR, True
			c.message = 'running when the guest stopped' + self.stopped
			for line in c.diagnostics:
				said = CASE_MESSAGE.match(line)
				taken = {x.name for x in s.cases}
				if said and said.group(1) != t.name and said.group(1) not in taken:
					# kunit printed "# <case>: ..." for it: that is its name.
					c.name, c.named = said.group(1), True
					break
		return s

	def document(self, doc: Any, k: int) -> List[Suite]:
		out = []
		for n, t in enumerate(doc.subtests, 1):
			if self.placeholder(t):
				name = f'suite_{n}' if k == 1 else f'doc{k}_suite_{n}'
				out.append(Suite(name, [Case(name, '', status=MISS, named=False,
					message=f'never started: suite {n} of the plan 1..{doc.expected_count}')]))
			else:
				out.append(self.suite(t))
		return out


def parse_console(kernel_tree: Path, lines: Sequence[str], stopped: str = '',
		  attribute: bool = True,
		  parsed: Optional[kunit_tool.Documents] = None) -> List[Suite]:
	"""The suites and cases of a console (or of a ktap.log), in order.

	stopped: why the guest stopped (e.g. 'TIMEOUT: guest killed after 300 s'),
	added to the message of the case that was running then.  attribute: a
	kernel report (lockdep, KASAN, WARN, ...) printed while a case ran fails
	that case (kernel_reports.py).  parsed: the console as kunit_tool.documents
	already read it (for verdicts.judge too: one pass of the parser)."""
	return read_console(kernel_tree, lines, stopped, attribute, parsed)[0]


def read_console(kernel_tree: Path, lines: Sequence[str], stopped: str = '',
		 attribute: bool = True,
		 parsed: Optional[kunit_tool.Documents] = None
		 ) -> Tuple[List[Suite], List[kernel_reports.Report]]:
	"""parse_console, and the kernel reports that belong to no case."""
	lines = [l.rstrip('\r\n') for l in lines]
	if parsed is None:
		parsed = kunit_tool.documents(kernel_tree, lines)
	reader = _Reader(parsed, _timestamps(lines), f' ({stopped})' if stopped else '')
	suites: List[Suite] = []
	for k, doc in enumerate(parsed.docs, 1):
		suites.extend(reader.document(doc, k))
	strays: List[kernel_reports.Report] = []
	if attribute:
		_, strays = kernel_reports.attach(suites, kernel_reports.find(lines), kernel_reports.ktap_start(lines))
	return suites, strays
