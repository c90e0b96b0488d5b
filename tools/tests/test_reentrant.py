# SPDX-License-Identifier: GPL-2.0
"""Reading consoles from several threads at once (`run --parallel`).

Every thread must get what one thread alone gets, kunit_parser must be left
exactly as it was loaded, and nothing may reach stdout."""

import threading

from conftest import DATA, in_threads
from bklkunit.results import kunit_tool, verdicts
from bklkunit.results.cases import parse_console

THREADS = 4
ROUNDS = 12
PARSER_FUNCTIONS = ('parse_ktap_header', 'parse_test_header', 'parse_test_result',
		    'parse_test', 'parse_run_tests', 'parse_diagnostic', 'extract_tap_lines')


def _consoles():
	return [(f.name, f.read_text().splitlines())
		for f in sorted(DATA.glob('*.log')) if f.name.startswith(('console_', 'real_'))]


def _read(tree, lines):
	suites = parse_console(tree, lines, 'CRASH: stopped')
	verdict = verdicts.judge(tree, [l + '\n' for l in lines])
	return suites, verdict


def test_parse_console_from_several_threads(parser_tree, capsys):
	kp = kunit_tool.parser_module(parser_tree)
	before = {n: getattr(kp, n) for n in PARSER_FUNCTIONS}
	printer = kp.stdout
	printer_output = printer._output
	consoles = _consoles()
	assert len(consoles) >= 10
	alone = {name: _read(parser_tree, lines) for name, lines in consoles}
	assert any(s for s, _ in alone.values())

	wrong, errors = [], []
	start = threading.Barrier(THREADS)

	def work(k):
		try:
			start.wait()
			for i in range(ROUNDS):
				for name, lines in consoles[k % 3::1] + consoles[:k % 3]:
					got = _read(parser_tree, lines)
					if got != alone[name]:
						wrong.append((k, i, name))
		except Exception as e:   # noqa: BLE001 - reported below
			errors.append(repr(e))

	in_threads(work, THREADS)

	assert not errors, errors[:3]
	assert not wrong, f'{len(wrong)} results differ from one thread alone, e.g. {wrong[:3]}'
	after = {n: getattr(kp, n) for n in PARSER_FUNCTIONS}
	assert after == before, [n for n in PARSER_FUNCTIONS if after[n] is not before[n]]
	assert all(f.__qualname__ == n for n, f in after.items())
	assert kp.stdout is printer and printer._output is printer_output
	out, err = capsys.readouterr()
	assert out == '' and err == ''
