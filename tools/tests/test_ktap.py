# SPDX-License-Identifier: GPL-2.0
"""ktap: verdicts from recorded consoles, read by the tree's own kunit_parser."""

import sys
from pathlib import Path

import pytest

from bklkunit.results import kunit_tool, verdicts
from conftest import DATA, copy_parser, read_data


def judge(parser_tree, name, kunit_output=''):
	return verdicts.judge(parser_tree, read_data(name).splitlines(keepends=True), kunit_output)


def test_all_pass(parser_tree):
	v = judge(parser_tree, 'console_pass.log')
	assert v.status == 'PASS', v.reason
	assert v.reason == ''
	# 3 parameters + 4 plain cases + 3 cases; the parameterised case itself
	# is not counted on top of its parameters.
	assert (v.passed, v.failed, v.skipped, v.crashed, v.errors) == (10, 0, 0, 0, 0)
	assert v.failures == []


def test_ktap_field_holds_the_extracted_document(parser_tree):
	v = judge(parser_tree, 'console_pass.log')
	assert v.ktap[0] == 'KTAP version 1'
	assert v.ktap[1] == '1..2'
	# Timestamps are gone, the KTAP indentation is kept.
	assert not any(l.startswith('[') for l in v.ktap)
	assert '    # Subtest: autofs_protocol' in v.ktap
	assert '        # Subtest: autofs_test_negotiate' in v.ktap
	assert '        ok 1 v3 only (min 3, max 3)' in v.ktap
	assert 'ok 2 autofs_end_state' in v.ktap
	# Nothing from before the document, nothing from the end marker on.
	assert not any('Linux version' in l or 'clocksource' in l for l in v.ktap)
	assert not any('System halted' in l for l in v.ktap)


def test_one_failing_case(parser_tree):
	v = judge(parser_tree, 'console_fail.log')
	assert v.status == 'FAIL'
	assert (v.passed, v.failed, v.skipped, v.crashed) == (9, 1, 0, 0)
	assert len(v.failures) == 1
	assert v.failures[0].startswith('autofs_protocol.autofs_test_no_pipe')
	assert 'autofs_end_state' not in ' '.join(v.failures)


def test_a_failing_parameter_is_named_under_its_case(parser_tree):
	v = judge(parser_tree, 'console_param_fail.log')
	assert v.status == 'FAIL'
	assert (v.passed, v.failed) == (9, 1)
	assert len(v.failures) == 1
	# One spelling everywhere: suite.case/param, as baselines, JUnit and HTML rows.
	assert v.failures[0].startswith('autofs_protocol.autofs_test_negotiate/v4 only (min 4, max 4)')


def test_panic_mid_suite_is_a_crash(parser_tree):
	v = judge(parser_tree, 'console_panic.log')
	assert v.status == 'CRASH'
	assert 'NULL pointer' in v.reason or 'Kernel panic' in v.reason or 'Oops' in v.reason
	assert len(v.reason) <= 200
	# What ran before the panic is still counted.
	assert v.passed == 8
	assert v.crashed >= 1


def test_fatal_exception_panic_alone_is_a_crash(parser_tree):
	lines = [l for l in read_data('console_panic.log').splitlines()
		 if 'BUG:' not in l and 'Oops' not in l]
	v = verdicts.judge(parser_tree, lines)
	assert v.status == 'CRASH'
	assert 'Kernel panic - not syncing: Fatal exception' in v.reason


def test_panic_after_a_complete_run_is_still_a_crash(parser_tree):
	lines = read_data('console_pass.log').splitlines()[:-1]
	lines += ['[    0.514200] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000009']
	v = verdicts.judge(parser_tree, lines)
	assert v.status == 'CRASH'
	assert 'Attempted to kill init' in v.reason


def test_vfs_panic_after_a_complete_plan_is_a_normal_end(parser_tree):
	v = judge(parser_tree, 'console_vfs_end.log')
	assert v.status == 'PASS', v.reason
	assert (v.passed, v.failed, v.crashed) == (10, 0, 0)
	# kunit_parser stops extracting at "List of all partitions:".
	assert not any('Kernel panic' in l or 'List of all partitions' in l for l in v.ktap)


def test_no_ktap_at_all_is_a_crash(parser_tree):
	v = judge(parser_tree, 'console_no_ktap.log')
	assert v.status == 'CRASH'
	assert 'KTAP' in v.reason and 'no' in v.reason
	assert v.ktap == []
	assert v.passed == 0


def test_an_empty_console_is_a_crash(parser_tree):
	v = verdicts.judge(parser_tree, [])
	assert v.status == 'CRASH'
	assert 'KTAP' in v.reason


def test_an_incomplete_plan_is_a_crash(parser_tree):
	v = judge(parser_tree, 'console_incomplete.log')
	assert v.status == 'CRASH'
	assert 'incomplete' in v.reason
	assert v.passed == 9
	assert v.crashed >= 1
	assert v.failures                        # the missing case is reported


def test_an_incomplete_top_level_plan_is_a_crash(parser_tree):
	# Declares three suites, runs two complete ones, then goes silent.
	lines = read_data('console_pass.log').replace('] 1..2\n', '] 1..3\n', 1).splitlines()
	lines = [l for l in lines if 'System halted' not in l]
	v = verdicts.judge(parser_tree, lines)
	assert v.status == 'CRASH'
	assert 'incomplete' in v.reason


def test_timeout(parser_tree):
	v = judge(parser_tree, 'console_timeout.log', read_data('kunit_timeout.log'))
	assert v.status == 'TIMEOUT'
	assert '300' in v.reason


def test_timeout_wins_over_a_complete_console(parser_tree):
	out = "Command '['qemu-system-arm', '-M', 'virt']' timed out after 45 seconds\n"
	v = judge(parser_tree, 'console_pass.log', out)
	assert v.status == 'TIMEOUT'
	assert '45' in v.reason


def test_skipped_cases_with_and_without_reason(parser_tree):
	v = judge(parser_tree, 'console_skip.log')
	assert v.status == 'PASS', v.reason
	assert (v.passed, v.failed, v.skipped, v.crashed) == (1, 0, 2, 0)
	assert v.failures == []
	assert '    ok 2 autofs_end_state_smbfs_gone # SKIP CONFIG_CIFS is not enabled' in v.ktap


def test_filter_matching_nothing_is_no_tests(parser_tree):
	# Linux 6.12 (lib/kunit/executor.c) prints "KTAP version 1" and "1..0"
	# when no built-in suite matches kunit.filter_glob.
	v = judge(parser_tree, 'console_no_tests.log')
	assert v.status == 'NO_TESTS', v.reason
	assert v.passed == v.failed == v.crashed == 0


def test_crlf_console(parser_tree):
	lines = [l + '\r\n' for l in read_data('console_fail.log').splitlines()]
	v = verdicts.judge(parser_tree, lines)
	assert v.status == 'FAIL'
	assert (v.passed, v.failed) == (9, 1)


def test_judge_keeps_the_parser_quiet(parser_tree, capsys):
	judge(parser_tree, 'console_fail.log')
	out, err = capsys.readouterr()
	assert out == '' and err == ''


def test_parser_is_loaded_from_the_given_tree(parser_tree, tmp_path):
	mod = kunit_tool.parser_module(parser_tree)
	assert Path(mod.__file__).parent == parser_tree / 'tools/testing/kunit'
	assert kunit_tool.parser_module(parser_tree) is mod            # cached
	other = tmp_path / 'other-tree'
	copy_parser(parser_tree, other)
	mod2 = kunit_tool.parser_module(other)
	assert Path(mod2.__file__).parent == other / 'tools/testing/kunit'
	assert str(parser_tree / 'tools/testing/kunit') not in sys.path
	assert judge(other, 'console_pass.log').status == 'PASS'
	assert judge(parser_tree, 'console_pass.log').status == 'PASS'
	assert not list((other / 'tools/testing/kunit').glob('__pycache__'))


def test_a_tree_without_kunit_parser(tmp_path):
	with pytest.raises(FileNotFoundError, match='kunit_parser.py'):
		kunit_tool.parser_module(tmp_path)


def test_a_tree_without_kunit_parser_does_not_break_the_loaded_one(parser_tree, tmp_path):
	assert judge(parser_tree, 'console_pass.log').status == 'PASS'
	with pytest.raises(FileNotFoundError):
		kunit_tool.parser_module(tmp_path / 'not-a-kernel')
	assert judge(parser_tree, 'console_pass.log').status == 'PASS'


def test_data_files_look_like_a_printk_console():
	for f in DATA.glob('console_*.log'):
		lines = f.read_text().splitlines()
		assert lines, f
		assert all(l.startswith('[') and l[13:14] == ']' for l in lines), f
