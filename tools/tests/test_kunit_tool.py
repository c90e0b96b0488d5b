# SPDX-License-Identifier: GPL-2.0
"""kunit_tool.py: the one adapter to the tree's kunit_tool."""

import re
import shutil
import sys

from conftest import DATA
from bklkunit.results import kunit_tool
from bklkunit.results.cases import parse_console


def test_the_parser_is_a_private_quiet_copy(parser_tree, capsys):
	kp = kunit_tool.parser_module(parser_tree)
	assert 'kunit_parser' not in sys.modules and 'kunit_printer' not in sys.modules
	assert sys.modules[kp.__name__] is kp and kp.__name__ != 'kunit_parser'
	kp.parse_run_tests((DATA / 'console_fail.log').read_text().splitlines())
	assert capsys.readouterr() == ('', '')
	kunit_tool.forget_parsers()
	assert kp.__name__ not in sys.modules


def test_documents_note_headers_results_and_starts(parser_tree):
	lines = (DATA / 'console_pass.log').read_text().splitlines()
	d = kunit_tool.documents(parser_tree, lines)
	[doc] = d.docs
	suite = doc.subtests[0]
	case = suite.subtests[0]
	assert d.marks.header[id(suite)] < d.marks.start[id(case)] < d.marks.result[id(case)][0]
	n, text = d.marks.result[id(case)]
	assert text.strip().startswith('ok 1 ') and case.name in lines[n - 1]
	assert d.diagnostics_between(0, 0) == []


def test_what_kunit_py_prints():
	assert kunit_tool.timeout_seconds("Command 'qemu' timed out after 300 seconds") == 300
	assert kunit_tool.timeout_seconds('Elapsed time: 3.2s') is None
	assert kunit_tool.config_failed((DATA / 'build_config_missing.log').read_text())
	assert not kunit_tool.config_failed((DATA / 'build_compile_error.log').read_text())
	assert kunit_tool.listed_tests('[12:00:00] Starting\nalpha.one\n  beta.two \nnot a test\n') == \
		['alpha.one', 'beta.two']
	assert kunit_tool.refused_symbols((DATA / 'build_config_missing.log').read_text()) == ['CIFS']


RENAMED = {'parse_ktap_header': 'read_version_line', 'parse_test_header': 'read_subtest_line',
	   'parse_test_result': 'read_result_line'}


def _positions(d):
	"""The marks keyed by where each Test is in the documents, not by id()."""
	where = {}

	def walk(t, path):
		where[id(t)] = path
		for i, sub in enumerate(t.subtests):
			walk(sub, path + (i,))
	for k, doc in enumerate(d.docs):
		walk(doc, (k,))
	m = d.marks
	return tuple({where[i]: v for i, v in marks.items()} for marks in (m.header, m.result, m.start))


def test_a_parser_whose_functions_have_other_names_reads_the_same(parser_tree, tmp_path):
	"""Which Test took which line must not hang on kunit_parser's private
	function names (a newer tree may rename them) nor on what their Test
	argument is called: a copy with both renamed gives the same marks and
	the same cases."""
	src = parser_tree / 'tools' / 'testing' / 'kunit'
	dst = tmp_path / 'renamed' / 'tools' / 'testing' / 'kunit'
	dst.mkdir(parents=True)
	text = (src / 'kunit_parser.py').read_text()
	for old, new in RENAMED.items():
		assert f'def {old}(lines: LineStream, test: Test' in text, old
		text = re.sub(rf'\b{old}\b', new, text)
		text = text.replace(f'def {new}(lines: LineStream, test: Test',
				    f'def {new}(lines: LineStream, current: Test')
	for new in RENAMED.values():
		# Its body now says `current` where it said `test`.
		body = text[text.index(f'def {new}('):]
		body = body[:body.index('\ndef ', 1)]
		text = text.replace(body, re.sub(r'\btest\b', 'current', body))
	(dst / 'kunit_parser.py').write_text(text)
	shutil.copyfile(src / 'kunit_printer.py', dst / 'kunit_printer.py')
	renamed = tmp_path / 'renamed'
	kp = kunit_tool.parser_module(renamed)
	assert not any(hasattr(kp, old) for old in RENAMED)
	for f in sorted(DATA.glob('*.log')):
		if not f.name.startswith(('console_', 'real_')):
			continue
		lines = f.read_text().splitlines()
		mine, theirs = (kunit_tool.documents(t, lines) for t in (parser_tree, renamed))
		assert _positions(mine) == _positions(theirs), f.name
		assert parse_console(parser_tree, lines) == parse_console(renamed, lines), f.name


def test_the_marks_of_a_recorded_console(parser_tree):
	"""Header, result and start lines as the pass over the parser's Tests
	places them, on the recorded x86_64 console (line numbers are its own)."""
	lines = (DATA / 'real_x86_64_notime.log').read_text().splitlines()
	d = kunit_tool.documents(parser_tree, lines)
	header, result, start = _positions(d)
	assert header[(0,)] == 5                             # KTAP version 1
	assert header[(0, 0)] == 7 and result[(0, 0)] == (36, 'ok 1 autofs_protocol')
	neg = (0, 0, 0)
	assert header[neg] == 11 and result[neg] == (26, '    ok 1 autofs_test_negotiate')
	assert [result[neg + (i,)][0] for i in range(8)] == [13, 14, 15, 16, 17, 20, 23, 24]
	# A parameter starts at the result before it, over the kernel's own lines.
	assert start[neg + (5,)] == 17 and start[neg + (0,)] == 12
	assert start[(0, 0, 1)] == 26 and result[(0, 0, 1)][0] == 28
	assert start[(0, 1, 0)] == 40                         # the plan of autofs_end_state
	assert start[(0, 1)] == 43 and (0,) not in result    # a document has no result line


MOUSE = '[    1.620897] input: ImExPS/2 Generic Explorer Mouse as /devices/platform/i8042/serio1/input/input3'


def _summary(suites):
	return [(s.name, [(c.name, c.status) for c in s.cases]) for s in suites]


def test_a_line_printed_inside_a_suite_header_is_moved_before_it(parser_tree, monkeypatch):
	"""An asynchronous printk between a nested "KTAP version" line and its
	"# Subtest:" line (as the PS/2 mouse's probe printed in an x86 boot)
	made the 6.12 parser call the suite crashed; read with the line moved
	in front of the header, the console gives what it gives without it."""
	lines = (DATA / 'real_x86_64_time.log').read_text().splitlines()
	at = lines.index('[    1.620893]     KTAP version 1')
	noisy = lines[:at + 1] + [MOUSE] + lines[at + 1:]
	clean = _summary(parse_console(parser_tree, lines))
	assert _summary(parse_console(parser_tree, noisy)) == clean
	d = kunit_tool.documents(parser_tree, noisy)
	# Not dropped: the line went to the parser, with its own line number.
	assert (at + 2, MOUSE[len('[    1.620897] '):]) in d.popped
	# Counted, so a boot can tell why `kunit.py exec` (the parser alone) failed.
	assert d.untangled == 1
	assert kunit_tool.documents(parser_tree, lines).untangled == 0
	# Without the move, the parser misreads it: the test can fail.
	monkeypatch.setattr(kunit_tool, 'untangle_headers', lambda kp, pairs: (list(pairs), 0))
	assert _summary(parse_console(parser_tree, noisy)) != clean


def test_untangle_moves_only_a_few_non_ktap_lines_inside_a_header(parser_tree):
	kp = kunit_tool.parser_module(parser_tree)
	pairs = list(enumerate(['KTAP version 1', '1..1', '    KTAP version 1', 'noise',
				'    # Subtest: s', '    1..1', '    ok 1 c', 'ok 1 s'], 1))
	out, n = kunit_tool.untangle_headers(kp, pairs)
	assert [t for _, t in out][1:5] == ['1..1', 'noise', '    KTAP version 1', '    # Subtest: s']
	assert sorted(out) == pairs and n == 1
	# Already in order, or a top-level header, or too much in between: as given.
	assert kunit_tool.untangle_headers(kp, [p for p in pairs if p[1] != 'noise']) == \
		([p for p in pairs if p[1] != 'noise'], 0)
	top = [(1, 'KTAP version 1'), (2, 'noise'), (3, '1..1')]
	assert kunit_tool.untangle_headers(kp, top) == (top, 0)
	many = pairs[:3] + [(10 + k, f'noise {k}') for k in range(kunit_tool.INTERLEAVED_MAX + 1)] \
		+ pairs[4:]
	assert kunit_tool.untangle_headers(kp, many) == (many, 0)
	# A line that is KTAP (a result) is never moved.
	res = pairs[:3] + [(4, 'ok 2 x')] + pairs[4:]
	assert kunit_tool.untangle_headers(kp, res) == (res, 0)
	two = pairs[:3] + [(10, 'noise a'), (11, 'noise b')] + pairs[4:]
	assert kunit_tool.untangle_headers(kp, two)[1] == 2
