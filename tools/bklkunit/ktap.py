# SPDX-License-Identifier: GPL-2.0
"""Reading a guest's console with the tree's own kunit_parser.

We never re-implement KTAP parsing: the parser of the kernel tree under test
(tools/testing/kunit/kunit_parser.py) is loaded from that tree.  This module
only turns its Test objects into the per-arch verdict the runner reports.
"""

import importlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Iterable, List, Optional, Tuple

_loaded: Optional[Tuple[str, ModuleType]] = None

# What a dying guest prints.  Any of these turns the arch into "crashed".
PANIC_PATTERNS = [
	# "not syncing: VFS:" is how a KUnit guest without a root fs ends.
	re.compile(r'Kernel panic - not syncing: (?!VFS:)'),
	re.compile(r'\bOops\b.*\[#\d+\]'),
	re.compile(r'^\s*(\[[^\]]*\]\s*)?BUG: (unable to handle|kernel NULL pointer)'),
	re.compile(r'Internal error: Oops'),
	re.compile(r'Unable to handle kernel (NULL pointer|paging request)'),
]
TIMEOUT_PATTERN = re.compile(r"Command '.*' timed out after (\d+) seconds")


def parser_module(kernel_tree: Path) -> ModuleType:
	"""kunit_parser from kernel_tree (one tree per process)."""
	global _loaded
	kdir = str(Path(kernel_tree) / 'tools' / 'testing' / 'kunit')
	if _loaded and _loaded[0] == kdir:
		return _loaded[1]
	if not Path(kdir, 'kunit_parser.py').exists():
		raise FileNotFoundError(f'{kdir}/kunit_parser.py not found')
	if _loaded:
		for name in ('kunit_parser', 'kunit_printer', 'kunit_json'):
			sys.modules.pop(name, None)
		sys.path.remove(_loaded[0])
	sys.path.insert(0, kdir)
	old = sys.dont_write_bytecode
	sys.dont_write_bytecode = True  # keep the kernel tree clean
	try:
		mod = importlib.import_module('kunit_parser')
	finally:
		sys.dont_write_bytecode = old
	_loaded = (kdir, mod)
	return mod


@dataclass
class Verdict:
	passed: int = 0
	failed: int = 0
	skipped: int = 0
	crashed: int = 0
	errors: int = 0
	status: str = 'NO_TESTS'      # PASS, FAIL, CRASH, TIMEOUT, NO_TESTS
	reason: str = ''
	failures: List[str] = field(default_factory=list)   # suite.case names
	ktap: List[str] = field(default_factory=list)


def _collect(test, prefix: str, out: List[str], ok_states) -> None:
	unreported = 0
	for sub in test.subtests:
		if not sub.name and not sub.subtests:
			# Announced by the plan, never reported: KTAP never named it.
			unreported += 1
			continue
		name = f'{prefix}.{sub.name}' if prefix else sub.name
		if sub.subtests:
			_collect(sub, name, out, ok_states)
		elif sub.status not in ok_states:
			out.append(f'{name}: {sub.status.name}')
	if unreported:
		where = prefix or 'the run'
		out.append(f'{where}: {unreported} case(s) announced by the plan never reported')


def judge(kernel_tree: Path, console: Iterable[str], kunit_output: str = '') -> Verdict:
	"""Parse a console log; a missing or incomplete KTAP document, a panic or
	a timeout is a crash, never a pass."""
	kp = parser_module(kernel_tree)
	lines = list(console)
	v = Verdict()
	v.ktap = list(kp.extract_tap_lines(lines))
	printer = sys.modules['kunit_printer'].stdout
	saved = printer._output
	printer._output = io.StringIO()
	try:
		test = kp.parse_run_tests(lines)
	finally:
		printer._output = saved
	c = test.counts
	v.passed, v.failed, v.skipped, v.crashed, v.errors = (
		c.passed, c.failed, c.skipped, c.crashed, c.errors)
	_collect(test, '', v.failures, (kp.TestStatus.SUCCESS, kp.TestStatus.SKIPPED))
	panic = next((l.strip() for l in lines if any(p.search(l) for p in PANIC_PATTERNS)), '')
	tmo = TIMEOUT_PATTERN.search(kunit_output)
	if tmo:
		v.status, v.reason = 'TIMEOUT', f'guest killed after {tmo.group(1)} s without finishing'
	elif panic:
		v.status, v.reason = 'CRASH', panic[:200]
	elif test.status == kp.TestStatus.FAILURE_TO_PARSE_TESTS or c.total() == 0 and not any(
			'KTAP version' in l or 'TAP version' in l for l in lines):
		v.status, v.reason = 'CRASH', 'the guest printed no KTAP output'
	elif test.status == kp.TestStatus.NO_TESTS and not c.crashed:
		v.status, v.reason = 'NO_TESTS', 'no test ran (filter matched nothing?)'
	elif test.status == kp.TestStatus.TEST_CRASHED or c.crashed or c.errors:
		v.status = 'CRASH'
		v.reason = (f'incomplete KTAP ({c.crashed} crashed, {c.errors} errors): '
			    'the guest stopped before the plan was complete')
	elif test.status == kp.TestStatus.NO_TESTS or c.total() == 0:
		v.status, v.reason = 'NO_TESTS', 'no test ran (filter matched nothing?)'
	elif c.failed:
		v.status = 'FAIL'
	else:
		v.status = 'PASS'
	return v
