# SPDX-License-Identifier: GPL-2.0
"""Reading a guest's console with the tree's own kunit_parser.

We never re-implement KTAP parsing: the parser of the kernel tree under test
(tools/testing/kunit/kunit_parser.py) is loaded from that tree by
kunit_tool.py.  This module only turns its Test objects into the per-arch
verdict the runner reports.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, List, Optional

from . import kunit_tool
from .model import ArchStatus

# What a dying guest prints.  Any of these turns the arch into "crashed".
PANIC_PATTERNS = [
	# "not syncing: VFS:" is how a KUnit guest without a root fs ends.
	re.compile(r'Kernel panic - not syncing: (?!VFS:)'),
	re.compile(r'\bOops\b.*\[#\d+\]'),
	re.compile(r'^\s*(\[[^\]]*\]\s*)?BUG: (unable to handle|kernel NULL pointer)'),
	re.compile(r'Internal error: Oops'),
	re.compile(r'Unable to handle kernel (NULL pointer|paging request)'),
]

@dataclass
class Verdict:
	passed: int = 0
	failed: int = 0
	skipped: int = 0
	crashed: int = 0
	errors: int = 0
	status: str = ArchStatus.NO_TESTS      # PASS, FAIL, CRASH, TIMEOUT, NO_TESTS
	reason: str = ''
	failures: List[str] = field(default_factory=list)   # suite.case names
	ktap: List[str] = field(default_factory=list)


def _collect(test: Any, prefix: str, out: List[str], ok_states: Iterable[str],
	     depth: int = 0) -> None:
	"""Failed leaves as `suite.case: STATUS`, a parameter as
	`suite.case/param: STATUS` (model.Case.row's spelling)."""
	unreported = 0
	for sub in test.subtests:
		if not sub.name and not sub.subtests:
			# Announced by the plan, never reported: KTAP never named it.
			unreported += 1
			continue
		name = f'{prefix}{"." if depth == 1 else "/"}{sub.name}' if prefix else sub.name
		if sub.subtests:
			_collect(sub, name, out, ok_states, depth + 1)
		elif sub.status.name not in ok_states:
			out.append(f'{name}: {sub.status.name}')
	if unreported:
		where = prefix or 'the run'
		out.append(f'{where}: {unreported} case(s) announced by the plan never reported')


def judge(kernel_tree: Path, console: Iterable[str], kunit_output: str = '',
	  parsed: Optional[kunit_tool.Documents] = None, source: str = 'console.log') -> Verdict:
	"""Parse a console log; a missing or incomplete KTAP document, a panic or
	a timeout is a crash, never a pass, and so is a console kunit_parser
	cannot read to its end (kunit_tool.Stuck: a CRASH whose reason names
	source, the console's file name, and the line).  parsed: the console
	as kunit_tool.documents already read it (it is not parsed again)."""
	lines = list(console)
	v = Verdict()
	if parsed is None:
		parsed = kunit_tool.documents(kernel_tree, lines)
	v.ktap = list(parsed.ktap)
	test = parsed.first()
	status = test.status.name
	c = test.counts
	v.passed, v.failed, v.skipped, v.crashed, v.errors = (
		c.passed, c.failed, c.skipped, c.crashed, c.errors)
	_collect(test, '', v.failures, ('SUCCESS', 'SKIPPED'))
	panic = next((l.strip() for l in lines if any(p.search(l) for p in PANIC_PATTERNS)), '')
	tmo = kunit_tool.timeout_seconds(kunit_output)
	unread = parsed.stuck.message(source) if parsed.stuck else ''
	if tmo is not None:
		v.status, v.reason = ArchStatus.TIMEOUT, f'guest killed after {tmo} s without finishing'
	elif panic:
		v.status, v.reason = ArchStatus.CRASH, panic[:200]
	elif unread:
		# Not read to its end: what the guest did after that line is
		# unknown, as after a crash (model.STOPPED: the case that
		# was running is told why).
		v.status, v.reason = ArchStatus.CRASH, unread
	elif status == 'FAILURE_TO_PARSE_TESTS' or c.total() == 0 and not any(
			'KTAP version' in l or 'TAP version' in l for l in lines):
		v.status, v.reason = ArchStatus.CRASH, 'the guest printed no KTAP output'
	elif status == 'NO_TESTS' and not c.crashed:
		v.status, v.reason = ArchStatus.NO_TESTS, 'no test ran (filter matched nothing?)'
	elif status == 'TEST_CRASHED' or c.crashed or c.errors:
		v.status = ArchStatus.CRASH
		v.reason = (f'incomplete KTAP ({c.crashed} crashed, {c.errors} errors): '
			    'the guest stopped before the plan was complete')
	elif status == 'NO_TESTS' or c.total() == 0:
		v.status, v.reason = ArchStatus.NO_TESTS, 'no test ran (filter matched nothing?)'
	elif c.failed:
		v.status = ArchStatus.FAIL
	else:
		v.status = ArchStatus.PASS
	if unread and v.reason != unread:
		v.reason += '\n' + unread
	return v
