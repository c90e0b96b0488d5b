# SPDX-License-Identifier: GPL-2.0
"""The adapter to the kernel tree's own kunit_tool (tools/testing/kunit/).

The only module that loads kunit_parser / kunit_printer or reads what
kunit.py prints (its timeout line, its config failures, `--list_tests`, its
parsed view of the results).  Nothing parses KTAP by hand: the parser of
the tree under test reads every console.

Re-entrant: `run --parallel` reads consoles from several threads at once.
Nothing here changes a module global of the parser while it parses:

  - each tree's kunit_parser is loaded as a private copy (not the
    `kunit_parser` of sys.modules, no sys.path entry) whose `from
    kunit_printer import stdout` gets a private kunit_printer, itself
    loaded from the tree, whose `stdout` Printer writes nowhere.  kunit_parser
    6.12 prints through that module-level Printer only, so it stays quiet
    without sys.stdout or a Printer being swapped per call.
  - the line numbers of what the parser consumed for each Test (its header,
    its result line) are noted by a subclass of its LineStream: pop() looks
    at which parser function took the line (parse_ktap_header,
    parse_test_header, parse_test_result) and for which Test.  The
    functions themselves are never replaced.
"""

import builtins
import importlib.util
import io
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Sequence, Tuple

# ------------------------------------------------------------ kunit.py's text

# kunit.py exec's line when it killed the guest (its --timeout).
TIMEOUT_LINE = re.compile(r"Command '.*' timed out after (\d+) seconds")
# What kunit.py build says when the kunitconfig cannot be had (CONFIG_FAILED).
CONFIG_FAILURE_MARKERS = ('Not all Kconfig options', 'Multiple values specified',
			  'does not exist', 'is not a valid arch')
# What kunit.py exec --list_tests prints for each test (after its first line).
LISTED = re.compile(r'^[^\s.]+\.[^\s.]+$')
# kunit.py exec's reading of each KTAP result (kunit_parser.format_test_result)
# and of each suite header (print_test_header), with or without [hh:mm:ss].
RESULT_LINE = re.compile(r'^(?:\[[0-9:]+\] )?\[(PASSED|SKIPPED|FAILED|CRASHED)\] ')
SUITE_LINE = re.compile(r'^(?:\[[0-9:]+\] )?=+ (\S+) \(\d+ subtests?\) =+$')
# Its closing lines: kunit.py run's split, and exec's (or build's) total.
ELAPSED_RUN = re.compile(r'Elapsed time: ([\d.]+)s total, ([\d.]+)s configuring, '
			 r'([\d.]+)s building, ([\d.]+)s running')
ELAPSED = re.compile(r'Elapsed time: ([\d.]+)s\s*$', re.M)
# Its parsed view, printed as the guest runs: [hh:mm:ss] stamps, suite headers.
TOOL_STAMP = re.compile(r'^\[(\d\d):(\d\d):(\d\d)\] (.*)$')
TOOL_SUITE = re.compile(r'^=+ \S.* \(\d+ subtests?\) =+\s*$')
TOOL_DONE = 'Testing complete'          # its summary line (print_summary_line)


def timeout_seconds(kunit_output: str) -> Optional[int]:
	"""The --timeout after which kunit.py exec killed the guest, if it did."""
	m = TIMEOUT_LINE.search(kunit_output)
	return int(m.group(1)) if m else None


def config_failed(build_log: str) -> bool:
	"""Whether a failed kunit.py build failed at its .config (not compiling)."""
	return any(m in build_log for m in CONFIG_FAILURE_MARKERS)


def refused_symbols(build_log: str) -> List[str]:
	"""The symbols kunit.py build could not select: 'Missing: CONFIG_A=y, ...'."""
	if 'Not all Kconfig options selected' not in build_log:
		return []
	m = re.search(r'^Missing: (.*)$', build_log, re.M)
	return sorted(set(re.findall(r'CONFIG_(\w+)', m.group(1)))) if m else []


def listed_tests(output: str) -> List[str]:
	"""suite.case of every test `kunit.py exec --list_tests` printed, in order."""
	return [l.strip() for l in output.splitlines()[1:] if LISTED.match(l.strip())]


# -------------------------------------------------------------- loading the parser

PARSER_FILES = ('kunit_parser.py', 'kunit_printer.py')
_lock = threading.Lock()
_parsers: Dict[str, ModuleType] = {}
_serial = 0


class _Nowhere(io.TextIOBase):
	"""Where the private kunit_printer prints: nowhere (not a TTY: no colour)."""

	def write(self, s: str) -> int:
		return len(s)


def _load(path: Path, name: str, imports: Dict[str, ModuleType]) -> ModuleType:
	"""Execute path as a new module `name`; `import X` of a key of imports
	gets that module instead of what sys.modules or sys.path would give."""
	spec = importlib.util.spec_from_file_location(name, path)
	assert spec is not None and spec.loader is not None
	mod = importlib.util.module_from_spec(spec)

	def _import(what: str, globals: Any = None, locals: Any = None,
		    fromlist: Any = (), level: int = 0) -> ModuleType:
		if level == 0 and what in imports:
			return imports[what]
		return builtins.__import__(what, globals, locals, fromlist, level)

	mod.__dict__['__builtins__'] = dict(builtins.__dict__, __import__=_import)
	# dataclasses looks the module up in sys.modules while the class is made.
	sys.modules[name] = mod
	old = sys.dont_write_bytecode
	sys.dont_write_bytecode = True  # keep the kernel tree clean
	try:
		spec.loader.exec_module(mod)
	except BaseException:
		sys.modules.pop(name, None)
		raise
	finally:
		sys.dont_write_bytecode = old
	return mod


def parser_module(kernel_tree: Path) -> ModuleType:
	"""kernel_tree's kunit_parser: a private, quiet copy, loaded once per tree."""
	global _serial
	kdir = Path(kernel_tree) / 'tools' / 'testing' / 'kunit'
	key = str(kdir)
	with _lock:
		if key in _parsers:
			return _parsers[key]
		if not (kdir / 'kunit_parser.py').exists():
			raise FileNotFoundError(f'{kdir}/kunit_parser.py not found')
		_serial += 1
		printer: Any = _load(kdir / 'kunit_printer.py', f'_bklkunit_kunit_printer_{_serial}', {})
		printer.stdout = printer.Printer(_Nowhere())
		mod = _load(kdir / 'kunit_parser.py', f'_bklkunit_kunit_parser_{_serial}',
			    {'kunit_printer': printer})
		_parsers[key] = mod
		return mod


def forget_parsers() -> None:
	"""Load every tree's parser afresh next time (tests)."""
	with _lock:
		for mod in _parsers.values():
			sys.modules.pop(mod.__name__, None)
			sys.modules.pop(mod.__name__.replace('_parser_', '_printer_'), None)
		_parsers.clear()


# ---------------------------------------------------------------- parsing


@dataclass
class Marks:
	"""What the parser consumed for each Test (keyed by id(); `tests` keeps
	every marked Test alive, so an id is never reused meanwhile)."""
	header: Dict[int, int] = field(default_factory=dict)                # first header line
	result: Dict[int, Tuple[int, str]] = field(default_factory=dict)    # result line, its text
	start: Dict[int, Optional[int]] = field(default_factory=dict)       # line a leaf began after
	tests: List[Any] = field(default_factory=list)


def _structural(kp: ModuleType, line: str) -> bool:
	"""A line the parser does not take as a diagnostic."""
	return any(r.match(line) for r in (kp.TEST_RESULT, kp.TEST_HEADER, kp.KTAP_START,
					   kp.TAP_START, kp.TEST_PLAN))


def _recording_stream(kp: ModuleType, pairs: List[Tuple[int, str]], marks: Marks) -> Any:
	"""A kunit_parser LineStream over pairs that notes, in marks, the header
	and result lines each Test was given, and keeps what was popped."""
	headers = (kp.parse_ktap_header.__code__, kp.parse_test_header.__code__)
	results = kp.parse_test_result.__code__

	class Recording(kp.LineStream):  # type: ignore[name-defined]
		def __init__(self) -> None:
			super().__init__(iter(pairs))
			self.popped: List[Tuple[int, str]] = []

		def pop(self) -> str:
			n = self.line_number()
			s: str = super().pop()
			caller = sys._getframe(1)
			code = caller.f_code
			if code is results or any(code is h for h in headers):
				test = caller.f_locals.get('test')
				if not isinstance(test, kp.Test):
					# (a parser whose functions call their Test otherwise)
					test = next(v for v in caller.f_locals.values()
						    if isinstance(v, kp.Test))
				marks.tests.append(test)
				if code is results:
					marks.result[id(test)] = (n, s)
					# A case starts where the previous result (or the header
					# or plan above it) was printed; its diagnostics come between.
					marks.start[id(test)] = next(
						(m for m, line in reversed(self.popped) if _structural(kp, line)),
						None)
				else:
					marks.header.setdefault(id(test), n)
			self.popped.append((n, s))
			return s

	return Recording()


@dataclass
class Documents:
	"""Every top-level KTAP document of a console, as kunit_parser.Test trees."""
	docs: List[Any]
	marks: Marks
	parser: ModuleType
	popped: List[Tuple[int, str]] = field(default_factory=list)   # (line, KTAP text) in order
	ktap: List[str] = field(default_factory=list)     # every line extract_tap_lines gave

	def first(self) -> Any:
		"""The first document as parse_run_tests reads the console (what
		`kunit.py exec` reports): a '<missing>' Test with the status
		FAILURE_TO_PARSE_TESTS when there is no KTAP at all."""
		if self.docs:
			return self.docs[0]
		test = self.parser.Test()
		test.name = '<missing>'
		test.status = self.parser.TestStatus.FAILURE_TO_PARSE_TESTS
		return test

	def diagnostics_between(self, after: int, before: int) -> List[str]:
		"""The lines the parser took as diagnostics (not results, headers,
		plans) between two console lines."""
		return [text for n, text in self.popped
			if after < n < before and not _structural(self.parser, text)]

	def skip_reason(self, result_line: str) -> str:
		"""The reason of an 'ok N name # SKIP reason' line."""
		m = self.parser.TEST_RESULT_SKIP.match(result_line)
		return m.group(5).strip() if m else ''


def documents(kernel_tree: Path, lines: Sequence[str]) -> Documents:
	"""Every top-level KTAP document of a console (lines with or without
	their newline), each parsed by kunit_parser.parse_test as
	parse_run_tests does for the first one (Documents.first); Test.status.name
	is SUCCESS, FAILURE, SKIPPED, ...  One pass of the parser serves the
	verdict (ktap.judge) and the cases (console.read_console)."""
	kp = parser_module(kernel_tree)
	lines = [l.rstrip('\r\n') for l in lines]
	extracted = kp.extract_tap_lines(lines)
	pairs = []
	while extracted:
		n = extracted.line_number()
		pairs.append((n, extracted.pop()))
	marks = Marks()
	stream = _recording_stream(kp, pairs, marks)
	docs: List[Any] = []
	while stream:
		line = stream.peek()
		# Later documents start with an unindented "KTAP version"
		# (e.g. the suites of a module loaded after boot).
		if docs and not ((kp.KTAP_START.match(line) or kp.TAP_START.match(line))
				 and not line[:1].isspace()):
			stream.pop()
			continue
		doc = kp.parse_test(stream, 0, [], False)
		if doc.status != kp.TestStatus.NO_TESTS:
			doc.status = doc.counts.get_status()
		docs.append(doc)
	return Documents(docs, marks, kp, stream.popped, [text for _, text in pairs])
