# SPDX-License-Identifier: GPL-2.0
"""Consoles kunit_parser 6.12 cannot read to their end (kunit_tool.Stuck).

A plan line where a test without a plan expects a subtest or its result
(tools/tests/data/garbled_stray_plan.log) makes parse_test's subtest loop
go round for ever: nothing takes the line, and each round adds an empty
subtest.  3% of the randomly mutated data consoles here do that (and 6%
make it take the last line a second time at the end: ValueError).
kunit_tool counts the parser's looks at its LineStream without a line
taken and gives up after IDLE_LOOKS: the console is read up to the line
it loops on (a line taken twice: to the end, with an empty line after
it), and the arch is a CRASH naming the file and the line.  (kunit.py
exec, which parses the live console with the parser unguarded, is given
a deadline instead: test_run.test_run_arch_kills_a_kunit_py_exec_that_never_ends.)

The tests that hang the code before the guard run in a child interpreter
(_child): its time limit, HARNESS_LIMIT, and its memory limit (each round
of the loop keeps one more Test) are the harness's guard against a hang
and nothing else (the tool has no clock, and nothing asserted here
depends on time or on how busy the machine is).  The same module is that
child's script."""

import contextlib
import io
import json
import random
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

# conftest first: it puts tools/ on sys.path, for the child too.
from conftest import DATA, DEBVER, in_threads
import test_damaged
from bklkunit import cli
from bklkunit.base import deps
from bklkunit.results import kunit_tool, rundir, verdicts
from bklkunit.results.cases import parse_console
from bklkunit.source import tree

HARNESS_LIMIT = 300      # seconds a child may take before the test fails as hung
CHILD_MEMORY = 2 << 30   # bytes of address space a child may have (the loop grows)
WATCH = 200_000          # looks without a line taken after which the tests' watch stops
MINIMAL = 'garbled_stray_plan.log'
SEED = 20261207
MUTANTS = 600


def _child(name: str, *args: str) -> Any:
	"""CHILDREN[name](*args) in a child interpreter: what it returned."""
	try:
		p = subprocess.run([sys.executable, __file__, name, *args], capture_output=True,
				   text=True, timeout=HARNESS_LIMIT, cwd=Path(__file__).parent)
	except subprocess.TimeoutExpired:
		pytest.fail(f'{name} did not finish in {HARNESS_LIMIT} s: the parse loops',
			    pytrace=False)
	assert 'MemoryError' not in p.stderr, f'{name} ran out of memory: the parse loops'
	assert p.returncode == 0, p.stderr[-3000:]
	return json.loads(p.stdout.splitlines()[-1])


def _lines(name: str) -> List[str]:
	return (DATA / name).read_text(errors='replace').splitlines()


def _pairs(kp, lines: List[str]) -> List[Tuple[int, str]]:
	"""The lines kunit_tool.documents gives the parser: extract_tap_lines'
	pairs, with other output inside a nested header moved in front of it
	(kunit_tool.untangle_headers; the guard tested here comes after that)."""
	ex = kp.extract_tap_lines(lines)
	out = []
	while ex:
		n = ex.line_number()
		out.append((n, ex.pop()))
	return kunit_tool.untangle_headers(kp, out)[0]


# ------------------------------------------------------- where 6.12 loops


class _Looking(Exception):
	pass


def _watched(kp, pairs: List[Tuple[int, str]], limit: int):
	"""A plain LineStream of the tree's parser that counts what the parser
	calls on it without taking a line, and stops it (_Looking) after limit
	such calls: the test's own watch, not the tool's."""

	class Watched(kp.LineStream):
		def __init__(self) -> None:
			super().__init__(iter(pairs))
			self.taken = 0
			self.looks: Dict[str, int] = {}

		def _look(self, what: str) -> None:
			self.looks[what] = self.looks.get(what, 0) + 1
			if sum(self.looks.values()) > limit:
				raise _Looking()

		def peek(self) -> str:
			self._look('peek')
			return super().peek()

		def __bool__(self) -> bool:
			self._look('bool')
			return super().__bool__()

		def line_number(self) -> int:
			self._look('line_number')
			return super().line_number()

		def pop(self) -> str:
			s = super().pop()
			self.taken += 1
			self.looks = {}
			return s

	return Watched()


def test_where_6_12_loops(parser_tree):
	"""parse_test of '# Subtest: s' (no plan: expected_count None) goes
	round its subtest loop at the plan line '1..2' (console line 4):
	parse_diagnostic stops at it (a plan is not a diagnostic),
	peek_test_name_match does not match it, and the subtest parse_test
	makes for it finds no header and no result line, so it takes
	nothing and returns an empty TEST_CRASHED Test.  Only peek() and
	bool() are called there, 24 times a round (20 peeks, 4 bools)."""
	kp = kunit_tool.parser_module(parser_tree)
	pairs = _pairs(kp, _lines(MINIMAL))
	rounds = 1000
	stream = _watched(kp, pairs, 24 * rounds)
	with pytest.raises(_Looking) as ei:
		kp.parse_test(stream, 0, [], False)
	assert stream.taken == 3 and pairs[3] == (4, '1..2')
	assert set(stream.looks) == {'peek', 'bool'}
	frames = []
	tb = ei.tb
	while tb is not None:
		if tb.tb_frame.f_code.co_name == 'parse_test':
			frames.append((tb.tb_frame, tb.tb_lineno))
		tb = tb.tb_next
	(main, _), (suite, lineno) = frames[0], frames[1]
	assert main.f_locals['test'].name == 'main' and not main.f_locals['is_subtest']
	loc = suite.f_locals
	assert loc['test'].name == 's' and loc['expected_count'] is None and loc['parent_test']
	# Round after round one more empty subtest, the line never taken.
	made = loc['subtests'][1:]
	assert len(made) == rounds and loc['subtests'][0].name == 'a'
	assert all(t.name == '' and not t.subtests and t.status == kp.TestStatus.TEST_CRASHED
		   for t in made)
	src = Path(kp.__file__).read_text().splitlines()
	loop = next(n for n, l in enumerate(src, 1)
		    if 'while parent_test and (expected_count is None' in l)
	end = next(n for n, l in enumerate(src, 1) if n > loop and 'test.subtests = subtests' in l)
	assert loop < lineno < end


def test_the_stream_gives_up_after_idle_looks(parser_tree):
	"""The tool's stream raises ParserStuck on the look after IDLE_LOOKS
	without a line taken, at the line it is stuck on; taking a line
	starts the count again."""
	kp = kunit_tool.parser_module(parser_tree)
	pairs = _pairs(kp, _lines(MINIMAL))
	stream = kunit_tool._recording_stream(kp, pairs)
	with pytest.raises(kunit_tool.ParserStuck) as ei:
		kp.parse_test(stream, 0, [], False)
	assert ei.value.taken == 3 and not ei.value.past_end
	assert stream.popped == pairs[:3] and stream.idle == kunit_tool.IDLE_LOOKS + 1

	stream = kunit_tool._recording_stream(kp, pairs)
	for _ in range(kunit_tool.IDLE_LOOKS):
		stream.peek()
	assert stream.pop() == 'KTAP version 1'
	for _ in range(kunit_tool.IDLE_LOOKS):
		assert stream
	with pytest.raises(kunit_tool.ParserStuck) as ei:
		stream.peek()
	assert ei.value.taken == 1 and stream.popped == pairs[:1]


def test_a_line_taken_past_the_end_is_stuck_not_valueerror(parser_tree):
	"""6.12's LineStream gives the last line again at the end, and pop()
	there raises ValueError; the tool's stream says ParserStuck."""
	kp = kunit_tool.parser_module(parser_tree)
	stream = kunit_tool._recording_stream(kp, [(1, 'KTAP version 1'), (2, 'ok 1 a')])
	stream.pop()
	stream.pop()
	assert not stream and stream.peek() == 'ok 1 a'
	with pytest.raises(kunit_tool.ParserStuck) as ei:
		stream.pop()
	assert ei.value.past_end and ei.value.taken == 2


# A suite's header printed twice (nested): the inner 's' takes 'ok 1 s',
# the outer one takes it again at the end (6.12: ValueError).
TWICE_CONSOLE = ['KTAP version 1', '1..1', '    KTAP version 1', '    # Subtest: s', '    1..1',
		 '        KTAP version 1', '        # Subtest: s', '        1..1',
		 '        ok 1 a', '    ok 1 s']


def test_a_line_taken_twice_at_the_end_is_read_with_an_empty_line_after(parser_tree):
	kp = kunit_tool.parser_module(parser_tree)
	with pytest.raises(ValueError, match='going past EOF'):
		kp.parse_run_tests(TWICE_CONSOLE)
	d = kunit_tool.documents(parser_tree, TWICE_CONSOLE)
	assert d.stuck == kunit_tool.Stuck(kunit_tool.TWICE, 10, '    ok 1 s', None)
	assert d.popped == _pairs(kp, TWICE_CONSOLE) + [(11, '')]
	v = verdicts.judge(parser_tree, TWICE_CONSOLE, parsed=d)
	assert v.status == 'CRASH' and v.reason == (
		"kunit_parser cannot read console.log as it is: at the end of the console it takes "
		"line 10 ('ok 1 s') a second time; read as if an empty line followed")
	assert [[c.suite, c.name, list(c.params), c.status] for s in parse_console(
		parser_tree, TWICE_CONSOLE, parsed=d) for c in s.cases] == [['s', 's', ['a'], 'PASS']]


# ------------------------------------------------- ordinary consoles as before


def _bare(kp, lines: List[str], limit: int) -> Tuple[str, Any]:
	"""kunit_parser's own reading of a console, document by document as
	kunit_tool.documents reads it but through its plain LineStream (the
	code before the guard): ('ends', [str(document), ...]); ('loops',
	console line or 0 at the end) when it looked `limit` times without
	taking a line; ('past_end', the line it took again)."""
	pairs = _pairs(kp, lines)

	def read(stream) -> List[Any]:
		docs: List[Any] = []
		kunit_tool.read_documents(kp, stream, docs)
		return docs

	watched = _watched(kp, pairs, limit)
	try:
		read(watched)
	except _Looking:
		return 'loops', pairs[watched.taken][0] if watched.taken < len(pairs) else 0
	except ValueError:
		return 'past_end', pairs[watched.taken - 1][0]
	# It ends: the plain stream makes the same calls.
	return 'ends', [str(d) for d in read(kp.LineStream(iter(pairs)))]


def test_every_data_file_reads_as_before(parser_tree):
	"""The guard never fires on what a guest prints: every file of
	tools/tests/data gives the Tests the plain LineStream gives, and the
	parser takes every line."""
	kp = kunit_tool.parser_module(parser_tree)
	files = sorted(DATA.glob('*.log'))
	assert len(files) >= 20
	for f in files:
		if f.name == MINIMAL:
			continue
		lines = _lines(f.name)
		d = kunit_tool.documents(parser_tree, lines)
		assert d.stuck is None, f.name
		assert _bare(kp, lines, WATCH) == (
			'ends', [str(doc) for doc in d.docs]), f.name
		assert [text for _, text in d.popped] == d.ktap, f.name


# --------------------------------------------------- in a child: would hang


def child_minimal(ktree: str) -> Dict[str, Any]:
	lines = _lines(MINIMAL)
	d = kunit_tool.documents(Path(ktree), lines)
	v = verdicts.judge(Path(ktree), lines, parsed=d)
	suites = parse_console(Path(ktree), lines, 'CRASH: stopped', parsed=d)
	return {'stuck': d.stuck and [d.stuck.kind, d.stuck.at, d.stuck.text, d.stuck.read_to],
		'status': v.status, 'reason': v.reason, 'ktap': v.ktap,
		'cases': [[c.suite, c.name, c.status, c.message] for s in suites for c in s.cases]}


def test_the_minimal_console(parser_tree):
	got = _child('child_minimal', str(parser_tree))
	assert got['stuck'] == [kunit_tool.LOOPS, 4, '1..2', 4]
	assert got['status'] == 'CRASH'
	assert got['reason'] == ("kunit_parser cannot read console.log from line 4 on: it loops "
				 "on line 4 ('1..2') without taking it; what came before is kept")
	assert got['ktap'] == _lines(MINIMAL)          # ktap.log keeps every line
	assert got['cases'] == [['s', 'a', 'PASS', '']]


def child_plan(ktree: str) -> Dict[str, Any]:
	lines = ['KTAP version 1', '1..99999999', '    KTAP version 1', '    # Subtest: s',
		 '    1..3', '    ok 1 a']
	d = kunit_tool.documents(Path(ktree), lines)
	v = verdicts.judge(Path(ktree), lines, parsed=d)
	return {'stuck': d.stuck and [d.stuck.kind, d.stuck.at, d.stuck.text, d.stuck.read_to],
		'status': v.status, 'reason': v.reason}


def test_a_plan_no_console_can_fill(parser_tree):
	"""At the end of a console 6.12 makes up, one by one, every subtest a
	plan announced and the console lacks: for 1..99999999 that is no end
	in sight.  The console is read up to that plan."""
	got = _child('child_plan', str(parser_tree))
	assert got['stuck'] == [kunit_tool.PLAN, 2, '1..99999999', 2]
	assert got['status'] == 'CRASH' and got['reason'].startswith(
		"kunit_parser cannot read console.log from line 2 on: at the end of the console it "
		"makes up the subtests the plan on line 2 ('1..99999999') announced")


def _pick(rng: random.Random, n: int) -> int:
	"""0 <= k < n from rng.random() alone (for a given seed its sequence is
	what random keeps the same across Python versions)."""
	return min(int(rng.random() * n), n - 1)


def mutate(rng: random.Random, lines: List[str]) -> List[str]:
	"""One to three changes from the first 'TAP version' line on: a line
	deleted, doubled, moved, swapped with the next, the console cut (in the
	middle of a line, maybe), a line replaced by another of the console."""
	lines = list(lines)
	first = next((i for i, l in enumerate(lines) if 'TAP version' in l), 0)
	for _ in range(1 + _pick(rng, 3)):
		if len(lines) - first < 2:
			break
		i = first + _pick(rng, len(lines) - first)
		how = _pick(rng, 6)
		if how == 0:
			del lines[i]
		elif how == 1:
			lines.insert(i, lines[i])
		elif how == 2:
			line = lines.pop(i)
			lines.insert(first + _pick(rng, len(lines) - first + 1), line)
		elif how == 3 and i + 1 < len(lines):
			lines[i], lines[i + 1] = lines[i + 1], lines[i]
		elif how == 4:
			cut = lines[i][:_pick(rng, len(lines[i]) + 1)]
			lines = lines[:i] + ([cut] if cut else [])
		elif how == 5:
			lines[i] = lines[first + _pick(rng, len(lines) - first)]
	return lines


def mutants() -> List[Tuple[str, List[str]]]:
	"""MUTANTS mutated copies of the recorded consoles, the same every time."""
	consoles = [(f.name, _lines(f.name)) for f in sorted(DATA.glob('*.log'))
		    if f.name.startswith(('console_', 'real_'))]
	rng = random.Random(SEED)
	return [(consoles[k % len(consoles)][0], mutate(rng, consoles[k % len(consoles)][1]))
		for k in range(MUTANTS)]


def _cases(suites) -> List[List[Any]]:
	return [[c.suite, c.name, list(c.params), c.status, c.message, c.span]
		for s in suites for c in s.cases]


def child_mutants(ktree: str) -> List[Dict[str, Any]]:
	kt = Path(ktree)
	kp = kunit_tool.parser_module(kt)
	out = []
	for name, lines in mutants():
		r: Dict[str, Any] = {'name': name}
		r['bare'], got = _bare(kp, lines, WATCH)
		try:
			d = kunit_tool.documents(kt, lines)
			v = verdicts.judge(kt, lines, parsed=d)
			suites = parse_console(kt, lines, attribute=False, parsed=d)
		except Exception as e:     # noqa: BLE001 - reported by the test
			r['error'] = repr(e)
			out.append(r)
			continue
		r['status'] = v.status
		r['reason'] = v.reason
		r['stuck'] = d.stuck and [d.stuck.kind, d.stuck.at, d.stuck.read_to]
		if r['bare'] == 'ends':
			r['same'] = got == [str(doc) for doc in d.docs]
		else:
			r['bare_line'] = got
		if d.stuck and d.stuck.read_to:
			# What a console cut just before that line gives.
			before = parse_console(kt, lines[:d.stuck.read_to - 1], attribute=False)
			r['kept'] = _cases(suites) == _cases(before)
		elif d.stuck:
			# Every line taken, and an empty one after them.
			r['kept'] = d.popped[:-1] == _pairs(kp, lines) and d.popped[-1][1] == ''
		out.append(r)
	return out


def test_mutated_consoles_end_and_none_that_hangs_passes(parser_tree):
	"""Every mutant is read to an end; the ones the parser loops on (or
	takes a line twice in) are a CRASH naming the line, with what came
	before it; every other one reads exactly as the parser alone reads it."""
	recs = _child('child_mutants', str(parser_tree))
	assert len(recs) == MUTANTS and WATCH >= 2 * kunit_tool.IDLE_LOOKS
	assert [r for r in recs if 'error' in r] == []
	loops = [r for r in recs if r['bare'] == 'loops']
	past = [r for r in recs if r['bare'] == 'past_end']
	ends = [r for r in recs if r['bare'] == 'ends']
	assert len(loops) >= MUTANTS // 100 and len(past) >= MUTANTS // 100
	for r in ends:
		assert r['stuck'] is None and r['same'], r
	for r in loops:
		# Read up to the line it loops on, everything before it kept.
		assert r['stuck'] == [kunit_tool.LOOPS, r['bare_line'], r['bare_line']], r
		assert r['status'] == 'CRASH' and r['kept'], r
		assert f"from line {r['bare_line']} on: it loops on line {r['bare_line']} (" \
			in r['reason'], r
	for r in past:
		# Read to the end, as if an empty line followed.
		assert r['stuck'] == [kunit_tool.TWICE, r['bare_line'], None], r
		assert r['status'] == 'CRASH' and r['kept'], r
		assert f"as it is: at the end of the console it takes line {r['bare_line']} (" \
			in r['reason'], r
	assert not any(r['status'] == 'PASS' for r in loops + past)


def child_threads(ktree: str) -> Dict[str, Any]:
	"""The garbled consoles and ordinary ones read by four threads at
	once, as `run --parallel` does: each as one thread alone reads it."""
	kt = Path(ktree)
	kp = kunit_tool.parser_module(kt)
	before = {n: getattr(kp, n) for n in ('parse_test', 'LineStream', 'stdout')}
	stray = _lines('console_pass.log')
	stray.insert(12, '[    0.511200]         1..2')
	consoles = [_lines(MINIMAL), stray, _lines('console_pass.log'),
		    _lines('real_x86_64_time.log')]

	def read(lines: List[str]) -> Tuple[Any, ...]:
		v = verdicts.judge(kt, lines)
		return v.status, v.reason, _cases(parse_console(kt, lines, 'CRASH: stopped'))

	alone = [read(c) for c in consoles]
	wrong: List[str] = []
	start = threading.Barrier(4)

	def work(k: int) -> None:
		try:
			start.wait()
			for _ in range(3):
				for i in range(len(consoles)):
					j = (i + k) % len(consoles)
					if read(consoles[j]) != alone[j]:
						wrong.append(f'thread {k} console {j}')
		except Exception as e:     # noqa: BLE001 - reported by the test
			wrong.append(repr(e))

	in_threads(work, 4)
	after = {n: getattr(kp, n) for n in before}
	return {'wrong': wrong, 'statuses': [a[0] for a in alone], 'reasons': [a[1] for a in alone],
		'untouched': all(after[n] is before[n] for n in before)}


def test_garbled_consoles_from_several_threads(parser_tree):
	got = _child('child_threads', str(parser_tree))
	assert got['wrong'] == [] and got['untouched']
	assert got['statuses'] == ['CRASH', 'CRASH', 'PASS', 'PASS']
	assert 'from line 13 on' in got['reasons'][1]


def child_verbs(ktree: str, root: str) -> Dict[str, Any]:
	"""report, compare and baseline on a PASS run whose console.log was
	edited into one kunit_parser loops on (a plan line in a
	parameterised case, which has none)."""
	kt, base = Path(ktree), Path(root)

	def refuse(*args: Any, **kwargs: Any) -> None:
		raise AssertionError('a test tried to install packages')

	tree.debian_version = lambda: DEBVER
	deps.ensure = refuse
	rundir.probe_tools = lambda arch: {}
	good = test_damaged.pass_run(base / 'good', kt)
	bad = test_damaged.pass_run(base / 'bad', kt)
	console = (bad / 'x86_64' / 'console.log').read_text().splitlines(keepends=True)
	console.insert(12, '[    0.511200]         1..2\n')
	(bad / 'x86_64' / 'console.log').write_text(''.join(console))
	(bad / 'x86_64' / 'ktap.log').unlink()

	def verb(*argv: str) -> List[Any]:
		out, err = io.StringIO(), io.StringIO()
		with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
			rc = cli.main(list(argv))
		return [rc, out.getvalue(), err.getvalue()]

	bdir = base / 'baselines'
	got = {'baseline_good': verb('baseline', str(good), '--baseline-dir', str(bdir)),
	       'report': verb('report', str(bad)),
	       'compare': verb('compare', str(bad), '--baseline-dir', str(bdir)),
	       'baseline_bad': verb('baseline', str(bad), '--baseline-dir', str(base / 'b2'))}
	got['page'] = (bad / 'index.html').read_text()
	got['b2'] = (base / 'b2').exists() and sorted(p.name for p in (base / 'b2').iterdir())
	return got


def test_report_compare_baseline_on_a_console_the_parser_loops_on(parser_tree, tmp_path):
	got = _child('child_verbs', str(parser_tree), str(tmp_path))
	assert got['baseline_good'][0] == 0
	said = ("x86_64: summary.json says PASS, but console.log: kunit_parser cannot read "
		"console.log from line 13 on: it loops on line 13 ('1..2') without taking it; "
		"what came before is kept")
	rc, out, err = got['report']
	assert rc == 1 and said in err and 'Traceback' not in err
	assert '0 of 1 arch(es) PASS' in got['page'] and 'x86_64 CRASH' in got['page']
	rc, out, err = got['compare']
	assert rc == 1 and 'x86_64 (CRASH)' in out and 'REGRESSION' in out
	rc, out, err = got['baseline_bad']
	assert rc == 1 and 'from line 13 on' in err and not got['b2']


CHILDREN: Dict[str, Callable[..., Any]] = {
	f.__name__: f for f in (child_minimal, child_plan, child_mutants, child_threads, child_verbs)}

if __name__ == '__main__':
	resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
	print(json.dumps(CHILDREN[sys.argv[1]](*sys.argv[2:])))
