# SPDX-License-Identifier: GPL-2.0
"""Times: every boot asks for printk timestamps (printk.time=1), the tree's
kunit_parser reads a console that has them as one that has not, and each
case's duration and start reach JUnit and KCIDB.

data/real_x86_64_time.log is data/real_x86_64_notime.log (recorded from an
x86_64 run) with the fixed-width "[    1.234567] " printk prefix added to
every line, as the guest prints it with printk.time=1."""

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone

import pytest

from bklkunit.base import paths
from bklkunit.results import export, kunit_tool, model, rundir, verdicts
from bklkunit.results.cases import parse_console
from bklkunit.run import plan, profiles, runner
from conftest import read_data
from test_baseline import CRASHING, ktap_console, rf, stage_crash  # noqa: F401  (rf: a fixture)
from test_report import make_rdir, schema, validate  # noqa: F401  (schema: a fixture)
from test_run import fake, main_env  # noqa: F401  (fixtures used by rf)

PRINTK_TIME = '--kernel_args=printk.time=1'
PREFIX = re.compile(r'^\[ {0,4}\d{1,5}\.\d{6}\] ')
BOOTED = '2026-12-05T09:41:07.250+01:00'      # as model.now() records it


def lines_of(name):
	return read_data(name).splitlines()


def rows(suites):
	return {c.row: c for s in suites for c in s.cases}


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	"""Never ask this host's gcc or QEMU for their versions."""
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


# ------------------------------------------------- the kernel command line


@pytest.mark.parametrize('profile', sorted(profiles.PROFILES))
def test_every_profile_and_arch_boots_with_printk_times(profile):
	opts = plan.RunOptions(profile=profiles.PROFILES[profile])
	for arch in paths.ARCHES:
		got = opts.exec_options(arch)
		assert got.count(PRINTK_TIME) == 1, (profile, arch, got)
		# After the profile's own kernel arguments, which stay as they were.
		kargs = [a for a in got if a.startswith('--kernel_args=')]
		assert kargs == [f'--kernel_args={k}' for k in profiles.PROFILES[profile].kernel_args] \
			+ [f'--kernel_args={k}' for k in plan.guest_kernel_args(arch)]
		assert kargs[len(profiles.PROFILES[profile].kernel_args)] == PRINTK_TIME


def test_every_boot_of_a_run_has_printk_times(rf):
	"""The first boot, the --list_tests boot and the boots that continue
	after a crash; then the --rerun-failures boots."""
	f = rf
	stage_crash(f, gamma='not ok')
	f.ctl_write('x86_64', 'console@gamma.x', ktap_console(('gamma', [('x', 'ok')])))
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--rerun-failures', '1')))
	v = json.loads((f.results / 'x86_64' / 'verdict.json').read_text())
	assert [(b['purpose'], b['filter']) for b in v['boots']] == [
		('list', ''), ('continue', 'gamma'), ('continue', 'delta'), ('rerun', 'beta.q'),
		('rerun', 'gamma.x')]
	execs = f.calls('exec')
	assert len(execs) == 1 + len(v['boots'])
	assert all(c['argv'].count(PRINTK_TIME) == 1 for c in execs)
	assert not any(PRINTK_TIME in c['argv'] for c in f.calls('build'))


# ------------------------------------------ the tree's parser, with printk times


def test_the_timed_console_is_the_recorded_one_with_a_printk_prefix():
	timed, plain = lines_of('real_x86_64_time.log'), lines_of('real_x86_64_notime.log')
	assert len(timed) == len(plain)
	assert all(PREFIX.match(l) and len(PREFIX.match(l).group(0)) == 15 for l in timed)
	stripped = [PREFIX.sub('', l) for l in timed]
	assert [l for l, p in zip(stripped, plain) if l != p] == [
		'Command line: printk.time=1 kunit.enable=1 console=ttyS0 kunit_shutdown=reboot']


def test_extract_tap_lines_strips_the_printk_prefix(parser_tree):
	"""kunit_parser takes as prefix what precedes "KTAP version" and cuts as
	much from every later line: with printk times that is the timestamp,
	and the KTAP it hands over, with its line numbers, is the same."""
	kp = kunit_tool.parser_module(parser_tree)

	def extracted(name):
		stream = kp.extract_tap_lines(lines_of(name))
		out = []
		while stream:
			n = stream.line_number()
			out.append((n, stream.pop()))
		return out
	timed, plain = extracted('real_x86_64_time.log'), extracted('real_x86_64_notime.log')
	assert timed == plain
	assert timed[0] == (5, 'KTAP version 1')
	assert (18, 'kernel does not match daemon version daemon (1, 2) kernel (3, 5)') in timed
	assert (19, '') in timed            # "[    1.623051] ", the message's second line
	assert kunit_tool.documents(parser_tree, lines_of('real_x86_64_time.log')).ktap == \
		[text for _, text in plain]


def test_a_timed_console_reads_as_the_untimed_one_plus_times(parser_tree):
	timed = parse_console(parser_tree, lines_of('real_x86_64_time.log'))
	plain = parse_console(parser_tree, lines_of('real_x86_64_notime.log'))
	t, p = rows(timed), rows(plain)
	assert list(t) == list(p) and len(t) == 15
	for row, c in t.items():
		assert (c.status, c.diagnostics, c.span) == (p[row].status, p[row].diagnostics,
							      p[row].span), row
		assert c.duration is not None and c.clock is not None, row
		assert p[row].duration is None and p[row].clock is None
	v = verdicts.judge(parser_tree, lines_of('real_x86_64_time.log'))
	assert (v.status, v.passed, v.failed) == (model.ArchStatus.PASS, 15, 0)


def test_durations_and_clocks_of_a_timed_console(parser_tree):
	suites = parse_console(parser_tree, lines_of('real_x86_64_time.log'))
	c = rows(suites)
	neg = 'autofs_protocol.autofs_test_negotiate/'
	# The first parameter: from "# Subtest: autofs_test_negotiate" to its ok.
	first = c[neg + 'v3 only (min 3, max 3)']
	assert (first.clock, first.duration) == (1.621384, 0.000318)
	# A later one: from the previous result, over the kernel's own messages.
	sixth = c[neg + 'v1 to v2 is too old (min 1, max 2)']
	assert (sixth.clock, sixth.duration) == (1.62279, 0.000312)
	slow = c['autofs_protocol.autofs_test_second_fd_replaces_first']
	assert (slow.clock, slow.duration) == (1.625044, 0.012468)
	# The first case of a suite starts at its plan.
	gone = c['autofs_end_state.autofs_end_state_bkl_gone']
	assert (gone.clock, gone.duration) == (1.638008, 0.000403)
	# A suite: its first header line ("KTAP version 1") to its result.
	assert [(s.name, s.clock, s.duration) for s in suites] == [
		('autofs_protocol', 1.620893, 0.016648), ('autofs_end_state', 1.63799, 0.001081)]


# ----------------------------------------------------- recorded wall-clock times


def test_parse_time_takes_only_times_it_can_place():
	t = model.parse_time(BOOTED)
	assert t == datetime(2026, 12, 5, 8, 41, 7, 250000, tzinfo=timezone.utc)
	assert model.rfc3339(t) == '2026-12-05T08:41:07.250000+00:00'
	assert model.parse_time('2026-12-05T08:41:07Z') == t.replace(microsecond=0)
	for bad in (None, '', 'yesterday', '2026-12-05T09:41:07', 1764920467, [BOOTED]):
		assert model.parse_time(bad) is None, bad
	now = model.parse_time(model.now())
	assert now is not None and abs(datetime.now(timezone.utc) - now) < timedelta(minutes=1)
	assert model.at_clock(t, 1.5) == t + timedelta(seconds=1.5)
	assert model.at_clock(None, 1.5) is None and model.at_clock(t, None) is None


def test_run_records_when_it_built_and_booted(rf):
	f = rf
	stage_crash(f)
	before = datetime.now(timezone.utc)
	runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache')))
	after = datetime.now(timezone.utc)
	s = json.loads((f.results / 'summary.json').read_text())
	v = json.loads((f.results / 'x86_64' / 'verdict.json').read_text())
	times = [s['started'], v['build_started'], v['boot_started']] + [
		b['started'] for b in v['boots']]
	assert len(times) == 3 + 3                  # list, gamma, delta
	parsed = [model.parse_time(t) for t in times]
	assert all(before - timedelta(seconds=1) <= t <= after for t in parsed), times
	assert parsed == sorted(parsed)
	assert s['arches'][0]['boot_started'] == v['boot_started']


def timed_rdir(root, **entry):
	"""A results directory of one x86_64 PASS whose console has printk times;
	entry: what verdict.json and summary.json record besides."""
	rdir = make_rdir(root, {'x86_64': ('PASS', '', 'real_x86_64_time.log', 'build_ok.log')},
			 **({'started': entry.pop('started')} if 'started' in entry else {}))
	for f in (rdir / 'summary.json', rdir / 'x86_64' / 'verdict.json'):
		doc = json.loads(f.read_text())
		target = doc['arches'][0] if 'arches' in doc else doc
		target.update(entry)
		f.write_text(json.dumps(doc))
	return rdir


def test_timed_console_gives_junit_and_kcidb_times(tmp_path, parser_tree, schema):
	rdir = timed_rdir(tmp_path, started='2026-12-05T09:40:00.000+01:00',
			  build_started='2026-12-05T09:40:01.500+01:00', boot_started=BOOTED)
	out = export.write_reports(rdir, parser_tree, probe=False)
	root = ET.parse(out['junit.xml']).getroot()
	ts = {s.get('name'): s for s in root.iter('testsuite')}
	assert ts['x86_64.autofs_protocol'].get('time') == '0.016648'
	assert ts['x86_64.autofs_end_state'].get('time') == '0.001081'
	tc = {t.get('name'): t for t in root.iter('testcase')}
	assert tc['autofs_test_second_fd_replaces_first'].get('time') == '0.012468'
	assert tc['autofs_test_negotiate/v3 only (min 3, max 3)'].get('time') == '0.000318'
	assert all(t.get('time') for t in tc.values())

	doc = json.loads(out['kcidb.json'].read_text())
	validate(doc, schema)
	[co], [b] = doc['checkouts'], doc['builds']
	assert co['start_time'] == '2026-12-05T08:40:00.000000+00:00'
	assert b['start_time'] == '2026-12-05T08:40:01.500000+00:00'
	t = {x['path']: x for x in doc['tests']}
	assert t['kunit']['start_time'] == '2026-12-05T08:41:07.250000+00:00'
	slow = t['kunit.autofs_protocol.autofs_test_second_fd_replaces_first']
	# The boot's start plus the printk time the case's duration counts from.
	assert slow['start_time'] == '2026-12-05T08:41:08.875044+00:00'
	assert slow['duration'] == 0.012468
	cases = [x for x in doc['tests'] if x['path'] != 'kunit']
	assert len(cases) == 15 and all('start_time' in x and 'duration' in x for x in cases)
	starts = [datetime.fromisoformat(x['start_time']) for x in cases]
	assert starts == sorted(starts)


def test_results_without_recorded_times_still_load_and_export(tmp_path, parser_tree, schema):
	"""Results written before the times were recorded: durations from the
	console, no start_time anywhere (and none made up)."""
	rdir = timed_rdir(tmp_path)
	_, [r] = rundir.load_run(rdir, parser_tree, probe=False)
	assert r.build_start is None and r.boot_start is None
	assert all(c.start_time is None and c.duration is not None for c in r.cases)
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	validate(doc, schema)
	assert not any('start_time' in o for k in ('checkouts', 'builds', 'tests') for o in doc[k])
	assert sum('duration' in x for x in doc['tests']) == 16
	# A recorded time that is not one (no UTC offset, not text) is no time either.
	rdir = timed_rdir(tmp_path / 'bad', started='2026-12-05 09:40', build_started=17,
			  boot_started='2026-12-05T09:41:07')
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	validate(doc, schema)
	assert not any('start_time' in o for k in ('checkouts', 'builds', 'tests') for o in doc[k])


def test_an_untimed_console_has_a_boot_start_and_no_case_starts(tmp_path, parser_tree, schema):
	rdir = make_rdir(tmp_path, {'x86_64': ('PASS', '', 'real_x86_64_notime.log', 'build_ok.log')})
	v = json.loads((rdir / 'x86_64' / 'verdict.json').read_text())
	v['boot_started'] = BOOTED
	(rdir / 'x86_64' / 'verdict.json').write_text(json.dumps(v))
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	validate(doc, schema)
	t = {x['path']: x for x in doc['tests']}
	assert t['kunit']['start_time'] == '2026-12-05T08:41:07.250000+00:00'
	assert not any('start_time' in x or 'duration' in x for p, x in t.items() if p != 'kunit')


def timed(console: str, start: float) -> str:
	"""A console with a printk prefix on every line (instead of any it had),
	1 ms apart from start."""
	return ''.join(f'[{start + n / 1000:12.6f}] {PREFIX.sub("", l)}\n'
		       for n, l in enumerate(console.splitlines()))


def test_each_boot_s_cases_start_from_that_boot(tmp_path, parser_tree, schema):
	"""The suites a crash cut off ran in boots of their own: their cases'
	start times count from those boots' starts."""
	rdir = make_rdir(tmp_path, {'x86_64': ('CRASH', 'Kernel panic', 'console_pass.log',
					       'build_ok.log')})
	adir = rdir / 'x86_64'
	(adir / 'console.log').write_text(timed(CRASHING, 1.0))
	(adir / 'console.2.log').write_text(timed(ktap_console(('gamma', [('x', 'ok')])), 2.0))
	v = json.loads((adir / 'verdict.json').read_text())
	v.update(boot_started=BOOTED, boots=[
		{'boot': 2, 'purpose': 'continue', 'filter': 'gamma', 'console': 'console.2.log',
		 'started': '2026-12-05T09:45:00.000+01:00'}])
	(adir / 'verdict.json').write_text(json.dumps(v))
	_, [r] = rundir.load_run(rdir, parser_tree, probe=False)
	c = {x.row: x for x in r.cases}
	booted = model.parse_time(BOOTED)
	# From its suite's plan (the sixth line).
	assert c['alpha.one'].start_time == booted + timedelta(seconds=1.005)
	assert c['gamma.x'].start_time == datetime(2026, 12, 5, 8, 45, 2, 5000, tzinfo=timezone.utc)
	assert c['beta.q'].start_time is None                # it never printed its result
	doc = json.loads(export.write_reports(rdir, parser_tree, probe=False)['kcidb.json'].read_text())
	validate(doc, schema)
	assert {x['path']: x.get('start_time') for x in doc['tests']}['kunit.gamma.x'] == \
		'2026-12-05T08:45:02.005000+00:00'
