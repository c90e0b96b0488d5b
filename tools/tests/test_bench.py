# SPDX-License-Identifier: GPL-2.0
"""bench: plain kunit.py against our run, with a stub kunit.py in a fake
prepared repository (no build, no boot)."""

import contextlib
import hashlib
import json
import os
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.analysis import bench
from bklkunit.base import deps, paths
from bklkunit.base.errors import UserError
from bklkunit.run import plan
from conftest import git, read_data
from test_run import fake, with_ccache  # noqa: F401 (fixtures: repo fragments, stub controls)

EDIT = 'fs/autofs/tests/autofs_kunit.c'
ORIGINAL = b'// SPDX-License-Identifier: GPL-2.0\n/* the autofs suite */\nint x;\n'

# tools/testing/kunit/kunit.py of the fake tree: `run` (the plain side),
# `build` and `exec` (ours, through runner.py).  Each call is logged with the
# edit file's hash as it saw it; <ctl>/fail_<verb> makes a verb fail, and
# <ctl>/fail_edited fails every verb while the edit is in.
STUB = r'''
import hashlib, json, os, sys
from pathlib import Path

ctl = Path(os.environ['BKL_STUB_CTL'])
root = Path(__file__).resolve().parents[3]
verb, rest = sys.argv[1], sys.argv[2:]
opts = {}
for a in rest:
	if a.startswith('--') and '=' in a:
		k, v = a[2:].split('=', 1)
		opts.setdefault(k, []).append(v)
edit = (root / 'fs/autofs/tests/autofs_kunit.c').read_bytes()
with open(ctl / 'calls.jsonl', 'a') as f:
	f.write(json.dumps({'verb': verb, 'argv': rest, 'tree': str(root),
			    'ccache_dir': os.environ.get('CCACHE_DIR'),
			    'edit_sha': hashlib.sha256(edit).hexdigest()}) + '\n')
bd = Path(opts['build_dir'][0])
edited = (ctl / 'fail_edited').exists() and b'bkl_bench_edit' in edit
if (ctl / f'fail_{verb}').exists() or edited:
	print('make: *** [Makefile:224: __sub-make] Error 2')
	sys.exit(1)
if verb in ('run', 'build'):
	bd.mkdir(exist_ok=True)
	(bd / '.config').write_text('CONFIG_KUNIT=y\n')
	(bd / 'vmlinux').write_bytes(os.urandom(64))
if verb in ('run', 'exec'):
	(bd / 'test.log').write_text((ctl / 'console').read_text())
	if 'json' in opts:
		Path(opts['json'][0]).write_text('{}\n')
if verb == 'run':
	print('[07:00:00] Elapsed time: 3.000s total, 0.500s configuring, 2.000s building, 0.500s running')
elif verb == 'build':
	print('[07:00:00] Elapsed time: 2.500s')
elif verb == 'exec':
	print('[07:00:00] Elapsed time: 0.500s')
'''


def sha(data: bytes) -> str:
	return hashlib.sha256(data).hexdigest()


class Bench:
	def __init__(self, f, tmp_path):
		self.f = f
		self.cache = tmp_path / 'bcache'
		self.main = self.cache / 'src' / 'linux-fake'
		self.results = tmp_path / 'bench-results'
		self.lay = bench.Layout(self.cache)

	def calls(self, verb=None):
		return self.f.calls(verb)

	def args(self, *argv):
		return cli.build_parser().parse_args(
			['bench', '--cache-dir', str(self.cache), '--results-dir', str(self.results),
			 # Stub timings are noise: no row is flagged unless a test says so.
			 '--no-install', '--limit', '1e9'] + list(argv))

	def json(self):
		return json.loads((self.results / 'bench.json').read_text())


@pytest.fixture
def b(fake, tmp_path, monkeypatch, kernel_tree):
	"""A fake prepared repository whose kunit.py is the stub; ours runs in
	this process (cli.main), plain as a real subprocess."""
	bb = Bench(fake, tmp_path)
	kdir = bb.main / 'tools/testing/kunit'
	kdir.mkdir(parents=True)
	for name in ('kunit_parser.py', 'kunit_printer.py', 'kunit_json.py'):
		(kdir / name).write_bytes((kernel_tree / 'tools/testing/kunit' / name).read_bytes())
	(kdir / 'kunit.py').write_text(STUB)
	(bb.main / 'Makefile').write_text('VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n')
	(bb.main / EDIT).parent.mkdir(parents=True)
	(bb.main / EDIT).write_bytes(ORIGINAL)
	git(bb.main, 'init', '-q', '-b', 'work')
	git(bb.main, 'add', '-f', '-A', '.')
	git(bb.main, 'commit', '-q', '-m', 'pristine + series')
	bb.head = git(bb.main, 'rev-parse', 'HEAD').strip()
	(fake.ctl / 'console').write_text(read_data('console_pass.log'))
	monkeypatch.setattr(bench, 'prepared_tree', lambda o: (bb.main, bb.head))
	monkeypatch.setattr(deps, 'ensure', lambda pkgs, allow_install=True: None)
	monkeypatch.setattr(paths, 'PATCH_DIR', tmp_path / 'no-patches')
	real = bench._execute

	def execute(cmd, env, log):
		if cmd[1] != str(paths.REPO / 'tools' / 'kunit.py'):
			return real(cmd, env, log)
		assert env is None
		log.parent.mkdir(parents=True, exist_ok=True)
		with open(log, 'w') as out, contextlib.redirect_stdout(out), \
				contextlib.redirect_stderr(out):
			return cli.main(cmd[2:])
	monkeypatch.setattr(bench, '_execute', execute)
	bb.order = []
	return bb


def verbs(calls):
	"""run = plain; build/exec = ours."""
	return [c['verb'] for c in calls]


# ------------------------------------------------------------- the sequence


def test_rows_run_alternately_and_never_together(b, capsys):
	rc = bench.main(bench.BenchOptions.from_args(b.args()))
	out = capsys.readouterr().out
	assert rc == 0, out
	calls = b.calls()
	# plain cold, ours cold (build + exec), plain warm, ours warm (its build
	# skipped: nothing changed), plain edit, ours edit (build + exec).
	assert verbs(calls) == ['run', 'build', 'exec', 'run', 'exec', 'run', 'build', 'exec']
	src = str(b.lay.src)
	assert {c['tree'] for c in calls} == {src}                   # one source tree
	for c in b.calls('run'):
		assert f'--build_dir={b.lay.build("plain", "x86_64")}' in c['argv']
		assert c['ccache_dir'] == str(b.lay.ccache('plain'))
		assert [a for a in c['argv'] if a.startswith('--kunitconfig=')] == [
			f'--kunitconfig={k}' for k in plan.kunitconfigs('x86_64', [])]
		assert c['argv'][0] == '--arch=x86_64'
		assert not any(a.startswith(('--qemu_args', '--json', '--jobs')) for a in c['argv'])
		# Plain is kunit.py as a developer types it: no printk.time=1.
		assert not any(a.startswith('--kernel_args') for a in c['argv'])
	for c in b.calls('exec'):
		assert '--kernel_args=printk.time=1' in c['argv']
	for c in b.calls('build') + b.calls('exec'):
		assert f'--build_dir={b.lay.build("ours", "x86_64")}' in c['argv']
		assert c['ccache_dir'] == str(b.lay.ccache('ours'))
	doc = b.json()
	assert [(r['arch'], r['row']) for r in doc['rows']] == [
		('x86_64', 'cold'), ('x86_64', 'warm'), ('x86_64', 'edit')]
	assert [r['ours']['build_skipped'] for r in doc['rows']] == [False, True, False]
	assert '[build skipped: inputs unchanged]' in out
	assert 'x86_64  cold' in out and 'Where the time goes' in out and 'Goals (ours)' in out


def test_ours_first(b):
	assert bench.main(bench.BenchOptions.from_args(b.args('--ours-first', '--rows', 'cold,warm'))) == 0
	assert verbs(b.calls()) == ['build', 'exec', 'run', 'exec', 'run']
	assert b.json()['order'] == 'ours first'


def test_same_guest_gives_plain_our_qemu_args(b):
	assert bench.main(bench.BenchOptions.from_args(b.args('--same-guest', '--rows', 'warm'))) == 0
	[plain] = b.calls('run')
	assert '--qemu_args=-smp 2' in plain['argv']
	[ex] = b.calls('exec')
	assert '--qemu_args=-smp 2' in ex['argv']
	# The same guest: printk timestamps on both sides, so both guest times
	# come from them.
	assert '--kernel_args=printk.time=1' in plain['argv']
	assert '--kernel_args=printk.time=1' in ex['argv']


def test_dry_run_shows_the_same_guest(b, capsys):
	assert bench.main(bench.BenchOptions.from_args(b.args('--dry-run', '--same-guest', '--rows', 'warm'))) == 0
	[plain] = [l for l in capsys.readouterr().out.splitlines() if l.startswith('plain: ')]
	assert '--qemu_args=-smp 2' in plain and '--kernel_args=printk.time=1' in plain
	assert bench.main(bench.BenchOptions.from_args(b.args('--dry-run', '--rows', 'warm'))) == 0
	[plain] = [l for l in capsys.readouterr().out.splitlines() if l.startswith('plain: ')]
	assert '--qemu_args' not in plain and '--kernel_args' not in plain


def test_cold_empties_only_under_cache_bench(b):
	lay = b.lay
	inside = [lay.build('plain', 'x86_64') / 'vmlinux', lay.build('ours', 'x86_64') / 'vmlinux',
		  lay.ccache('plain') / 'a' / 'obj', lay.ccache('ours') / 'a' / 'obj']
	outside = [b.cache / 'ccache' / 'a' / 'obj', b.cache / 'build' / 'debian' / 'x86_64' / 'vmlinux',
		   lay.build('plain', 'arm') / 'vmlinux', b.cache / 'fixtures' / 'keep.img']
	for p in inside + outside:
		p.parent.mkdir(parents=True, exist_ok=True)
		p.write_bytes(b'old')
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'cold'))) == 0
	for p in inside:
		assert not p.exists() or p.read_bytes() != b'old', p      # rebuilt, or gone
	assert not (lay.ccache('plain') / 'a').exists() and not (lay.ccache('ours') / 'a').exists()
	for p in outside:
		assert p.read_bytes() == b'old', p
	assert (b.main / EDIT).read_bytes() == ORIGINAL


def test_warm_does_not_empty(b):
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'cold'))) == 0
	keep = b.lay.ccache('plain') / 'keep'
	keep.write_text('x')
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'warm'))) == 0
	assert keep.exists()


def test_empty_refuses_anything_else(tmp_path):
	root = tmp_path / 'bench'
	(root / 'src' / 'fs').mkdir(parents=True)
	(tmp_path / 'other').mkdir()
	for p in (root, root / 'src', root / 'src' / 'fs', tmp_path / 'other', tmp_path,
		  root / '..' / 'other'):
		with pytest.raises(UserError, match='refusing'):
			bench.empty(p, root)
	with pytest.raises(UserError, match='refusing'):
		bench.empty(tmp_path / 'other' / 'x', tmp_path / 'other')   # root must be .../bench
	(root / 'plain' / 'x86_64').mkdir(parents=True)
	bench.empty(root / 'plain' / 'x86_64', root)
	assert not (root / 'plain' / 'x86_64').exists()
	bench.empty(root / 'plain' / 'never-made', root)                 # nothing there: fine
	assert (root / 'src' / 'fs').is_dir()


# ------------------------------------------------------------------ the edit


def test_both_sides_build_the_same_edit_and_it_is_undone(b):
	assert bench.main(bench.BenchOptions.from_args(b.args())) == 0
	src_file = b.lay.src / EDIT
	assert src_file.read_bytes() == ORIGINAL
	assert (b.main / EDIT).read_bytes() == ORIGINAL          # the work tree: never touched
	calls = b.calls()
	original = sha(ORIGINAL)
	assert all(c['edit_sha'] == original for c in calls[:5])     # cold and warm
	edit_calls = calls[5:]
	assert verbs(edit_calls) == ['run', 'build', 'exec']
	edited = {c['edit_sha'] for c in edit_calls}
	assert len(edited) == 1 and edited != {original}
	[info] = b.json()['edits']
	assert info['restored'] is True and info['sha256'] == original
	assert 'bkl_bench_edit' in info['appended']
	assert git(b.lay.src, 'status', '--porcelain', '--ignored') == ''


def test_edit_is_undone_when_the_row_fails(b, capsys):
	(b.f.ctl / 'fail_edited').write_text('')
	rc = bench.main(bench.BenchOptions.from_args(b.args()))
	assert rc == 1
	assert (b.lay.src / EDIT).read_bytes() == ORIGINAL
	doc = b.json()
	assert [r['failed'] for r in doc['rows']] == [False, False, True]
	assert doc['rows'][2]['plain']['rc'] == 1
	assert doc['rows'][2]['ours']['status'] == 'BUILD_FAILED'
	assert 'FAILED' in capsys.readouterr().out


def test_edit_is_undone_when_the_bench_is_interrupted(b, monkeypatch):
	def boom(*a, **kw):
		raise KeyboardInterrupt
	monkeypatch.setattr(bench, 'run_ours', boom)
	with pytest.raises(KeyboardInterrupt):
		bench.main(bench.BenchOptions.from_args(b.args('--rows', 'edit')))
	assert (b.lay.src / EDIT).read_bytes() == ORIGINAL
	doc = b.json()                                  # written even so
	assert doc['rows'] == [] and doc['edits'][0]['restored'] is True


def test_a_leftover_edit_is_reset_by_the_next_bench(b):
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'warm'))) == 0
	(b.lay.src / EDIT).write_bytes(ORIGINAL + b'int leftover;\n')     # a killed bench
	(b.lay.src / 'stray.o').write_bytes(b'')
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'warm'))) == 0
	assert (b.lay.src / EDIT).read_bytes() == ORIGINAL
	assert not (b.lay.src / 'stray.o').exists()


def test_edited_restores_bytes_exactly(tmp_path):
	f = tmp_path / 'x.c'
	data = b'int a;\r\n\t/* no newline at the end */'
	f.write_bytes(data)
	with pytest.raises(RuntimeError):
		with bench.edited(f, 'n1') as info:
			body = f.read_bytes()
			assert body.startswith(data) and body != data
			assert body[len(data):len(data) + 1] == b'\n'      # on a line of its own
			assert b'"n1"' in body
			raise RuntimeError
	assert f.read_bytes() == data and info['restored'] is True
	with pytest.raises(UserError, match='C file'):
		with bench.edited(tmp_path / 'Makefile', 'n'):
			pass
	with pytest.raises(UserError, match='cannot read'):
		with bench.edited(tmp_path / 'missing.c', 'n'):
			pass


def test_edit_file_must_exist(b):
	with pytest.raises(UserError, match='no such file'):
		bench.main(bench.BenchOptions.from_args(b.args('--edit-file', 'fs/autofs/tests/nope.c')))


def test_an_edit_is_not_a_comment():
	"""ccache's preprocessor mode would see through a comment."""
	text = bench.edit_text(b'int a;\n', 'n').decode()
	code = [l for l in text.splitlines() if l.strip() and not l.lstrip().startswith('/*')]
	assert code and '"n"' in code[0]


# ------------------------------------------------------------- the numbers


def test_compare_math_and_flag():
	c = bench.compare(100.0, 101.0)
	assert c == {'overhead': 1.0, 'ratio': 1.01, 'pct': 1.0, 'flagged': False}
	c = bench.compare(100.0, 102.0)
	assert c['pct'] == 2.0 and not c['flagged']                     # at the limit: fine
	c = bench.compare(100.0, 102.5)
	assert c['flagged'] and c['ratio'] == 1.025 and c['overhead'] == 2.5
	c = bench.compare(60.0, 30.0)
	assert c == {'overhead': -30.0, 'ratio': 0.5, 'pct': -50.0, 'flagged': False}
	assert bench.compare(50.0, 52.0, limit=5.0)['flagged'] is False
	c = bench.compare(0.0, 1.0)
	assert c['ratio'] is None and c['flagged']                       # nothing to compare to


def _row(row, plain, ours, **kw):
	r = bench.Row('x86_64', row, bench.Side('plain', plain, guest=2.0, guest_source='exec'),
		      bench.Side('ours', ours, guest=2.5, guest_source='printk'))
	c = bench.compare(plain, ours)
	r.overhead, r.ratio, r.pct, r.flagged = c['overhead'], c['ratio'], c['pct'], c['flagged']
	for k, v in kw.items():
		setattr(r, k, v)
	return r


def test_format_table():
	rows = [_row('cold', 600.0, 606.0), _row('warm', 60.0, 30.0), _row('edit', 80.0, 81.0)]
	lines = bench.format_table(rows).splitlines()
	assert lines[0].split()[:3] == ['arch', 'row', 'plain']
	assert set(lines[1].replace(' ', '')) == {'-'}
	cold, warm, edit = lines[2:]
	assert cold.split()[:7] == ['x86_64', 'cold', '600.0', '606.0', '+6.0', '1.010', '+1.00']
	assert warm.split()[:7] == ['x86_64', 'warm', '60.0', '30.0', '-30.0', '0.500', '-50.00']
	assert edit.split()[4:7] == ['+1.0', '1.012', '+1.25']
	assert '2.0 (exec)' in cold and '2.5 (printk)' in cold
	assert 'OVER' not in '\n'.join(lines)
	flagged = bench.format_table([_row('edit', 80.0, 82.0)]).splitlines()[2]
	assert flagged.rstrip().endswith('OVER 2%')
	failed = _row('cold', 1.0, 1.0, failed=True)
	failed.ours.rc, failed.ours.status = 1, 'BUILD_FAILED'
	assert 'FAILED: ours BUILD_FAILED' in bench.format_table([failed])


def test_goals():
	rows = [_row('warm', 60.0, 14.0), _row('edit', 80.0, 50.0)]
	g = bench.goals(rows)
	by = {(x['row'], x['goal'].split(' <=')[0]): x for x in g}
	assert by[('warm', 'no-change rerun')]['met'] is True
	assert by[('edit', 'one-test edit -> result')]['met'] is False
	assert by[('edit', 'one-test edit -> result')]['value'] == 50.0
	assert all(x['met'] for x in g if x['goal'].startswith('all suites'))
	assert by[('warm', 'overhead')]['met'] is True


def test_guest_seconds_from_printk():
	assert bench.guest_seconds(read_data('console_pass.log')) == pytest.approx(0.0034)
	assert bench.guest_seconds(read_data('real_x86_64_notime.log')) is None
	assert bench.guest_seconds('') is None


def test_plain_and_ours_parts():
	out = ('[07:00:00] Elapsed time: 9.000s total, 1.000s configuring, 6.000s building, '
	       '2.000s running\n')
	assert bench.plain_parts(9.5, out) == {'config': 1.0, 'build': 6.0, 'exec': 2.0,
					       'tool': 0.5}
	assert bench.plain_parts(9.5, 'no closing line\n') == {}
	summary = {'timings': {'deps': 0.4, 'tree': 0.2, 'divergence': 0.0,
			       'reports': 0.4, 'total': 9.0},
		   'arches': [{'build_seconds': 6.0, 'run_seconds': 2.0, 'judge_seconds': 0.5}]}
	p = bench.ours_parts(10.0, summary)
	assert p == {'setup': 0.6, 'build': 6.0, 'exec': 2.0, 'judge': 0.5, 'reports': 0.4,
		     'other': 0.5}
	assert sum(p.values()) == pytest.approx(10.0)


def test_breakdown_lines():
	r = _row('edit', 10.0, 10.5)
	r.plain.parts = {'config': 1.0, 'build': 6.0, 'exec': 2.5, 'tool': 0.5}
	r.ours.parts = {'setup': 0.6, 'build': 7.0, 'exec': 2.5, 'judge': 0.1, 'reports': 0.1,
			'other': 0.2}
	r.plain.ccache, r.ours.ccache = {'hits': 0, 'misses': 1}, {'hits': 0, 'misses': 1}
	text = '\n'.join(bench.format_breakdown(r))
	assert 'overhead +0.5 s = build +0.0' in text and 'exec +0.0' in text
	assert 'tool +0.5' in text                       # 0.6 + 0.1 + 0.1 + 0.2 - 0.5
	assert 'ccache hits/misses: plain 0/1, ours 0/1' in text


def test_json_output(b):
	assert bench.main(bench.BenchOptions.from_args(b.args())) == 0
	doc = b.json()
	for key in ('date', 'host', 'head', 'source', 'profile', 'arches', 'ccache', 'limit_pct',
		    'source_tree_seconds', 'commands', 'rows', 'goals', 'edits'):
		assert key in doc, key
	assert doc['head'] == b.head and doc['source'] == str(b.lay.src)
	assert doc['host']['cpus'] == os.cpu_count()
	cmds = doc['commands']['x86_64']
	assert cmds['plain'][1] == str(b.lay.src / 'tools/testing/kunit/kunit.py')
	assert cmds['plain'][2] == 'run'
	assert cmds['ours'][1:3] == [str(paths.REPO / 'tools' / 'kunit.py'), 'run']
	for r in doc['rows']:
		assert set(r) >= {'arch', 'row', 'plain', 'ours', 'overhead', 'ratio', 'pct',
				  'flagged', 'failed'}
		assert r['plain']['wall'] > 0 and r['ours']['wall'] > 0
		assert r['overhead'] == pytest.approx(r['ours']['wall'] - r['plain']['wall'], abs=0.002)
		assert r['plain']['parts']['exec'] == 0.5 and r['plain']['guest'] == pytest.approx(0.0034)
		assert r['plain']['guest_source'] == r['ours']['guest_source'] == 'printk'
		assert r['ours']['status'] == 'PASS'
		assert set(r['ours']['parts']) >= {'setup', 'build', 'exec', 'judge', 'reports', 'other'}
	assert (b.results / 'x86_64' / 'cold' / 'plain.log').is_file()
	assert (b.results / 'x86_64' / 'cold' / 'plain-console.log').read_text() == \
		read_data('console_pass.log')
	assert (b.results / 'x86_64' / 'edit' / 'ours' / 'summary.json').is_file()
	assert (b.results / 'x86_64' / 'edit' / 'ours.log').is_file()


def test_exit_status_flags_overhead(b, monkeypatch, capsys):
	real = bench.run_ours

	def slow(*a, **kw):
		s = real(*a, **kw)
		s.wall += 100.0
		return s
	monkeypatch.setattr(bench, 'run_ours', slow)
	assert bench.main(bench.BenchOptions.from_args(b.args('--rows', 'warm', '--limit', '2'))) == 1
	assert b.json()['rows'][0]['flagged'] is True
	assert 'Overhead above 2%: x86_64 warm' in capsys.readouterr().out


# ---------------------------------------------------------------- the rest


def test_dry_run_touches_nothing(b, capsys):
	assert bench.main(bench.BenchOptions.from_args(b.args('--dry-run', '--arch', 'x86_64,arm'))) == 0
	out = capsys.readouterr().out
	assert not b.lay.root.exists() and b.calls() == []
	assert f'empty {b.lay.build("plain", "arm")}' in out
	assert '--cross_compile=arm-linux-gnueabihf-' in out
	assert out.index('# x86_64 cold') < out.index('# x86_64 warm') < out.index('# arm cold')


def test_commands_with_ccache(b, with_ccache):
	args = bench.BenchOptions.from_args(b.args())
	plain = bench.plain_command(b.lay, 'arm64', args)
	assert '--make_options=CC=ccache aarch64-linux-gnu-gcc' in plain
	assert '--cross_compile=aarch64-linux-gnu-' in plain
	ours = bench.ours_command(b.lay, 'arm64', args, Path('/r'))
	assert ours[ours.index('--ccache-dir') + 1] == str(b.lay.ccache('ours'))
	assert ours[ours.index('--build-dir') + 1] == str(b.lay.root / 'ours')
	assert ours[ours.index('--tree') + 1] == str(b.lay.src)
	assert ours[ours.index('--jobs') + 1] == str(len(os.sched_getaffinity(0)))
	off = bench.BenchOptions.from_args(b.args('--ccache', 'off'))
	assert not any(a.startswith('--make_options') for a in bench.plain_command(b.lay, 'arm64', off))
	assert '--no-ccache' in bench.ours_command(b.lay, 'arm64', off, Path('/r'))
	env = bench.plain_env(b.lay)
	assert env['CCACHE_DIR'] == str(b.lay.ccache('plain'))
	assert env['KBUILD_BUILD_TIMESTAMP'] == plan.build_env(b.cache)['KBUILD_BUILD_TIMESTAMP']


def test_profile_fragments_and_unsupported_arch(b, capsys):
	(b.f.repo / 'kunit/profiles/kasan.config').write_text('CONFIG_KASAN=y\n')
	plain = bench.plain_command(b.lay, 'x86_64',
				     bench.BenchOptions.from_args(b.args('--profile', 'kasan')))
	assert f'--kunitconfig={b.f.repo / "kunit/profiles/kasan.config"}' in plain
	assert '--kernel_args=kasan_multi_shot' in plain
	assert '--kernel_args=printk.time=1' not in plain
	with pytest.raises(UserError, match='no arch'):
		bench.main(bench.BenchOptions.from_args(b.args('--profile', 'kasan', '--arch', 'i386')))


def test_parse_rows():
	assert bench.parse_rows('edit,cold') == ['cold', 'edit']
	with pytest.raises(UserError):
		bench.parse_rows('hot')
	with pytest.raises(UserError):
		bench.parse_rows(',')


def test_cli_and_make_target():
	args = cli.build_parser().parse_args(['bench'])
	assert args.arch == 'x86_64' and args.rows == 'cold,warm,edit' and args.limit == 2.0
	assert args.ccache == 'on' and not args.same_guest and not args.dry_run
	make = (paths.REPO / 'Makefile').read_text()
	assert '\nbench:\n\t$(KUNIT) bench --arch=' in make and 'BENCH_ARCH ?= x86_64' in make


def test_ccache_stats(tmp_path, monkeypatch):
	"""Hits (direct + preprocessed) and misses, from `ccache --print-stats`."""
	bin_dir = tmp_path / 'bin'
	bin_dir.mkdir()
	fake_ccache = bin_dir / 'ccache'
	fake_ccache.write_text('#!/bin/sh\n[ "$1" = --print-stats ] || exit 1\n'
			       'printf "cache_miss\\t7\\ndirect_cache_hit\\t3\\n'
			       'preprocessed_cache_hit\\t2\\nstats_updated_timestamp\\t1700000000\\n'
			       'files_in_cache\\t12\\n"\n'
			       'echo "$CCACHE_DIR" > "$(dirname "$0")/dir"\n')
	fake_ccache.chmod(0o755)
	monkeypatch.setenv('PATH', f'{bin_dir}:{os.environ["PATH"]}')
	cc = tmp_path / 'cc'
	assert bench.ccache_stats(cc) == {}                      # no directory yet
	cc.mkdir()
	assert bench.ccache_stats(cc) == {'hits': 5, 'misses': 7}
	assert (bin_dir / 'dir').read_text().strip() == str(cc)
	assert bench._delta({'hits': 5, 'misses': 7}, {'hits': 1, 'misses': 7}) == \
		{'hits': 4, 'misses': 0}


def test_guest_seconds_from_kunit_tool_stamps():
	"""No printk times on the real x86_64 console: kunit_tool's own stamps,
	from the first suite header to `Testing complete`, boot left out."""
	out = ('[09:43:15] Starting KUnit Kernel (1/1)...\n'
	       '[09:43:15] ============================================================\n'
	       'Running tests with:\n$ qemu-system-x86_64 -nodefaults\n'
	       '[09:43:33] =================== ufs_map (3 subtests) ===================\n'
	       '[09:43:33] [PASSED] ufs1-le-4096-512\n'
	       '[09:43:47] ================ ufs_bad_image (1 subtest) =================\n'
	       '[09:43:49] ============================================================\n'
	       '[09:43:49] Testing complete. Ran 165 tests: passed: 165\n'
	       '[09:43:49] Elapsed time: 33.604s\n')
	assert bench.tool_seconds(out) == 16.0
	assert bench.tool_seconds(out.replace('[09:43:49] Testing', '[00:00:01] Testing')) == \
		86400 - (9 * 3600 + 43 * 60 + 33) + 1
	assert bench.tool_seconds('[09:43:49] Testing complete.\n') is None
	side = bench.Side('ours')
	bench._guest(side, read_data('real_x86_64_notime.log'), out, 33.6)
	assert (side.guest, side.guest_source) == (16.0, 'kunit_tool')
	side = bench.Side('ours')
	bench._guest(side, '', 'no stamps\n', 33.6)
	assert (side.guest, side.guest_source) == (33.6, 'exec')
	side = bench.Side('ours')
	bench._guest(side, read_data('console_pass.log'), out, 33.6)
	assert side.guest_source == 'printk'
