# SPDX-License-Identifier: GPL-2.0
"""The command line: the verbs in the top-level help, --version, run's
options in groups, --json of run, report and compare (one versioned
shape), commands logged shell-quoted (and so in KCIDB)."""

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bklkunit import cli, jsonout
from bklkunit.results import rundir
from bklkunit.run import plan, runner
from test_baseline import ALPHA, ktap_console, write_results
from test_run import fake, main_env  # noqa: F401,F811  (fixtures)

KUNIT_PY = Path(__file__).resolve().parents[1] / 'kunit.py'
VERBS = ('prepare', 'export', 'run', 'ab', 'bench', 'mutate', 'fixtures', 'check-series', 'test',
	 'deps', 'report', 'baseline', 'compare', 'merge', 'ci-config', 'clean')


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def kunit_py(*argv):
	return subprocess.run([sys.executable, str(KUNIT_PY), *argv], capture_output=True, text=True)


def test_the_top_level_help_lists_every_verb_and_what_run_costs():
	proc = kunit_py('--help')
	assert proc.returncode == 0
	out = proc.stdout
	assert 'Argument parsing' not in out          # not a module's docstring
	assert set(cli.build_parser()._subparsers._group_actions[0].choices) == set(VERBS)
	listed = out[out.index('verbs:'):]
	for verb in VERBS:
		assert f'\n    {verb} ' in listed or f'\n    {verb}\n' in listed, verb
	assert 'about 45 minutes cold on 2 busy cores' in ' '.join(out.split())
	assert 'x86_64 and s390x' in out and '--arch=all' in out and 'run --arch=x86_64' in out


def test_version():
	proc = kunit_py('--version')
	assert proc.returncode == 0 and proc.stderr == ''
	line = proc.stdout.strip()
	assert line.startswith('kunit.py ') and '\n' not in line
	assert f'results format {rundir.FORMAT}, --json format {jsonout.FORMAT}' in line


@pytest.mark.parametrize('verb', ['run', 'ab'])
def test_every_option_of_run_is_in_a_named_group(verb):
	p = cli.build_parser()._subparsers._group_actions[0].choices[verb]
	titles = {g.title for g in p._action_groups}
	assert {'what to run', 'the build', 'the guest', 'results', 'output'} <= titles
	loose = [a.option_strings[0] for g in p._action_groups if g.title == 'options'
		 for a in g._group_actions if a.help != '==SUPPRESS==']
	assert loose == ['-h'], loose
	text = p.format_help()
	assert text.index('the build:') < text.index('\n  --jobs') < text.index('the guest:')
	assert text.index('the guest:') < text.index('\n  --smp') < text.index('results:')


def test_every_verb_help_says_what_it_does():
	for verb in VERBS:
		p = cli.build_parser()._subparsers._group_actions[0].choices[verb]
		assert p.description, verb


# ------------------------------------------------------------------ --json


def test_run_json_is_one_document_on_stdout(main_env, capfd):
	f = main_env
	f.scenario('x86_64', console='console_fail.log')
	f.scenario('arm', console='console_pass.log')
	argv = ['run', '--cache-dir', str(f.cache), '--results-dir', str(f.results), '--no-install',
		'--arch', 'x86_64,arm', '--json']
	assert cli.main(argv) == 1
	out, err = capfd.readouterr()
	doc = json.loads(out)                   # stdout is the document, nothing else
	assert 'x86_64: build' in err and 'Results: ' in err
	assert doc['format'] == 1 and doc['command'] == 'run' and doc['exit_status'] == 1
	assert doc['error'] is None and doc['complete'] is True
	assert doc['results_dir'] == str(f.results) and doc['profile'] == 'default'
	assert [(a['arch'], a['status']) for a in doc['arches']] == [('x86_64', 'FAIL'), ('arm', 'PASS')]
	assert doc['arches'][0]['failed'] >= 1 and doc['arches'][0]['failures']
	assert set(doc['reports']) == {'junit.xml', 'kcidb.json', 'index.html'}
	assert doc['compare'] is None
	assert set(doc) == {'format', 'command', 'exit_status', 'error', 'results_dir', 'complete',
			    'tree', 'kernel_version', 'debian_version', 'series', 'series_hash', 'head',
			    'profile', 'filter_glob', 'arches', 'reports', 'compare'}


def test_report_and_compare_json(tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree,
			     {'x86_64': ktap_console(ALPHA, ('beta', [('p', 'ok'), ('q', 'not ok')]))})
	assert cli.main(['report', str(rdir), '--tree', str(parser_tree), '--json']) == 0
	doc = json.loads(capsys.readouterr().out)
	assert doc['command'] == 'report' and doc['reports']['kcidb.json'] == str(rdir / 'kcidb.json')
	assert doc['arches'][0]['status'] == 'FAIL' and doc['compare'] is None
	bdir = tmp_path / 'b'
	bdir.mkdir()
	(bdir / 'x86_64.json').write_text(json.dumps({'format': 1, 'arch': 'x86_64', 'cases': {
		'alpha.one': 'pass', 'beta.p': 'pass', 'beta.q': 'pass', 'gone.x': 'pass'}}))
	assert cli.main(['compare', str(rdir), '--tree', str(parser_tree), '--baseline-dir',
			 str(bdir), '--json']) == 1
	captured = capsys.readouterr()
	doc = json.loads(captured.out)
	assert 'compare: x86_64 1 regression(s)' in captured.err
	assert doc['command'] == 'compare' and doc['exit_status'] == 1 and doc['reports'] is None
	c = doc['compare']
	assert c['regressions'] == 1
	a = c['arches'][0]
	assert a['regressions'] == [{'case': 'beta.q', 'was': 'pass', 'now': 'fail'}]
	assert a['vanished'] == [{'case': 'gone.x', 'was': 'pass'}]
	assert {'case': 'alpha.two', 'now': 'pass'} in a['new'] and a['has_baseline'] is True


def test_an_error_is_still_one_document(tmp_path, capsys):
	assert cli.main(['report', str(tmp_path / 'nothing'), '--json']) == 2
	captured = capsys.readouterr()
	doc = json.loads(captured.out)
	assert doc['exit_status'] == 2 and 'summary.json not found' in doc['error']
	assert doc['arches'] == [] and doc['results_dir'] is None
	assert captured.err.count('\n') == 1 and 'kunit.py report: error:' in captured.err


# ------------------------------------------------- commands shell-quoted


def test_the_build_command_is_logged_shell_quoted_and_so_in_kcidb(main_env):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	weird = 'CONFIG_CMDLINE="quiet loglevel=3"'
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--kconfig-add', weird))) == 0
	first = (f.results / 'x86_64' / 'build.log').read_text().splitlines()[0]
	assert first.startswith('$ ')
	argv = shlex.split(first[2:])           # the line runs again as it was run
	assert '--kconfig_add=' + weird in argv or '--kconfig_add' in argv and weird in argv
	doc = json.loads((f.results / 'kcidb.json').read_text())
	assert doc['builds'][0]['command'] == first[2:]
