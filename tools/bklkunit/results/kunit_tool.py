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
  - the line numbers of what the parser consumed are kept by a subclass of
    its LineStream (pop() notes each line as the parser takes it); which
    Test took which header and result line is found afterwards by a pass
    over the Test tree the parser returned and those lines (_Walk), with
    the parser's own regular expressions.  Nothing depends on the names of
    the parser's functions or on how they call their Test, and none of
    them is replaced or wrapped.
  - kunit_parser 6.12 loops for ever on some garbled consoles (a plan
    line where a test without a plan expects a subtest or its result:
    parse_test's subtest loop makes a new empty Test each round, and
    none of them takes the line), and on others takes the last line a
    second time (ValueError).  The same LineStream subclass counts how
    often the parser looks at the stream (peek(), bool(), line_number())
    without taking a line and gives up (ParserStuck) after IDLE_LOOKS,
    and says ParserStuck for a pop() past the end: documents() then
    reads the console again, up to the line the parser loops on (or all
    of it with an empty line after it), and Documents.stuck says where
    and how much (Stuck).  No clock: the same console gives up at the
    same call, however busy the machine is.  (`kunit.py exec` parses
    the live console with its own parser, unguarded: run stops it at a
    deadline instead, its --timeout + plan.EXEC_GRACE: progress.stream.)
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
from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

# ------------------------------------------------------------ kunit.py's text

# kunit.py exec's line when it killed the guest (its --timeout).
TIMEOUT_LINE = re.compile(r"Command '.*' timed out after (\d+) seconds")
# What kunit.py build says when the kunitconfig cannot be had (CONFIG_FAILED).
CONFIG_FAILURE_MARKERS = ('Not all Kconfig options', 'Multiple values specified',
			  'does not exist', 'is not a valid arch')
# What kunit.py exec --list_tests prints for each test (after its first line):
# <suite>.<case>, a suite name as kunit_suite gives it (letters, digits, '_',
# '-') and a case's C identifier.  Nothing else on its output may pass for one
# (a Python traceback's `main(sys.argv[1:])` or `lines.pop()` did: 2026-12-07).
LISTED = re.compile(r'^[A-Za-z0-9_-]+\.[A-Za-z_][A-Za-z0-9_]*$')
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
	"""A line the parser does not take as a diagnostic (parse_diagnostic's
	non-diagnostic lines)."""
	return any(r.match(line) for r in (kp.TEST_RESULT, kp.TEST_HEADER, kp.KTAP_START,
					   kp.TAP_START, kp.TEST_PLAN))


# How often kunit_parser may look at the stream (LineStream.peek(), bool(),
# line_number()) without taking a line before it is taken to loop there.
# A parse that goes on looks a few times per level of nesting before it
# takes the next line (at most 16 times in every console of
# tools/tests/data, 178 in the mutated ones of test_parser_loop.py it reads
# to their end), and twice for each subtest a plan announced that the
# console ends without (a truncated console): the 6.12 tree has about 1500
# KUNIT_CASEs in a few hundred suites, so a real kernel's console stays 20
# times below even with all of them announced and none printed.  The loop
# looks 24 times a round: it is given up after about 4200 rounds, in well
# under a second.
IDLE_LOOKS = 100_000


class ParserStuck(Exception):
	"""kunit_parser cannot go on, after taking `taken` lines: it looked at
	the stream IDLE_LOOKS times since (at the next line, or at the end),
	or (past_end) it took a line past the end of the console (6.12's
	LineStream.peek() gives the last line again there, and its pop()
	raises ValueError)."""

	def __init__(self, taken: int, past_end: bool = False):
		super().__init__(f'kunit_parser stuck after {taken} line(s)'
				 + (' (taking a line past the end)' if past_end else ''))
		self.taken, self.past_end = taken, past_end


def _recording_stream(kp: ModuleType, pairs: List[Tuple[int, str]]) -> Any:
	"""A kunit_parser LineStream over pairs that keeps every line popped
	from it, with its console line number, in the order the parser took
	them (which Test took which is _Walk's to find out), and raises
	ParserStuck where the parser cannot go on.  What the parser gets from
	it is what the plain LineStream gives."""

	class Recording(kp.LineStream):  # type: ignore[name-defined, misc]
		def __init__(self) -> None:
			super().__init__(iter(pairs))
			self.popped: List[Tuple[int, str]] = []
			self.idle = 0           # looks since the parser last took a line

		def _look(self) -> None:
			self.idle += 1
			if self.idle > IDLE_LOOKS:
				raise ParserStuck(len(self.popped))

		def peek(self) -> str:
			self._look()
			s: str = super().peek()
			return s

		def __bool__(self) -> bool:
			self._look()
			more: bool = super().__bool__()
			return more

		def line_number(self) -> int:
			self._look()
			n: int = super().line_number()
			return n

		def pop(self) -> str:
			self.idle = 0           # taking a line is no idle look
			n = self.line_number()
			if not super().__bool__():
				raise ParserStuck(len(self.popped), past_end=True)
			s: str = super().pop()
			self.popped.append((n, s))
			self.idle = 0
			return s

	return Recording()


class _Walk:
	"""Which of the lines kunit_parser consumed for one document went to
	which Test: a pass over the Test tree it returned and those lines, in
	the order parse_test takes them (diagnostics, 'KTAP version', '#
	Subtest:', diagnostics, the plan, the subtests, diagnostics, the result
	line), matched with the parser's own regular expressions.  It decides
	nothing the parser decided (names, statuses, counts are the Test's); it
	only places the header and result lines, noting them in marks.

	A subtest took the result line that follows it when that line names it
	as it is now named: parse_test_result gives a Test the name of the
	result line it consumed, and one that consumed none keeps its header's
	name (or none: a plan's placeholder, a leaf that never printed its
	result), which the parser did not find there."""

	def __init__(self, kp: ModuleType, popped: List[Tuple[int, str]], begin: int, end: int,
		     marks: Marks):
		self.kp, self.popped, self.i, self.end, self.marks = kp, popped, begin, end, marks

	def _skip(self) -> Optional[str]:
		"""Past the diagnostics (parse_diagnostic): the next line, not taken."""
		while self.i < self.end and not _structural(self.kp, self.popped[self.i][1]):
			self.i += 1
		return self.popped[self.i][1] if self.i < self.end else None

	def _here(self, *res: Any) -> bool:
		"""Whether the next line, diagnostics not skipped, matches one of res."""
		return self.i < self.end and any(r.match(self.popped[self.i][1]) for r in res)

	def _take(self, test: Any, header: bool) -> None:
		n, text = self.popped[self.i]
		self.marks.tests.append(test)
		if header:
			self.marks.header.setdefault(id(test), n)
		else:
			self.marks.result[id(test)] = (n, text)
			# A case starts where the previous result (or the header or
			# plan above it) was printed; its diagnostics come between.
			self.marks.start[id(test)] = next(
				(self.popped[j][0] for j in range(self.i - 1, -1, -1)
				 if _structural(self.kp, self.popped[j][1])), None)
		self.i += 1

	def _result_name(self, line: str) -> Optional[str]:
		"""The name parse_test_result gives the Test that takes this line."""
		m = self.kp.TEST_RESULT.match(line)
		if not m:
			return None
		skip = self.kp.TEST_RESULT_SKIP.match(line)
		return cast(Optional[str], skip.group(4) if skip else m.group(4))

	def _body(self, test: Any) -> None:
		"""After the header lines: diagnostics, the plan, the subtests."""
		self._skip()
		if self._here(self.kp.TEST_PLAN):
			self.i += 1
		for sub in test.subtests:
			self.subtest(sub)

	def document(self, test: Any) -> None:
		self._skip()
		if self._here(self.kp.KTAP_START, self.kp.TAP_START):
			self._take(test, header=True)
		self._body(test)

	def subtest(self, test: Any) -> None:
		self._skip()
		parent = False
		# "KTAP version" and "# Subtest:" as parse_test reads them: the
		# second right after the first, no diagnostic between.
		if self._here(self.kp.KTAP_START, self.kp.TAP_START):
			self._take(test, header=True)
			parent = True
		if self._here(self.kp.TEST_HEADER):
			self._take(test, header=True)
			parent = True
		if parent:
			self._body(test)
		line = self._skip()
		if test.name and line is not None and self._result_name(line) == test.name:
			self._take(test, header=False)


# What kunit_parser does where it cannot read on (Stuck.kind).
LOOPS = 'loops'            # loops on a line without taking it
PLAN = 'plan'              # at the end, makes up the subtests of a plan without end
TWICE = 'twice'            # at the end, takes the last line a second time


@dataclass
class Stuck:
	"""Where and how kunit_parser failed on a console (the first place, in
	the order it reads), and how much of it was read: up to the line
	before read_to, or (None) all of it, as if an empty line followed."""
	kind: str                   # LOOPS, PLAN or TWICE
	at: int                     # console line number: the line it loops on, the plan, ...
	text: str                   # that line as extract_tap_lines gave it
	read_to: Optional[int]      # console line number

	def message(self, source: str) -> str:
		"""One line for the user; source: the console's file name."""
		shown = self.text.strip()
		shown = shown if len(shown) <= 60 else shown[:57] + '...'
		line = f"line {self.at} ('{shown}')"
		why = {LOOPS: f'it loops on {line} without taking it',
		       PLAN: (f'at the end of the console it makes up the subtests the plan on {line} '
			      'announced, more than any kernel has'),
		       TWICE: f'at the end of the console it takes {line} a second time'}[self.kind]
		if self.read_to is None:
			return (f'kunit_parser cannot read {source} as it is: {why}; '
				'read as if an empty line followed')
		return (f'kunit_parser cannot read {source} from line {self.read_to} on: {why}; '
			'what came before is kept')


@dataclass
class Documents:
	"""Every top-level KTAP document of a console, as kunit_parser.Test trees."""
	docs: List[Any]
	marks: Marks
	parser: ModuleType
	popped: List[Tuple[int, str]] = field(default_factory=list)   # (line, KTAP text) in order
	ktap: List[str] = field(default_factory=list)     # every line extract_tap_lines gave
	stuck: Optional[Stuck] = None     # where the parser failed, and how much docs read
	# Lines of other kernel output moved out of a KTAP header
	# (untangle_headers): kunit_parser alone, as `kunit.py exec` runs it,
	# reads those headers wrong.
	untangled: int = 0

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
		return cast(str, m.group(5)).strip() if m else ''


def read_documents(kp: ModuleType, stream: Any, docs: List[Any],
		   begins: Optional[List[int]] = None) -> None:
	"""Every top-level document of stream (a kunit_parser LineStream) into
	docs, each read by kp.parse_test as parse_run_tests reads the first;
	begins, when given: where in stream.popped (a recording stream) each
	one starts.  What the stream raises leaves what was done."""
	while stream:
		line = stream.peek()
		# Later documents start with an unindented "KTAP version"
		# (e.g. the suites of a module loaded after boot).
		if docs and not ((kp.KTAP_START.match(line) or kp.TAP_START.match(line))
				 and not line[:1].isspace()):
			stream.pop()
			continue
		if begins is not None:
			begins.append(len(stream.popped))
		doc = kp.parse_test(stream, 0, [], False)
		if doc.status != kp.TestStatus.NO_TESTS:
			doc.status = doc.counts.get_status()
		docs.append(doc)


def _trouble(kp: ModuleType, stuck: ParserStuck, popped: List[Tuple[int, str]],
	     begins: List[int], given: int) -> Tuple[str, int]:
	"""What the parser did (Stuck.kind) and at which of the `given` lines
	(their index): the line it took twice; the line it loops on; at the
	end, the plan that announced the most subtests in the document it was
	reading (it makes up what its plans announced there)."""
	if stuck.past_end:
		return TWICE, stuck.taken - 1
	if stuck.taken < given:
		return LOOPS, stuck.taken
	first = begins[-1] if begins else 0
	plans = [(int(m.group(1)), -i) for i in range(first, len(popped))
		 for m in (kp.TEST_PLAN.match(popped[i][1]),) if m]
	return PLAN, (-max(plans)[1] if plans else given - 1)


# A nested document's first line ("    KTAP version 1"), and what must come
# right after it: its "# Subtest:" line or its plan.
_NESTED_START = re.compile(r'^(\s+)KTAP version \d+\s*$')
# How many lines of other output may sit inside a header before it is
# taken as a console that went wrong rather than one line that came in
# between (a device probe, a clocksource switch: one line each).
INTERLEAVED_MAX = 4


def untangle_headers(kp: ModuleType,
		     pairs: Sequence[Tuple[int, str]]) -> Tuple[List[Tuple[int, str]], int]:
	"""The console's KTAP lines (extract_tap_lines' pairs) with any line of
	other kernel output that landed between a nested document's
	"KTAP version" line and its "# Subtest:" line or plan moved to just
	before the "KTAP version" line.  kunit_parser reads the header's lines
	only back to back: an asynchronous printk there (an input device's
	probe, printed while the suites run) made it give the suite's first
	cases to a nameless test and call the suite crashed.  Such a line has
	less indentation than the header and is no KTAP line; at most
	INTERLEAVED_MAX of them move, keeping their console line numbers, so
	nothing is dropped and the line numbers still say where each was
	printed.  Everything else stays in order.  Returns the lines and how
	many of them it moved."""
	out = list(pairs)
	moved = 0
	i = 0
	while i < len(out):
		m = _NESTED_START.match(out[i][1])
		if not m:
			i += 1
			continue
		indent = m.group(1)
		j = i + 1
		while (j < len(out) and j - i - 1 < INTERLEAVED_MAX
		       and not out[j][1].startswith(indent) and not _structural(kp, out[j][1])):
			j += 1
		follows = out[j][1][len(indent):] if j < len(out) and out[j][1].startswith(indent) else ''
		if j > i + 1 and (follows.startswith('# Subtest:') or kp.TEST_PLAN.match(follows)):
			out[i:j] = out[i + 1:j] + [out[i]]
			moved += j - i - 1
			i = j
		i += 1
	return out, moved


def documents(kernel_tree: Path, lines: Sequence[str]) -> Documents:
	"""Every top-level KTAP document of a console (lines with or without
	their newline), each parsed by kunit_parser.parse_test as
	parse_run_tests does for the first one (Documents.first); Test.status.name
	is SUCCESS, FAILURE, SKIPPED, ...  One pass of the parser serves the
	verdict (verdicts.judge) and the cases (cases.read_console).

	Where the parser cannot read on (ParserStuck), never an exception,
	never a loop: where it loops, the documents are what it read of the
	lines before that one; where it takes the last line a second time,
	what it reads of the console with an empty line after it (what its
	LineStream gives there is that line again); Documents.stuck says
	which."""
	kp = parser_module(kernel_tree)
	lines = [l.rstrip('\r\n') for l in lines]
	extracted = kp.extract_tap_lines(lines)
	pairs = []
	while extracted:
		n = extracted.line_number()
		pairs.append((n, extracted.pop()))
	pairs, moved = untangle_headers(kp, pairs)
	# Read pairs[:limit], with an empty line after them when pad.  Each
	# reading after the first pads or reads fewer lines: the readings end.
	limit, pad = len(pairs), False
	trouble: Optional[Tuple[str, int, str]] = None       # the first: kind, line, text
	while True:
		given = pairs[:limit] + ([(pairs[limit - 1][0] + 1, '')] if pad else [])
		stream = _recording_stream(kp, given)
		docs: List[Any] = []
		begins: List[int] = []          # where in stream.popped each document starts
		try:
			read_documents(kp, stream, docs, begins)
			break
		except ParserStuck as e:
			kind, i = _trouble(kp, e, stream.popped, begins, len(given))
			trouble = trouble or (kind, given[i][0], given[i][1])
			if kind == TWICE and not pad:
				# Its LineStream gives the last line again at the end:
				# after an empty line that is an empty line.
				pad = True
			else:
				# Up to the line it could not get past: the parser
				# reads those lines as it did (it looks one line
				# ahead), and ends there as at the end of a console.
				limit, pad = max(0, min(i, limit - 1)), False
	stuck = Stuck(*trouble, pairs[limit][0] if limit < len(pairs) else None) if trouble else None
	marks = Marks()
	for k, doc in enumerate(docs):
		end = begins[k + 1] if k + 1 < len(docs) else len(stream.popped)
		_Walk(kp, stream.popped, begins[k], end, marks).document(doc)
	return Documents(docs, marks, kp, stream.popped, [text for _, text in pairs], stuck, moved)
