# SPDX-License-Identifier: GPL-2.0
"""seriescheck: the pure parts (Fixes: tags, warning parsing)."""

import dataclasses
import re

from bklkunit.base.errors import UserError
from bklkunit.series import bootcheck, checkplan, checkseries

KNOWN = {'1da177e4c3f4': 'Linux-2.6.12-rc2'}


def _patch(msg: str) -> str:
	return f'From: A <a@b>\nSubject: [PATCH] x\n\n{msg}\n---\n diff\nFixes: not-a-tag-in-the-diff\n'


def test_fixes_tag_listed_with_its_subject():
	assert checkseries.fixes_problems(
		_patch('Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")'), KNOWN) == (1, [])


def test_fixes_tag_with_a_wrong_subject_or_unknown_id():
	n, bad = checkseries.fixes_problems(_patch('Fixes: 1da177e4c3f4 ("Linux 2.6.12")\n'
						   'Fixes: 0123456789ab ("x: y")'), KNOWN)
	assert n == 2 and len(bad) == 2


def test_fixes_tag_malformed():
	for tag in ['Fixes: 1da177e4 ("Linux-2.6.12-rc2")', 'Fixes: 1da177e4c3f4 Linux-2.6.12-rc2']:
		n, bad = checkseries.fixes_problems(_patch(tag), KNOWN)
		assert n == 1 and bad and 'not `Fixes:' in bad[0]


def test_no_fixes_tag_and_tags_below_the_cut_are_not_counted():
	assert checkseries.fixes_problems(_patch('just a test'), KNOWN) == (0, [])


def test_cited_mainline_commits_are_checked_too():
	known = dict(KNOWN, **{'426f07ad3e2c': 'ufs_free_fragments(): fix the braino in sanity check'})
	ok = _patch('Mainline fixed it with commit 426f07ad3e2c ("ufs_free_fragments(): fix\n'
		    'the braino in sanity check"); stable should take that.')
	assert checkseries.fixes_problems(ok, known) == (1, [])
	n, bad = checkseries.fixes_problems(_patch('see 0123456789abcdef ("ufs: made up")'), known)
	assert n == 1 and 'not in upstream-commits.txt' in bad[0]


def test_warnings_in_touched_files_only():
	out = ('../../../src/linux/fs/autofs/tests/autofs_kunit.c:12:3: warning: unused variable\n'
	       '../../../src/linux/fs/other.c:1:1: warning: elsewhere\n'
	       'fs/autofs/inode.c:99: error: broken\n')
	got = checkseries.Checker._warnings_in(out, ['fs/autofs/tests/autofs_kunit.c',
						     'fs/autofs/inode.c'])
	assert len(got) == 2 and 'elsewhere' not in ''.join(got)


def test_normalise_drops_line_numbers_and_build_prefixes():
	line = '../../../series/src/linux/drivers/media/usb/go7007/go7007-fw.c:10:5: warning: x [-Wy]'
	assert checkseries.Checker._normalise(line) == \
		'drivers/media/usb/go7007/go7007-fw.c: warning: x [-Wy]'


def test_bkl_scan_ignores_comments_but_not_calls():
	comment = [
		'net/appletalk/tests/ddp_kunit.c:5: * The BKL end game replaced lock_kernel() in ddp.c',
		'drivers/x.c:3:/* lock_kernel() is gone */',
		'drivers/x.c:4:\tfoo(); // was unlock_kernel()',
	]
	calls = [
		'drivers/x.c:9:\tlock_kernel();',
		'drivers/x.c:10:\tunlock_kernel (); /* done */',
		'drivers/x.c:1:#include <linux/smp_lock.h>',
		'drivers/x.c:11:\t/* x */ lock_kernel();',
	]
	assert all(checkseries.is_comment_hit(h) for h in comment)
	assert not any(checkseries.is_comment_hit(h) for h in calls)


def test_key_ignores_line_numbers_and_where_the_tree_is(tmp_path):
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.wt = tmp_path / 'series' / 'src' / 'linux'
	kdoc = (f'{c.wt}/fs/ufs/inode.c:398: warning: Function parameter or struct member '
		"'create' not described in 'ufs_getfrag_block'")
	moved = kdoc.replace(':398:', ':402:')
	assert c._key(kdoc) == c._key(moved) == (
		"fs/ufs/inode.c: warning: Function parameter or struct member 'create' not "
		"described in 'ufs_getfrag_block'")
	gcc = '../../../src/linux/fs/ufs/inode.c:12:5: warning: unused variable x [-Wunused]'
	assert c._key(gcc) == 'src/linux/fs/ufs/inode.c: warning: unused variable x [-Wunused]'
	assert c._key(gcc) != c._key(gcc.replace('unused variable x', 'unused variable y'))


def test_maintainer_sections_reads_mixed_case_names():
	out = ('KERNEL UNIT TESTING FRAMEWORK (KUnit)\nM:\tBrendan Higgins <b@example.org>\n'
	       'S:\tMaintained\nF:\tlib/kunit/\n\nTHE REST\nM:\tLinus Torvalds <t@example.org>\n'
	       'L:\tlinux-kernel@vger.kernel.org\n')
	assert checkseries.maintainer_sections(out) == [
		'KERNEL UNIT TESTING FRAMEWORK (KUnit)', 'THE REST']
	assert checkseries.maintainer_sections('THE REST\nM:\tLinus\n') == ['THE REST']
	assert checkseries.maintainer_sections('') == []


def test_the_build_check_config_enables_every_suite_the_series_defines():
	"""check-series builds with bootcheck.PROFILE's fragments; every KUnit
	symbol a patch defines must be switched on by them, or its code would
	never be compiled by the per-patch build check."""
	from bklkunit.base import paths
	from bklkunit.run import plan
	defined = set()
	for p in sorted(paths.PATCH_DIR.glob('*.patch')):
		defined |= set(re.findall(r'^\+config (\w+_KUNIT_TEST)\b', p.read_text(), re.M))
	assert defined, 'no KUnit symbol defined by the series?'
	enabled = set()
	for frag in plan.kunitconfigs('x86_64', [], bootcheck.PROFILE):
		enabled |= set(re.findall(r'^CONFIG_(\w+)=y', frag.read_text(), re.M))
	assert sorted(defined - enabled) == []


def _checker(tmp_path, monkeypatch, opts, built=lambda arch, p: True):
	"""A Checker over three fake patches whose git, builds and boots are
	recorded, not run."""
	from pathlib import Path
	from bklkunit.source import tree
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.cache, c.opts = tmp_path, dataclasses.replace(opts, use_ccache=False, verbose=False)
	c.patches = [Path(f'{n:04d}-x.patch') for n in (1, 2, 3)]
	c.commits = ['c1', 'c2', 'c3']
	c.pristine, c.wt, c.logdir = 'p0', tmp_path / 'wt', tmp_path / 'logs'
	c.build_root, c.results, c.boots = tmp_path / 'build', [], []
	c._pool, c._booting, c._kunit_tool_patched = None, None, None
	c.calls = []
	monkeypatch.setattr(tree, 'git', lambda *a, **k: c.calls.append(('git',) + a[1:]))
	monkeypatch.setattr(c, '_full_config', lambda arch: tmp_path / f'{arch}.full', raising=False)
	monkeypatch.setattr(c, '_build_patch', lambda arch, p, commit, full:
			    c.calls.append(('build', arch, p.name[:4])) or built(arch, p), raising=False)
	monkeypatch.setattr(c, '_boot_patch', lambda i, p, commit:
			    c.calls.append(('boot', p.name[:4])), raising=False)
	return c


def test_the_per_patch_builds_of_each_arch_and_the_boots_after_x86_64(tmp_path, monkeypatch):
	from bklkunit.series.checkplan import SeriesOptions
	opts = SeriesOptions(checks=('apply', 'build', 'boot'), build_arches=('x86_64', 'arm'),
			     from_patch=2)
	c = _checker(tmp_path, monkeypatch, opts, built=lambda arch, p: p.name[:4] != '0003')
	c.check_build()
	c.finish_boots()
	steps = [s for s in c.calls if s[0] != 'git' or s[1] == 'checkout']
	assert [s for s in steps if s[0] != 'git'] == [
		('build', 'x86_64', '0002'), ('boot', '0002'), ('build', 'arm', '0002'),
		('build', 'x86_64', '0003'), ('build', 'arm', '0003')]     # 0003 did not build: no boot
	assert ('git', 'checkout', '-q', '--detach', 'c1') not in c.calls   # before --from-patch
	assert (tmp_path / 'series' / 'boots.json').read_text().strip() == '[]'
	assert c._build_dir('arm') != c._build_dir('x86_64')


def test_to_patch_ends_the_per_patch_checks(tmp_path, monkeypatch):
	from bklkunit.series.checkplan import SeriesOptions
	opts = SeriesOptions(checks=('apply', 'build'), build_arches=('arm',), to_patch=2)
	c = _checker(tmp_path, monkeypatch, opts)
	c.check_build()
	assert [s for s in c.calls if s[0] == 'build'] == [('build', 'arm', '0001'),
							   ('build', 'arm', '0002')]


def test_no_boot_builds_only(tmp_path, monkeypatch):
	from bklkunit.series.checkplan import SeriesOptions
	c = _checker(tmp_path, monkeypatch, SeriesOptions(checks=('apply', 'build')))
	c.check_build()
	c.finish_boots()
	assert [s for s in c.calls if s[0] == 'boot'] == []
	assert [s[2] for s in c.calls if s[0] == 'build'] == ['0001', '0002', '0003']
	assert not (tmp_path / 'series' / 'boots.json').exists()


def _overlapping(tmp_path, monkeypatch, fail_boot=None):
	"""A Checker whose real _boot_patch starts fake boots: each boot waits
	until the build after it has started (or the checks end), so a boot
	that did not run beside the next build would hang the test (the
	futures' wait is bounded: it fails instead)."""
	import threading
	from bklkunit.run import progress
	from bklkunit.series import bootcheck, checkplan
	from bklkunit.source import tree
	from bklkunit.series.checkplan import BootPlan, SeriesOptions
	c = _checker(tmp_path, monkeypatch, SeriesOptions(checks=('apply', 'build', 'boot')))
	del c._boot_patch     # the real one
	c.patches = [tmp_path / p.name for p in c.patches]
	for p in c.patches:
		p.write_text('')
	started = {n: threading.Event() for n in ('0001', '0002', '0003', 'end')}
	log, lock = [], threading.Lock()

	def build(arch, p, commit, full):
		with lock:
			log.append(('build', p.name[:4]))
		started[p.name[:4]].set()
		return True
	monkeypatch.setattr(c, '_build_patch', build)
	monkeypatch.setattr(checkplan, 'boot_plan', lambda name, text, scope, head, slow:
			    BootPlan(name, ('why',), ('ufs',), 'ufs_*', skip_slow=not head))
	monkeypatch.setattr(checkplan, 'test_symbols', lambda diff: {})
	# git diff of tools/testing/kunit: the series does not change it.
	monkeypatch.setattr(tree, 'git', lambda *a, **k: type('R', (), {'stdout': ''})())

	def stage(ktree, bdir, dest):
		dest.mkdir(parents=True, exist_ok=True)
		return dest
	monkeypatch.setattr(bootcheck, 'stage', stage)

	def boot(ktree, kernel, out, cache, plan, symbols, timeout, ccache, verbose):
		n = plan.patch[:4]
		nxt = {'0001': '0002', '0002': '0003', '0003': 'end'}[n]
		with lock:
			log.append(('boot starts', n))
		assert started[nxt].wait(30), f'boot {n} was not running when {nxt} started'
		with lock:
			log.append(('boot ends', n))
		if n == fail_boot:
			raise RuntimeError(f'boot {n} broke')
		return bootcheck.BootRecord(plan.patch, bootcheck.BootStatus.PASS, plan.suites,
					     passed=3, seconds=1.0)
	monkeypatch.setattr(bootcheck, 'boot_patch', boot)
	monkeypatch.setattr(progress, 'LINES_ONLY', False)
	return c, started, log


def test_each_boot_runs_beside_the_next_build_one_at_a_time(tmp_path, monkeypatch):
	"""Patch n's boot runs while patch n+1 builds; the head's beside what
	follows the builds (finish_boots comes last); checks added in patch
	order, one guest at a time, boots.json written at the end."""
	c, started, log = _overlapping(tmp_path, monkeypatch)
	c.check_build()
	started['end'].set()
	c.finish_boots()
	assert log.index(('build', '0002')) < log.index(('boot ends', '0001'))
	assert log.index(('build', '0003')) < log.index(('boot ends', '0002'))
	for a, b in (('0001', '0002'), ('0002', '0003')):
		assert log.index(('boot ends', a)) < log.index(('boot starts', b))
	assert [r.name for r in c.results] == [f'boot {n}-x.patch' for n in ('0001', '0002', '0003')]
	assert all(r.ok for r in c.results) and c._pool is None and c._booting is None
	import json
	assert [r['patch'] for r in json.loads((tmp_path / 'series' / 'boots.json').read_text())] \
		== [p.name for p in c.patches]


def test_a_boot_that_raises_stops_the_checks(tmp_path, monkeypatch):
	"""An exception in the boot thread reaches the main thread at the next
	boot (never a silent pass); stop_boots leaves nothing running."""
	import pytest
	c, started, log = _overlapping(tmp_path, monkeypatch, fail_boot='0001')
	with pytest.raises(RuntimeError, match='boot 0001 broke'):
		c.check_build()
	c.stop_boots()
	assert c._booting is None and c._pool is None
	assert [r for r in c.results if r.name.startswith('boot 0001')] == []


def test_a_series_that_changes_kunit_tool_boots_one_patch_at_a_time(tmp_path, monkeypatch):
	"""The boot runs the worktree's tools/testing/kunit: if a patch changes
	it, each boot ends before the worktree moves to the next patch."""
	from bklkunit.series import bootcheck, checkplan
	from bklkunit.source import tree
	from bklkunit.series.checkplan import BootPlan, SeriesOptions
	c = _checker(tmp_path, monkeypatch, SeriesOptions(checks=('apply', 'build', 'boot')))
	del c._boot_patch
	c.patches = [tmp_path / p.name for p in c.patches]
	for p in c.patches:
		p.write_text('')
	order = []
	# Each build notes whether a boot was still pending when it started.
	monkeypatch.setattr(c, '_build_patch', lambda arch, p, commit, full:
			    order.append(('build', p.name[:4], c._booting is None)) or True)
	monkeypatch.setattr(checkplan, 'boot_plan', lambda name, text, scope, head, slow:
			    BootPlan(name, ('why',), ('ufs',), 'ufs_*', skip_slow=True))
	monkeypatch.setattr(checkplan, 'test_symbols', lambda diff: {})
	monkeypatch.setattr(tree, 'git', lambda wt, *a, **k: type('R', (), {
		'stdout': 'tools/testing/kunit/kunit_parser.py\n' if 'tools/testing/kunit' in a
		else ''})())
	monkeypatch.setattr(bootcheck, 'stage', lambda ktree, bdir, dest: dest)

	def boot(ktree, kernel, out, cache, plan, *rest):
		order.append(('boot', plan.patch[:4]))
		return bootcheck.BootRecord(plan.patch, bootcheck.BootStatus.PASS, plan.suites)
	monkeypatch.setattr(bootcheck, 'boot_patch', boot)
	c.check_build()
	c.finish_boots()
	assert order == [('build', '0001', True), ('boot', '0001'), ('build', '0002', True),
			 ('boot', '0002'), ('build', '0003', True), ('boot', '0003')]
	assert c._kunit_tool_patched is True and [r.name[:9] for r in c.results] == [
		'boot 0001', 'boot 0002', 'boot 0003']


def test_olddefconfig_runs_again_only_where_kconfig_files_changed(tmp_path, monkeypatch):
	"""The full configuration is copied and olddefconfig'd at the first
	patch, then only at a patch whose Kconfig files differ from those of
	the commit it was last made at, and after a parent's W=1 build."""
	import subprocess
	from pathlib import Path
	from bklkunit.source import tree
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.wt, c.build_root, c.logdir = tmp_path / 'wt', tmp_path / 'build', tmp_path / 'logs'
	c.logdir.mkdir()
	c.results, c._config_at = [], {}
	c.opts = checkplan.SeriesOptions()
	c.opts = dataclasses.replace(c.opts, use_ccache=False, verbose=False)
	full = tmp_path / 'config.full'
	full.write_text('CONFIG_X=y\n')
	bdir = c._build_dir('arm')
	bdir.mkdir(parents=True)
	changed = {('c1', 'c2'): 'fs/ufs/super.c\n', ('c2', 'c3'): 'fs/ufs/super.c\n',
		   ('c1', 'c3'): 'fs/ufs/Kconfig\nfs/ufs/super.c\n',
		   ('c3', 'c4'): 'scripts/kconfig/conf.c\n'}

	def git(wt, *a, **k):
		return subprocess.CompletedProcess(a, 0, changed[a[2:4]] if a[0] == 'diff' else '', '')
	monkeypatch.setattr(tree, 'git', git)
	made = []

	def make(bdir, arch, targets, extra, log, srcdir):
		made.append(' '.join(targets) or 'all')
		if targets == ['olddefconfig']:
			assert (bdir / '.config').read_text() == full.read_text()
		(bdir / '.config').write_text('resolved\n')
		return subprocess.CompletedProcess([], 0, '', '')
	monkeypatch.setattr(c, '_make', make)
	for commit in ('c1', 'c2', 'c3', 'c4'):
		assert c._build_patch('arm', Path(f'{commit}-x.patch'), commit, full)
	# c2: same Kconfig files as c1; c3: fs/ufs/Kconfig differs from c1's; c4: the kconfig tool
	assert made == ['olddefconfig', 'all', 'all', 'olddefconfig', 'all', 'olddefconfig', 'all']
	assert c._config_at == {'arm': 'c4'}
	c._preexisting(bdir, 'arm', 'c4', [], tmp_path / 'log')
	assert c._config_at == {}


def test_the_series_check_builds_share_one_ccache_across_arches(tmp_path):
	"""Each arch builds in its own directory, every make with the same
	CCACHE_DIR (build_env) and the arch's own compiler under ccache."""
	from bklkunit.run import plan
	env = plan.build_env(tmp_path)
	assert env['CCACHE_DIR'] == str(tmp_path / 'ccache')
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.build_root = tmp_path / 'series' / 'build'
	c.opts = checkplan.SeriesOptions()
	dirs = {a: c._build_dir(a) for a in ('x86_64', 'i386', 'arm', 'arm64')}
	assert len(set(dirs.values())) == 4
	assert all(d.parent == c.build_root / 'debian' for d in dirs.values())
	# the lean configuration's objects never replace the full one's
	c.opts = checkplan.SeriesOptions(build_config=checkplan.BuildConfig.LEAN)
	assert c._build_dir('x86_64') == c.build_root / 'lean' / 'x86_64'


def _lean_checker(tmp_path, monkeypatch, config_text):
	"""A Checker whose make writes config_text as the .config of any
	olddefconfig, and whose series defines CONFIG_A_KUNIT_TEST and
	CONFIG_B_KUNIT_TEST; the makes' targets in made."""
	import subprocess
	from bklkunit.source import tree
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.wt, c.build_root, c.logdir = tmp_path / 'wt', tmp_path / 'build', tmp_path / 'logs'
	(c.wt / 'scripts' / 'kconfig').mkdir(parents=True)
	merge = c.wt / 'scripts' / 'kconfig' / 'merge_config.sh'
	merge.write_text('#!/bin/sh\nexit 0\n')
	merge.chmod(0o755)
	c.logdir.mkdir()
	c.cache = tmp_path
	c.results, c._config_at, c.commits, c.pristine = [], {}, ['head'], 'base'
	c.opts = checkplan.SeriesOptions(build_config=checkplan.BuildConfig.LEAN)
	c.opts = dataclasses.replace(c.opts, use_ccache=False, verbose=False)
	diff = ('+++ b/fs/x/Kconfig\n+config A_KUNIT_TEST\n'
		'+++ b/fs/y/Kconfig\n+config B_KUNIT_TEST\n')
	monkeypatch.setattr(tree, 'git', lambda wt, *a, **k: subprocess.CompletedProcess(
		a, 0, diff if a[0] == 'diff' else '', ''))
	made = []

	def make(bdir, arch, targets, extra, log, srcdir, nice=0):
		made.append(' '.join(targets))
		if targets == ['tinyconfig']:
			(bdir / '.config').write_text('CONFIG_TINY=y\n')
		if targets == ['olddefconfig']:
			(bdir / '.config').write_text(config_text)
		return subprocess.CompletedProcess([], 0, '', '')
	c._make = make
	return c, made


def test_the_lean_configuration_builds_every_suite_in(tmp_path, monkeypatch):
	"""--build-config=lean: tinyconfig, the lean fragment merged, olddefconfig;
	config.full is what they made, and the check says so."""
	c, made = _lean_checker(tmp_path, monkeypatch,
				'CONFIG_A_KUNIT_TEST=y\nCONFIG_B_KUNIT_TEST=y\n')
	full = c._full_config('x86_64')
	assert full == tmp_path / 'build' / 'lean' / 'x86_64' / 'config.full'
	assert full.read_text() == 'CONFIG_A_KUNIT_TEST=y\nCONFIG_B_KUNIT_TEST=y\n'
	assert made == ['tinyconfig', 'olddefconfig']
	frag = (full.parent / 'lean.config').read_text()
	assert 'CONFIG_KUNIT=y' in frag and '=m' not in frag
	assert [(r.name, r.ok) for r in c.results] == [('build config', True)]
	assert '2 suites built in' in c.results[0].detail


def test_a_suite_the_lean_configuration_leaves_out_fails_its_check(tmp_path, monkeypatch):
	"""A suite olddefconfig dropped (or left a module) would never be
	compiled by the lean builds: the configuration check fails naming it,
	and no build follows."""
	c, made = _lean_checker(tmp_path, monkeypatch,
				'CONFIG_A_KUNIT_TEST=m\n# CONFIG_B_KUNIT_TEST is not set\n')
	assert c._full_config('arm') is None
	[r] = c.results
	assert r.name == 'build config arm' and not r.ok
	assert 'CONFIG_A_KUNIT_TEST, CONFIG_B_KUNIT_TEST' in r.detail


def test_check_series_never_rebuilds_an_existing_work_tree(tmp_path, monkeypatch):
	"""Only a cache without a prepared tree gets prepare; one that has it
	(a developer's, prepared from another checkout's series) is only read."""
	from bklkunit.source import tree
	calls = []
	monkeypatch.setattr(tree, 'prepare', lambda *a, **k: calls.append('prepare'))
	monkeypatch.setattr(tree, 'find_prepared', lambda cache: tmp_path / 'linux')
	checkseries.repository(tmp_path)
	assert calls == []

	def none(cache):
		raise UserError('no prepared work tree')
	monkeypatch.setattr(tree, 'find_prepared', none)
	checkseries.repository(tmp_path)
	assert calls == ['prepare']


def _head_checker(tmp_path, monkeypatch, checks):
	"""_checker with the head checks' state, and the head worktree's
	checkout recorded, not made."""
	import threading
	from pathlib import Path
	from bklkunit.source import tree
	from bklkunit.series.checkplan import SeriesOptions
	c = _checker(tmp_path, monkeypatch, SeriesOptions(checks=checks))
	c.main = Path(tmp_path / 'main' / 'linux')
	c._init_head()
	monkeypatch.setattr(tree, 'scratch_worktree', lambda main, wt, commit, clean=False:
			    c.calls.append(('worktree', wt, commit)))
	return c


def test_the_head_checks_run_beside_the_per_patch_builds(tmp_path, monkeypatch, capsys):
	"""go7007 and modules start on the head's own worktree when the series
	applied and run while the per-patch builds do (the first build waits
	for them to have started: run after the builds, they would not have,
	and the build fails its check); their results come after the builds'."""
	import threading
	from bklkunit.source import tree
	c = _head_checker(tmp_path, monkeypatch, ('apply', 'build', 'go7007', 'modules'))
	monkeypatch.setattr(c, 'check_apply', lambda: True)
	monkeypatch.setattr(tree, 'git', lambda *a, **k: c.calls.append(('git',) + a[1:]))
	head_started = threading.Event()
	threads = {}

	def build(arch, p, commit, full):
		c.calls.append(('build', p.name[:4]))
		assert head_started.wait(60), 'the head checks had not started'  # bounded
		return True

	def check(name):
		def run(srcdir, build_root, report, make):
			threads[name] = threading.current_thread()
			assert make.keywords == {'nice': checkseries.HEAD_NICE}
			head_started.set()
			report(f'{name} x86_64', True, f'{srcdir} {build_root}')
		return run
	monkeypatch.setattr(c, '_build_patch', build)
	monkeypatch.setattr(c, 'check_go7007', check('go7007'))
	monkeypatch.setattr(c, 'check_modules', check('modules'))
	checkseries._run_checks(c, c.opts)
	assert c.calls[0] == ('worktree', c.head_wt, 'c3')
	assert [r.name for r in c.results] == ['go7007 x86_64', 'modules x86_64']
	assert all(r.ok for r in c.results)
	assert c.results[0].detail == f'{c.head_wt} {c.head_root / "build"}'
	assert threads['go7007'] is threads['modules'] is not threading.main_thread()
	assert c._head is None and c._head_pool is None
	out = capsys.readouterr().out
	assert out.index('go7007 x86_64') < out.index('modules x86_64')


def test_a_head_check_that_raises_is_its_failure_and_the_next_still_runs(tmp_path,
										 monkeypatch):
	c = _head_checker(tmp_path, monkeypatch, ('apply', 'go7007', 'modules'))

	def go7007(srcdir, build_root, report, make):
		raise OSError('no space left on device')

	def modules(srcdir, build_root, report, make):
		report('modules x86_64', True)
	monkeypatch.setattr(c, 'check_go7007', go7007)
	monkeypatch.setattr(c, 'check_modules', modules)
	c.start_head(c.opts.checks)
	c.finish_head()
	assert [(r.name, r.ok) for r in c.results] == [('go7007', False), ('modules x86_64', True)]
	assert 'no space left on device' in c.results[0].detail


def test_the_heads_worktree_that_cannot_be_made_fails_each_head_check(tmp_path, monkeypatch):
	from bklkunit.source import tree
	from bklkunit.base.errors import UserError
	c = _head_checker(tmp_path, monkeypatch, ('apply', 'go7007', 'modules'))

	def broken(main, wt, commit, clean=False):
		raise UserError('git worktree add: disk full')
	monkeypatch.setattr(tree, 'scratch_worktree', broken)
	c.start_head(c.opts.checks)
	c.finish_head()
	assert [(r.name, r.ok) for r in c.results] == [('go7007', False), ('modules', False)]
	assert all('disk full' in r.detail for r in c.results)


def _fake_make(tmp_path, body):
	"""A PATH whose `make` is a shell script with body."""
	import os
	bindir = tmp_path / 'bin'
	bindir.mkdir(exist_ok=True)
	(bindir / 'make').write_text('#!/bin/sh\n' + body)
	(bindir / 'make').chmod(0o755)
	return f'{bindir}:{os.environ["PATH"]}'


def test_the_head_checks_makes_run_at_head_nice(tmp_path, monkeypatch):
	"""_make with nice=N runs make N nicer than the caller (and logs the
	make command itself); without it, at the caller's niceness."""
	import os
	import threading
	monkeypatch.setenv('PATH', _fake_make(tmp_path, 'nice\n'))
	c = checkseries.Checker.__new__(checkseries.Checker)
	c.cache, c.jobs, c.main = tmp_path, 2, tmp_path / 'linux'
	c.opts = checkplan.SeriesOptions(use_ccache=False, verbose=False)
	c._init_head()
	log = tmp_path / 'log'
	mine = os.nice(0)
	plain = c._make(tmp_path, 'x86_64', ['vmlinux'], [], log, tmp_path)
	nicer = c._make(tmp_path, 'x86_64', ['vmlinux'], [], log, tmp_path, nice=10)
	assert plain.returncode == nicer.returncode == 0
	assert int(plain.stdout) == mine
	assert int(nicer.stdout) == min(mine + 10, 19)
	assert nicer.args[0] == 'make' and log.read_text().count('$ make -C ') == 2
	assert c._live == set()


def test_stopping_the_head_checks_ends_their_make(tmp_path, monkeypatch):
	"""stop_head (^C, an error in the main thread) terminates the make a
	head check is waiting for and waits for the thread; no result is
	added and the next check does not start.  The make would otherwise sleep ten minutes: the join is bounded
	so that a stop that does not work fails instead of hanging."""
	import threading
	monkeypatch.setenv('PATH', _fake_make(tmp_path, 'touch "$0.started"; exec sleep 600\n'))
	c = _head_checker(tmp_path, monkeypatch, ('apply', 'go7007', 'modules'))
	c.jobs = 2
	later = []

	def go7007(srcdir, build_root, report, make):
		proc = make(tmp_path, 'x86_64', ['vmlinux'], [], tmp_path / 'log', srcdir)
		report('go7007 x86_64', proc.returncode == 0, str(proc.returncode))
	monkeypatch.setattr(c, 'check_go7007', go7007)
	monkeypatch.setattr(c, 'check_modules', lambda *a: later.append(a))
	c.start_head(c.opts.checks)
	started = tmp_path / 'bin' / 'make.started'
	for _ in range(600):
		if started.exists():
			break
		threading.Event().wait(0.1)
	assert started.exists()
	stopper = threading.Thread(target=c.stop_head)
	stopper.start()
	stopper.join(60)
	assert not stopper.is_alive()
	assert c.results == [] and c._head is None and c._head_pool is None
	assert c._head_stop.is_set() and later == []    # no step after the stop


def test_go7007_makes_its_log_directory(tmp_path, monkeypatch):
	"""From the head checks' thread go7007 may be the first check to write
	a log (a new cache: 2026-12-06's cold make test failed it with
	FileNotFoundError for series/logs/go7007-x86_64.log)."""
	import subprocess
	c = _head_checker(tmp_path, monkeypatch, ('apply', 'go7007'))
	c.opts = dataclasses.replace(c.opts, go7007_arch='x86_64', update_go7007_baseline=False)
	c.cache = tmp_path
	c.logdir = tmp_path / 'series' / 'logs'
	made = []

	def make(bdir, arch, targets, extra, log, srcdir):
		made.append(targets)
		assert log.parent == c.logdir and log.exists()
		if targets == ['allnoconfig']:
			(bdir / '.config').write_text('CONFIG_VIDEO_GO7007=y\n')
		else:
			(bdir / 'drivers/media/usb/go7007').mkdir(parents=True, exist_ok=True)
			(bdir / 'drivers/media/usb/go7007/go7007-driver.o').write_text('')
		return subprocess.CompletedProcess([], 0, '', '')
	c.check_go7007(tmp_path / 'src', tmp_path / 'head' / 'build', c.add, make)
	assert made == [['allnoconfig'], ['drivers/media/usb/go7007/']]
	assert [(r.name, r.ok) for r in c.results] == [('go7007 x86_64', True)]


def test_a_lean_build_is_one_make_at_w1_counting_only_new_warnings(tmp_path, monkeypatch):
	"""The lean per-patch build: one make, W=1 on everything; a warning in a
	file the patch touches fails it unless the parent commit had it too."""
	import subprocess
	from pathlib import Path
	c, made = _lean_checker(tmp_path, monkeypatch, '')
	extras = []
	out = ('fs/x/a.c:3:5: warning: old one [-Wmissing-prototypes]\n'
	       'fs/x/a.c:9:1: warning: new one [-Wunused]\n'
	       'fs/z/other.c:1:1: warning: not ours [-Wunused]\n')

	def make(bdir, arch, targets, extra, log, srcdir, nice=0):
		extras.append((tuple(targets), tuple(extra)))
		return subprocess.CompletedProcess([], 0, out, '')
	c._make = make
	from bklkunit.source import tree
	monkeypatch.setattr(tree, 'git', lambda wt, *a, **k: subprocess.CompletedProcess(
		a, 0, 'fs/x/a.c\n' if a[0] == 'diff-tree' else '', ''))
	bdir = c._build_dir('x86_64')
	(bdir / 'fs' / 'x').mkdir(parents=True)
	(bdir / 'fs' / 'x' / 'a.o').write_text('')
	seen = []

	def pre(b, arch, commit, objs, log):
		seen.append(objs)
		return {'fs/x/a.c: warning: old one [-Wmissing-prototypes]'}
	monkeypatch.setattr(c, '_preexisting', pre)
	full = tmp_path / 'config.full'
	full.write_text('')
	assert c._build_patch('x86_64', Path('0001-x.patch'), 'c1', full)
	assert all(e == ('W=1',) for _, e in extras) and [t for t, _ in extras] == [('olddefconfig',), ()]
	assert seen == [['fs/x/a.o']]
	[r] = c.results
	assert not r.ok and 'new one' in r.detail and 'old one' not in r.detail
	# with only the parent's warning it passes, and says it was not counted
	out = 'fs/x/a.c:3:5: warning: old one [-Wmissing-prototypes]\n'
	c.results.clear()
	c._build_patch('x86_64', Path('0001-x.patch'), 'c1', full)
	assert c.results[0].ok and '1 warning(s) already in the parent' in c.results[0].detail
