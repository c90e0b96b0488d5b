# SPDX-License-Identifier: GPL-2.0
"""No damaged input ever turns green (issue #17, item 1).

A PASS run's console truncated mid-suite, replaced by binary garbage,
emptied (ktap.log removed too), or swapped for a shorter one: every consumer
(report, compare, baseline, ab) judges the arch again from the console itself,
and a console that disagrees with summary.json is a crash or a regression,
never a pass.  The damaged copies are made here from the recorded
tools/tests/data/console_pass.log."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.analysis import ab
from bklkunit.compare import baseline
from bklkunit.results import model, rundir
from conftest import read_data
from test_baseline import ALPHA, ktap_console, write_results

PASS_LOG = read_data('console_pass.log')
N_CASES = 10           # console_pass.log: 3 parameters + 4 cases, 3 cases


def truncated(text: str) -> str:
	"""Cut in the middle of the second suite."""
	lines = text.splitlines(keepends=True)
	cut = next(i for i, l in enumerate(lines) if 'ok 1 autofs_end_state_bkl_gone' in l) + 1
	return ''.join(lines[:cut])


GARBAGE = bytes((i * 37 + 11) % 256 for i in range(4096))   # the same bytes every time

DAMAGE = {
	'truncated': lambda adir: (adir / 'console.log').write_text(truncated(PASS_LOG)),
	'garbage': lambda adir: (adir / 'console.log').write_bytes(GARBAGE),
	'emptied': lambda adir: ((adir / 'console.log').write_text(''),
				 (adir / 'ktap.log').unlink(missing_ok=True)),
	'removed': lambda adir: ((adir / 'console.log').unlink(),
				 (adir / 'ktap.log').unlink(missing_ok=True)),
	'shorter': lambda adir: (adir / 'console.log').write_text(ktap_console(ALPHA)),
}


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def pass_run(root: Path, parser_tree: Path, arch: str = 'x86_64') -> Path:
	"""A PASS run of console_pass.log, with its ktap.log, as runner.main writes it."""
	rdir = write_results(root, parser_tree, {arch: PASS_LOG})
	(rdir / arch / 'ktap.log').write_text(PASS_LOG)
	s = json.loads((rdir / 'summary.json').read_text())
	assert s['arches'][0]['status'] == 'PASS' and s['arches'][0]['passed'] == N_CASES
	return rdir


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request, tmp_path, parser_tree):
	"""(intact run, damaged copy, what was done)."""
	good = pass_run(tmp_path / 'good', parser_tree)
	bad = pass_run(tmp_path / 'bad', parser_tree)
	DAMAGE[request.param](bad / 'x86_64')
	return good, bad, request.param


def test_the_intact_run_is_green(tmp_path, parser_tree, capsys):
	rdir = pass_run(tmp_path / 'r', parser_tree)
	assert cli.main(['report', str(rdir)]) == 0
	assert '1 of 1 arch(es) PASS' in (rdir / 'index.html').read_text()
	[r] = rundir.load_run(rdir, parser_tree, probe=False)[1]
	assert (r.status, r.disagreement) == ('PASS', '')


# ------------------------------------------------------------------- report


def test_report_never_shows_a_damaged_run_as_pass(damaged, parser_tree, capsys):
	_, bad, how = damaged
	assert cli.main(['report', str(bad)]) == 1
	err = capsys.readouterr().err
	assert 'Traceback' not in err
	assert 'x86_64: summary.json says PASS' in err
	page = (bad / 'index.html').read_text()
	assert '0 of 1 arch(es) PASS' in page and 'x86_64 CRASH' in page
	doc = json.loads((bad / 'kcidb.json').read_text())
	[kunit] = [t for t in doc['tests'] if t['path'] == 'kunit']
	assert kunit['status'] == 'ERROR' and kunit['misc']['arch_status'] == 'CRASH'
	root = ET.parse(bad / 'junit.xml').getroot()
	assert int(root.get('tests')) >= 1
	assert int(root.get('errors')) + int(root.get('failures')) >= 1
	assert any(tc.find('failure') is not None or tc.find('error') is not None
		   for tc in root.iter('testcase'))
	[r] = rundir.load_run(bad, parser_tree, probe=False)[1]
	assert r.status == 'CRASH' and r.reason.startswith('summary.json says PASS, but ')
	assert r.disagreement


def test_report_names_what_is_wrong(tmp_path, parser_tree):
	for how, needle in (('truncated', 'incomplete KTAP'),
			    ('garbage', 'no KTAP output'),
			    ('emptied', 'console.log is empty and there is no ktap.log'),
			    ('removed', 'console.log is missing and there is no ktap.log'),
			    ('shorter', f'3 case result(s), summary.json counts {N_CASES}')):
		bad = pass_run(tmp_path / how, parser_tree)
		DAMAGE[how](bad / 'x86_64')
		[r] = rundir.load_run(bad, parser_tree, probe=False)[1]
		assert needle in r.disagreement, (how, r.disagreement)


def test_a_console_with_a_failure_under_a_pass_summary_is_a_fail(tmp_path, parser_tree):
	rdir = pass_run(tmp_path / 'r', parser_tree)
	(rdir / 'x86_64' / 'console.log').write_text(read_data('console_fail.log'))
	[r] = rundir.load_run(rdir, parser_tree, probe=False)[1]
	assert r.status == 'FAIL' and 'summary.json says PASS' in r.reason


def test_consistent_non_pass_statuses_are_left_alone(tmp_path, parser_tree):
	# A recorded FAIL, CRASH or TIMEOUT whose console agrees is not "damaged".
	rdir = write_results(tmp_path / 'r', parser_tree, {
		'x86_64': read_data('console_fail.log'), 'arm': read_data('console_panic.log')})
	assert [r.status for r in rundir.load_run(rdir, parser_tree, probe=False)[1]] == [
		'FAIL', 'CRASH']
	for r in rundir.load_run(rdir, parser_tree, probe=False)[1]:
		assert r.disagreement == '', (r.arch, r.disagreement)


# ------------------------------------------------------------------ compare


def test_compare_counts_the_lost_cases_as_regressions(damaged, parser_tree, tmp_path, capsys):
	good, bad, how = damaged
	bdir = tmp_path / 'baselines'
	assert cli.main(['baseline', str(good), '--baseline-dir', str(bdir)]) == 0
	capsys.readouterr()
	assert cli.main(['compare', str(bad), '--baseline-dir', str(bdir)]) == 1
	out = capsys.readouterr().out
	assert 'vanished    ' not in out
	assert ' 0 vanished' in out and 'x86_64 (CRASH)' in out
	assert 'summary.json says PASS' in out
	_, comps, _ = baseline.compare(bad, parser_tree, bdir, probe=False, out=_Null())
	[c] = comps
	now = _cases(bad, parser_tree)
	lost = sum(now.get(k) != 'pass' for k in _cases(good, parser_tree))
	assert len(c.regressions) == lost >= 1 and not c.vanished


class _Null:
	def write(self, s):
		return len(s)

	def flush(self):
		pass


def _cases(rdir, parser_tree):
	_, [a] = baseline.load_results(rdir, parser_tree, probe=False)
	return a.cases


# ----------------------------------------------------------------- baseline


def test_baseline_refuses_a_damaged_run(damaged, parser_tree, tmp_path, capsys):
	_, bad, how = damaged
	bdir = tmp_path / 'baselines'
	assert cli.main(['baseline', str(bad), '--baseline-dir', str(bdir)]) == 1
	err = capsys.readouterr().err
	assert 'Traceback' not in err and 'x86_64' in err and 'summary.json says PASS' in err
	assert not bdir.exists() or list(bdir.iterdir()) == []


def test_baseline_records_nothing_when_one_arch_is_damaged(tmp_path, parser_tree):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': PASS_LOG, 'arm': PASS_LOG})
	(rdir / 'arm' / 'console.log').write_text(truncated(PASS_LOG))
	with pytest.raises(Exception, match='arm'):
		baseline.write_baselines(rdir, parser_tree, tmp_path / 'b')
	assert not (tmp_path / 'b').exists()
	# The intact arch alone can be recorded.
	written, _ = baseline.write_baselines(rdir, parser_tree, tmp_path / 'b', arches=['x86_64'])
	assert [p.name for p in written] == ['x86_64.json']


# ----------------------------------------------------------------------- ab


def test_ab_does_not_take_a_damaged_side_for_a_pass(damaged, parser_tree, tmp_path):
	_, bad, how = damaged
	rdir = tmp_path / 'ab'
	pass_run(rdir / 'a', parser_tree)
	(rdir / 'b').parent.mkdir(parents=True, exist_ok=True)
	bad.rename(rdir / 'b')
	x = ab.ArchAB('x86_64', model.ArchResult('x86_64', 'PASS'), model.ArchResult('x86_64', 'PASS'))
	ab.compare_sides(rdir, parser_tree, parser_tree, [x], '')
	assert any('B (series)' in p and 'summary.json says PASS' in p for p in x.problems), \
		x.problems
