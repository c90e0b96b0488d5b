# SPDX-License-Identifier: GPL-2.0
"""Results that survive: the one atomic writer (a full disk, a file size
limit, a failing rename: every result file is the old one or the new one,
never cut), a run interrupted between arches (report, compare and baseline
read what it left), the format version and the statuses every reader
checks, and `clean` under the build directories' locks."""

import errno
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.analysis import ab
from bklkunit.base import atomic, paths
from bklkunit.base.errors import UserError
from bklkunit.ci import merge
from bklkunit.compare import baseline
from bklkunit.results import rundir, seriesjob
from bklkunit.run import clean, plan, runner
from conftest import read_data
from test_baseline import ALPHA, BETA, ktap_console, write_results
from test_ab import abf  # noqa: F401  (fixture)
from test_run import fake, main_env  # noqa: F401,F811  (fixtures)

KUNIT_PY = Path(__file__).resolve().parents[1] / 'kunit.py'
REPORTS = ('junit.xml', 'kcidb.json', 'index.html', 'x86_64/junit.xml')


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


def leftovers(d: Path):
	"""The temporary files of atomic.py left in d (and below)."""
	return sorted(str(p) for p in Path(d).rglob('.*.tmp'))


# ------------------------------------------------------------- the writer


def test_write_text_replaces_the_file_whole_and_keeps_its_mode(tmp_path):
	f = tmp_path / 'a' / 'summary.json'
	atomic.write_text(f, 'one\n')
	mask = os.umask(0o022)
	os.umask(mask)
	assert f.read_text() == 'one\n' and f.stat().st_mode & 0o777 == 0o666 & ~mask
	f.chmod(0o600)
	atomic.write_text(f, 'two\n')
	assert f.read_text() == 'two\n' and f.stat().st_mode & 0o777 == 0o600
	assert leftovers(tmp_path) == []


@pytest.mark.parametrize('fails', ['write', 'fsync', 'replace'])
def test_a_failed_write_keeps_the_old_file_and_names_it(tmp_path, monkeypatch, fails):
	f = tmp_path / 'kcidb.json'
	f.write_text('{"old": true}\n')

	def enospc(*a, **kw):
		raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
	if fails == 'write':
		real_fdopen = os.fdopen

		class Full:
			def __init__(self, fd, mode):
				self.f = real_fdopen(fd, mode)

			def __enter__(self):
				return self

			def __exit__(self, *a):
				self.f.close()

			def write(self, data):
				self.f.write(data[:10])      # part of it, then the disk is full
				self.f.flush()
				enospc()
		monkeypatch.setattr(atomic.os, 'fdopen', Full)
	else:
		monkeypatch.setattr(atomic.os, fails, enospc)
	with pytest.raises(UserError) as e:
		atomic.write_text(f, '{"new": true}\n' * 1000)
	msg = str(e.value)
	assert '\n' not in msg and msg.startswith(f'{f}: not written (No space left on device)')
	assert 'the file there before is unchanged' in msg and e.value.exit_code == 2
	assert f.read_text() == '{"old": true}\n'
	assert leftovers(tmp_path) == []


def test_a_new_file_that_cannot_be_written_is_not_there(tmp_path, monkeypatch):
	monkeypatch.setattr(atomic.os, 'replace',
			    lambda *a: (_ for _ in ()).throw(OSError(errno.EFBIG, 'File too large')))
	with pytest.raises(atomic.WriteError, match='no file was there before'):
		atomic.write_text(tmp_path / 'verdict.json', '{}')
	assert list(tmp_path.iterdir()) == []


# What still writes a file in place, and why: logs a command writes as it
# runs (or an empty one it appends to), a directory built in a temporary
# place and renamed whole, the kernel's autogroup knob.
IN_PLACE = {
	('bench.py', "with open(log, 'w') as f:"),
	('gate.py', "with open(log, 'w') as f:"),
	('progress.py', "with open(log, 'w') as f:"),
	('progress.py', "with open(f'/proc/{pid}/autogroup', 'w') as f:"),
	('checkseries.py', "log.write_text('')"),
	('modulescheck.py', "log.write_text('')"),
	('modulescheck.py', "with open(log, 'a') as f:"),
	('checkseries.py', "with open(log, 'a') as f:"),
	('measure.py', "log.write_text('')"),
	('measure.py', "with open(log, 'a') as f:"),
	('merge.py', 'os.rename(tmp, out)'),
	('tree.py', 'src.rename(dest)'),
	('fixtures.py', "with open(root / path, 'wb') as fh:"),
	('fixtures.py', "with open(path, 'wb') as fh:"),
	('fixtures.py', "(out / MANIFEST).write_text(json.dumps({'generator': GENERATOR_VERSION,"),
	('fixtures.py', 'final.rename(old)'),
	('fixtures.py', 'tmp.rename(final)'),
}
WRITES = re.compile(r"\.write_(text|bytes)\(|\bopen\([^)]*'[wa]b?'|os\.(replace|rename)\(|\.rename\(|"
		    r"\.replace\(tmp|mkstemp\(")


def test_every_result_file_goes_through_the_one_writer():
	"""No module writes a file in place or has an atomic writer of its own,
	but for IN_PLACE."""
	pkg = Path(rundir.__file__).parents[1]
	found = set()
	for p in sorted(pkg.rglob('*.py')):
		if p.name == 'atomic.py':
			continue
		for line in p.read_text().splitlines():
			if WRITES.search(line) and 'atomic.write_' not in line:
				found.add((p.name, line.strip()))
	assert found == IN_PLACE


# -------------------------------------------- a full disk (ulimit -f), for real


def report_files(rdir: Path):
	return {name: (rdir / name).read_bytes() for name in REPORTS}


def test_report_under_a_file_size_limit_leaves_each_file_old_or_new(tmp_path, parser_tree):
	"""`ulimit -f` below the size of some reports: report fails in one line
	naming the file; every report is the one before or the whole new one."""
	rdir = write_results(tmp_path / 'r', parser_tree,
			     {'x86_64': ktap_console(ALPHA, BETA, ('gamma', [(f'c{n}', 'ok')
									    for n in range(60)]))})
	env = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
	cmd = [sys.executable, str(KUNIT_PY), 'report', str(rdir), '--tree', str(parser_tree)]
	assert subprocess.run(cmd, env=env, capture_output=True, text=True).returncode == 0
	new = report_files(rdir)
	sizes = sorted(len(v) for v in new.values())
	limit = (sizes[0] + sizes[-1]) // 2       # some fit, some do not
	assert sizes[0] < limit < sizes[-1]
	old = {name: b'old ' + name.encode() + b'\n' for name in REPORTS}
	for name, data in old.items():
		(rdir / name).write_bytes(data)

	def limited():
		resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
	proc = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=limited)
	assert proc.returncode == 2, proc.stdout + proc.stderr
	err = proc.stderr.strip().splitlines()
	assert len(err) == 1 and err[0].startswith('kunit.py report: error: ' + str(rdir)), err
	assert 'not written (File too large); the file there before is unchanged' in err[0]
	got = report_files(rdir)
	for name in REPORTS:
		assert got[name] in (old[name], new[name]), name
	assert any(got[n] == old[n] for n in REPORTS)
	assert leftovers(rdir) == []
	# Once there is room again, the same report writes every file whole.
	assert subprocess.run(cmd, env=env, capture_output=True, text=True).returncode == 0
	assert report_files(rdir) == new


# ---------------------------------------------------- an interrupted run


def cut(text: str, at: str) -> str:
	lines = text.splitlines()
	return '\n'.join(lines[:next(i for i, l in enumerate(lines) if at in l) + 1]) + '\n'


@pytest.fixture
def interrupted(main_env, monkeypatch):
	"""run of x86_64, arm, arm64 stopped by ^C while arm boots: x86_64
	finished, arm has its logs and half a console, arm64 never started."""
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	real = runner.run_arch

	def run_arch(ktree, arch, bdir, out, *a, **kw):
		if arch == 'arm':
			out.mkdir(parents=True)
			(out / 'build.log').write_text('$ kunit.py build\n')
			(out / 'kunit.log').write_text('$ kunit.py exec\n')
			(out / 'console.log').write_text(cut(read_data('console_pass.log'), '    ok 2'))
			raise KeyboardInterrupt
		return real(ktree, arch, bdir, out, *a, **kw)
	monkeypatch.setattr(runner, 'run_arch', run_arch)
	with pytest.raises(KeyboardInterrupt):
		runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm,arm64', '--parallel', '1')))
	assert not (f.results / 'summary.json').exists()
	assert (f.results / rundir.PLAN).is_file() and (f.results / 'x86_64' / 'verdict.json').is_file()
	return f


def test_an_interrupted_run_reads_as_far_as_it_went(interrupted):
	f = interrupted
	s = rundir.load_summary(f.results)
	assert s['complete'] is False and s['format'] == rundir.FORMAT
	st = {e['arch']: e for e in s['arches']}
	assert [e['arch'] for e in s['arches']] == ['x86_64', 'arm', 'arm64']
	assert st['x86_64']['status'] == 'PASS' and st['x86_64']['passed'] == 10
	assert st['arm']['status'] == 'ERROR' and st['arm']['died']
	assert 'the job ended before arm had a verdict' in st['arm']['reason']
	assert st['arm64']['status'] == 'NOT_RUN' and 'not reached' in st['arm64']['reason']


def test_report_compare_and_baseline_work_on_an_interrupted_run(interrupted, capsys, tmp_path):
	f = interrupted
	r = str(f.results)
	assert cli.main(['report', r, '--tree', str(f.tree)]) == 0
	out = capsys.readouterr()
	assert 'the run ended before its summary.json' in out.err
	assert 'x86_64 PASS, arm ERROR, arm64 NOT_RUN' in out.err
	doc = json.loads((f.results / 'kcidb.json').read_text())
	kunit = {t['misc']['arch']: t['status'] for t in doc['tests'] if t['path'] == 'kunit'}
	assert kunit['x86_64'] == 'PASS' and kunit['arm'] == 'ERROR'
	page = (f.results / 'index.html').read_text()
	assert 'arm64 NOT_RUN' in page and 'arm ERROR' in page
	# baseline: only the arch that finished.
	bdir = tmp_path / 'baselines'
	bdir.mkdir()
	assert cli.main(['baseline', r, '--tree', str(f.tree), '--baseline-dir', str(bdir)]) == 0
	printed = capsys.readouterr().out
	assert sorted(p.name for p in bdir.iterdir()) == ['x86_64.json']
	assert 'arm: the run ended before it had a verdict (ERROR); baseline not recorded' in printed
	assert 'arm64: no case results (NOT_RUN)' in printed
	# compare: the arches it did not finish are not a pass.
	cases = json.loads((bdir / 'x86_64.json').read_text())['cases']
	for arch in ('arm', 'arm64'):
		(bdir / f'{arch}.json').write_text(json.dumps({'format': 1, 'arch': arch,
							       'cases': cases}))
	assert cli.main(['compare', r, '--tree', str(f.tree), '--baseline-dir', str(bdir)]) == 1
	text = capsys.readouterr().out
	assert 'arm64 10 regression(s)' in text and 'REGRESSION  alpha' not in text
	# --json says it is not complete.
	assert cli.main(['report', r, '--tree', str(f.tree), '--json']) == 0
	j = json.loads(capsys.readouterr().out)
	assert j['complete'] is False and [a['status'] for a in j['arches']] == \
		['PASS', 'ERROR', 'NOT_RUN']


def test_merge_reads_an_interrupted_run_as_before(interrupted, tmp_path, capsys):
	f = interrupted
	out = tmp_path / 'merged'
	assert cli.main(['merge', str(out), str(f.results), '--tree', str(f.tree)]) == 1
	s = json.loads((out / 'summary.json').read_text())
	assert s['format'] == rundir.FORMAT
	assert [(e['dir'], e['status']) for e in s['arches']] == [
		('x86_64', 'PASS'), ('arm', 'ERROR'), ('arm64', 'NOT_RUN')]


def test_a_results_directory_with_nothing_in_it_says_so(tmp_path):
	with pytest.raises(UserError, match=r'summary.json not found \(nor run.json\)'):
		rundir.load_summary(tmp_path)


# ------------------------------------------- format versions and statuses


def results(tmp_path, parser_tree):
	return write_results(tmp_path / 'r', parser_tree, {'x86_64': ktap_console(ALPHA)})


def edit(f: Path, **kw):
	doc = json.loads(f.read_text())
	for k, v in kw.items():
		if k == 'status' and 'arches' in doc:
			doc['arches'][0]['status'] = v
		else:
			doc[k] = v
	f.write_text(json.dumps(doc))


@pytest.mark.parametrize('verb', ['report', 'compare', 'baseline'])
@pytest.mark.parametrize('where,change,says', [
	('summary.json', {'format': 2}, 'format 2, written by a newer kunit.py (this one reads format 1'),
	('summary.json', {'format': '1'}, '"format" is not a version number (\'1\')'),
	('summary.json', {'status': 'PASSED'}, "arch x86_64: unknown status 'PASSED' (known: PASS, FAIL"),
	('x86_64/verdict.json', {'format': 7}, 'format 7, written by a newer kunit.py'),
	('x86_64/verdict.json', {'status': 'passed'}, "verdict.json: unknown status 'passed'"),
])
def test_a_newer_format_or_an_unknown_status_is_refused_in_one_line(tmp_path, parser_tree, capsys,
								     verb, where, change, says):
	rdir = results(tmp_path, parser_tree)
	edit(rdir / where, **change)
	before = sorted(p.name for p in rdir.iterdir())
	bdir = tmp_path / 'b'
	bdir.mkdir()
	rc = cli.main([verb, str(rdir), '--tree', str(parser_tree), '--baseline-dir', str(bdir)]
		      if verb != 'report' else [verb, str(rdir), '--tree', str(parser_tree)])
	err = capsys.readouterr().err
	assert rc == 2
	lines = err.strip().splitlines()
	assert len(lines) == 1 and str(rdir / where) in lines[0] and says in lines[0], err
	assert sorted(p.name for p in rdir.iterdir()) == before and list(bdir.iterdir()) == []


def test_a_status_the_tool_does_not_know_never_reads_as_a_pass(tmp_path, parser_tree, capsys):
	"""Before the check, "PASSED" made report exit 0, KCIDB say MISS and
	compare say "no regressions"."""
	rdir = results(tmp_path, parser_tree)
	edit(rdir / 'summary.json', status='PASSED')
	assert cli.main(['report', str(rdir), '--tree', str(parser_tree), '--json']) == 2
	j = json.loads(capsys.readouterr().out)
	assert j['exit_status'] == 2 and "unknown status 'PASSED'" in j['error']
	assert not (rdir / 'kcidb.json').exists()


def test_results_written_now_carry_their_format(main_env):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64'))) == 0
	for name in ('summary.json', 'run.json', 'x86_64/verdict.json'):
		text = (f.results / name).read_text()
		assert text.startswith('{\n "format": 1,\n'), name


def test_run_json_and_series_json_and_baselines_of_a_newer_format_are_refused(tmp_path,
									       parser_tree):
	rdir = results(tmp_path, parser_tree)
	(rdir / 'summary.json').unlink()
	rundir.write_plan(rdir, {'tree': str(parser_tree)}, ['x86_64'], 'default', '', '')
	edit(rdir / rundir.PLAN, format=3)
	with pytest.raises(UserError, match=r'run.json: format 3, written by a newer kunit.py'):
		rundir.load_summary(rdir)
	with pytest.raises(UserError, match=r'run.json: format 3'):
		merge.read_job(rdir)
	f = tmp_path / 'series.json'
	seriesjob.write_series_job(f, seriesjob.SeriesJob(patches=3))
	edit(f, format=2)
	with pytest.raises(UserError, match=r'series.json: format 2, written by a newer kunit.py'):
		seriesjob.read_series_job(f)
	bdir = tmp_path / 'b'
	bdir.mkdir()
	(bdir / 'x86_64.json').write_text(json.dumps({'format': 2, 'cases': {'a.b': 'pass'}}))
	with pytest.raises(UserError, match='format 2, written by a newer kunit.py'):
		baseline.load_baseline(bdir, 'x86_64')
	(bdir / 'x86_64.json').write_text(json.dumps({'format': 1, 'cases': {'a.b': 'PASSED'}}))
	with pytest.raises(UserError, match="case a.b: unknown status 'PASSED'"):
		baseline.load_baseline(bdir, 'x86_64')


# ----------------------------------------------------- clean and a build


def hold(lock: Path):
	"""A process that holds lock as a build does (paths.locked) until its
	stdin closes; returns once it holds it."""
	code = ('import sys; from pathlib import Path; from bklkunit.base import paths\n'
		f'with paths.locked(Path({str(lock)!r}), "a build"):\n'
		'    print("held", flush=True); sys.stdin.read()\n')
	proc = subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,
				stdout=subprocess.PIPE, text=True,
				env=dict(os.environ, PYTHONPATH=str(KUNIT_PY.parent)))
	assert proc.stdout is not None and proc.stdout.readline() == 'held\n'
	return proc


def test_clean_waits_for_a_build_that_holds_its_build_directory(tmp_path):
	cache = tmp_path / 'cache'
	bdir = cache / 'build' / 'debian' / 'x86_64'
	(bdir / 'fs').mkdir(parents=True)
	(bdir / 'vmlinux').write_text('a kernel')
	other = cache / 'build' / 'debian' / 'arm'
	other.mkdir()
	(cache / 'build' / 'debian' / 'arm.lock').write_text('')
	(cache / 'results' / '20261207-000000').mkdir(parents=True)
	builder = hold(cache / 'build' / 'debian' / 'x86_64.lock')
	cleaner = subprocess.Popen([sys.executable, str(KUNIT_PY), 'clean', '--cache-dir', str(cache)],
				   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
	assert cleaner.stdout is not None
	seen = []
	for line in cleaner.stdout:
		seen.append(line)
		if line.startswith('Waiting for'):
			break
	# It waits for the build, whose directory is still there, untouched.
	assert seen[-1].startswith(f'Waiting for the build directory {bdir}: in use by pid '
				   f'{builder.pid}'), seen
	assert f'Removing {other}\n' in seen
	assert (bdir / 'vmlinux').read_text() == 'a kernel' and cleaner.poll() is None
	builder.communicate('')           # the build ends
	rest, err = cleaner.communicate()
	assert cleaner.returncode == 0, err
	assert f'Removing {bdir}\n' in rest and not (cache / 'build').exists()
	assert not (cache / 'results').exists()


def test_a_build_waiting_for_a_lock_clean_removed_locks_it_anew(tmp_path):
	"""clean removes a lock file while it holds it: a build that was waiting
	on that file locks the file made again, not the one removed (else a
	second build could take the new one beside it)."""
	lock = tmp_path / 'build' / 'k' / 'x86_64.lock'
	code = ('import os, sys; from pathlib import Path; from bklkunit.base import paths\n'
		f'lock = Path({str(lock)!r})\n'
		'with paths.locked(lock, "the build directory"):\n'
		'    print("held", os.stat(lock).st_ino, flush=True)\n'
		'    sys.stdin.read()\n')
	with paths.locked(lock, 'the build directory'):
		builder = subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,
					   stdout=subprocess.PIPE, text=True,
					   env=dict(os.environ, PYTHONPATH=str(KUNIT_PY.parent)))
		assert builder.stdout is not None
		assert builder.stdout.readline().startswith('Waiting for the build directory')
		lock.unlink()                    # as clean does, holding it
	try:
		held = builder.stdout.readline().split()
		assert held[0] == 'held' and lock.exists()
		# It holds the file that is there now: nobody else can take it.
		assert int(held[1]) == os.stat(lock).st_ino
		with pytest.raises(UserError, match=f'in use by pid {builder.pid}'):
			with paths.locked(lock, 'the build directory', wait=False):
				pass
	finally:
		builder.communicate('')


def test_clean_all_refuses_while_a_prepare_holds_the_work_tree(tmp_path, capsys):
	cache = tmp_path / 'cache'
	(cache / 'src' / 'linux-source-6.12').mkdir(parents=True)
	builder = hold(cache / 'src' / 'linux-source-6.12.lock')
	try:
		assert cli.main(['clean', '--all', '--cache-dir', str(cache)]) == 2
		err = capsys.readouterr().err
		assert f'{cache / "src" / "linux-source-6.12"} is in use by pid {builder.pid}' in err
		assert (cache / 'src' / 'linux-source-6.12').is_dir()
	finally:
		builder.communicate('')
	assert cli.main(['clean', '--all', '--cache-dir', str(cache)]) == 0
	assert not cache.exists()


def test_clean_removes_what_it_did_before(tmp_path, capsys):
	cache = tmp_path / 'cache'
	for d in ('build/debian/x86_64', 'pristine/build/k/arm', 'results/x', 'src/tree', 'ccache'):
		(cache / d).mkdir(parents=True)
	assert clean.clean(cache) and sorted(p.name for p in cache.iterdir()) == [
		'ccache', 'pristine', 'src']
	assert list((cache / 'pristine').iterdir()) == []
	shutil.rmtree(cache)


def test_an_ab_stopped_between_arches_leaves_two_readable_sides(abf, monkeypatch, capsys):
	"""ab of x86_64 and arm64 stopped by ^C while arm64's B side boots:
	each side reads as a run that ended there (x86_64 as it finished,
	arm64 ERROR on B, NOT_RUN on A)."""
	f = abf
	for side in ('a', 'b'):
		f.ctl_write(side, 'x86_64', 'console', ktap_console(ALPHA))
	real = runner.run_arch

	def run_arch(ktree, arch, bdir, out, *a, **kw):
		if arch == 'arm64':
			out.mkdir(parents=True)
			(out / 'build.log').write_text('$ kunit.py build\n')
			raise KeyboardInterrupt
		return real(ktree, arch, bdir, out, *a, **kw)
	monkeypatch.setattr(runner, 'run_arch', run_arch)
	with pytest.raises(KeyboardInterrupt):
		ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64,arm64', '--parallel', '1')))
	capsys.readouterr()
	for side, arm64 in (('a', 'NOT_RUN'), ('b', 'ERROR')):
		s = rundir.load_summary(f.results / side)
		assert s['complete'] is False
		assert [(e['arch'], e['status']) for e in s['arches']] == [('x86_64', 'PASS'),
									  ('arm64', arm64)]
		assert cli.main(['report', str(f.results / side), '--tree', s['tree']]) == 0
		assert (f.results / side / 'kcidb.json').is_file()
