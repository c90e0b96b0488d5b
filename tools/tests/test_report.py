# SPDX-License-Identifier: GPL-2.0
"""report: JUnit XML, KCIDB JSON and the HTML matrix from recorded consoles,
read by the tree's own kunit_parser (a copy, see conftest.parser_tree)."""

import hashlib
import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from bklkunit import cli
from bklkunit.base import deps, paths
from bklkunit.base.errors import UserError
from bklkunit.results import export, kunit_tool, model, rundir, verdicts
from bklkunit.results.cases import parse_console
from bklkunit.source import tree
from conftest import read_data

# The KCIDB schema: $BKL_KUNIT_KCIDB_SCHEMA (a file), else shared/ beside
# the repository (where CI has it).  Without either the KCIDB validation
# tests skip, saying how to enable them.
SCHEMA_ENV = 'BKL_KUNIT_KCIDB_SCHEMA'
SCHEMA_BESIDE = Path('shared') / 'kcidb' / 'kcidb-v5.3.schema.json'
CHROMIUM = Path('/usr/bin/chromium')
SERIES_HASH = 'ab' * 32
ENV = {a: {'compiler': f'{a}-gcc (Debian 12.2.0-14) 12.2.0',
	   'qemu': f'QEMU emulator version 7.2.0 ({a})'}
       for a in ('x86_64', 'i386', 'arm', 'arm64', 'um')}


def lines_of(name):
	return read_data(name).splitlines()


def parse(parser_tree, name_or_lines, stopped=''):
	lines = lines_of(name_or_lines) if isinstance(name_or_lines, str) else name_or_lines
	return parse_console(parser_tree, lines, stopped)


def cases(suites):
	return {c.row: c for s in suites for c in s.cases}


def without_timestamps(lines):
	return [re.sub(r'^\[[^\]]*\] ', '', l) for l in lines]


# A console that dies inside a parameterised case: two parameters reported,
# then an Oops while the third runs.
def param_crash_lines():
	lines = lines_of('console_pass.log')
	cut = next(i for i, l in enumerate(lines) if 'ok 2 v4 only' in l) + 1
	return lines[:cut] + ['[    0.511350] BUG: kernel NULL pointer dereference, address: 0000000000000010',
			      '[    0.511351] Kernel panic - not syncing: Fatal exception']


# ------------------------------------------------------------ parsing


def test_cases_parameters_and_durations(parser_tree):
	suites = parse(parser_tree, 'console_pass.log')
	assert [s.name for s in suites] == ['autofs_protocol', 'autofs_end_state']
	c = cases(suites)
	assert list(c)[:4] == [
		'autofs_protocol.autofs_test_negotiate/v3 only (min 3, max 3)',
		'autofs_protocol.autofs_test_negotiate/v4 only (min 4, max 4)',
		'autofs_protocol.autofs_test_negotiate/v3 to v7 picks v5 (min 3, max 7)',
		'autofs_protocol.autofs_test_read_end_refused']
	assert len(c) == 10 and all(x.status == model.PASS for x in c.values())
	p = c['autofs_protocol.autofs_test_negotiate/v4 only (min 4, max 4)']
	assert (p.suite, p.name, p.params, p.label) == (
		'autofs_protocol', 'autofs_test_negotiate', ('v4 only (min 4, max 4)',),
		'autofs_test_negotiate/v4 only (min 4, max 4)')
	# First parameter: from "# Subtest: autofs_test_negotiate" (0.511000) to its ok.
	assert c['autofs_protocol.autofs_test_negotiate/v3 only (min 3, max 3)'].duration == 0.0002
	# A plain case: from the previous result line (0.511500) to its own (0.512000).
	assert c['autofs_protocol.autofs_test_read_end_refused'].duration == 0.0005
	assert c['autofs_protocol.autofs_test_non_pipe_refused'].duration == 0.000345
	# The first case of a suite starts at its plan line.
	assert c['autofs_end_state.autofs_end_state_bkl_gone'].duration == 0.0001
	assert suites[0].duration == 0.0025                  # header to "ok 1 autofs_protocol"


def test_no_timestamps_no_durations(parser_tree):
	suites = parse(parser_tree, without_timestamps(lines_of('console_pass.log')))
	c = cases(suites)
	assert len(c) == 10 and all(x.status == model.PASS for x in c.values())
	assert all(x.duration is None for x in c.values())
	assert all(s.duration is None for s in suites)


def test_a_real_console_without_timestamps(parser_tree):
	# Recorded from an x86_64 run: printk.time off, stray kernel messages
	# between the KTAP lines, eight parameters.
	c = cases(parse(parser_tree, 'real_x86_64_notime.log'))
	assert len(c) == 15
	assert all(x.status == model.PASS and x.duration is None for x in c.values())
	assert 'autofs_protocol.autofs_test_negotiate/inverted v5 to v3 picks v3 (min 5, max 3)' in c


def test_failure_keeps_the_diagnostic_lines(parser_tree):
	c = cases(parse(parser_tree, 'console_fail.log'))
	f = c['autofs_protocol.autofs_test_no_pipe']
	assert f.status == model.FAIL
	assert f.diagnostics == [
		'# autofs_test_no_pipe: EXPECTATION FAILED at fs/autofs/autofs_kunit.c:301',
		'Expected err == -EBADF, but',
		'    err == 0 (0x0)',
		'    -EBADF == -9 (0xfffffffffffffff7)']
	assert f.summary() == '# autofs_test_no_pipe: EXPECTATION FAILED at fs/autofs/autofs_kunit.c:301'
	assert sum(x.status == model.FAIL for x in c.values()) == 1


def test_a_failing_parameter(parser_tree):
	c = cases(parse(parser_tree, 'console_param_fail.log'))
	bad = [x for x in c.values() if x.status != model.PASS]
	assert [x.row for x in bad] == ['autofs_protocol.autofs_test_negotiate/v4 only (min 4, max 4)']
	assert bad[0].diagnostics[0].startswith('# autofs_test_negotiate: EXPECTATION FAILED')
	# The parameterised case itself is not a row of its own.
	assert 'autofs_protocol.autofs_test_negotiate' not in c


def test_the_first_parameter_keeps_its_diagnostics(parser_tree):
	# kunit_parser hands what the first parameter printed (after "# Subtest:
	# <case>", before "not ok 1") to the case; it is the parameter's.
	c = cases(parse(parser_tree, 'console_param_first_fail.log'))
	neg = 'autofs_protocol.autofs_test_negotiate'
	first, second = c[neg + '/v3 only (min 3, max 3)'], c[neg + '/v4 only (min 4, max 4)']
	assert (first.status, second.status) == (model.FAIL, model.FAIL)
	assert first.diagnostics == [
		'# autofs_test_negotiate: EXPECTATION FAILED at fs/autofs/autofs_kunit.c:250',
		'Expected sbi->sub_version == c->sub_version, but',
		'    sbi->sub_version == 0 (0x0)',
		'    c->sub_version == 3 (0x3)']
	assert second.diagnostics[-1] == '    c->sub_version == 4 (0x4)'
	assert c[neg + '/v3 to v7 picks v5 (min 3, max 7)'].diagnostics == []
	xml = ET.tostring(export.junit.junit_element(
		[model.ArchResult('x86_64', 'FAIL', built=True,
				 suites=parse(parser_tree, 'console_param_first_fail.log'))], {}),
		encoding='unicode')
	failures = [f for f in ET.fromstring(xml).iter('failure')]
	assert len(failures) == 2 and all('EXPECTATION FAILED' in (f.text or '') for f in failures)


def test_skips_with_and_without_a_reason(parser_tree):
	c = cases(parse(parser_tree, 'console_skip.log'))
	assert c['autofs_end_state.autofs_end_state_bkl_gone'].status == model.PASS
	s1 = c['autofs_end_state.autofs_end_state_smbfs_gone']
	s2 = c['autofs_end_state.autofs_end_state_autofs3_gone']
	assert (s1.status, s1.message) == (model.SKIP, 'CONFIG_CIFS is not enabled')
	assert (s2.status, s2.message) == (model.SKIP, '')


def test_crash_mid_suite(parser_tree):
	suites = parse(parser_tree, 'console_panic.log', 'CRASH: BUG: kernel NULL pointer dereference')
	c = cases(suites)
	assert sum(x.status == model.PASS for x in c.values()) == 8
	# The second case of autofs_end_state was running: its name was never
	# printed, so it is known by its position only.
	run = c['autofs_end_state.case2']
	assert (run.status, run.named, run.duration) == (model.ERROR, False, None)
	assert 'CRASH: BUG: kernel NULL pointer' in run.message
	assert run.diagnostics[0] == 'BUG: kernel NULL pointer dereference, address: 0000000000000008'
	assert 'Kernel panic - not syncing: Fatal exception' in run.diagnostics
	miss = c['autofs_end_state.case3']
	assert (miss.status, miss.named) == (model.MISS, False)
	assert '1..3' in miss.message
	assert suites[1].duration is None                    # no result line for the suite


def test_hang_names_the_running_case_from_its_message(parser_tree):
	suites = parse(parser_tree, 'console_timeout.log', 'TIMEOUT: guest killed after 300 s')
	c = cases(suites)
	run = c['autofs_protocol.autofs_test_non_pipe_refused']
	assert (run.status, run.named) == (model.ERROR, True)
	assert run.diagnostics == ['# autofs_test_non_pipe_refused: waiting for the daemon']
	assert 'TIMEOUT' in run.message
	assert [c[k].status for k in ('autofs_protocol.case4', 'autofs_protocol.case5')] == [
		model.MISS, model.MISS]
	# The top-level plan announced two suites; the second never started.
	assert suites[-1].name == 'suite_2'
	assert [(x.row, x.status, x.named) for x in suites[-1].cases] == [
		('suite_2', model.MISS, False)]


def test_crash_inside_a_parameterised_case(parser_tree):
	suites = parse(parser_tree, param_crash_lines(), 'CRASH: BUG')
	c = cases(suites)
	neg = 'autofs_protocol.autofs_test_negotiate'
	assert c[neg + '/v3 only (min 3, max 3)'].status == model.PASS
	assert c[neg + '/v4 only (min 4, max 4)'].status == model.PASS
	# The case that was running (in its third parameter) is the ERROR.
	assert c[neg].status == model.ERROR
	assert 'after 2 parameter(s)' in c[neg].message
	assert any('BUG: kernel NULL pointer' in l for l in c[neg].diagnostics)
	# Cases 2..5 were never reached: MISS, not ERROR.
	assert [c[f'autofs_protocol.case{n}'].status for n in range(2, 6)] == [model.MISS] * 4
	assert sum(x.status == model.ERROR for x in c.values()) == 1
	assert [x.row for x in suites[-1].cases] == ['suite_2']


def test_incomplete_suite_blames_the_first_unreported_case(parser_tree):
	c = cases(parse(parser_tree, 'console_incomplete.log', 'CRASH: incomplete KTAP'))
	assert c['autofs_end_state.case3'].status == model.ERROR
	assert c['autofs_end_state.autofs_end_state_smbfs_gone'].status == model.PASS


def test_suite_and_case_init_failures(parser_tree):
	suites = parse(parser_tree, 'console_init_fail.log')
	# suite_init failed: Linux prints no plan and no case, only the suite's
	# "not ok": one suite-level row.
	assert [(x.row, x.name, x.status) for x in suites[0].cases] == [
		('autofs_protocol', '', model.FAIL)]
	assert suites[0].cases[0].summary() == '# autofs_protocol:     # failed to initialize (-12)'
	assert suites[0].cases[0].label == 'autofs_protocol'
	# suite->init failed for two cases: each is not ok with its message.
	c = cases(suites[1:])
	bkl = c['autofs_end_state.autofs_end_state_bkl_gone']
	assert (bkl.status, bkl.diagnostics) == (
		model.FAIL, ['# autofs_end_state_bkl_gone: failed to initialize: -12'])
	assert c['autofs_end_state.autofs_end_state_smbfs_gone'].status == model.FAIL
	assert c['autofs_end_state.autofs_end_state_autofs3_gone'].status == model.SKIP


def test_several_ktap_documents(parser_tree):
	# Built-in suites, then a module's suites in a second document.
	suites = parse(parser_tree, 'console_two_docs.log')
	assert [s.name for s in suites] == ['autofs_end_state', 'autofs_protocol']
	c = cases(suites)
	assert c['autofs_protocol.autofs_test_no_pipe'].status == model.FAIL
	assert c['autofs_protocol.autofs_test_no_pipe'].duration == 0.001
	assert c['autofs_end_state.autofs_end_state_autofs3_gone'].status == model.PASS


def test_no_ktap_and_empty_console(parser_tree):
	assert parse(parser_tree, 'console_no_ktap.log') == []
	assert parse(parser_tree, []) == []
	assert all(not s.cases for s in parse(parser_tree, 'console_no_tests.log'))


def test_the_parser_is_left_as_it_was_and_quiet(parser_tree, capsys):
	kp = kunit_tool.parser_module(parser_tree)
	before = (kp.parse_test_result, kp.parse_test_header, kp.parse_ktap_header)
	parse(parser_tree, 'console_panic.log')
	assert (kp.parse_test_result, kp.parse_test_header, kp.parse_ktap_header) == before
	out, err = capsys.readouterr()
	assert out == '' and err == ''
	# judge still works on the same module afterwards.
	assert verdicts.judge(parser_tree, lines_of('console_fail.log')).status == 'FAIL'


def test_crlf_console(parser_tree):
	c = cases(parse(parser_tree, [l + '\r\n' for l in lines_of('console_fail.log')]))
	assert c['autofs_protocol.autofs_test_no_pipe'].status == model.FAIL
	assert c['autofs_protocol.autofs_test_read_end_refused'].duration == 0.0005


# ------------------------------------------------- a results directory to export

ARCH_SETUPS = {
	# arch: (status, reason, console, build log)
	'x86_64': ('PASS', '', 'console_pass.log', 'build_ok.log'),
	'i386': ('FAIL', '', 'console_fail.log', 'build_ok.log'),
	'arm': ('CRASH', 'BUG: kernel NULL pointer dereference, address: 0000000000000008',
		'console_panic.log', 'build_ok.log'),
	'arm64': ('BUILD_FAILED', 'kunit.py build exited 1; see arm64/build.log:\n'
		  'make: *** [Makefile:224: __sub-make] Error 2', None, 'build_compile_error.log'),
}


def make_rdir(root: Path, setups=None, **summary_extra) -> Path:
	"""A results directory as runner.main writes it."""
	setups = ARCH_SETUPS if setups is None else setups
	rdir = root / 'results' / '20261203-080000'
	rdir.mkdir(parents=True)
	arches = []
	for arch, (status, reason, console, build) in setups.items():
		adir = rdir / arch
		adir.mkdir()
		built = status not in ('BUILD_FAILED', 'CONFIG_FAILED')
		entry = {'arch': arch, 'status': status, 'reason': reason, 'passed': 0, 'failed': 0,
			 'skipped': 0, 'crashed': 0, 'build_seconds': 21.5 if built else 3.25,
			 'run_seconds': 2.5 if built else 0.0, 'failures': []}
		(adir / 'build.log').write_text(
			f'$ /usr/bin/python3 linux/tools/testing/kunit/kunit.py build --arch={arch}\n'
			+ (read_data(build) if build else ''))
		if built:
			text = read_data(console) if console and console.endswith('.log') else (console or '')
			(adir / 'console.log').write_text(text)
			(adir / 'kunit.log').write_text('[07:01:02] Starting KUnit Kernel (1/1)...\n')
		arches.append(entry)
		(adir / 'verdict.json').write_text(json.dumps(entry))
	summary = {'tree': '/nonexistent/linux', 'kernel_version': '6.12.118',
		   'debian_version': '6.12.118-1~deb12u1', 'series': 'applied',
		   'series_hash': SERIES_HASH, 'head': 'c0ffee' * 6 + 'c0ff',
		   'arches': arches, 'results_dir': str(rdir), 'filter_glob': ''}
	summary.update(summary_extra)
	(rdir / 'summary.json').write_text(json.dumps(summary, indent=1))
	return rdir


@pytest.fixture
def rdir(tmp_path):
	return make_rdir(tmp_path)


@pytest.fixture
def written(rdir, parser_tree):
	return export.write_reports(rdir, parser_tree, environment=ENV, probe=False)


def listing(root: Path):
	return sorted(str(p.relative_to(root)) for p in root.rglob('*') if p.is_file())


def test_write_reports_writes_what_it_returns(rdir, parser_tree, tmp_path):
	before = {p: p.read_bytes() for p in rdir.rglob('*') if p.is_file()}
	out = export.write_reports(rdir, parser_tree, environment=ENV, probe=False)
	assert set(out) == {'junit.xml', 'kcidb.json', 'index.html', 'x86_64/junit.xml',
			    'i386/junit.xml', 'arm/junit.xml', 'arm64/junit.xml'}
	for rel, p in out.items():
		assert p == rdir / rel and p.is_file() and p.stat().st_size > 0
	# Nothing else written, nothing read changed.
	new = set(listing(rdir)) - {str(p.relative_to(rdir)) for p in before}
	assert new == set(out)
	assert all(p.read_bytes() == b for p, b in before.items())
	assert not (tmp_path / 'default-cache').exists()


def test_missing_summary_is_a_user_error(tmp_path, parser_tree):
	with pytest.raises(UserError, match='summary.json'):
		export.write_reports(tmp_path, parser_tree, probe=False)


# ------------------------------------------------------------------- JUnit


def counts_of(ts):
	tcs = ts.findall('testcase')
	return {'tests': len(tcs),
		'failures': sum(tc.find('failure') is not None for tc in tcs),
		'errors': sum(tc.find('error') is not None for tc in tcs),
		'skipped': sum(tc.find('skipped') is not None for tc in tcs)}


def check_counts(root):
	totals = dict.fromkeys(('tests', 'failures', 'errors', 'skipped'), 0)
	for ts in root.findall('testsuite'):
		n = counts_of(ts)
		assert {k: int(ts.get(k)) for k in n} == n, ts.get('name')
		for k in totals:
			totals[k] += n[k]
	assert {k: int(root.get(k)) for k in totals if k != 'skipped'} == \
		{k: v for k, v in totals.items() if k != 'skipped'}
	assert root.get('skipped') is None        # not a <testsuites> attribute in JUnit's schema
	return totals


def test_junit_combined(written):
	root = ET.parse(written['junit.xml']).getroot()
	assert root.tag == 'testsuites'
	names = [ts.get('name') for ts in root.findall('testsuite')]
	assert names == ['x86_64.autofs_protocol', 'x86_64.autofs_end_state',
			 'i386.autofs_protocol', 'i386.autofs_end_state',
			 'arm.autofs_protocol', 'arm.autofs_end_state', 'arm64']
	totals = check_counts(root)
	# 10 + 10 + (8 pass, 1 running, 1 never reached) + 1 build
	assert totals == {'tests': 31, 'failures': 1, 'errors': 2, 'skipped': 1}
	for ts in root.findall('testsuite'):
		for tc in ts.findall('testcase'):
			assert tc.get('classname') == ts.get('name')


def test_junit_cases_and_times(written):
	root = ET.parse(written['x86_64/junit.xml']).getroot()
	ts = root.find("testsuite[@name='x86_64.autofs_protocol']")
	tcs = {tc.get('name'): tc for tc in ts.findall('testcase')}
	assert 'autofs_test_negotiate/v3 only (min 3, max 3)' in tcs
	assert tcs['autofs_test_read_end_refused'].get('time') == '0.0005'
	assert ts.get('time') == '0.0025'
	props = {p.get('name'): p.get('value') for p in ts.iter('property')}
	assert props['arch'] == 'x86_64' and props['compiler'] == ENV['x86_64']['compiler']
	assert [t.get('name') for t in root.findall('testsuite')] == [
		'x86_64.autofs_protocol', 'x86_64.autofs_end_state']
	check_counts(root)


def test_junit_failure(written):
	root = ET.parse(written['i386/junit.xml']).getroot()
	tc = root.find(".//testcase[@name='autofs_test_no_pipe']")
	f = tc.find('failure')
	assert f.get('message') == '# autofs_test_no_pipe: EXPECTATION FAILED at fs/autofs/autofs_kunit.c:301'
	assert f.text.splitlines() == [
		'# autofs_test_no_pipe: EXPECTATION FAILED at fs/autofs/autofs_kunit.c:301',
		'Expected err == -EBADF, but', '    err == 0 (0x0)',
		'    -EBADF == -9 (0xfffffffffffffff7)']
	assert check_counts(root) == {'tests': 10, 'failures': 1, 'errors': 0, 'skipped': 0}


def test_junit_crash(written):
	root = ET.parse(written['arm/junit.xml']).getroot()
	ts = root.find("testsuite[@name='arm.autofs_end_state']")
	tcs = {tc.get('name'): tc for tc in ts.findall('testcase')}
	assert list(tcs) == ['autofs_end_state_bkl_gone', 'case2', 'case3']
	err = tcs['case2'].find('error')
	assert 'running when the guest stopped' in err.get('message')
	assert 'BUG: kernel NULL pointer' in err.get('message')
	assert 'Kernel panic - not syncing: Fatal exception' in err.text
	assert tcs['case2'].get('time') is None
	assert tcs['case3'].find('skipped').get('message').startswith('not run: never reached')
	assert ts.get('time') is None
	assert check_counts(root) == {'tests': 10, 'failures': 0, 'errors': 1, 'skipped': 1}


def test_junit_build_failure(written):
	root = ET.parse(written['arm64/junit.xml']).getroot()
	[ts] = root.findall('testsuite')
	assert ts.get('name') == 'arm64'
	[tc] = ts.findall('testcase')
	assert (tc.get('classname'), tc.get('name')) == ('arm64', 'build')
	err = tc.find('error')
	assert err.get('type') == 'BUILD_FAILED'
	assert err.get('message').startswith('BUILD_FAILED: kunit.py build exited 1')
	assert "implicit declaration of function 'autofs_fill_super'" in err.text
	assert check_counts(root) == {'tests': 1, 'failures': 0, 'errors': 1, 'skipped': 0}


def test_junit_skips_init_failures_and_two_documents(tmp_path, parser_tree):
	rdir = make_rdir(tmp_path, {
		'x86_64': ('PASS', '', 'console_skip.log', 'build_ok.log'),
		'i386': ('FAIL', '', 'console_init_fail.log', 'build_ok.log'),
		'arm': ('PASS', '', 'console_two_docs.log', 'build_ok.log')})
	out = export.write_reports(rdir, parser_tree, probe=False)
	x = ET.parse(out['x86_64/junit.xml']).getroot()
	sk = {tc.get('name'): tc.find('skipped') for tc in x.iter('testcase')}
	assert sk['autofs_end_state_bkl_gone'] is None
	assert sk['autofs_end_state_smbfs_gone'].get('message') == 'CONFIG_CIFS is not enabled'
	assert sk['autofs_end_state_autofs3_gone'].get('message') == ''
	i = ET.parse(out['i386/junit.xml']).getroot()
	init = i.find("testsuite[@name='i386.autofs_protocol']/testcase")
	assert init.get('name') == 'autofs_protocol'
	assert 'failed to initialize (-12)' in init.find('failure').get('message')
	assert check_counts(i) == {'tests': 4, 'failures': 3, 'errors': 0, 'skipped': 1}
	a = ET.parse(out['arm/junit.xml']).getroot()
	assert [ts.get('name') for ts in a.findall('testsuite')] == [
		'arm.autofs_end_state', 'arm.autofs_protocol']
	assert check_counts(a) == {'tests': 4, 'failures': 1, 'errors': 0, 'skipped': 0}
	check_counts(ET.parse(out['junit.xml']).getroot())


def test_junit_arch_trouble_without_a_case_to_blame(tmp_path, parser_tree):
	rdir = make_rdir(tmp_path, {
		'x86_64': ('CRASH', 'the guest printed no KTAP output', 'console_no_ktap.log',
			   'build_ok.log'),
		'i386': ('TIMEOUT', 'guest killed after 300 s without finishing', 'console_pass.log',
			 'build_ok.log'),
		'arm': ('CONFIG_FAILED', 'kunit.py build exited 1', None, 'build_config_missing.log'),
		'arm64': ('NO_TESTS', 'no test ran (filter matched nothing?)', 'console_no_tests.log',
			  'build_ok.log')})
	root = ET.parse(export.write_reports(rdir, parser_tree, probe=False)['junit.xml']).getroot()
	runs = {ts.get('name'): ts for ts in root.findall('testsuite') if '.' not in ts.get('name')}
	assert set(runs) == {'x86_64', 'i386', 'arm', 'arm64'}
	assert runs['x86_64'].find('testcase').get('name') == 'run'
	assert runs['x86_64'].find('testcase/error').get('message') == (
		'CRASH: the guest printed no KTAP output')
	assert runs['i386'].find('testcase/error').get('type') == 'TIMEOUT'
	arm = runs['arm'].find('testcase')
	assert arm.get('name') == 'build'
	assert 'Missing: CONFIG_CIFS=y' in arm.find('error').text
	assert runs['arm64'].find('testcase/error').get('type') == 'NO_TESTS'
	check_counts(root)


def test_junit_survives_control_characters(tmp_path, parser_tree, schema):
	text = read_data('console_fail.log').replace(
		'Expected err == -EBADF, but', 'Expected \x1b[31merr\x1b[0m == -EBADF\x00, but')
	rdir = make_rdir(tmp_path, {'x86_64': ('FAIL', '', text, 'build_ok.log')})
	out = export.write_reports(rdir, parser_tree, probe=False)
	f = ET.parse(out['junit.xml']).getroot().find('.//failure')
	assert 'Expected \ufffd[31merr\ufffd[0m == -EBADF\ufffd, but' in f.text
	doc = json.loads(out['kcidb.json'].read_text())
	validate(doc, schema)
	assert '\\u0000' not in out['kcidb.json'].read_text()
	assert 'Expected \ufffd[31merr' not in out['kcidb.json'].read_text()   # JSON keeps ESC


# ------------------------------------------------------------------- KCIDB


# RFC 3339 (section 5.6) date-time, as the schema's "format": "date-time"
# means it: jsonschema checks that format only with a package Debian does
# not install with it (rfc3339-validator), so the tests check it here.
RFC3339 = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)')
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks('date-time', raises=ValueError)
def _date_time(value) -> bool:
	if not isinstance(value, str):
		return True
	if not RFC3339.fullmatch(value):
		raise ValueError(f'not an RFC 3339 date-time: {value!r}')
	datetime.fromisoformat(value.replace('Z', '+00:00'))     # a real date and time
	return True


def validate(doc, schema) -> None:
	"""A KCIDB document against the schema, date-time formats included."""
	jsonschema.validate(doc, schema, format_checker=FORMATS)


def schema_candidates(environ) -> list:
	"""Where to look for the KCIDB v5.3 schema, in order."""
	named = [Path(environ[SCHEMA_ENV])] if environ.get(SCHEMA_ENV) else []
	return named + [paths.REPO.parent / SCHEMA_BESIDE]


def load_schema():
	places = schema_candidates(os.environ)
	found = [p for p in places if p.is_file()]
	if not found:
		pytest.skip(f'the KCIDB v5.3 schema is in none of {", ".join(map(str, places))}: put '
			    f'it at ../{SCHEMA_BESIDE} beside the repository, or set {SCHEMA_ENV} '
			    'to the schema file (kcidb-v5.3.schema.json from the kcidb-io project)')
	return json.loads(found[0].read_text())


@pytest.fixture(scope='module')
def schema():
	return load_schema()


def kcidb(written):
	return json.loads(written['kcidb.json'].read_text())


def test_kcidb_validates(written, schema):
	doc = kcidb(written)
	validate(doc, schema)
	assert doc['version'] == {'major': 5, 'minor': 3}
	ids = [o['id'] for k in ('checkouts', 'builds', 'tests') for o in doc[k]]
	assert all(i.startswith('bkl_kunit:') for i in ids)
	assert len(ids) == len(set(ids))
	text = written['kcidb.json'].read_text()
	assert 'null' not in re.sub(r'"[^"]*"', '""', text)


def test_kcidb_checkout(written):
	[co] = kcidb(written)['checkouts']
	# Named after the tree (HEAD + series hash), not the run: builds are the run's.
	assert co['id'] == f'bkl_kunit:{"c0ffee" * 6 + "c0ff"}+{SERIES_HASH[:16]}'
	assert all(b['id'].startswith('bkl_kunit:') and not b['id'].startswith(co['id'])
		   for b in kcidb(written)['builds'])
	assert co['origin'] == 'bkl_kunit'
	assert co['tree_name'] == 'debian-linux-source-6.12'
	assert co['valid'] is True
	assert co['misc']['debian_version'] == '6.12.118-1~deb12u1'
	assert co['misc']['series_hash'] == SERIES_HASH
	# The series hash of the run is not KCIDB's patchset hash, and the
	# patches it hashed are not known here: no patchset_hash.
	assert 'patchset_hash' not in co and 'patchset_files' not in co


def test_kcidb_builds(written):
	doc = kcidb(written)
	b = {x['architecture']: x for x in doc['builds']}
	assert list(b) == ['x86_64', 'i386', 'arm', 'arm64']
	assert all(x['checkout_id'] == doc['checkouts'][0]['id'] for x in b.values())
	assert all(x['config_name'] == 'kunit-default' for x in b.values())
	assert b['x86_64']['status'] == 'PASS' and b['x86_64']['duration'] == 21.5
	assert b['x86_64']['compiler'] == ENV['x86_64']['compiler']
	assert 'log_excerpt' not in b['x86_64']
	assert b['arm64']['status'] == 'FAIL' and b['arm64']['duration'] == 3.25
	assert "implicit declaration of function 'autofs_fill_super'" in b['arm64']['log_excerpt']
	assert b['arm64']['command'].endswith('kunit.py build --arch=arm64')


def test_kcidb_tests(written):
	doc = kcidb(written)
	build = {b['architecture']: b['id'] for b in doc['builds']}
	t = {(x['build_id'], x['path']): x for x in doc['tests']}
	assert not any(x['build_id'] == build['arm64'] for x in doc['tests'])
	x86 = {p: x for (b, p), x in t.items() if b == build['x86_64']}
	assert len(x86) == 11                                 # 10 cases + "kunit"
	assert x86['kunit']['status'] == 'PASS' and x86['kunit']['duration'] == 2.5
	p = x86['kunit.autofs_protocol.autofs_test_negotiate.v3_only__min_3__max_3_']
	assert p['status'] == 'PASS' and p['duration'] == 0.0002
	assert p['comment'] == 'autofs_protocol.autofs_test_negotiate/v3 only (min 3, max 3)'
	assert p['misc']['params'] == ['v3 only (min 3, max 3)']
	assert p['environment']['misc']['arch'] == 'x86_64'
	assert p['environment']['comment'] == ENV['x86_64']['qemu']
	i386 = {p: x for (b, p), x in t.items() if b == build['i386']}
	f = i386['kunit.autofs_protocol.autofs_test_no_pipe']
	assert f['status'] == 'FAIL' and f['log_excerpt'].startswith('# autofs_test_no_pipe: EXPECTATION')
	assert i386['kunit']['status'] == 'FAIL'
	arm = {p: x for (b, p), x in t.items() if b == build['arm']}
	assert arm['kunit']['status'] == 'ERROR'
	assert arm['kunit.autofs_end_state.case2']['status'] == 'ERROR'
	assert 'Kernel panic' in arm['kunit.autofs_end_state.case2']['log_excerpt']
	assert arm['kunit.autofs_end_state.case3']['status'] == 'MISS'
	assert arm['kunit.autofs_end_state.case3']['misc']['name_known'] is False


def test_kcidb_hang_and_never_started_suite(tmp_path, parser_tree, schema):
	rdir = make_rdir(tmp_path, {'um': ('TIMEOUT', 'guest killed after 300 s without finishing',
					   'console_timeout.log', 'build_ok.log')})
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	validate(doc, schema)
	assert doc['builds'][0]['architecture'] == 'um'
	st = {x['path']: x['status'] for x in doc['tests']}
	assert st['kunit'] == 'ERROR'
	assert st['kunit.autofs_protocol.autofs_test_non_pipe_refused'] == 'ERROR'
	assert st['kunit.autofs_protocol.case4'] == st['kunit.autofs_protocol.case5'] == 'MISS'
	assert st['kunit.suite_2'] == 'MISS'


@pytest.mark.parametrize('series,built,valid', [
	('applied', True, True), ('applied + local work', True, True),
	('not applied', True, False), ('partly applied', True, False), ('applied', False, False)])
def test_kcidb_checkout_valid(tmp_path, parser_tree, series, built, valid):
	setup = (('PASS', '', 'console_pass.log', 'build_ok.log') if built else
		 ('BUILD_FAILED', 'kunit.py build exited 2', None, 'build_compile_error.log'))
	rdir = make_rdir(tmp_path, {'x86_64': setup}, series=series)
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	assert doc['checkouts'][0]['valid'] is valid


def write_patches(d: Path):
	d.mkdir()
	(d / '0001-a.patch').write_text('From: a\nSubject: [PATCH 1/2] a\n---\n')
	(d / '0002-b.patch').write_text('From: b\nSubject: [PATCH 2/2] b\n---\n')
	(d / 'series').write_text('# comment\n0001-a.patch\n0002-b.patch\n')
	return tree.read_series(d)


def test_kcidb_patchset_hash_when_the_series_is_the_one_run(tmp_path, parser_tree, schema):
	patches = write_patches(tmp_path / 'patches')
	rdir = make_rdir(tmp_path, {'x86_64': ARCH_SETUPS['x86_64']},
			 series_hash=tree.series_hash(patches))
	out = export.write_reports(rdir, parser_tree, probe=False, patch_dir=tmp_path / 'patches')
	doc = json.loads(out['kcidb.json'].read_text())
	validate(doc, schema)
	co = doc['checkouts'][0]
	# sha256sum *.patch | cut -c-64 | sha256sum
	want = hashlib.sha256(''.join(hashlib.sha256(p.read_bytes()).hexdigest() + '\n'
				      for p in patches).encode()).hexdigest()
	assert co['patchset_hash'] == want
	assert co['misc']['patches'] == ['0001-a.patch', '0002-b.patch']
	# Patches cannot be listed as patchset_files: KCIDB wants a URL for each.
	assert 'patchset_files' not in co
	# With local work on top the tree is not the series: no hash.
	rdir2 = make_rdir(tmp_path / 'b', {'x86_64': ARCH_SETUPS['x86_64']},
			  series_hash=tree.series_hash(patches), series='applied + local work')
	out = export.write_reports(rdir2, parser_tree, probe=False, patch_dir=tmp_path / 'patches')
	assert 'patchset_hash' not in json.loads(out['kcidb.json'].read_text())['checkouts'][0]


def test_kcidb_origin_and_long_logs(tmp_path, parser_tree, schema):
	rdir = make_rdir(tmp_path, {'arm64': ARCH_SETUPS['arm64']})
	(rdir / 'arm64' / 'build.log').write_text('x' * 100 + '\n' + ('y' * 1000 + '\n') * 40)
	out = export.write_reports(rdir, parser_tree, origin='my_lab', probe=False)
	doc = json.loads(out['kcidb.json'].read_text())
	validate(doc, schema)
	assert doc['checkouts'][0]['id'].startswith('my_lab:')
	assert doc['builds'][0]['origin'] == 'my_lab'
	assert len(doc['builds'][0]['log_excerpt']) <= export.kcidb.LOG_EXCERPT_MAX
	assert doc['builds'][0]['log_excerpt'].endswith('y')
	with pytest.raises(UserError, match='origin'):
		export.write_reports(rdir, parser_tree, origin='My-Lab', probe=False)


def test_path_parts():
	assert export.kcidb.path_part('v3 to v7 picks v5 (min 3, max 7)') == 'v3_to_v7_picks_v5__min_3__max_7_'
	assert export.kcidb.path_part('autofs_test-no_pipe9') == 'autofs_test-no_pipe9'
	assert export.kcidb.path_part('') == '_'
	assert export.kcidb.path_part('a.b') == 'a_b'


def test_compiler_from_the_kernel_banner_and_probed_tools(tmp_path, parser_tree, monkeypatch):
	rdir = make_rdir(tmp_path, {'x86_64': ARCH_SETUPS['x86_64'], 'arm64': ARCH_SETUPS['arm64']})
	bindir = tmp_path / 'bin'
	bindir.mkdir()
	for name, line in (('aarch64-linux-gnu-gcc', 'aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0'),
			   ('qemu-system-aarch64', 'QEMU emulator version 7.2.99 (probed)')):
		(bindir / name).write_text(f'#!/bin/sh\necho "{line}"\necho second line\n')
		(bindir / name).chmod(0o755)
	monkeypatch.setenv('PATH', str(bindir))
	summary, runs = rundir.load_run(rdir, parser_tree, probe=True)
	r = {x.arch: x for x in runs}
	# The console's "Linux version ... (gcc ...)" names the compiler that built it.
	assert r['x86_64'].compiler == 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0'
	assert r['x86_64'].qemu == ''                         # not on this PATH
	assert r['arm64'].compiler == 'aarch64-linux-gnu-gcc (Debian 12.2.0-14) 12.2.0'
	assert r['arm64'].qemu == 'QEMU emulator version 7.2.99 (probed)'
	_, runs = rundir.load_run(rdir, parser_tree, probe=False)
	assert {x.arch: x.compiler for x in runs} == {
		'x86_64': 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0', 'arm64': ''}


# -------------------------------------------------------------------- HTML


class Page(HTMLParser):
	"""The matrix cells, the links and anything that would load from outside."""

	def __init__(self, text):
		super().__init__()
		self.cells, self.links, self.external, self.tags = [], [], [], set()
		self.row, self.header, self._th, self._in_matrix = None, [], False, False
		self.feed(text)

	def handle_starttag(self, tag, attrs):
		a = dict(attrs)
		self.tags.add(tag)
		for k in ('href', 'src'):
			if k in a:
				self.links.append(a[k])
				if re.match(r'^[a-z]+:', a[k]):
					self.external.append(a[k])
		if tag == 'table' and 'matrix' in (a.get('class') or ''):
			self._in_matrix = True
		if self._in_matrix and tag == 'th' and a.get('scope') == 'row':
			self._th = True
		if self._in_matrix and tag == 'td':
			self.cells.append((self.row, a.get('data-arch'), a.get('data-status')))

	def handle_endtag(self, tag):
		if tag == 'table':
			self._in_matrix = False
		if tag == 'th':
			self._th = False

	def handle_data(self, data):
		if self._th:
			self.row = data


def test_html_matrix(written, rdir):
	text = written['index.html'].read_text()
	page = Page(text)
	cells = {(row, arch): st for row, arch, st in page.cells}
	rows = {row for row, _ in cells}
	assert 'autofs_protocol.autofs_test_negotiate/v3 only (min 3, max 3)' in rows
	assert cells[('autofs_protocol.autofs_test_no_pipe', 'x86_64')] == 'pass'
	assert cells[('autofs_protocol.autofs_test_no_pipe', 'i386')] == 'fail'
	assert cells[('autofs_end_state.case2', 'arm')] == 'crash'
	assert cells[('autofs_end_state.case3', 'arm')] == 'missing'
	# Cases another arch has, this one did not report: missing, never pass.
	assert cells[('autofs_end_state.autofs_end_state_smbfs_gone', 'arm')] == 'missing'
	assert cells[('autofs_end_state.case2', 'x86_64')] == 'missing'
	assert all(cells[(row, 'arm64')] == 'missing' for row in rows)   # did not build
	assert len(cells) == len(rows) * 4
	# Text, not colour only.
	assert '>FAIL<' in text and '>CRASH<' in text and '>missing<' in text
	assert '0.5 ms' in text                                          # a duration


def test_html_is_self_contained_with_relative_links(written, rdir):
	text = written['index.html'].read_text()
	page = Page(text)
	assert page.external == []
	assert not ({'script', 'link', 'img', 'iframe'} & page.tags)
	assert 'http' not in text
	for link in page.links:
		assert (rdir / link).is_file(), link
	for arch in ('x86_64', 'i386', 'arm'):
		for name in ('console.log', 'build.log', 'kunit.log', 'junit.xml'):
			assert f'{arch}/{name}' in page.links
	assert 'arm64/build.log' in page.links and 'arm64/console.log' not in page.links


def test_html_failures_and_environment(written):
	text = written['index.html'].read_text()
	assert '<details class="failure" data-arch="i386">' in text
	assert 'Expected err == -EBADF, but' in text
	assert 'Kernel panic - not syncing: Fatal exception' in text
	assert 'implicit declaration of function &#x27;autofs_fill_super&#x27;' in text
	for needle in ('6.12.118-1~deb12u1', SERIES_HASH, ENV['arm']['compiler'],
		       ENV['arm']['qemu']):
		assert needle in text


def test_html_escapes_what_the_guest_printed(tmp_path, parser_tree):
	text = read_data('console_fail.log').replace('Expected err == -EBADF, but',
						     '<script>alert(1)</script> & more')
	rdir = make_rdir(tmp_path, {'x86_64': ('FAIL', '<b>odd</b>', text, 'build_ok.log')})
	page = export.write_reports(rdir, parser_tree, probe=False)['index.html'].read_text()
	assert '<script>' not in page and '<b>odd</b>' not in page
	assert '&lt;script&gt;alert(1)&lt;/script&gt; &amp; more' in page


def chromium(args, tmp_path, timeout=120):
	cmd = [str(CHROMIUM), '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
	       '--no-first-run', '--disable-background-networking', '--disable-component-update',
	       '--disable-sync', f'--user-data-dir={tmp_path / "profile"}',
	       '--window-size=1280,900'] + args
	env = dict(os.environ, HOME=str(tmp_path))
	return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.skipif(not CHROMIUM.exists(), reason='/usr/bin/chromium is not installed '
		    '(apt-get install --no-install-recommends chromium)')
def test_html_in_a_headless_browser(written, tmp_path):
	url = written['index.html'].as_uri()
	shot = tmp_path / 'shot.png'
	proc = chromium([f'--screenshot={shot}', '--enable-logging=stderr', '--v=0', url], tmp_path)
	assert proc.returncode == 0, proc.stderr[-2000:]
	data = shot.read_bytes()
	assert data[:8] == b'\x89PNG\r\n\x1a\n'
	assert len(data) > 20000                     # a rendered table, not a blank page
	width, height = int.from_bytes(data[16:20], 'big'), int.from_bytes(data[20:24], 'big')
	assert (width, height) == (1280, 900)
	console = [l for l in proc.stderr.splitlines()
		   if 'CONSOLE' in l or 'Failed to load resource' in l or 'Uncaught' in l]
	assert console == []
	proc = chromium(['--dump-dom', url], tmp_path)
	assert proc.returncode == 0, proc.stderr[-2000:]
	dom = proc.stdout
	assert '<table class="matrix">' in dom
	page = Page(dom)
	cells = {(row, arch): st for row, arch, st in page.cells}
	assert cells[('autofs_protocol.autofs_test_no_pipe', 'i386')] == 'fail'
	assert cells[('autofs_end_state.case2', 'arm')] == 'crash'


# --------------------------------------------------------------------- CLI


def test_cli_report(tmp_path, parser_tree, capsys, monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})
	rdir = make_rdir(tmp_path, tree=str(parser_tree))
	assert cli.main(['report', str(rdir), '--origin', 'ci_lab']) == 0
	out = capsys.readouterr().out
	for name in ('junit.xml', 'kcidb.json', 'index.html', 'arm/junit.xml'):
		assert str(rdir / name) in out
	doc = json.loads((rdir / 'kcidb.json').read_text())
	assert doc['builds'][0]['origin'] == 'ci_lab'


def test_cli_report_tree_option_and_default_dir(tmp_path, parser_tree, capsys, monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})
	cache = tmp_path / 'cache'
	rdir = make_rdir(cache)                          # summary's tree does not exist
	(cache / 'results' / 'latest').symlink_to(rdir.name)
	assert cli.main(['report', '--cache-dir', str(cache)]) == 2
	assert 'kunit_parser' in capsys.readouterr().err
	assert cli.main(['report', '--cache-dir', str(cache), '--tree', str(parser_tree)]) == 0
	assert (rdir / 'index.html').is_file()


def test_cli_report_without_a_results_dir(tmp_path, capsys):
	assert cli.main(['report', str(tmp_path / 'nowhere')]) == 2
	assert 'summary.json' in capsys.readouterr().err


def test_chromium_is_a_test_package():
	assert 'chromium' in deps.TEST_PACKAGES


def test_kcidb_two_runs_of_one_tree_are_one_checkout(tmp_path, parser_tree, schema):
	docs = []
	for name in ('run1', 'run2'):
		rdir = make_rdir(tmp_path / name, {'x86_64': ARCH_SETUPS['x86_64']})
		out = export.write_reports(rdir, parser_tree, probe=False)
		docs.append(json.loads(out['kcidb.json'].read_text()))
		validate(docs[-1], schema)
	assert docs[0]['checkouts'][0]['id'] == docs[1]['checkouts'][0]['id']
	assert docs[0]['builds'][0]['id'] != docs[1]['builds'][0]['id']
	assert docs[1]['builds'][0]['checkout_id'] == docs[1]['checkouts'][0]['id']


# ------------------------------- cases a crash cut off, named from kunit.list.log

# kunit.list.log of console_panic.log's kernel (`kunit.py exec --list_tests`,
# which laterboots.py boots after a crash): autofs_end_state's plan of 3, in order.
PANIC_LIST = 'kunit_panic.list.log'
CUT_OFF = 'autofs_end_state.autofs_end_state_autofs3_gone'    # case3 of console_panic.log


def crashed_rdir(root: Path, listed) -> Path:
	"""console_panic.log as an arm run, with listed as arm/kunit.list.log
	(None: no list)."""
	rdir = make_rdir(root, {'arm': ARCH_SETUPS['arm']})
	if listed is not None:
		(rdir / 'arm' / 'kunit.list.log').write_text(listed)
	return rdir


def outputs(rdir: Path, parser_tree) -> dict:
	"""Each output's row of every arm case: {output: {row: status}}."""
	from bklkunit.compare import baseline
	written = export.write_reports(rdir, parser_tree, environment=ENV, probe=False)
	out = {}
	_, [run] = rundir.load_run(rdir, parser_tree, probe=False)
	out['model'] = {c.row: c.status.value for c in run.cases}
	root = ET.parse(written['junit.xml']).getroot()
	junit = {}
	for ts in root.iter('testsuite'):
		for tc in ts.findall('testcase'):
			kind = next((k for k in ('error', 'failure', 'skipped') if tc.find(k) is not None), '')
			junit[f'{ts.get("name").split(".", 1)[1]}.{tc.get("name")}'] = kind
	out['junit'] = junit
	doc = json.loads(written['kcidb.json'].read_text())
	# (Its paths are made of identifiers: the comment is the row.)
	out['kcidb'] = {x['comment'].split(': ', 1)[0]: x['status'] for x in doc['tests']
			if x['path'] != 'kunit'}
	out['html'] = {row: st for row, arch, st in Page(written['index.html'].read_text()).cells}
	_, [a] = baseline.load_results(rdir, parser_tree, probe=False)
	out['baseline'] = a.cases
	return out


def test_cut_off_cases_are_named_from_the_list(tmp_path, parser_tree):
	rdir = crashed_rdir(tmp_path, read_data(PANIC_LIST))
	summary_before = (rdir / 'summary.json').read_text()
	verdict_before = (rdir / 'arm' / 'verdict.json').read_text()
	got = outputs(rdir, parser_tree)
	# The running case is named by no list (it was reached): still case2.
	assert got['model'] == {
		'autofs_protocol.autofs_test_negotiate/v3 only (min 3, max 3)': 'PASS',
		'autofs_protocol.autofs_test_negotiate/v4 only (min 4, max 4)': 'PASS',
		'autofs_protocol.autofs_test_negotiate/v3 to v7 picks v5 (min 3, max 7)': 'PASS',
		'autofs_protocol.autofs_test_read_end_refused': 'PASS',
		'autofs_protocol.autofs_test_non_pipe_refused': 'PASS',
		'autofs_protocol.autofs_test_no_pipe': 'PASS',
		'autofs_protocol.autofs_test_second_fd_replaces_first': 'PASS',
		'autofs_end_state.autofs_end_state_bkl_gone': 'PASS',
		'autofs_end_state.case2': 'ERROR',
		CUT_OFF: 'MISS'}
	_, [run] = rundir.load_run(rdir, parser_tree, probe=False)
	[cut] = [c for c in run.cases if c.status == model.MISS]
	assert (cut.name, cut.named, cut.position) == ('autofs_end_state_autofs3_gone', True, 3)
	assert cut.message == 'never reached: case 3 of the plan 1..3'
	# Every output has the same rows, case by case.
	rows = set(got['model'])
	for name in ('junit', 'kcidb', 'baseline'):
		assert set(got[name]) == rows, name
	assert rows <= set(got['html'])
	junit_kind = {'PASS': '', 'ERROR': 'error', 'MISS': 'skipped'}
	recorded = {'PASS': 'pass', 'ERROR': 'crash', 'MISS': 'missing'}
	html = {'PASS': 'pass', 'ERROR': 'crash', 'MISS': 'missing'}
	for row, st in got['model'].items():
		assert got['junit'][row] == junit_kind[st], row
		assert got['kcidb'][row] == st, row
		assert got['baseline'][row] == recorded[st], row
		assert got['html'][row] == html[st], row
	assert not any('case3' in row for out in got.values() for row in out)
	# Reading them changes no count: summary.json and verdict.json stay as written.
	assert (rdir / 'summary.json').read_text() == summary_before
	assert (rdir / 'arm' / 'verdict.json').read_text() == verdict_before
	doc = json.loads((rdir / 'kcidb.json').read_text())
	[t] = [x for x in doc['tests'] if x['path'] == f'kunit.{CUT_OFF}']
	assert t['misc']['name_known'] is True


def test_named_cut_off_case_against_a_baseline(tmp_path, parser_tree):
	"""A baseline from a run without a crash passed the case: the named
	row is the regression (missing) it was without a name, nothing more."""
	from bklkunit.compare import baseline
	rdir = crashed_rdir(tmp_path, read_data(PANIC_LIST))
	_, [now] = baseline.load_results(rdir, parser_tree, probe=False)
	base = {'cases': {'autofs_end_state.autofs_end_state_bkl_gone': 'pass',
			  'autofs_end_state.autofs_end_state_smbfs_gone': 'pass', CUT_OFF: 'pass'}}
	c = baseline.compare_arch(base, now, Path('arm.json'))
	named = [(k, a, b) for k, a, b in c.regressions]
	old_dir = crashed_rdir(tmp_path / 'old', None)
	_, [before] = baseline.load_results(old_dir, parser_tree, probe=False)
	unnamed = baseline.compare_arch(base, before, Path('arm.json'))
	assert named == unnamed.regressions
	assert (CUT_OFF, 'pass', 'missing') in named
	assert (c.new, c.vanished, c.fixes) == (unnamed.new, unnamed.vanished, unnamed.fixes)


@pytest.mark.parametrize('listed,why', [
	(None, 'no kunit.list.log'),
	('[07:01:00] Starting KUnit Kernel (1/1)...\n', 'it lists nothing'),
	('x\nautofs_protocol.autofs_test_no_pipe\n', 'it does not list the suite'),
	('x\nautofs_end_state.autofs_end_state_bkl_gone\nautofs_end_state.b\n', 'fewer cases than the plan'),
	('x\nautofs_end_state.autofs_end_state_bkl_gone\nautofs_end_state.b\nautofs_end_state.c\n'
	 'autofs_end_state.d\n', 'more cases than the plan'),
	('x\nautofs_end_state.a\nautofs_end_state.b\nautofs_end_state.c\n',
	 'a reported case is not where the list has it'),
	('x\nautofs_end_state.autofs_end_state_bkl_gone\nautofs_end_state.b\n'
	 'autofs_end_state.autofs_end_state_bkl_gone\n', 'the name is taken'),
])
def test_cut_off_cases_keep_their_position_without_a_fitting_list(tmp_path, parser_tree,
								   listed, why):
	got = outputs(crashed_rdir(tmp_path, listed), parser_tree)
	for name in ('model', 'junit', 'kcidb', 'html'):
		assert 'autofs_end_state.case3' in got[name], (why, name)
	assert got['model']['autofs_end_state.case3'] == 'MISS'
	assert 'autofs_end_state.case3' not in got['baseline']      # no name to compare by
	assert not any(k.endswith(('.b', '.c', '.d')) for k in got['model']), why


def test_a_parameterised_case_is_one_list_entry(parser_tree):
	"""An unreached parameterised case is one row, suite.case; the
	parameters of a case the crash was inside stay param<N>."""
	s = model.Suite('s', planned=3)
	s.cases = [model.Case('s', 'p', ('a',), position=1),
		   model.Case('s', 'p', ('param2',), status=model.MISS, named=False, position=1),
		   model.Case('s', 'case2', status=model.MISS, named=False, position=2),
		   model.Case('s', 'case3', status=model.MISS, named=False, position=3)]
	assert model.name_unreached([s], ['s.p', 's.q', 's.r', 't.x']) == 2
	assert [c.row for c in s.cases] == ['s.p/a', 's.p/param2', 's.q', 's.r']
	assert [c.named for c in s.cases] == [True, False, True, True]


def test_html_byte_order_columns(tmp_path, parser_tree):
	"""A run with arches of both byte orders: each arch's byte order in the
	arches table and over its column, and one column per byte order in the
	matrix that gives the case on all the arches of that order."""
	from test_baseline import ktap_console
	consoles = {
		'x86_64': ktap_console(('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'skip')])),
		'arm': ktap_console(('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'skip')])),
		's390x': ktap_console(('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'skip')])),
		'm68k': ktap_console(('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'ok')])),
	}
	rdir = make_rdir(tmp_path, {a: ('PASS', '', c, 'build_ok.log') for a, c in consoles.items()})
	text = export.write_reports(rdir, parser_tree, probe=False)['index.html'].read_text()
	page = Page(text)
	by_order = [(row, st) for row, arch, st in page.cells if arch is None]
	cells = {(row, arch): st for row, arch, st in page.cells if arch}
	assert cells[('alpha.two', 's390x')] == 'fail'
	assert len(by_order) == 6                       # 3 rows x 2 byte orders
	assert '<th data-endian="little">little-endian<span class="note">x86_64, arm</span></th>' in text
	assert '<th data-endian="big">big-endian<span class="note">s390x, m68k</span></th>' in text
	rows = re.findall(r'<tr><th scope="row">(alpha\.\w+)</th>(.*?)</tr>', text)
	order_cells = {row: re.findall(r'<td class="(\w+)" data-endian="(\w+)"[^>]*>(.*?)</td>', tds)
		       for row, tds in rows}
	assert order_cells['alpha.one'] == [('pass', 'little', 'pass'), ('pass', 'big', 'pass')]
	assert order_cells['alpha.two'] == [
		('pass', 'little', 'pass'), ('fail', 'big', 'FAIL<span class="note">on s390x</span>')]
	assert order_cells['alpha.three'] == [
		('skip', 'little', 'skip'),
		('pass', 'big', 'pass<span class="note">skip on s390x</span>')]
	# The arches table says each arch's byte order.
	assert re.search(r'<th scope="row">s390x</th><td>big</td>', text)
	assert re.search(r'<th scope="row">x86_64</th><td>little</td>', text)


def test_html_one_byte_order_has_no_byte_order_columns(written):
	text = written['index.html'].read_text()
	assert 'data-endian=' not in text
	assert '<th scope="row">x86_64</th><td>little</td>' in text
