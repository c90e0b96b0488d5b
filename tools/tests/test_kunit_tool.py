# SPDX-License-Identifier: GPL-2.0
"""kunit_tool.py: the one adapter to the tree's kunit_tool."""

import sys

from conftest import DATA
from bklkunit import kunit_tool


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
