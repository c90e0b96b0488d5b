# SPDX-License-Identifier: GPL-2.0
"""`kunit.py test`: the steps it runs, in which order, and its closing line."""

import argparse
import json
from pathlib import Path

from bklkunit.base import deps
from bklkunit.ci import gate


def _args(tmp_path: Path, **kw) -> argparse.Namespace:
	d = dict(arch='x86_64', skip='', cache_dir=str(tmp_path / 'cache'), no_install=True)
	d.update(kw)
	return argparse.Namespace(**d)


def _fake(monkeypatch, outputs, head_boot=None):
	"""gate._run replaced: records each command's verb, answers from
	outputs; check-series writes head_boot (a boots.json record) if given."""
	seen = []

	def run(cmd, log, echo=True, nice=0):
		verb = 'pytest' if '-m' in cmd else cmd[2]
		seen.append(verb + (f' (nice {nice})' if nice else ''))
		rc, out = outputs[verb]
		if verb == 'check-series' and head_boot is not None:
			f = Path(cmd[cmd.index('--cache-dir') + 1]) / 'series' / 'boots.json'
			f.parent.mkdir(parents=True, exist_ok=True)
			f.write_text(json.dumps([{'patch': '0001-x.patch', 'passed': 9, 'failed': 0,
						  'crashed': 0}, head_boot]))
		if verb == 'run':
			rdir = Path(cmd[cmd.index('--results-dir') + 1])
			rdir.mkdir(parents=True)
			(rdir / 'summary.json').write_text(json.dumps({'arches': [
				{'arch': 'x86_64', 'status': 'PASS' if rc == 0 else 'CRASH',
				 'passed': 5, 'failed': 0, 'crashed': 0}]}))
		return rc, out
	monkeypatch.setattr(gate, '_run', run)

	def beside(cmds):             # at once, so that the order is the same every time
		return [(lambda got=run(cmd, log, echo=False, nice=nice): got)
			for cmd, log, nice in cmds]
	monkeypatch.setattr(gate, '_beside', beside)
	monkeypatch.setattr(deps, 'ensure', lambda pkgs, allow_install=True: None)
	return seen


def test_the_tree_is_prepared_before_pytest_reads_its_parser(tmp_path, monkeypatch, capsys):
	seen = _fake(monkeypatch, {'prepare': (0, 'up to date\n'),
				   'pytest': (0, '7 passed in 1.0s\n'),
				   'check-series': (0, '3 passed, 0 failed\n'),
				   'run': (0, '')})
	assert gate.main(gate.GateOptions.from_args(_args(tmp_path))) == 0
	# pytest, then the KUnit run at a lower priority, beside check-series
	assert seen == ['prepare', 'pytest', f'run (nice {gate.RUN_NICE})', 'check-series']
	assert capsys.readouterr().out.splitlines()[-1] == '15 passed, 0 failed'


def test_a_failed_prepare_and_a_crashed_arch_are_failures(tmp_path, monkeypatch, capsys):
	_fake(monkeypatch, {'prepare': (2, 'patch 0003 does not apply\n'),
			    'pytest': (1, '5 passed, 2 errors in 1.0s\n'),
			    'check-series': (0, '3 passed, 0 failed\n'),
			    'run': (1, '')})
	assert gate.main(gate.GateOptions.from_args(_args(tmp_path))) == 1
	out = capsys.readouterr().out.splitlines()
	# prepare 1 + pytest 2 errors + the crash with no case to blame 1
	assert out[-1] == '13 passed, 4 failed'
	assert any(l.strip().startswith('prepare') and '1 failed' in l for l in out)


def test_skip_leaves_steps_out_but_never_prepare(tmp_path, monkeypatch, capsys):
	seen = _fake(monkeypatch, {'prepare': (0, ''), 'pytest': (0, '1 passed\n')})
	assert gate.main(gate.GateOptions.from_args(_args(tmp_path, skip='series,kunit'))) == 0
	assert seen == ['prepare', 'pytest']
	assert capsys.readouterr().out.splitlines()[-1] == '1 passed, 0 failed'


def test_steps_beside_the_others_run_in_turn_logged_not_echoed_and_waited_for(tmp_path,
										       capsys):
	import sys
	# each prints its niceness and whether the one before it had ended
	# (each leaves a file as it ends)
	code = ('import os, sys; name, rc, before = sys.argv[1:]; '
		'print(name, "nice", os.nice(0), os.path.exists(before)); '
		'print("3 passed in 1s"); open(name + ".ended", "w"); sys.exit(int(rc))')
	a, b = tmp_path / 'a.log', tmp_path / 'b.log'
	wait_a, wait_b = gate._beside([
		([sys.executable, '-c', code, str(tmp_path / 'a'), '0', str(tmp_path / 'none')], a, 0),
		([sys.executable, '-c', code, str(tmp_path / 'b'), '3', str(tmp_path / 'a.ended')],
		 b, 5)])
	base = __import__('os').nice(0)
	assert wait_b() == (3, f'{tmp_path}/b nice {base + 5} True\n3 passed in 1s\n') and \
		b.read_text() == wait_b()[1]
	assert wait_a() == (0, f'{tmp_path}/a nice {base} False\n3 passed in 1s\n') and \
		a.read_text() == wait_a()[1]
	printed = capsys.readouterr().out
	assert printed.count('beside what follows') == 2 and '$ nice -n 5 ' in printed
	assert '/a nice' not in printed
	assert gate._pytest_step(lambda: (0, 'x\n' * 9 + '3 passed in 1s\n')) == ('pytest', 3, 0)
	assert capsys.readouterr().out.splitlines()[-1] == '3 passed in 1s'
	# failed: the whole report is printed
	assert gate._pytest_step(lambda: (1, 'E boom\n' + 'x\n' * 9 + '1 failed\n')) == \
		('pytest', 0, 1)
	assert 'E boom' in capsys.readouterr().out
	assert gate._pytest_step(lambda: (2, 'interrupted\n'))[2] == 1


def test_a_step_beside_that_cannot_start_fails_and_the_next_still_runs(tmp_path):
	import sys
	gone, ok = gate._beside([([str(tmp_path / 'no-such-command')], tmp_path / 'a.log', 0),
				     ([sys.executable, '-c', 'print(1)'], tmp_path / 'b.log', 0)])
	rc, out = gone()
	assert rc == 1 and 'could not be run' in out and out.count('\n') == 1
	assert ok() == (0, '1\n')


def test_a_step_beside_that_dies_reading_leaves_no_waiter_waiting(tmp_path, monkeypatch):
	import sys
	real = gate._run

	def run(cmd, log, echo=True, nice=0):
		if cmd[-1] == 'die':
			raise UnicodeDecodeError('utf-8', b'\xff', 0, 1, 'invalid start byte')
		return real(cmd, log, echo, nice)
	monkeypatch.setattr(gate, '_run', run)
	dead, ok = gate._beside([(['x', 'die'], tmp_path / 'a.log', 0),
				     ([sys.executable, '-c', 'print(2)'], tmp_path / 'b.log', 0)])
	rc, out = dead()
	assert rc == 1 and 'UnicodeDecodeError' in out
	assert ok() == (0, '2\n')


def test_the_kunit_runs_whole_output_is_printed_and_its_summary_counted(tmp_path, capsys):
	(tmp_path / 'summary.json').write_text(json.dumps({'arches': [
		{'arch': 'arm', 'status': 'PASS', 'passed': 7, 'failed': 0, 'crashed': 0},
		{'arch': 'arm64', 'status': 'BUILD_FAILED', 'passed': 0, 'failed': 0, 'crashed': 0}]}))
	out = ''.join(f'line {i}\n' for i in range(40))
	assert gate._kunit_step(lambda: (1, out), tmp_path, ['arm', 'arm64']) == \
		('KUnit cases (arm,arm64)', 7, 1)
	printed = capsys.readouterr().out
	assert 'line 0\n' in printed and 'line 39\n' in printed
	# no summary at all (the run died): a failure
	assert gate._kunit_step(lambda: (0, ''), tmp_path / 'none', ['arm'])[2] == 1


def test_counts_from_reads_pytest_and_our_closing_lines():
	assert gate.counts_from('x\n470 passed, 2 failed, 3 errors in 9s\n') == (470, 5)
	assert gate.counts_from('x\n12 passed, 0 failed\n') == (12, 0)
	assert gate.counts_from('no summary at all\n') == (0, 0)


def test_check_series_is_the_lean_one_without_boots(tmp_path, monkeypatch):
	"""make test's series step: every patch built in the lean configuration,
	no boots (their cases are the KUnit run's, x86_64 among its arches)."""
	cmds = []
	_fake(monkeypatch, {'prepare': (0, ''), 'check-series': (0, '3 passed, 0 failed\n')})
	real = gate._run

	def run(cmd, log, echo=True, nice=0):
		cmds.append(cmd)
		return real(cmd, log, echo, nice)
	monkeypatch.setattr(gate, '_run', run)
	gate.main(gate.GateOptions.from_args(_args(tmp_path, skip='pytest,kunit')))
	series = [c for c in cmds if 'check-series' in c][0]
	assert '--build-config=lean' in series
	checks = [a for a in series if a.startswith('--checks=')][0][len('--checks='):].split(',')
	assert 'build' in checks and 'boot' not in checks and 'modules' not in checks
	from bklkunit.series import checkplan
	opts = checkplan.SeriesOptions.from_args(
		__import__('bklkunit.cli', fromlist=['x']).build_parser().parse_args(
			['check-series'] + gate.SERIES_ARGS), 3)
	assert opts.build_config == checkplan.BuildConfig.LEAN and not opts.wants('boot')
	assert gate.CI_ARCHES.split(',')[0] == 'x86_64'
