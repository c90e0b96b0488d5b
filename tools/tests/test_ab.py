# SPDX-License-Identifier: GPL-2.0
"""kunit.py ab: the labels, the pristine worktree, the Kconfig filtering of
A's kunitconfig, and whole runs over a fake prepared repository whose
kunit.py is a stub that checks the kunitconfig against the tree's Kconfig
files the way kunit.py build does."""

import argparse
import json
import os

import pytest

from bklkunit import cli
from bklkunit.analysis import ab
from bklkunit.base import paths
from bklkunit.base.errors import UserError
from bklkunit.compare import baseline
from bklkunit.results import export, kunit_tool, model, rundir
from bklkunit.run import plan, runner
from bklkunit.source import kconfig, tree
from conftest import STUB_ARGS, KCONFIG_B, FAKE_SOURCE, commit, git
from test_baseline import ALPHA, ktap_console
from test_run import fake, main_env  # noqa: F401  (fixtures used by abf)


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch):
	"""Never ask this host's gcc or QEMU for their versions."""
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})


# ------------------------------------------------------------------- labels


def cases(status='PASS', **kv) -> baseline.ArchCases:
	"""ArchCases of x86_64 from keyword pairs: alpha_one='pass' -> alpha.one."""
	return baseline.ArchCases(model.ArchResult('x86_64', status, built=True),
				  {k.replace('_', '.', 1): v for k, v in kv.items()})


def labels(rows):
	return {r.case: (r.a, r.b, r.label) for r in rows}


def test_every_label():
	a = cases('CRASH', s_same=baseline.PASS, s_reg=baseline.PASS, s_fix=baseline.FAIL, s_fixcrash='crash',
		  s_gone=baseline.PASS, s_bothbad=baseline.FAIL, s_worse=baseline.FAIL, s_skip=baseline.SKIP,
		  s_newskip=baseline.PASS, s_unskip=baseline.SKIP, s_unskipfail=baseline.SKIP, s_flaky=baseline.PASS,
		  s_missing='missing')
	a.status = 'FAIL'                       # A ran to its end
	b = cases('FAIL', s_same=baseline.PASS, s_reg=baseline.FAIL, s_fix=baseline.PASS, s_fixcrash=baseline.PASS,
		  s_bothbad=baseline.FAIL, s_worse='crash', s_skip=baseline.SKIP, s_newskip=baseline.SKIP,
		  s_unskip=baseline.PASS, s_unskipfail=baseline.FAIL, s_flaky=baseline.FLAKY, s_missing=baseline.PASS,
		  t_new=baseline.PASS, t_newfail=baseline.FAIL)
	got = labels(ab.label_cases(a, b))
	assert got == {
		's.same': ('pass', 'pass', 'unchanged pass'),
		's.reg': ('pass', 'fail', 'regressed by the series'),
		's.fix': ('fail', 'pass', 'fixed by the series'),
		's.fixcrash': ('crash', 'pass', 'fixed by the series'),
		's.missing': ('missing', 'pass', 'fixed by the series'),
		's.gone': ('pass', None, 'removed'),
		's.bothbad': ('fail', 'fail', 'unchanged fail'),
		's.worse': ('fail', 'crash', 'unchanged fail'),
		's.skip': ('skip', 'skip', 'unchanged skip'),
		's.newskip': ('pass', 'skip', 'skipped by the series'),
		's.unskip': ('skip', 'pass', 'no longer skipped'),
		's.unskipfail': ('skip', 'fail', 'no longer skipped'),
		's.flaky': ('pass', 'flaky', 'flaky'),
		't.new': (None, 'pass', 'new test'),
		't.newfail': (None, 'fail', 'new test'),
	}
	# Rows come in the order of LABELS, the worst first.
	rows = ab.label_cases(a, b)
	assert [r.label for r in rows] == sorted((r.label for r in rows), key=ab.LABELS.index)
	assert rows[0].case == 's.reg'
	assert ab.counts(rows)['fixed by the series'] == 3


def test_a_case_b_lost_to_a_crash_is_a_regression_not_removed():
	a = cases('PASS', s_one=baseline.PASS, s_two=baseline.PASS, s_three=baseline.FAIL, s_four=baseline.SKIP)
	b = cases('CRASH', s_one=baseline.PASS, s_two='crash')           # B died in s.two
	got = labels(ab.label_cases(a, b))
	assert got['s.two'] == ('pass', 'crash', 'regressed by the series')
	assert got['s.three'] == ('fail', 'missing', 'unchanged fail')
	assert got['s.four'] == ('skip', 'missing', 'not run on B')
	b.status = 'PASS'                                          # B ran to its end
	got = labels(ab.label_cases(a, cases('PASS', s_one=baseline.PASS)))
	assert got['s.two'] == ('pass', None, 'removed')


def test_a_crash_is_never_a_pass_and_hides_nothing():
	"""A crashed in s.two: what B has and A does not may exist on A too."""
	a = cases('CRASH', s_one=baseline.PASS, s_two='crash')
	b = cases('PASS', s_one=baseline.PASS, s_two=baseline.PASS, s_three=baseline.PASS, u_x=baseline.PASS)
	got = labels(ab.label_cases(a, b))
	assert got['s.two'] == ('crash', 'pass', 'fixed by the series')
	assert got['s.three'] == (None, 'pass', 'not run on A')
	assert got['u.x'] == (None, 'pass', 'not run on A')
	# With the suites A's kernel listed (a crash re-run asked it), u is new.
	got = labels(ab.label_cases(a, b, a_listed={'s'}))
	assert got['s.three'][2] == 'not run on A'
	assert got['u.x'][2] == 'new test'


def test_labels_follow_the_filter():
	a = cases(s_one=baseline.PASS, u_x=baseline.PASS)
	b = cases(s_one=baseline.FAIL, u_x=baseline.FAIL, u_y=baseline.PASS)
	assert [r.case for r in ab.label_cases(a, b, 's')] == ['s.one']
	assert [r.case for r in ab.label_cases(a, b, 'u.y')] == ['u.y']


def test_side_problems():
	assert ab.side_problem('a', 'BUILD_FAILED', False) == \
		'A (pristine) could not build (BUILD_FAILED)'
	assert ab.side_problem('b', 'CONFIG_FAILED', False) == \
		'B (series) could not build (CONFIG_FAILED)'
	assert ab.side_problem('a', 'CRASH', False) == \
		'A (pristine) could not boot (CRASH, no KTAP result)'
	assert ab.side_problem('b', 'TIMEOUT', False).startswith('B (series) could not boot')
	assert ab.side_problem('a', 'ERROR', False) == 'A (pristine) could not run (ERROR)'
	assert ab.side_problem('b', 'NO_TESTS', False) == 'B (series) ran no test (NO_TESTS)'
	# A crash with results is a result; A may have no test the filter selects.
	for side, status in (('a', 'CRASH'), ('b', 'CRASH'), ('a', 'NO_TESTS'), ('a', 'FAIL'),
			     ('b', 'PASS'), ('b', 'FLAKY')):
		assert ab.side_problem(side, status, status != 'NO_TESTS') == '', (side, status)


# --------------------------------------------------------- the pristine tree


@pytest.fixture
def repo(tmp_path):
	"""A prepared-looking repository: pristine commit, ref, the series on top."""
	main = tmp_path / 'cache' / 'src' / 'linux-6.12.118-1_deb12u1'
	main.mkdir(parents=True)
	git(main, 'init', '-q', '-b', 'work')
	pristine = commit(main, 'pristine\n', {'Makefile': 'VERSION = 6\n',
					       'fs/autofs/Kconfig': FAKE_SOURCE['fs/autofs/Kconfig']})
	git(main, 'update-ref', tree.PRISTINE_REF, pristine)
	head = commit(main, 'autofs: tests\n', {'fs/autofs/Kconfig': KCONFIG_B})
	return main, pristine, head


def test_pristine_worktree_is_made_next_to_nothing_of_main(repo, tmp_path):
	main, pristine, head = repo
	cache = tmp_path / 'cache'
	before = (git(main, 'status', '--porcelain', '--ignored'), git(main, 'rev-parse', 'HEAD'),
		  git(main, 'symbolic-ref', 'HEAD'))
	wt, c, done = ab.pristine_tree(main, cache)
	assert (wt, c, done) == (cache / 'pristine' / 'src' / main.name, pristine, 'created')
	assert git(wt, 'rev-parse', 'HEAD').strip() == pristine
	assert git(wt, 'status', '--porcelain').strip() == ''
	assert (wt / 'fs/autofs/Kconfig').read_text() == FAKE_SOURCE['fs/autofs/Kconfig']
	# Detached, and the main work tree is as it was.
	assert git(wt, 'rev-parse', '--abbrev-ref', 'HEAD').strip() == 'HEAD'
	assert (git(main, 'status', '--porcelain', '--ignored'), git(main, 'rev-parse', 'HEAD'),
		git(main, 'symbolic-ref', 'HEAD')) == before
	assert (main / 'fs/autofs/Kconfig').read_text() == KCONFIG_B
	assert str(wt) in git(main, 'worktree', 'list')


def test_pristine_worktree_is_reused_and_follows_the_ref(repo, tmp_path):
	main, pristine, head = repo
	cache = tmp_path / 'cache'
	wt, _, _ = ab.pristine_tree(main, cache)
	f = wt / 'fs/autofs/Kconfig'
	os.utime(f, (1, 1))
	assert ab.pristine_tree(main, cache) == (wt, pristine, 'up to date')
	assert f.stat().st_mtime == 1                 # untouched: make rebuilds nothing
	# A tracked file changed by hand is restored.
	f.write_text('junk\n')
	assert ab.pristine_tree(main, cache)[2] == 'restored'
	assert f.read_text() == FAKE_SOURCE['fs/autofs/Kconfig']
	# The ref moves (a new pristine commit): the worktree follows it.
	git(main, 'checkout', '-q', '--detach', pristine)
	moved = commit(main, 'pristine, again\n', {'Makefile': 'VERSION = 6\nPATCHLEVEL = 12\n'})
	git(main, 'checkout', '-q', 'work')
	git(main, 'update-ref', tree.PRISTINE_REF, moved)
	assert ab.pristine_tree(main, cache) == (wt, moved, 'moved')
	assert (wt / 'Makefile').read_text() == 'VERSION = 6\nPATCHLEVEL = 12\n'
	assert git(main, 'rev-parse', 'HEAD').strip() == head


def test_pristine_worktree_is_made_again_when_gone_or_foreign(repo, tmp_path):
	main, pristine, _ = repo
	cache = tmp_path / 'cache'
	wt, _, _ = ab.pristine_tree(main, cache)
	import shutil
	shutil.rmtree(wt)                                      # removed by hand
	assert ab.pristine_tree(main, cache) == (wt, pristine, 'created')
	# prepare unpacked the tree anew: a new repository at the same place.
	shutil.rmtree(main)
	main.mkdir()
	git(main, 'init', '-q', '-b', 'work')
	fresh = commit(main, 'pristine\n', {'Makefile': 'VERSION = 6\n'})
	git(main, 'update-ref', tree.PRISTINE_REF, fresh)
	assert ab.pristine_tree(main, cache) == (wt, fresh, 'created')
	assert git(wt, 'rev-parse', 'HEAD').strip() == fresh
	# A plain directory in the way is replaced too.
	shutil.rmtree(wt)
	(wt / 'junk').mkdir(parents=True)
	assert ab.pristine_tree(main, cache)[2] == 'created'


def test_pristine_worktree_needs_the_pristine_ref(tmp_path):
	main = tmp_path / 'linux'
	main.mkdir()
	git(main, 'init', '-q')
	commit(main, 'x\n', {'Makefile': 'x\n'})
	with pytest.raises(UserError, match='refs/bkl-kunit/pristine'):
		ab.pristine_tree(main, tmp_path / 'cache')


# ------------------------------------------------- A: the series less its fixes

SRC = 'int a;\nint b;\nint c;\n'


@pytest.fixture
def series_repo(tmp_path):
	"""pristine; a test; a fix (Fixes: tag); a test that needs the fix's
	lines; a test that does not."""
	main = tmp_path / 'cache' / 'src' / 'linux-6.12.118-1_deb12u1'
	main.mkdir(parents=True)
	git(main, 'init', '-q', '-b', 'work')
	pristine = commit(main, 'pristine\n', {'Makefile': 'VERSION = 6\n', 'src.c': SRC})
	git(main, 'update-ref', tree.PRISTINE_REF, pristine)
	t1 = commit(main, 'x: add a test\n', {'t1.c': 'test 1\n'})
	fix = commit(main, 'x: fix b\n\nFixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")\n'
		     'Signed-off-by: A <a@example.org>\n', {'src.c': 'int a;\nlong b;\nint c;\n'})
	t2 = commit(main, 'x: test what the fix changed\n',
		    {'src.c': 'int a;\nlong b; /* tested */\nint c;\n'})
	t3 = commit(main, 'x: another test\n', {'t3.c': 'test 3\n'})
	return main, pristine, [t1, fix, t2, t3]


def test_a_side_tests_is_the_series_without_its_fixes(series_repo, tmp_path, capsys):
	main, pristine, (t1, fix, t2, t3) = series_repo
	cache = tmp_path / 'cache'
	wt, c, done, left = ab.make_a_tree(main, cache, 'tests')
	assert 'Making A' in capsys.readouterr().out
	assert [(x['commit'], x['why']) for x in left] == [(fix, ab.LEFT_FIX),
							     (t2, ab.LEFT_CONFLICT)]
	assert left[0]['subject'] == 'x: fix b'
	# t1 and t3 on the pristine commit, nothing of the fix, a clean tree.
	assert git(wt, 'log', '--format=%s', f'{pristine}..{c}').splitlines() == [
		'x: another test', 'x: add a test']
	assert (wt / 'src.c').read_text() == SRC
	assert (wt / 't1.c').is_file() and (wt / 't3.c').is_file()
	assert git(wt, 'status', '--porcelain').strip() == ''
	assert git(main, 'rev-parse', ab.A_REF).strip() == c
	# The main work tree is untouched.
	assert git(main, 'rev-parse', 'HEAD').strip() == t3
	assert git(main, 'status', '--porcelain').strip() == ''
	# Asked again with the same series: nothing is made, nothing checked out.
	os.utime(wt / 't1.c', (1, 1))
	assert ab.make_a_tree(main, cache, 'tests') == (wt, c, 'up to date', left)
	assert 'Making A' not in capsys.readouterr().out
	assert (wt / 't1.c').stat().st_mtime == 1
	# Made again from nothing: the same commit (committer and dates kept).
	(main / '.git' / ab.A_STATE).unlink()
	assert ab.make_a_tree(main, cache, 'tests')[1] == c


def test_a_side_follows_the_series_and_pristine_mode_is_the_pristine_commit(series_repo,
									     tmp_path):
	main, pristine, _ = series_repo
	cache = tmp_path / 'cache'
	_, c, _, _ = ab.make_a_tree(main, cache, 'tests')
	t4 = commit(main, 'x: a fourth test\n', {'t4.c': 'test 4\n'})
	wt, c2, _, left = ab.make_a_tree(main, cache, 'tests')
	assert c2 != c and (wt / 't4.c').is_file()
	assert git(wt, 'log', '-1', '--format=%s', c2).strip() == 'x: a fourth test'
	assert t4 not in [x['commit'] for x in left]
	wt, c3, done, left = ab.make_a_tree(main, cache, 'pristine')
	assert (c3, left, done) == (pristine, [], 'moved')
	assert not (wt / 't1.c').exists()


def test_ab_a_side_tests_builds_the_series_tests_on_a(abf, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', A_CONSOLE)
	f.ctl_write('b', 'x86_64', 'console', B_CONSOLE)
	ab.main(ab.AbRequest.from_args(f.ab_args('--a-side=tests', '--arch', 'x86_64')))
	out = capsys.readouterr().out
	doc = ab_json(f)
	assert doc['a']['a_side'] == 'tests' and doc['a']['left_out'] == []
	assert doc['a']['commit'] != f.pristine
	assert git(f.a_tree, 'log', '-1', '--format=%s').strip() == 'autofs: add KUnit tests'
	# The test symbols exist on A now: nothing is dropped from its kunitconfig.
	assert doc['arches'][0]['a']['kunitconfig_dropped'] == []
	assert 'A (tests only)' in out
	assert any(l.startswith('arch') and 'A (tests only)' in l for l in out.splitlines())
	summary = json.loads((f.results / 'a' / 'summary.json').read_text())
	assert summary['a_side'] == 'tests' and summary['series'] == 'the series without nothing'


def test_ab_waits_for_another_ab_on_the_same_cache(abf, capsys):
	import fcntl
	import threading
	f = abf
	f.ctl_write('a', 'x86_64', 'console', A_CONSOLE)
	f.ctl_write('b', 'x86_64', 'console', B_CONSOLE)
	lock = f.cache / 'pristine' / 'ab.lock'
	lock.parent.mkdir(parents=True, exist_ok=True)
	held = open(lock, 'w')
	held.write('pid 4242\n')
	held.flush()
	fcntl.flock(held, fcntl.LOCK_EX)
	threading.Timer(0.5, lambda: (fcntl.flock(held, fcntl.LOCK_UN), held.close())).start()
	ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64')))
	out = capsys.readouterr().out
	assert 'Waiting for the pristine tree of kunit.py ab: in use by pid 4242' in out
	assert ab_json(f)['arches'][0]['counts']['regressed by the series'] == 1
	assert lock.read_text() == ''                  # released, no pid left behind


# ------------------------------------------------------------------ Kconfig

KCONFIG_DEBUG = ('menu "Kernel hacking"\n\nconfig DEBUG_KERNEL\n\tbool "Kernel debugging"\n\n'
		 'if DEBUG_KERNEL\n\tconfig PROVE_LOCKING\n\tbool "Lock debugging"\nendif\n'
		 'menuconfig KUNIT\n\ttristate "KUnit"\n# config NOT_A_SYMBOL\n'
		 '\thelp\n\t  Say config FOO here.\nendmenu\n')


def test_defined_symbols_are_those_of_the_pristine_commit(repo):
	main, pristine, head = repo
	commit(main, 'more\n', {'lib/Kconfig.debug': KCONFIG_DEBUG, 'README': 'config NOPE\n'})
	assert ab.defined_symbols(main, pristine) == {'AUTOFS_FS'}
	got = ab.defined_symbols(main, 'HEAD')
	assert got == {'AUTOFS_FS', 'AUTOFS_PROTOCOL_KUNIT_TEST', 'AUTOFS_END_STATE_KUNIT_TEST',
		       'DEBUG_KERNEL', 'PROVE_LOCKING', 'KUNIT'}


def test_defined_symbols_of_nothing_is_an_error(tmp_path):
	main = tmp_path / 'r'
	main.mkdir()
	git(main, 'init', '-q')
	c = commit(main, 'x\n', {'Makefile': 'x\n'})
	with pytest.raises(UserError, match='no Kconfig symbol'):
		ab.defined_symbols(main, c)


def test_filter_text_drops_only_options_with_a_reason():
	text = ('# AppleTalk\nCONFIG_ATALK=y\nCONFIG_ATALK_DDP_KUNIT_TEST=y\n'
		'# CONFIG_ATALK_DDP_KUNIT_TEST=y was here\n# CONFIG_UFS_RW_KUNIT_TEST is not set\n'
		'CONFIG_CMDLINE="a b"\n\n  CONFIG_UFS_MAP_KUNIT_TEST=y  \n')
	new, dropped = ab.filter_text(text, lambda s: 'new' if 'KUNIT_TEST' in s else None)
	assert dropped == [('CONFIG_ATALK_DDP_KUNIT_TEST=y', 'new'),
			   ('# CONFIG_UFS_RW_KUNIT_TEST is not set', 'new'),
			   ('CONFIG_UFS_MAP_KUNIT_TEST=y', 'new')]
	lines = new.splitlines()
	assert lines[:2] == ['# AppleTalk', 'CONFIG_ATALK=y']
	assert lines[2] == ('# kunit.py ab: dropped on the pristine tree (new): '
			    'CONFIG_ATALK_DDP_KUNIT_TEST=y')
	assert lines[3] == '# CONFIG_ATALK_DDP_KUNIT_TEST=y was here'     # a comment stays
	assert 'CONFIG_CMDLINE="a b"' in lines
	assert kconfig.option_symbol('CONFIG_X=m') == 'X' and kconfig.option_symbol('# x') is None


def test_a_fragments_copies_only_what_changes(tmp_path):
	keep = tmp_path / 'default.config'
	keep.write_text('CONFIG_DEBUG_KERNEL=y\n')
	change = tmp_path / '.kunitconfig'
	change.write_text('CONFIG_KUNIT=y\nCONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y\n')
	dest = tmp_path / 'out' / 'kunitconfig'
	why = {'AUTOFS_PROTOCOL_KUNIT_TEST': ab.NOT_DEFINED}.get
	got, dropped = ab.a_fragments([change, keep], why, dest)
	assert got == [dest / '01-kunitconfig', keep]
	text = got[0].read_text()
	assert text.startswith(f'# {change}, for the pristine tree')
	assert 'CONFIG_KUNIT=y\n' in text and '\nCONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y' not in text
	assert dropped == [{'option': 'CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y', 'fragment': str(change),
			    'why': ab.NOT_DEFINED}]
	# Nothing to drop: no copies, and an old copy is gone.
	got, dropped = ab.a_fragments([keep], why, dest)
	assert got == [keep] and dropped == [] and not dest.exists()


def test_refused_symbols_from_kunit_build_output():
	from conftest import read_data
	assert kunit_tool.refused_symbols(read_data('build_config_missing.log')) == ['CIFS']
	log = ('ERROR:root:Not all Kconfig options selected in kunitconfig were in the generated '
	       '.config.\nThis is probably due to unsatisfied dependencies.\n'
	       'Missing: CONFIG_UFS_FS_WRITE=y, # CONFIG_FOO is not set, CONFIG_BAR=m\n')
	assert kunit_tool.refused_symbols(log) == ['BAR', 'FOO', 'UFS_FS_WRITE']
	assert kunit_tool.refused_symbols(read_data('build_config_conflict.log')) == []
	assert kunit_tool.refused_symbols(read_data('build_compile_error.log')) == []


# ---------------------------------------------------------- whole ab runs

# The stub kunit.py of the fake repository.  Its side (a or b) comes from
# $BKL_STUB_CTL/sides.json ({tree: side}); its controls are <side>.<arch>.<x>
# files like test_baseline's STUB.  build checks the kunitconfig files and
# --kconfig_add options the way kunit.py build does: an option must be
# defined by a Kconfig file of the tree, and not named in <side>.refuse.
AB_STUB = STUB_ARGS + r'''ktree = Path(__file__).resolve().parents[3]
side = json.loads((ctl / 'sides.json').read_text()).get(str(ktree), '?')
entries = []
for k in opts.get('kunitconfig', []):
	entries += [l.strip() for l in Path(k).read_text().splitlines()
		    if re.match(r'^CONFIG_\w+=', l.strip())]
entries += opts.get('kconfig_add', [])
with open(ctl / 'calls.jsonl', 'a') as f:
	f.write(json.dumps({'side': side, 'verb': verb, 'argv': rest, 'glob': glob,
			    'list': listing, 'entries': entries}) + '\n')

def get(name, default=None):
	p = ctl / f'{side}.{arch}.{name}'
	return p.read_text() if p.exists() else default

build_dir = Path(opts['build_dir'][0])
if verb == 'build':
	build_dir.mkdir(exist_ok=True)
	print('[07:00:40] Configuring KUnit Kernel ...')
	defined = set()
	for root, dirs, files in os.walk(ktree):
		dirs[:] = [d for d in dirs if d != '.git']
		for name in files:
			if name.startswith('Kconfig'):
				text = Path(root, name).read_text()
				defined |= set(re.findall(r'^\s*(?:menu)?config\s+(\w+)', text, re.M))
	refuse = set((get('refuse') or '').split())
	missing = [e for e in entries if e.split('=')[0][7:] not in defined - refuse]
	if missing:
		print('ERROR:root:Not all Kconfig options selected in kunitconfig were in the '
		      'generated .config.\nThis is probably due to unsatisfied dependencies.\n'
		      'Missing: ' + ', '.join(missing))
		sys.exit(1)
	(build_dir / '.config').write_text(''.join(e + '\n' for e in entries))
	sys.stdout.write(get('build', '[07:00:42] Building KUnit Kernel ...\n'))
	sys.exit(int(get('build_rc', '0')))
if verb == 'exec' and listing:
	print('[07:01:00] Starting KUnit Kernel (1/1)...')
	(build_dir / 'test.log').write_text('KTAP version 1\n1..0\n')
	sys.stdout.write(get('list', ''))
	sys.exit(0)
if verb == 'exec':
	console = get('console')
	if glob:
		console = get(f'console@{glob}', console)
	if console is not None:
		(build_dir / 'test.log').write_text(console)
	sys.stdout.write(get('exec', '[07:01:02] Starting KUnit Kernel (1/1)...\n'))
	if 'json' in opts:
		Path(opts['json'][0]).write_text('{"name": "KUnit Test Group"}\n')
	sys.exit(int(get('exec_rc', '0')))
sys.exit(f'stub kunit.py: unexpected verb {verb}')
'''

KUNITCONFIG = ('CONFIG_KUNIT=y\nCONFIG_AUTOFS_FS=y\n# The series\' own suites:\n'
	       'CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y\nCONFIG_AUTOFS_END_STATE_KUNIT_TEST=y\n')
PRISTINE_KCONFIG = {
	'lib/kunit/Kconfig': 'menuconfig KUNIT\n\ttristate "KUnit"\n',
	'lib/Kconfig.debug': 'config DEBUG_KERNEL\n\tbool "Kernel debugging"\n',
	'fs/autofs/Kconfig': FAKE_SOURCE['fs/autofs/Kconfig'],
}


@pytest.fixture
def abf(main_env, tmp_path):
	"""test_run's fake tree, made a prepared repository: the pristine commit
	(with the stub and the parser) under refs/bkl-kunit/pristine, then a
	series commit adding the autofs test symbols."""
	f = main_env
	(f.tree / 'tools' / 'testing' / 'kunit' / 'kunit.py').write_text(AB_STUB)
	for rel, text in PRISTINE_KCONFIG.items():
		(f.tree / rel).parent.mkdir(parents=True, exist_ok=True)
		(f.tree / rel).write_text(text)
	git(f.tree, 'init', '-q', '-b', 'work')
	git(f.tree, 'add', '-f', '-A', '.')
	git(f.tree, 'commit', '-q', '-m', 'pristine')
	f.pristine = git(f.tree, 'rev-parse', 'HEAD').strip()
	git(f.tree, 'update-ref', tree.PRISTINE_REF, f.pristine)
	commit(f.tree, 'autofs: add KUnit tests\n', {'fs/autofs/Kconfig': KCONFIG_B})
	(f.repo / '.kunitconfig').write_text(KUNITCONFIG)
	f.a_tree = f.cache / 'pristine' / 'src' / f.tree.name
	(f.ctl / 'sides.json').write_text(json.dumps({str(f.tree.resolve()): 'b',
						      str(f.a_tree.resolve()): 'a'}))

	def ctl(side, arch, name, text):
		(f.ctl / f'{side}.{arch}.{name}').write_text(text)
	f.ctl_write = ctl

	def calls(side=None, verb=None):
		return [c for c in f.calls(verb) if side is None or c['side'] == side]
	f.side_calls = calls

	def ab_args(*argv):
		# The tests below read A as the pristine tree alone unless they say
		# otherwise (test_ab_a_side_tests_*).
		side = [] if any(a.startswith('--a-side') for a in argv) else ['--a-side=pristine']
		return cli.build_parser().parse_args(
			['ab', '--cache-dir', str(f.cache), '--results-dir', str(f.results),
			 '--no-install', '--jobs', '3', '--no-ccache'] + side + list(argv))
	f.ab_args = ab_args
	return f


def ab_json(f):
	return json.loads((f.results / 'ab.json').read_text())


A_CONSOLE = ktap_console(('alpha', [('one', 'ok'), ('two', 'not ok'), ('three', 'ok')]))
B_CONSOLE = ktap_console(('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'not ok')]),
			 ('autofs_new', [('fresh', 'ok'), ('later', 'skip')]))


def test_ab_labels_new_fixed_and_regressed(abf, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', A_CONSOLE)
	f.ctl_write('a', 'x86_64', 'exec_rc', '1')
	f.ctl_write('b', 'x86_64', 'console', B_CONSOLE)
	f.ctl_write('b', 'x86_64', 'exec_rc', '1')
	rc = ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64')))
	assert rc == 1                                 # alpha.three regressed
	doc = ab_json(f)
	[x] = doc['arches']
	assert {c['case']: (c['a'], c['b'], c['label']) for c in x['cases']} == {
		'alpha.one': ('pass', 'pass', 'unchanged pass'),
		'alpha.two': ('fail', 'pass', 'fixed by the series'),
		'alpha.three': ('pass', 'fail', 'regressed by the series'),
		'autofs_new.fresh': (None, 'pass', 'new test'),
		'autofs_new.later': (None, 'skip', 'new test'),
	}
	assert x['counts'] == {'regressed by the series': 1, 'fixed by the series': 1,
			       'new test': 2, 'unchanged pass': 1}
	assert x['a']['status'] == x['b']['status'] == 'FAIL'
	assert x['problems'] == [] and doc['problems'] == []
	assert doc['regressed'] == 1 and doc['exit'] == 1
	assert doc['a']['commit'] == f.pristine and doc['a']['tree'] == str(f.a_tree)
	assert doc['b']['tree'] == str(f.tree)
	# A was built from the pristine worktree without the series' symbols.
	[a_build] = f.side_calls('a', 'build')
	[b_build] = f.side_calls('b', 'build')
	assert 'CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y' in b_build['entries']
	assert 'CONFIG_AUTOFS_END_STATE_KUNIT_TEST=y' in b_build['entries']
	assert not [e for e in a_build['entries'] if 'KUNIT_TEST' in e]
	assert 'CONFIG_AUTOFS_FS=y' in a_build['entries'] and 'CONFIG_KUNIT=y' in a_build['entries']
	abd = f.cache / 'pristine' / 'build' / 'debian' / 'x86_64'
	assert f'--build_dir={abd}' in a_build['argv']
	assert f'--build_dir={f.cache / "build" / "debian" / "x86_64"}' in b_build['argv']
	assert [d['option'] for d in x['a']['kunitconfig_dropped']] == [
		'CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y', 'CONFIG_AUTOFS_END_STATE_KUNIT_TEST=y']
	filtered = f.results / 'a' / 'x86_64' / 'kunitconfig' / '01-kunitconfig'
	assert f'--kunitconfig={filtered}' in a_build['argv']
	assert f'--kunitconfig={f.repo / "kunit/profiles/default.config"}' in a_build['argv']
	# The main work tree was not touched; the worktree is at the pristine commit.
	assert git(f.tree, 'status', '--porcelain').strip() == ''
	assert git(f.tree, 'rev-parse', '--abbrev-ref', 'HEAD').strip() == 'work'
	assert git(f.a_tree, 'rev-parse', 'HEAD').strip() == f.pristine
	# Both sides are results directories of their own.
	for side in 'ab':
		s = json.loads((f.results / side / 'summary.json').read_text())
		assert [a['arch'] for a in s['arches']] == ['x86_64']
		assert s['ab_side'] == ab.side_names('pristine')[side] == ab.SIDES[side]
		for name in ('console.log', 'verdict.json', 'build.log', 'kunit.log', 'junit.xml'):
			assert (f.results / side / 'x86_64' / name).is_file(), (side, name)
		assert (f.results / side / 'index.html').is_file()
	assert json.loads((f.results / 'a' / 'summary.json').read_text())['tree'] == str(f.a_tree)
	out = capsys.readouterr().out
	assert 'A (pristine): ' + str(f.a_tree) in out and '(created)' in out
	assert '  A (pristine): FAIL' in out and '  B (series): FAIL' in out
	assert 'A kunitconfig without: CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y' in out
	table = out[out.index('== x86_64'):]
	lines = [l.split() for l in table.splitlines()]
	assert ['regressed', 'by', 'the', 'series', 'alpha.three', 'pass', 'fail'] in lines
	assert ['fixed', 'by', 'the', 'series', 'alpha.two', 'fail', 'pass'] in lines
	assert ['new', 'test', 'autofs_new.fresh', '-', 'pass'] in lines
	assert ['unchanged', 'pass', 'alpha.one', 'pass', 'pass'] in lines
	assert ['x86_64', 'FAIL', 'FAIL', '1', '1', '2', '0', '1', '0', '0', '0'] in lines
	assert 'ab: x86_64: 1 regressed by the series' in out
	# A second run reuses the worktree.
	capsys.readouterr()
	ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64')))
	assert '(up to date)' in capsys.readouterr().out


def test_ab_without_regressions_exits_0_and_each_side_has_its_progress(abf, capsys):
	f = abf
	f.ctl_write('a', 'arm64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'arm64', 'console', ktap_console(ALPHA, ('autofs_new', [('x', 'ok')])))
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'arm64', 'al*'))) == 0
	out = capsys.readouterr().out
	assert 'ab: nothing regressed by the series' in out
	assert 'arm64 (series): build' in out and 'arm64 (pristine): build' in out
	assert 'arm64 (pristine) boot done in' in out
	# The filter went to both sides' kunit.py exec, and limits the labels.
	assert all(c['argv'][-1] == 'al*' for c in f.side_calls(verb='exec'))
	# Both sides boot with printk timestamps (case durations and starts).
	assert {c['side'] for c in f.side_calls(verb='exec')} == {'a', 'b'}
	assert all('--kernel_args=printk.time=1' in c['argv'] for c in f.side_calls(verb='exec'))
	[x] = ab_json(f)['arches']
	assert {c['label'] for c in x['cases']} == {'unchanged pass'}


def test_ab_a_crash_is_reported_as_a_crash(abf, capsys):
	f = abf
	crashing = ktap_console(('alpha', [('one', 'ok'), ('two', None), ('three', 'ok')]),
				('beta', [('p', 'ok')]), total=2)
	f.ctl_write('a', 'i386', 'console', crashing)
	f.ctl_write('a', 'i386', 'exec_rc', '1')
	f.ctl_write('b', 'i386', 'console', ktap_console(
		('alpha', [('one', 'ok'), ('two', 'ok'), ('three', 'ok')]), ('beta', [('p', 'ok')]),
		('autofs_new', [('x', 'ok')])))
	# The crash re-run asks A's kernel for its tests, and boots beta alone.
	f.ctl_write('a', 'i386', 'list', 'alpha.one\nalpha.two\nalpha.three\nbeta.p\n')
	f.ctl_write('a', 'i386', 'console@beta', ktap_console(('beta', [('p', 'ok')])))
	rc = ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'i386')))
	assert rc == 0                         # A booted and crashed: a result, not a problem
	[x] = ab_json(f)['arches']
	assert x['a']['status'] == 'CRASH' and 'NULL pointer' in x['a']['reason']
	got = {c['case']: (c['a'], c['b'], c['label']) for c in x['cases']}
	assert got['alpha.two'] == ('crash', 'pass', 'fixed by the series')
	assert got['alpha.three'] == (None, 'pass', 'not run on A')     # cut off by the crash
	assert got['beta.p'] == ('pass', 'pass', 'unchanged pass')       # from the re-run boot
	assert got['autofs_new.x'] == (None, 'pass', 'new test')         # A's kernel has no such suite
	assert not [c for c in x['cases'] if c['a'] == 'pass' and c['case'] == 'alpha.two']
	out = capsys.readouterr().out
	assert '  A (pristine): CRASH: BUG: kernel NULL pointer dereference' in out
	assert 'i386 (pristine): list tests' in out and 'i386 (pristine): boot 2' in out
	assert [c['glob'] for c in f.side_calls('a', 'exec')] == ['', '', 'beta']


def test_ab_a_side_that_cannot_build_or_boot_fails_the_run(abf, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'build_rc', '1')
	f.ctl_write('a', 'x86_64', 'build', 'fs/autofs/inode.c:1: error: oops\n')
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('a', 'arm', 'exec', 'qemu-system-arm: no such machine\n')   # no console
	f.ctl_write('a', 'arm', 'exec_rc', '1')
	f.ctl_write('b', 'arm', 'console', ktap_console(ALPHA))
	rc = ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64,arm')))
	assert rc == 1
	doc = ab_json(f)
	assert doc['problems'] == ['x86_64: A (pristine) could not build (BUILD_FAILED)',
				   'arm: A (pristine) could not boot (CRASH, no KTAP result)']
	assert doc['regressed'] == 0
	x86 = doc['arches'][0]
	assert {c['label'] for c in x86['cases']} == {'not run on A'}
	out = capsys.readouterr().out
	assert 'ab: x86_64: A (pristine) could not build (BUILD_FAILED); arm: A (pristine) ' \
	       'could not boot (CRASH, no KTAP result)' in out
	# The build's reason, with the end of its log, is printed under the arch.
	assert '  A (pristine): BUILD_FAILED: kunit.py build exited 1; see ' in out
	assert '      fs/autofs/inode.c:1: error: oops' in out


def test_ab_a_hang_is_reported_as_a_hang(abf, capsys):
	from conftest import read_data
	f = abf
	f.ctl_write('a', 'x86_64', 'console', read_data('console_timeout.log'))
	f.ctl_write('a', 'x86_64', 'exec', read_data('kunit_timeout.log'))
	f.ctl_write('a', 'x86_64', 'exec_rc', '1')
	f.ctl_write('a', 'x86_64', 'list', 'autofs_protocol.autofs_test_negotiate\n')
	f.ctl_write('b', 'x86_64', 'console', read_data('console_pass.log'))
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 0
	[x] = ab_json(f)['arches']
	assert x['a']['status'] == 'TIMEOUT'
	got = {c['case']: (c['a'], c['b'], c['label']) for c in x['cases']}
	assert got['autofs_protocol.autofs_test_non_pipe_refused'] == (
		'crash', 'pass', 'fixed by the series')
	assert got['autofs_protocol.autofs_test_read_end_refused'][2] == 'unchanged pass'
	assert not [c for c in x['cases'] if c['a'] == 'pass' and c['label'] != 'unchanged pass']
	out = capsys.readouterr().out
	assert '  A (pristine): TIMEOUT: guest killed after 300 s without finishing' in out


def test_ab_b_side_that_cannot_build(abf, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'x86_64', 'build_rc', '2')
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 1
	doc = ab_json(f)
	assert doc['problems'] == ['x86_64: B (series) could not build (BUILD_FAILED)']
	# Every case A passed is missing on B: regressed.
	assert doc['regressed'] == 3
	assert f.side_calls('b', 'exec') == []


def test_ab_drops_what_kunit_build_refuses_on_the_pristine_tree(abf, capsys):
	"""The series changed the dependencies of a symbol both trees define."""
	f = abf
	f.ctl_write('a', 'x86_64', 'refuse', 'AUTOFS_FS\n')
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))
	rc = ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64', '--kconfig-add', 'CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y',
			       '--kconfig-add', 'CONFIG_DEBUG_KERNEL=y')))
	assert rc == 0
	first, second = f.side_calls('a', 'build')
	assert 'CONFIG_AUTOFS_FS=y' in first['entries']
	assert 'CONFIG_AUTOFS_FS=y' not in second['entries']
	assert 'CONFIG_DEBUG_KERNEL=y' in second['entries']
	assert '--kconfig_add=CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y' not in first['argv']
	assert '--kconfig_add=CONFIG_DEBUG_KERNEL=y' in first['argv']
	adir = f.results / 'a' / 'x86_64'
	assert 'Missing: CONFIG_AUTOFS_FS=y' in (adir / 'build.refused.log').read_text()
	assert 'Missing' not in (adir / 'build.log').read_text()
	[x] = ab_json(f)['arches']
	assert x['a']['status'] == 'PASS'
	assert [(d['option'], d['why']) for d in x['a']['kunitconfig_dropped']] == [
		('CONFIG_AUTOFS_FS=y', ab.REFUSED),
		('CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y', ab.NOT_DEFINED),
		('CONFIG_AUTOFS_END_STATE_KUNIT_TEST=y', ab.NOT_DEFINED),
		('CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST=y', ab.NOT_DEFINED)]
	assert x['a']['kunitconfig_dropped'][-1]['fragment'] == '--kconfig-add'
	assert 'CONFIG_AUTOFS_FS=y (refused by kunit.py)' in capsys.readouterr().out
	# B was built once, with everything.
	[b] = f.side_calls('b', 'build')
	assert 'CONFIG_AUTOFS_FS=y' in b['entries']


def test_ab_a_config_failure_without_missing_options_is_not_retried(abf):
	from conftest import read_data
	f = abf
	f.ctl_write('a', 'x86_64', 'build', read_data('build_config_conflict.log'))
	f.ctl_write('a', 'x86_64', 'build_rc', '1')
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 1
	assert ab_json(f)['problems'] == ['x86_64: A (pristine) could not build (CONFIG_FAILED)']
	assert len(f.side_calls('a', 'build')) == 1


def test_ab_an_option_neither_tree_has_is_b_s_config_failure(abf):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	(f.repo / 'kunit' / 'arch' / 'x86_64.config').write_text('CONFIG_NOT_ANYWHERE=y\n')
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 1
	doc = ab_json(f)
	assert doc['problems'] == ['x86_64: B (series) could not build (CONFIG_FAILED)']
	[x] = doc['arches']
	assert x['a']['status'] == 'PASS'
	assert 'CONFIG_NOT_ANYWHERE=y' in [d['option'] for d in x['a']['kunitconfig_dropped']]


def test_ab_cases_that_cannot_be_compared_fail_the_run(abf, monkeypatch, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))

	def broken(*a, **kw):
		raise ValueError('unreadable console')
	monkeypatch.setattr(baseline, 'load_results', broken)
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 1
	assert ab_json(f)['problems'] == [
		'x86_64: cases not compared: ValueError: unreadable console']


def test_ab_skipped_profile_arch(abf, capsys):
	f = abf
	(f.repo / 'kunit' / 'profiles' / 'kasan.config').write_text('CONFIG_KASAN=y\n')
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))
	(f.tree / 'lib' / 'Kconfig.kasan').write_text('config KASAN\n\tbool\n')
	git(f.tree, 'add', '-f', 'lib/Kconfig.kasan')
	commit(f.tree, 'kasan in the series tree only\n')
	rc = ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'i386,x86_64', '--profile', 'kasan')))
	out = capsys.readouterr().out
	doc = ab_json(f)
	assert [x['a']['status'] for x in doc['arches']] == ['SKIPPED_PROFILE', 'PASS']
	assert doc['arches'][0]['cases'] == [] and doc['arches'][0]['problems'] == []
	assert 'SKIPPED_PROFILE: profile kasan not run' in out
	bdir = f.cache / 'pristine' / 'build' / 'debian-kasan' / 'x86_64'
	assert any(f'--build_dir={bdir}' in c['argv'] for c in f.side_calls('a', 'build'))
	assert rc == 0


def test_ab_parser_has_no_tree_options(abf):
	p = cli.build_parser()
	args = p.parse_args(['ab'])
	assert args.tree is None and not args.apply_series and not args.compare
	assert args.filter_glob == '' and args.arch == ','.join(paths.DEFAULT_ARCHES)
	assert args.a_side == 'tests'
	with pytest.raises(SystemExit):
		p.parse_args(['ab', '--tree', '/tmp'])
	with pytest.raises(SystemExit):
		p.parse_args(['ab', '--a-side', 'fixes'])


def test_cli_ab_usage_errors_exit_2(tmp_path, capsys):
	assert cli.main(['ab', '--arch', 'sparc', '--cache-dir', str(tmp_path), '--no-install']) == 2
	assert capsys.readouterr().err.startswith('kunit.py ab: error: unknown arch')


def test_ab_on_a_tree_without_the_pristine_ref_is_a_usage_error(abf, capsys):
	f = abf
	git(f.tree, 'update-ref', '-d', tree.PRISTINE_REF)
	with pytest.raises(UserError, match='no refs/bkl-kunit/pristine'):
		ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64')))
	assert f.calls() == []


def test_clean_removes_the_pristine_builds_not_the_worktree(tmp_path, capsys):
	cache = tmp_path / 'c'
	for d in ('build/debian/x86_64', 'pristine/build/debian/x86_64', 'pristine/src/linux-x',
		  'results/1'):
		(cache / d).mkdir(parents=True)
	assert cli.main(['clean', '--cache-dir', str(cache)]) == 0
	assert sorted(str(p.relative_to(cache)) for p in cache.rglob('*')) == [
		'pristine', 'pristine/src', 'pristine/src/linux-x']


def test_one_scratch_worktree_helper_for_ab_bench_and_the_series_checks(repo, tmp_path):
	main, pristine, head = repo
	wt = tmp_path / 'scratch'
	assert tree.scratch_worktree(main, wt, head, clean=True) == 'created'
	assert tree.is_worktree_of(wt, main) and not tree.is_worktree_of(main, wt)
	(wt / 'untracked.o').write_text('x')
	f = wt / 'fs/autofs/Kconfig'
	os.utime(f, (1, 1))
	# clean: untracked and ignored files go, unchanged tracked files keep mtimes.
	assert tree.scratch_worktree(main, wt, head, clean=True) == 'up to date'
	assert not (wt / 'untracked.o').exists() and f.stat().st_mtime == 1
	(wt / 'untracked.o').write_text('x')
	assert tree.scratch_worktree(main, wt, pristine) == 'moved'
	assert (wt / 'untracked.o').exists()                # not cleaned unless asked
	assert git(wt, 'rev-parse', 'HEAD').strip() == pristine


def test_side_names_are_not_a_global_the_run_changes():
	assert dict(ab.side_names('tests')) == {'a': 'tests only', 'b': 'series'}
	assert dict(ab.side_names('pristine')) == {'a': 'pristine', 'b': 'series'}
	with pytest.raises(TypeError):
		ab.SIDES['a'] = 'x'      # type: ignore[index]
	assert ab.side_problem('a', 'ERROR', False, ab.side_names('tests')) == \
		'A (tests only) could not run (ERROR)'


def test_ab_runs_its_arches_as_run_does_with_parallel(abf, monkeypatch):
	f = abf
	for arch in ('x86_64', 'arm'):
		f.ctl_write('a', arch, 'console', A_CONSOLE)
		f.ctl_write('b', arch, 'console', B_CONSOLE)
	calls = []
	real = runner.run_concurrently

	def spy(arches, workers, options, ktree, one):
		calls.append((list(arches), workers, options.jobs))
		return real(arches, workers, options, ktree, one)
	monkeypatch.setattr(runner, 'run_concurrently', spy)
	ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64,arm', '--parallel', '2')))
	assert calls == [(['x86_64', 'arm'], 2, 3)]
	doc = ab_json(f)
	assert [x['arch'] for x in doc['arches']] == ['x86_64', 'arm']
	for side in 'ab':
		s = json.loads((f.results / side / 'summary.json').read_text())
		assert [a['arch'] for a in s['arches']] == ['x86_64', 'arm']
		assert all(a['status'] != 'ERROR' for a in s['arches']), s['arches']


def test_ab_sides_are_written_and_read_by_run_s_code(abf, monkeypatch, capsys):
	"""Each side is a results directory as `run` writes it (runner.finish:
	verdict.json, summary.json with the same keys, the reports), and its
	consoles are read once, for its reports and the labels alike."""
	f = abf
	for arch in ('x86_64', 'arm'):
		f.ctl_write('b', arch, 'console', ktap_console(ALPHA))
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm', '--no-ccache'))) == 0
	run_summary = json.loads((f.results / 'summary.json').read_text())
	run_verdict = json.loads((f.results / 'x86_64' / 'verdict.json').read_text())
	f.results = f.results.parent / 'ab-results'
	for arch in ('x86_64', 'arm'):
		f.ctl_write('a', arch, 'console', ktap_console(ALPHA))
	reads = []
	real = rundir.load_run

	def spy(rdir, *a, **kw):
		reads.append(rdir.name)
		return real(rdir, *a, **kw)
	monkeypatch.setattr(rundir, 'load_run', spy)
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64,arm'))) == 0
	assert sorted(reads) == ['a', 'b']              # once per side
	for side in 'ab':
		s = json.loads((f.results / side / 'summary.json').read_text())
		# run's keys (the tree's facts differ: the fake run's are few), and its side.
		assert set(run_summary) <= set(s) and s['ab_side'] == ab.SIDES[side], side
		assert set(s['timings']) == set(run_summary['timings'])
		assert s['divergence'] == {'cases': [], 'no_results': {}}
		v = json.loads((f.results / side / 'x86_64' / 'verdict.json').read_text())
		assert set(v) == set(run_verdict)
		assert [a['arch'] for a in s['arches']] == ['x86_64', 'arm']
		assert (f.results / side / 'kcidb.json').is_file()
	[x86, _] = ab_json(f)['arches']
	assert {c['label'] for c in x86['cases']} == {'unchanged pass'}
	out = capsys.readouterr().out
	assert ('Reports (pristine): a/arm/junit.xml, a/index.html, a/junit.xml, a/kcidb.json, '
		'a/x86_64/junit.xml') in out
	assert 'Reports (series): b/arm/junit.xml, b/index.html' in out


def test_ab_side_whose_reports_fail_still_labels(abf, monkeypatch, capsys):
	f = abf
	f.ctl_write('a', 'x86_64', 'console', ktap_console(ALPHA))
	f.ctl_write('b', 'x86_64', 'console', ktap_console(ALPHA))

	def broken(*a, **kw):
		raise OSError('disk full')
	monkeypatch.setattr(export, 'write_reports', broken)
	assert ab.main(ab.AbRequest.from_args(f.ab_args('--arch', 'x86_64'))) == 0
	err = capsys.readouterr().err
	assert 'a/: reports not written: OSError: disk full' in err
	assert 'b/: reports not written: OSError: disk full' in err
	assert json.loads((f.results / 'b' / 'summary.json').read_text())['arches'][0]['status'] == 'PASS'
	[x] = ab_json(f)['arches']
	assert {c['label'] for c in x['cases']} == {'unchanged pass'}


def test_a_side_without_leaves_out_the_patches_named(series_repo, tmp_path, capsys):
	"""--a-side=without:2: the series less its second patch (the fix), the
	test that needs the fix left out as it does not apply; the key has the
	mode, so tests mode makes its own A again."""
	main, pristine, (t1, fix, t2, t3) = series_repo
	cache = tmp_path / 'cache'
	mode = ab.parse_a_side('without:2')
	wt, c, _, left = ab.make_a_tree(main, cache, mode)
	assert 'without patches 2' in capsys.readouterr().out
	assert [(x['commit'], x['why']) for x in left] == [(fix, ab.LEFT_ASKED),
							     (t2, ab.LEFT_CONFLICT)]
	assert (wt / 'src.c').read_text() == SRC and (wt / 't3.c').is_file()
	# without:3 keeps the fix: only t2 is left out, asked for.
	wt, c3, _, left = ab.make_a_tree(main, cache, ab.parse_a_side('without:3'))
	assert [(x['commit'], x['why']) for x in left] == [(t2, ab.LEFT_ASKED)]
	assert 'long b;' in (wt / 'src.c').read_text() and c3 != c
	# Another mode is made again: tests leaves out what without:2 did, so
	# the same commits give the same A (committer and dates kept).
	_, ct, _, left = ab.make_a_tree(main, cache, 'tests')
	assert 'Making A' in capsys.readouterr().out
	assert ct == c and left[0]['why'] == ab.LEFT_FIX
	with pytest.raises(UserError, match='the series has 4 patches'):
		ab.make_a_tree(main, cache, ab.parse_a_side('without:5'))


@pytest.mark.parametrize('text, want', [
	('tests', 'tests'), ('pristine', 'pristine'), ('without:3', 'without:3'),
	('without:101,99-100', 'without:99,100,101'), ('without: 7 , 7-8', 'without:7,8'),
])
def test_parse_a_side(text, want):
	assert ab.parse_a_side(text) == want


@pytest.mark.parametrize('text', ['fixes', 'without:', 'without:0', 'without:5-3',
				  'without:x', 'without:1,,2', 'without1'])
def test_parse_a_side_refuses(text):
	with pytest.raises(argparse.ArgumentTypeError, match='not'):
		ab.parse_a_side(text)


def test_a_side_without_is_named_by_its_patches():
	assert dict(ab.side_names('without:99,100,101')) == {
		'a': 'without 0099,0100,0101', 'b': 'series'}
	assert ab.left_numbers('tests') == set() and ab.left_numbers('without:4,9') == {4, 9}
	args = cli.build_parser().parse_args(['ab', '--a-side', 'without:99-101'])
	assert ab.AbRequest.from_args(args).a_side == 'without:99,100,101'
