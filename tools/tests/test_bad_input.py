# SPDX-License-Identifier: GPL-2.0
"""Bad input never costs a traceback (issue #17, items 4-7): every argument
is checked before anything is written, numbers have ranges, and cli.main
turns every expected error into one line on stderr and exit status 2 (a
traceback only with -v)."""

import json
import os
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.base import deps
from bklkunit.base.errors import UserError
from bklkunit.results import rundir
from bklkunit.results.export import kcidb
from bklkunit.run import plan, runner
from test_baseline import ALPHA, ktap_console, write_results
from test_run import fake, main_env  # noqa: F401  (fixtures)

# Taken before conftest's autouse fixture replaces it for every test.
_REAL_ENSURE = deps.ensure


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def one_line_error(capsys, verb: str) -> str:
	"""stderr of a failed command: exactly one line, no traceback."""
	err = capsys.readouterr().err
	assert 'Traceback' not in err, err
	lines = err.strip().splitlines()
	assert len(lines) == 1 and lines[0].startswith(f'kunit.py {verb}: error: '), err
	return lines[0]


# ------------------------------------------------------------ 5: number ranges


@pytest.mark.parametrize('option', ['--timeout=-1', '--timeout=0', '--smp=0', '--jobs=0',
				    '--parallel=-3', '--suite-timeout=-5', '--suite-timeout=0',
				    '--rerun-failures=-1', '--progress-interval=0'])
@pytest.mark.parametrize('verb', ['run', 'ab'])
def test_numbers_out_of_range_are_refused(verb, option, tmp_path, capsys):
	with pytest.raises(SystemExit) as e:
		cli.main([verb, '--cache-dir', str(tmp_path / 'c'), '--no-install', option])
	assert e.value.code == 2
	err = capsys.readouterr().err
	name = option.split('=')[0]
	assert f'argument {name}: must be at least' in err and 'Traceback' not in err
	assert not (tmp_path / 'c').exists()


def test_numbers_in_range_are_taken():
	args = cli.build_parser().parse_args(['run', '--timeout=1', '--smp=1', '--jobs=1',
					      '--parallel=0', '--suite-timeout=1',
					      '--rerun-failures=0', '--progress-interval=1'])
	assert (args.timeout, args.smp, args.jobs, args.parallel, args.suite_timeout,
		args.rerun_failures, args.progress_interval) == (1, 1, 1, 0, 1, 0, 1)


def test_check_series_jobs_range(capsys):
	with pytest.raises(SystemExit):
		cli.build_parser().parse_args(['check-series', '--jobs=0'])
	assert 'argument --jobs: must be at least 1' in capsys.readouterr().err


# -------------------------------------- 4, 7: run checks before it writes


@pytest.fixture
def watched(main_env, monkeypatch):
	"""main_env, recording whether the tree step ran."""
	f = main_env
	f.steps = []
	real = runner.resolve_tree

	def resolve_tree(req):
		f.steps.append('tree')
		return real(req)
	monkeypatch.setattr(runner, 'resolve_tree', resolve_tree)
	return f


def test_a_missing_kunitconfig_leaves_latest_alone(watched, capsys):
	f = watched
	f.scenario('x86_64', console='console_pass.log')
	base = f.cache / 'results'
	good = base / '20260101-000000'
	good.mkdir(parents=True)
	(good / 'summary.json').write_text('{"arches": []}\n')
	(base / 'latest').symlink_to(good.name)
	rc = cli.main(['run', '--cache-dir', str(f.cache), '--no-install', '--arch', 'x86_64',
		       '--kunitconfig', str(f.root / 'nonexistent.config')])
	assert rc == 2
	assert 'nonexistent.config does not exist' in one_line_error(capsys, 'run')
	assert f.steps == [] and f.ensured == []
	assert os.readlink(base / 'latest') == good.name
	assert sorted(p.name for p in base.iterdir()) == [good.name, 'latest']


def test_latest_moves_only_once_the_run_has_its_summary(watched, monkeypatch):
	f = watched
	f.scenario('x86_64', console='console_pass.log')
	seen = []
	real = runner.run_arch

	def spy(ktree, arch, bdir, out, *a, **kw):
		latest = f.cache / 'results' / 'latest'
		seen.append(latest.is_symlink())
		return real(ktree, arch, bdir, out, *a, **kw)
	monkeypatch.setattr(runner, 'run_arch', spy)
	args = cli.build_parser().parse_args(['run', '--cache-dir', str(f.cache), '--no-install',
					      '--arch', 'x86_64', '--no-ccache'])
	assert runner.main(plan.RunRequest.from_args(args)) == 0
	assert seen == [False]
	latest = f.cache / 'results' / 'latest'
	assert (latest / 'summary.json').is_file()


@pytest.mark.parametrize('where', ['file', 'under-a-file', 'proc'])
def test_an_unusable_results_dir_is_refused_first(watched, capsys, where):
	f = watched
	f.scenario('x86_64', console='console_pass.log')
	afile = f.root / 'a-file'
	afile.write_text('not a directory\n')
	if where == 'proc':
		if not Path('/proc/self').is_dir():
			pytest.skip('no /proc')
		rdir = Path('/proc/bkl-kunit-results')
	else:
		rdir = afile if where == 'file' else afile / 'results'
	rc = cli.main(['run', '--cache-dir', str(f.cache), '--no-install', '--arch', 'x86_64',
		       '--results-dir', str(rdir)])
	assert rc == 2
	assert str(rdir) in one_line_error(capsys, 'run')
	assert f.steps == [] and f.ensured == []
	assert afile.read_text() == 'not a directory\n'
	assert not f.cache.exists()


def test_run_compare_with_a_missing_baseline_dir_is_refused_first(watched, capsys):
	f = watched
	rc = cli.main(['run', '--cache-dir', str(f.cache), '--no-install', '--arch', 'x86_64',
		       '--compare', '--baseline-dir', str(f.root / 'no' / 'such' / 'dir')])
	assert rc == 2
	assert 'baseline' in one_line_error(capsys, 'run')
	assert f.steps == [] and f.ensured == []


def test_run_tree_that_is_not_a_kernel_tree_is_refused_first(watched, capsys):
	f = watched
	rc = cli.main(['run', '--cache-dir', str(f.cache), '--no-install', '--arch', 'x86_64',
		       '--tree', str(f.root / 'nowhere')])
	assert rc == 2
	one_line_error(capsys, 'run')
	assert f.ensured == [] and not f.cache.exists()


def test_ab_checks_its_arguments_before_it_takes_the_lock(tmp_path, capsys):
	cache = tmp_path / 'c'
	rc = cli.main(['ab', '--cache-dir', str(cache), '--no-install', '--arch', 'x86_64',
		       '--kunitconfig', str(tmp_path / 'nonexistent.config')])
	assert rc == 2
	one_line_error(capsys, 'ab')
	assert not cache.exists()


# ------------------------------------------------ 6: compare with nothing to do


def test_compare_with_a_missing_baseline_dir(tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	rc = cli.main(['compare', str(rdir), '--baseline-dir', str(tmp_path / 'no' / 'dir')])
	assert rc == 2
	assert 'no/dir' in one_line_error(capsys, 'compare')


def test_compare_with_a_baseline_dir_that_is_a_file(tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	(tmp_path / 'f').write_text('')
	assert cli.main(['compare', str(rdir), '--baseline-dir', str(tmp_path / 'f')]) == 2
	one_line_error(capsys, 'compare')


@pytest.mark.parametrize('verb', ['compare', 'baseline', 'report'])
def test_a_run_without_arches(verb, tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree, {})
	bdir = tmp_path / 'b'
	bdir.mkdir()
	extra = ['--baseline-dir', str(bdir)] if verb != 'report' else []
	assert cli.main([verb, str(rdir)] + extra) == 2
	assert 'no arch' in one_line_error(capsys, verb)


# ------------------------------------------------- 7: damaged result files


@pytest.mark.parametrize('text', ['[]', '"x"', '3', 'null', '{"arches": {}}',
				  '{"arches": [3]}', '{"arches": [{"status": "PASS"}]}',
				  '{"arches": [{"arch": "x86_64", "status": 7}]}',
				  '{"arches": [{"arch": "x86_64"}], "tree": 5}'])
@pytest.mark.parametrize('verb', ['report', 'compare', 'baseline'])
def test_a_summary_that_is_not_a_run(verb, text, tmp_path, parser_tree, capsys):
	rdir = tmp_path / 'r'
	rdir.mkdir()
	(rdir / 'summary.json').write_text(text + '\n')
	bdir = tmp_path / 'b'
	bdir.mkdir()
	extra = ['--tree', str(parser_tree)] + (['--baseline-dir', str(bdir)]
						  if verb != 'report' else [])
	assert cli.main([verb, str(rdir)] + extra) == 2
	assert 'summary.json' in one_line_error(capsys, verb)
	assert sorted(p.name for p in rdir.iterdir()) == ['summary.json']
	assert list(bdir.iterdir()) == []


def test_summary_json_in_binary_garbage(tmp_path, parser_tree, capsys):
	rdir = tmp_path / 'r'
	rdir.mkdir()
	(rdir / 'summary.json').write_bytes(b'\xff\xfe\x00garbage')
	assert cli.main(['report', str(rdir), '--tree', str(parser_tree)]) == 2
	one_line_error(capsys, 'report')


@pytest.mark.parametrize('doc', [{'cases': {'alpha.one': 'pass'}, 'environment': 'oops'},
				 {'cases': {'alpha.one': 3}},
				 {'cases': {'alpha.one': 'pass'}, 'arch': 'arm'},
				 [], 'oops'])
def test_a_baseline_that_is_not_a_baseline(doc, tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	bdir = tmp_path / 'b'
	bdir.mkdir()
	(bdir / 'x86_64.json').write_text(json.dumps(doc))
	assert cli.main(['compare', str(rdir), '--baseline-dir', str(bdir)]) == 2
	assert 'x86_64.json' in one_line_error(capsys, 'compare')


@pytest.mark.parametrize('verb', ['report', 'baseline'])
def test_a_results_dir_that_cannot_be_written(verb, tmp_path, parser_tree, capsys,
					       monkeypatch):
	# As root every directory is writable: what a user without write
	# permission sees is simulated where the tool asks.
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	target = rdir if verb == 'report' else tmp_path / 'b'
	target.mkdir(exist_ok=True)
	before = sorted(p.name for p in target.iterdir())
	real = os.access
	monkeypatch.setattr(os, 'access', lambda p, mode, **kw: (
		False if Path(p) == target and mode & os.W_OK else real(p, mode, **kw)))
	extra = ['--baseline-dir', str(target)] if verb == 'baseline' else []
	assert cli.main([verb, str(rdir)] + extra) == 2
	assert str(target) in one_line_error(capsys, verb)
	assert sorted(p.name for p in target.iterdir()) == before


def test_a_write_that_fails_anyway_is_one_line(tmp_path, parser_tree, capsys, monkeypatch):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})

	def refuse(*a, **kw):
		raise PermissionError(13, 'Permission denied', str(rdir / 'kcidb.json'))
	monkeypatch.setattr(kcidb, 'kcidb_document', refuse)
	assert cli.main(['report', str(rdir)]) == 2
	line = one_line_error(capsys, 'report')
	assert 'Permission denied' in line and 'kcidb.json' in line


def test_verbose_shows_the_traceback(tmp_path, parser_tree, capsys, monkeypatch):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})

	def refuse(*a, **kw):
		raise PermissionError(13, 'Permission denied', str(rdir / 'kcidb.json'))
	monkeypatch.setattr(kcidb, 'kcidb_document', refuse)
	assert cli.main(['report', '-v', str(rdir)]) == 2
	err = capsys.readouterr().err
	assert 'Traceback' in err and err.strip().splitlines()[-1].startswith(
		'kunit.py report: error: ')


def test_every_verb_has_verbose():
	parser = cli.build_parser()
	for verb in ('prepare', 'export', 'run', 'ab', 'bench', 'fixtures', 'check-series',
		     'test', 'deps', 'report', 'baseline', 'compare', 'clean'):
		argv = [verb, '-v'] + (['x'] if verb in ('report', 'baseline', 'compare') else [])
		assert parser.parse_args(argv).verbose is True, verb


def test_an_internal_error_is_one_line_without_verbose(tmp_path, parser_tree, capsys,
							 monkeypatch):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})

	def bug(*a, **kw):
		raise AttributeError("'list' object has no attribute 'get'")
	monkeypatch.setattr(kcidb, 'kcidb_document', bug)
	assert cli.main(['report', str(rdir)]) == 1
	err = capsys.readouterr().err
	assert 'Traceback' not in err and len(err.strip().splitlines()) == 1
	assert 'internal error' in err and '-v' in err


def test_dpkg_query_missing_from_path(tmp_path, monkeypatch):
	monkeypatch.setenv('PATH', str(tmp_path / 'empty-bin'))
	with pytest.raises(UserError, match='dpkg-query'):
		deps.missing(['git'])


def test_debian_version_without_dpkg_query(tmp_path, monkeypatch):
	from conftest import _REAL_DEBIAN_VERSION
	monkeypatch.setenv('PATH', str(tmp_path / 'empty-bin'))
	with pytest.raises(UserError, match='dpkg-query'):
		_REAL_DEBIAN_VERSION()


def test_deps_without_dpkg_query_is_one_line(tmp_path, monkeypatch, capsys):
	monkeypatch.setattr(deps, 'ensure', _REAL_ENSURE)     # conftest forbids the real one
	monkeypatch.setenv('PATH', str(tmp_path / 'empty-bin'))
	assert cli.main(['deps', '--no-install', '--arch', 'x86_64']) == 2
	assert 'dpkg-query' in one_line_error(capsys, 'deps')




def test_report_checks_the_origin_before_it_writes(tmp_path, parser_tree, capsys):
	rdir = write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})
	before = sorted(p.name for p in rdir.rglob('*'))
	assert cli.main(['report', str(rdir), '--origin', 'Not-Valid']) == 2
	assert 'origin' in one_line_error(capsys, 'report')
	assert sorted(p.name for p in rdir.rglob('*')) == before
