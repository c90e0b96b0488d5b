# SPDX-License-Identifier: GPL-2.0
"""reports: lockdep, KASAN, KCSAN, UBSAN, WARN ... on the console fail the
case they were printed in.  The consoles in data/console_reports_*.log are
recorded shapes of the real reports (printk timestamps, KTAP around them)."""

import json
import xml.etree.ElementTree as ET

import pytest

from bklkunit.results import export, kernel_reports, model
from bklkunit.results.cases import parse_console, read_console
from bklkunit.run import plan, runner
from conftest import read_data
from test_report import make_rdir, schema, validate  # noqa: F401  (schema: a fixture)
from test_run import fake, main_env  # noqa: F401  (fixtures)

KASAN = 'console_reports_kasan.log'
KCSAN = 'console_reports_kcsan.log'


def lines_of(name):
	return read_data(name).splitlines()


def rows(suites):
	return {c.row: c for s in suites for c in s.cases}


def insert_after(lines, marker, new):
	i = next(n for n, l in enumerate(lines) if marker in l) + 1
	return lines[:i] + new + lines[i:]


UBSAN_AT_BOOT = ['[    0.300000] ================================================================================',
		 '[    0.300001] UBSAN: array-index-out-of-bounds in drivers/foo/bar.c:42:17',
		 '[    0.300002] index 4 is out of range for type \'u32 [4]\'',
		 '[    0.300003] ================================================================================']


# ------------------------------------------------------------------ finding


@pytest.mark.parametrize('line, kind', [
	('[    2.201004] WARNING: possible circular locking dependency detected', 'lockdep'),
	('[    1.000000][    T1] WARNING: possible recursive locking detected', 'lockdep'),
	('WARNING: inconsistent lock state', 'lockdep'),
	('[    3.2] BUG: sleeping function called from invalid context at mm/slub.c:4169',
	 'atomic sleep'),
	('[    2.301002] BUG: KASAN: slab-use-after-free in atalk_sendmsg+0x9a4/0xb30', 'KASAN'),
	('[    3.100002] BUG: KCSAN: data-race in a / b', 'KCSAN'),
	('[    3.300002] UBSAN: shift-out-of-bounds in fs/x.c:1:2', 'UBSAN'),
	('[    2.401004] WARNING: CPU: 0 PID: 65 at net/appletalk/ddp.c:4 f+0x4b/0x90', 'WARN'),
	('[    2.501002] list_add corruption. prev->next should be next (ffff8880), but was 0', 'list corruption'),
	('[    2.501002] list_del corruption, ffff888004e1c010->next is LIST_POISON1', 'list corruption'),
	('[  130.600000] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)', 'kmemleak'),
	('[  130.600000] kmemleak: 1 new suspected memory leak (see /sys/kernel/debug/kmemleak)', 'kmemleak'),
	('[    3.400000] BUG: spinlock lockup suspected on CPU#1, kunit_try_catch/74', 'spinlock'),
	('[  125.500000] INFO: task kunit_try_catch:75 blocked for more than 120 seconds.', 'hung task'),
])
def test_each_pattern(line, kind):
	[r] = kernel_reports.find(['[    0.1] boot', line, '[    9.0] reboot: System halted'])
	assert (r.line, r.kind) == (2, kind)
	assert r.title.startswith(line.split('] ')[-1][:20])
	assert r.label == f'{kind} report'


@pytest.mark.parametrize('line', [
	'[    2.1]     # autofs_test_x: UBSAN: mentioned in a diagnostic, not printed by UBSAN',
	'[    0.2] kmemleak: Kernel memory leak detector initialized (mem pool available: 15758)',
	'[    0.2] kasan: KernelAddressSanitizer initialized',
	'[    0.2] WARNING: CPU: 0 PID: 1',                   # no "at": not a WARN() banner
	'[    0.5] BUG: kernel NULL pointer dereference, address: 0000000000000008',  # a crash (verdicts.py)
	'[    2.2]     ok 1 list_add_corruption_is_caught',
])
def test_lines_that_are_not_reports(line):
	assert kernel_reports.find([line]) == []


def test_find_groups_each_report_and_merges_one_event():
	found = kernel_reports.find(lines_of(KASAN))
	assert [(r.kind, r.kinds) for r in found] == [
		('lockdep', ['lockdep']), ('KASAN', ['KASAN']), ('WARN', ['WARN']),
		# CHECK_DATA_CORRUPTION: the message, then WARN's banner: one report.
		('list corruption', ['list corruption', 'WARN'])]
	lockdep, kasan, warn, lst = found
	assert lockdep.title == 'WARNING: possible circular locking dependency detected'
	assert lockdep.lines[-1] == ' </TASK>'          # ends where KTAP resumes
	assert kasan.lines[-1].startswith('=====')        # KASAN's closing rule
	assert warn.lines[-1] == '---[ end trace 0000000000000000 ]---'
	assert lst.excerpt()[0].startswith('list_add corruption. next->prev should be prev')
	assert len(lst.excerpt()) == kernel_reports.EXCERPT_LINES


# -------------------------------------------------------------- attribution


def test_kasan_console_attribution(parser_tree):
	suites, strays = read_console(parser_tree, lines_of(KASAN))
	c = rows(suites)
	assert strays == []
	assert c['appletalk_reports.atalk_test_create_ok'].status == model.PASS
	lock = c['appletalk_reports.atalk_test_bind_lock_order']
	assert (lock.status, lock.flagged, lock.kind) == (model.FAIL, 'lockdep report', 'lockdep')
	assert lock.summary() == ('lockdep report: WARNING: possible circular locking dependency '
				  'detected')
	assert lock.diagnostics[0] == 'WARNING: possible circular locking dependency detected'
	uaf = c['appletalk_reports.atalk_test_sendmsg_uaf']
	assert uaf.status == model.FAIL
	assert uaf.summary().startswith('KASAN report: BUG: KASAN: slab-use-after-free in atalk_sendmsg')
	# Triggered on purpose, and it happened: a pass, report kept for the record.
	warn = c['appletalk_reports.atalk_test_expect_report_warn']
	assert warn.status == model.PASS and [r.kind for r in warn.reports] == ['WARN']
	# Expected one, none came: a failure.
	none = c['appletalk_reports.atalk_test_expect_report_double_free']
	assert none.status == model.FAIL
	assert none.summary() == 'expected a report, none seen'
	# A parameter: exactly the one that was running.
	assert c['ufs_balloc_reports.ufs_balloc_test_cg_list/fragment 1 of 8'].status == model.PASS
	frag = c['ufs_balloc_reports.ufs_balloc_test_cg_list/fragment 8 of 8']
	assert (frag.status, frag.flagged) == (model.FAIL, 'list corruption report')


def test_kcsan_console_attribution_and_a_boot_warn(parser_tree):
	suites, strays = read_console(parser_tree, lines_of(KCSAN))
	c = rows(suites)
	flagged = {row.split('.', 1)[1]: (x.status, x.flagged) for row, x in c.items()}
	assert flagged == {
		'autofs_test_race_expire': ('FAIL', 'KCSAN report'),
		'autofs_test_sleep_in_atomic': ('FAIL', 'atomic sleep report'),
		'autofs_test_ubsan_shift': ('FAIL', 'UBSAN report'),
		'autofs_test_spin_uninit': ('FAIL', 'spinlock report'),
		'autofs_test_wait_timeout': ('FAIL', 'hung task report'),
		'autofs_test_mount_leak': ('FAIL', 'kmemleak report'),     # was a skip
		'autofs_test_clean': ('PASS', ''),
	}
	# A case that failed anyway keeps its own diagnostics under the report.
	ubsan = c['autofs_races.autofs_test_ubsan_shift']
	assert ubsan.diagnostics[0].startswith('UBSAN: shift-out-of-bounds')
	assert any('EXPECTATION FAILED' in l for l in ubsan.diagnostics)
	[boot] = strays
	assert (boot.kind, boot.line) == ('WARN', 6)
	assert kernel_reports.stray_reason(strays) == (
		'WARN report outside any case (console line 6): WARNING: CPU: 1 PID: 1 at '
		'drivers/base/dd.c:651 really_probe+0x3b4/0x3f0')


def test_report_between_suites_belongs_to_no_case(parser_tree):
	lines = insert_after(lines_of('console_pass.log'), 'ok 1 autofs_protocol', UBSAN_AT_BOOT)
	suites, strays = read_console(parser_tree, lines)
	assert [r.kind for r in strays] == ['UBSAN']
	assert {x.status for x in rows(suites).values()} == {model.PASS}


def test_the_running_case_owns_the_report_before_a_crash(parser_tree):
	lines = lines_of('console_pass.log')
	cut = next(i for i, l in enumerate(lines) if 'ok 2 autofs_test_read_end_refused' in l) + 1
	lines = lines[:cut] + [
		'[    0.512100] ------------[ cut here ]------------',
		'[    0.512101] WARNING: CPU: 0 PID: 60 at fs/autofs/waitq.c:77 autofs_wait+0x1/0x2',
		'[    0.512102] ---[ end trace 0000000000000000 ]---',
		'[    0.512200] BUG: kernel NULL pointer dereference, address: 0000000000000010',
		'[    0.512201] Kernel panic - not syncing: Fatal exception']
	suites, strays = read_console(parser_tree, lines, 'CRASH: BUG: kernel NULL')
	assert strays == []
	[running] = [x for x in rows(suites).values() if x.status == model.ERROR]
	assert [r.kind for r in running.reports] == ['WARN']
	assert running.diagnostics[0].startswith('WARNING: CPU: 0 PID: 60')


def test_parse_console_without_attribution(parser_tree):
	c = rows(parse_console(parser_tree, lines_of(KASAN), attribute=False))
	assert [r for r, x in c.items() if x.status != model.PASS] == [
		'appletalk_reports.atalk_test_sendmsg_uaf']     # kunit's own "not ok"
	assert not any(x.reports or x.flagged for x in c.values())


# ------------------------------------------------------------------ the run


def test_run_arch_fails_exactly_the_cases_with_a_report(fake):
	fake.scenario('x86_64', console=KASAN)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL' and r.reason == ''
	assert (r.passed, r.failed, r.skipped, r.crashed) == (3, 4, 0, 0)
	# KASAN failed its case itself (mm/kasan/report.c sets the running
	# test's failure): kunit_parser's FAILURE is renamed, the rest follow.
	assert r.failures == [
		'appletalk_reports.atalk_test_sendmsg_uaf: KASAN report',
		'appletalk_reports.atalk_test_bind_lock_order: lockdep report',
		'appletalk_reports.atalk_test_expect_report_double_free: expected a report, none seen',
		'ufs_balloc_reports.ufs_balloc_test_cg_list/fragment 8 of 8: list corruption report']
	assert [(x['case'].split('.')[1], x['kind'], x['expected']) for x in r.reports] == [
		('atalk_test_bind_lock_order', 'lockdep', False),
		('atalk_test_sendmsg_uaf', 'KASAN', False),
		('atalk_test_expect_report_warn', 'WARN', True),
		('ufs_balloc_test_cg_list/fragment 8 of 8', 'list corruption', False)]
	assert all(isinstance(x['line'], int) and x['title'] for x in r.reports)


def test_run_arch_counts_a_skip_and_a_failure_with_reports(fake):
	fake.scenario('arm64', console=KCSAN, exec_rc=1)
	r, _ = fake.run_arch('arm64')
	assert r.status == 'FAIL'
	# kunit said 5 pass, 1 fail, 1 skip; five passes and the skip had reports.
	assert (r.passed, r.failed, r.skipped) == (1, 6, 0)
	assert 'autofs_races.autofs_test_mount_leak: kmemleak report' in r.failures
	assert 'WARN report outside any case (console line 6)' in r.reason
	assert r.reports[-1]['case'] is None


def test_run_arch_report_outside_any_case_fails_the_arch(fake):
	lines = insert_after(lines_of('console_pass.log'), 'Switched to clocksource', UBSAN_AT_BOOT)
	fake.scenario('x86_64')
	(fake.ctl / 'x86_64.console').write_text('\n'.join(lines) + '\n')
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL'
	assert (r.passed, r.failed) == (10, 0) and r.failures == []
	assert r.reason == ('UBSAN report outside any case (console line 6): UBSAN: '
			    'array-index-out-of-bounds in drivers/foo/bar.c:42:17')


def test_a_clean_console_is_untouched(fake):
	fake.scenario('x86_64', console='console_pass.log')
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'PASS' and r.reports == [] and r.reason == ''


def test_main_records_reports_and_fails(main_env, capsys):
	f = main_env
	f.scenario('x86_64', console=KASAN)
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	assert rc == 1
	s = json.loads((f.results / 'summary.json').read_text())
	[a] = s['arches']
	assert a['status'] == 'FAIL' and len(a['reports']) == 4
	v = json.loads((f.results / 'x86_64' / 'verdict.json').read_text())
	assert v['reports'] == a['reports']
	out = capsys.readouterr().out
	assert '  appletalk_reports.atalk_test_sendmsg_uaf: KASAN report' in out


# ------------------------------------------------------------------ the reports


@pytest.fixture
def report_rdir(tmp_path):
	return make_rdir(tmp_path, {
		'x86_64': ('FAIL', '', KASAN, 'build_ok.log'),
		'arm64': ('FAIL', 'WARN report outside any case (console line 6): WARNING: CPU: 1 '
			  'PID: 1 at drivers/base/dd.c:651 really_probe+0x3b4/0x3f0', KCSAN,
			  'build_ok.log')}, profile='kasan')


def test_junit_kcidb_and_html_show_the_reports(report_rdir, parser_tree, schema):  # noqa: F811
	out = export.write_reports(report_rdir, parser_tree, probe=False)
	root = ET.parse(out['x86_64/junit.xml']).getroot()
	tc = {t.get('name'): t for t in root.iter('testcase')}
	fail = tc['atalk_test_sendmsg_uaf'].find('failure')
	assert fail.get('type') == 'KASAN'
	assert fail.get('message').startswith('KASAN report: BUG: KASAN: slab-use-after-free')
	assert fail.text.startswith('BUG: KASAN: slab-use-after-free in atalk_sendmsg')
	assert tc['atalk_test_expect_report_warn'].find('failure') is None
	assert (tc['atalk_test_expect_report_double_free'].find('failure').get('message')
		== 'expected a report, none seen')
	assert tc['ufs_balloc_test_cg_list/fragment 8 of 8'].find('failure').get('type') == 'list corruption'
	doc = json.loads(out['kcidb.json'].read_text())
	validate(doc, schema)
	assert {b['config_name'] for b in doc['builds']} == {'kunit-kasan'}
	t = {x['path']: x for x in doc['tests']}
	uaf = t['kunit.appletalk_reports.atalk_test_sendmsg_uaf']
	assert uaf['status'] == 'FAIL' and 'BUG: KASAN' in uaf['log_excerpt']
	assert t['kunit.appletalk_reports.atalk_test_expect_report_warn']['status'] == 'PASS'
	page = out['index.html'].read_text()
	assert 'KASAN report: BUG: KASAN: slab-use-after-free in atalk_sendmsg' in page
	# The stray report: the arch's own testcase says so when no case carries it ...
	arm = ET.parse(out['arm64/junit.xml']).getroot()
	assert arm.find(".//testcase[@name='autofs_test_race_expire']/failure").get('type') == 'KCSAN'


def test_junit_names_a_stray_report_when_no_case_is_to_blame(tmp_path, parser_tree):
	lines = insert_after(lines_of('console_pass.log'), 'Switched to clocksource', UBSAN_AT_BOOT)
	reason = ('UBSAN report outside any case (console line 6): UBSAN: '
		  'array-index-out-of-bounds in drivers/foo/bar.c:42:17')
	rdir = make_rdir(tmp_path, {'x86_64': ('FAIL', reason, '\n'.join(lines), 'build_ok.log')})
	root = ET.parse(export.write_reports(rdir, parser_tree, probe=False)['junit.xml']).getroot()
	[run_tc] = [t for t in root.iter('testcase') if t.get('name') == 'run']
	assert run_tc.find('failure').get('message') == reason
	assert run_tc.find('failure').get('type') == 'FAIL'


def test_rerun_of_a_report_failure_boots_with_the_profile(fake):
	"""--rerun-failures boots each failed case again, with the profile's
	exec options; a case whose report comes back stays a failure."""
	(fake.repo / 'kunit/profiles/kasan.config').write_text('CONFIG_KASAN=y\n')
	fake.scenario('x86_64', console=KASAN)
	r, _ = fake.run_arch('x86_64', '--profile', 'kasan', '--rerun-failures', '1')
	assert r.status == 'FAIL' and r.flaky == []
	assert 'appletalk_reports.atalk_test_sendmsg_uaf: KASAN report' in r.failures
	execs = fake.calls('exec')
	assert len(execs) == 1 + 4                   # the first boot, one per failed row
	assert all('--kernel_args=kasan_multi_shot' in e['argv'] for e in execs)
	assert [b['purpose'] for b in r.boots] == ['rerun'] * 4


def test_a_crash_in_the_first_case_does_not_own_the_boot(parser_tree):
	lines = insert_after(lines_of('console_pass.log'), 'Switched to clocksource', UBSAN_AT_BOOT)
	cut = next(i for i, l in enumerate(lines) if 'ok 1 v3 only' in l)
	lines = lines[:cut] + [
		'[    0.511100] WARNING: CPU: 0 PID: 60 at fs/autofs/dev-ioctl.c:9 f+0x1/0x2',
		'[    0.511101] ---[ end trace 0000000000000000 ]---',
		'[    0.511200] BUG: kernel NULL pointer dereference, address: 0000000000000010',
		'[    0.511201] Kernel panic - not syncing: Fatal exception']
	assert kernel_reports.ktap_start(lines) == 9
	suites, strays = read_console(parser_tree, lines, 'CRASH: BUG: kernel NULL')
	assert [r.kind for r in strays] == ['UBSAN']          # the boot's, not the case's
	owned = [x for x in rows(suites).values() if x.reports]
	assert [[r.kind for r in x.reports] for x in owned] == [['WARN']]
	assert owned[0].status == model.ERROR


KMEMLEAK_SUITE = [
	'[    1.506169]     KTAP version 1',
	'[    1.506303]     # Subtest: kmemleak',
	'[    1.506442]     # module: kmemleak_kunit',
	'[    1.506487]     1..2',
	'[   10.684317] kmemleak: 15 new suspected memory leaks (see /sys/kernel/debug/kmemleak)',
	'[   11.733310]     ok 1 kmemleak_test_scan_and_clear',
	'[   11.800000] WARNING: CPU: 0 PID: 65 at mm/kmemleak_kunit.c:40 f+0x4b/0x90',
	'[   11.800001] ---[ end trace 0000000000000000 ]---',
	'[   11.900000]     ok 2 kmemleak_test_other',
	'[   11.950000] ok 1 kmemleak',
]


def test_a_detectors_own_suite_expects_its_reports(parser_tree):
	"""kmemleak's suite leaks on purpose: kmemleak's count in its case is
	expected; another kind of report there still fails the case."""
	lines = ['[    0.000000] Linux version 6.12.118', '[    1.500000] KTAP version 1',
		 '[    1.500001] 1..1'] + KMEMLEAK_SUITE
	suites, strays = read_console(parser_tree, lines)
	c = rows(suites)
	assert strays == []
	leak = c['kmemleak.kmemleak_test_scan_and_clear']
	assert leak.status == model.PASS and [r.kind for r in leak.reports] == ['kmemleak']
	other = c['kmemleak.kmemleak_test_other']
	assert (other.status, other.flagged) == (model.FAIL, 'WARN report')
	assert [r.kind for r in other.reports] == ['WARN']
	assert kernel_reports.expected_kind('kmemleak.x', 'kmemleak')
	assert not kernel_reports.expected_kind('kmemleak.x', 'WARN')
	assert not kernel_reports.expected_kind('ufs_faults.x', 'kmemleak')
