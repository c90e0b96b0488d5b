# SPDX-License-Identifier: GPL-2.0
"""seriesplan: which patches of check-series boot, with which suites (from
patch files alone), and check-series' options read and refused."""

import argparse
import re

import pytest

from bklkunit import cli
from bklkunit.base import paths
from bklkunit.base.errors import UserError
from bklkunit.series import checkplan
from bklkunit.series.checkplan import BootScope, SeriesOptions, boot_plan
from bklkunit.source import subsystems, tree

FIXES = 'Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")'


def patch(subject: str, files, trailers=(FIXES,), body='Some words.', diff=''):
	"""A git format-patch file touching files (one line added to each)."""
	msg = '\n'.join([body, '', *trailers, 'Signed-off-by: A <a@example.org>']
			if trailers else [body, '', 'Signed-off-by: A <a@example.org>'])
	out = [f'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001',
	       'From: A <a@example.org>', f'Subject: [PATCH 01/53] {subject}', '', msg, '---']
	out += [f' {f} | 1 +' for f in files] + ['']
	for f in files:
		out += [f'diff --git a/{f} b/{f}', 'index 000..111 100644', f'--- a/{f}', f'+++ b/{f}',
			'@@ -1,1 +1,2 @@', ' old line', '+new line']
	return '\n'.join(out) + '\n' + diff


# ------------------------------------------------------------ which patches


def test_a_fix_boots_with_its_subsystems_suites_slow_cases_skipped():
	b = boot_plan('0001-a.patch', patch('appletalk: fix', ['net/appletalk/ddp.c']))
	assert b is not None and b.glob == 'appletalk_*' and b.skip_slow
	assert b.why == (FIXES,) and b.subsystems == ('appletalk',)
	assert b.suites == "'appletalk_*' (slow cases skipped)"


def test_a_fix_is_known_by_its_trailer_not_by_a_fixes_line_in_the_body():
	body = 'This is not a trailer:\nFixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")\nin the body.'
	assert boot_plan('0002-a.patch', patch('ufs: tidy', ['fs/ufs/super.c'], trailers=(),
						body=body)) is None


def test_a_patch_that_is_neither_a_fix_nor_a_suite_change_does_not_boot():
	assert boot_plan('0010-a.patch', patch('ufs: find the superblock', ['fs/ufs/super.c'],
						trailers=())) is None
	assert boot_plan('0011-a.patch', patch('docs', ['Documentation/x.rst'], trailers=())) is None


@pytest.mark.parametrize('f, glob', [
	('fs/ufs/tests/rw_kunit.c', 'ufs_*'),
	('fs/autofs/.kunitconfig', 'autofs_*'),
	('net/appletalk/tests/route_kunit.c', 'appletalk_*'),
	('lib/kunit/fault.c', ''),             # the helpers: every suite
	('include/kunit/fault.h', ''),
	('drivers/foo/tests/x_kunit.c', ''),   # no subsystem of ours: every suite
])
def test_a_suite_change_boots(f, glob):
	b = boot_plan('0030-a.patch', patch('x: tests', [f], trailers=()))
	assert b is not None and b.glob == glob and b.skip_slow
	assert b.why == (f'touches {f}',)


def test_maintainers_does_not_widen_the_suites():
	b = boot_plan('0028-a.patch', patch('ufs: tests', ['MAINTAINERS', 'fs/ufs/tests/x.c'],
					    trailers=()))
	assert b is not None and b.glob == 'ufs_*'


def test_two_subsystems_boot_every_suite():
	b = boot_plan('0040-a.patch', patch('x', ['fs/ufs/tests/a.c', 'fs/autofs/tests/b.c'],
					    trailers=()))
	assert b is not None and b.glob == '' and b.subsystems == ('ufs', 'autofs')


def test_a_kconfig_test_entry_is_a_suite_change():
	diff = ('diff --git a/fs/ufs/Kconfig b/fs/ufs/Kconfig\n--- a/fs/ufs/Kconfig\n'
		'+++ b/fs/ufs/Kconfig\n@@ -40,7 +40,7 @@ config UFS_MAP_KUNIT_TEST\n'
		' \tbool "KUnit tests" if !KUNIT_ALL_TESTS\n-\tdepends on UFS_FS && KUNIT=y\n'
		'+\tdepends on UFS_FS && KUNIT\n \tdefault KUNIT_ALL_TESTS\n')
	text = patch('ufs: let the suite be a module', [], trailers=(), diff=diff)
	assert checkplan.kconfig_test_entries(text) == ['UFS_MAP_KUNIT_TEST']
	b = boot_plan('0054-a.patch', text)
	assert b is not None and b.glob == 'ufs_*'
	assert b.why == ('changes the Kconfig entry UFS_MAP_KUNIT_TEST',)


def test_a_kconfig_change_outside_test_entries_is_not_a_suite_change():
	diff = ('diff --git a/fs/ufs/Kconfig b/fs/ufs/Kconfig\n--- a/fs/ufs/Kconfig\n'
		'+++ b/fs/ufs/Kconfig\n@@ -1,4 +1,4 @@\n config UFS_FS\n'
		'-\ttristate "UFS file system support (read only)"\n'
		'+\ttristate "UFS file system support"\n \tdepends on BLOCK\n'
		' \t  Mentions UFS_MAP_KUNIT_TEST only in context.\n')
	assert checkplan.kconfig_test_entries(patch('ufs', [], trailers=(), diff=diff)) == []
	# An entry added (the config line itself is new) counts.
	added = ('diff --git a/net/appletalk/Kconfig b/net/appletalk/Kconfig\n'
		 '--- a/net/appletalk/Kconfig\n+++ b/net/appletalk/Kconfig\n@@ -9,0 +10,3 @@\n'
		 '+config ATALK_DDP_KUNIT_TEST\n+\tbool "x"\n+\tdepends on ATALK\n')
	assert checkplan.kconfig_test_entries(added) == ['ATALK_DDP_KUNIT_TEST']


def test_the_series_head_boots_every_suite_and_every_case():
	b = boot_plan('0053-a.patch', patch('appletalk: test', ['net/appletalk/tests/x.c'],
					    trailers=()), head=True)
	assert b is not None and b.glob == '' and not b.skip_slow and 'series head' in b.why
	b = boot_plan('0053-a.patch', patch('docs', ['Documentation/x.rst'], trailers=()),
		      head=True)
	assert b is not None and b.why == ('series head',)


def test_scope_all_and_boot_slow():
	text = patch('ufs: fix', ['fs/ufs/super.c'])
	b = boot_plan('0011-a.patch', text, scope=BootScope.ALL)
	assert b is not None and b.glob == '' and b.skip_slow
	b = boot_plan('0011-a.patch', text, slow=True)
	assert b is not None and b.glob == 'ufs_*' and not b.skip_slow


def test_the_recorded_series_boots_every_fix_and_every_suite_patch():
	"""kernel-patches/ as committed: a patch with a Fixes: trailer or a
	tests/ file boots, with its subsystem's glob when it has one; the
	last boots every suite, slow cases included."""
	patches = tree.read_series(paths.PATCH_DIR)
	plans = [boot_plan(p.name, p.read_text(), head=p == patches[-1]) for p in patches]
	assert plans[-1] is not None and plans[-1].glob == '' and not plans[-1].skip_slow
	for p, b in zip(patches[:-1], plans[:-1]):
		text = p.read_text()
		fix = re.search(r'^Fixes: ', text.split('\n---\n')[0], re.M)
		files = re.findall(r'^diff --git a/(\S+)', text, re.M)
		suite = [f for f in files if '/tests/' in f or f.endswith('/.kunitconfig')
			 or f.startswith(('include/kunit/', 'lib/kunit/'))]
		entry = [c for c in re.split(r'^diff --git ', text, flags=re.M)[1:]
			 if re.match(r'\S*/Kconfig[^/\s]*\s', c) and '_KUNIT_TEST' in c]
		assert (b is not None) == bool(fix or suite or entry), p.name
		if b is not None:
			assert b.skip_slow and b.glob in ('', 'ufs_*', 'appletalk_*', 'autofs_*'), p.name


def test_every_suite_of_the_series_is_named_after_its_subsystem():
	"""The boots' globs are `<subsystem>_*` (adding-a-suite.md): a suite
	named otherwise would run at no boot but the head's.  (At a boot, a
	filter that runs no suite while the build enables one of its
	subsystem's fails too: test_seriesboot.)"""
	bad, seen = [], set()
	for p in sorted(paths.PATCH_DIR.glob('*.patch')):
		text = p.read_text()
		for chunk in re.split(r'^diff --git ', text, flags=re.M)[1:]:
			path = chunk.split()[0][2:]
			sub = subsystems.of_file(path)
			for name in re.findall(r'^\+static struct kunit_suite \w+ = \{\n(?:\+.*\n)*?'
					       r'\+\s*\.name = "(\w+)"', chunk, re.M):
				seen.add(name)
				# A subsystem without a prefix (mm: fail_alloc, kmemleak)
				# boots every suite at its patches, so any name runs.
				if sub and sub != 'kunit' and sub not in checkplan.SUITE_PREFIX:
					continue
				# KUnit's own suites (kunit_*) run at every boot of a KUnit patch.
				prefix = 'kunit_' if sub == 'kunit' else checkplan.SUITE_PREFIX.get(sub, '?')
				if not (sub and name.startswith(prefix)):
					bad.append(f'{p.name}: {name} in {path}')
	assert bad == [] and len(seen) >= 18, (bad, sorted(seen))
	assert {'fail_alloc', 'kmemleak'} <= seen


def test_test_symbols_of_a_diff():
	diff = ('diff --git a/fs/ufs/Kconfig b/fs/ufs/Kconfig\n--- a/fs/ufs/Kconfig\n'
		'+++ b/fs/ufs/Kconfig\n@@ -1 +1,4 @@\n+config UFS_MAP_KUNIT_TEST\n+\tbool "x"\n'
		'+config UFS_KUNIT_FIXTURES\n+\tbool\n'
		'diff --git a/fs/ufs/tests/x.c b/fs/ufs/tests/x.c\n--- a/fs/ufs/tests/x.c\n'
		'+++ b/fs/ufs/tests/x.c\n@@ -1 +1 @@\n+config NOT_KCONFIG_KUNIT_TEST\n')
	assert checkplan.test_symbols(diff) == {'UFS_MAP_KUNIT_TEST': 'fs/ufs/Kconfig'}


def test_kunit_s_own_suite_symbols_count_too():
	diff = ('diff --git a/lib/kunit/Kconfig b/lib/kunit/Kconfig\n--- a/lib/kunit/Kconfig\n'
		'+++ b/lib/kunit/Kconfig\n@@ -1 +1,4 @@\n+config KUNIT_THREAD_TEST\n+\ttristate "x"\n'
		'+config KUNIT_DEBUGFS\n+\tbool\n')
	assert checkplan.test_symbols(diff) == {'KUNIT_THREAD_TEST': 'lib/kunit/Kconfig'}
	assert checkplan.kconfig_test_entries(diff) == ['KUNIT_THREAD_TEST']
	assert checkplan.is_suite_symbol('KUNIT_WATCH_TEST')
	assert not checkplan.is_suite_symbol('KUNIT_DEBUGFS')


# ------------------------------------------------------------ the options


def args(*argv):
	return cli.build_parser().parse_args(['check-series', *argv])


def test_default_options():
	o = SeriesOptions.from_args(args(), 53)
	assert o.checks == tuple(checkplan.ALL_CHECKS) and o.build_arches == ('x86_64',)
	assert (o.from_patch, o.scope, o.slow, o.boot_timeout) == (1, BootScope.SUBSYSTEM, False,
								   checkplan.BOOT_TIMEOUT)
	assert o.wants('boot') and o.wants('modules')


def test_all_arches_and_build_arches():
	# The four arches check-series keeps its baselines for, not every run arch.
	assert SeriesOptions.from_args(args('--all-arches'), 53).build_arches == \
		tuple(paths.SERIES_ARCHES) == ('x86_64', 'i386', 'arm', 'arm64')
	assert SeriesOptions.from_args(args('--build-arches=arm,x86_64'), 53).build_arches == \
		('arm', 'x86_64')
	assert SeriesOptions.from_args(args('--all-arches', '--build-arches=all'), 53).build_arches \
		== tuple(paths.SERIES_ARCHES)
	o = SeriesOptions.from_args(args('--build-arches=arm', '--no-boot'), 53)
	assert o.build_arches == ('arm',) and not o.wants('boot')


def test_no_boot_and_the_range():
	o = SeriesOptions.from_args(args('--no-boot', '--from-patch', '51'), 53)
	assert not o.wants('boot') and o.wants('build') and o.from_patch == 51
	assert SeriesOptions.from_args(args('--from-patch=53'), 53).from_patch == 53
	assert o.range_note(53) == ' (per-patch checks on patches 51-53)'
	o = SeriesOptions.from_args(args('--no-boot', '--to-patch', '19'), 53)
	assert (o.from_patch, o.to_patch) == (1, 19) and o.takes(18) and not o.takes(19)
	assert o.range_note(53) == ' (per-patch checks on patches 1-19)'
	o = SeriesOptions.from_args(args('--from-patch=20', '--to-patch=20'), 53)
	assert [i for i in range(53) if o.takes(i)] == [19]
	assert SeriesOptions.from_args(args(), 53).range_note(53) == ''


def test_the_lean_build_config_leaves_the_boots_out():
	"""--build-config=lean: no kernel of it is booted, so the default checks
	lose boot, and the build arches need not include x86_64."""
	o = SeriesOptions.from_args(args('--build-config=lean'), 53)
	assert o.build_config == checkplan.BuildConfig.LEAN
	assert o.wants('build') and not o.wants('boot') and o.wants('modules')
	o = SeriesOptions.from_args(args('--build-config=lean', '--build-arches=arm'), 53)
	assert o.build_arches == ('arm',)
	assert SeriesOptions.from_args(args(), 53).build_config == checkplan.BuildConfig.FULL


@pytest.mark.parametrize('argv, message', [
	(['--build-config=lean', '--checks=build,boot'], 'leave boot out of --checks'),
	(['--checks=apply,bogus'], 'unknown check(s) bogus'),
	(['--checks=,'], '--checks names no check'),
	(['--checks=apply,boot'], 'add build to --checks'),
	(['--checks=apply,build,boot', '--no-boot'], '--no-boot contradicts --checks'),
	(['--build-arches=arm'], 'add x86_64 to --build-arches, or --no-boot'),
	(['--build-arches=sparc'], "--build-arches: unknown arch 'sparc'"),
	(['--build-arches=um', '--no-boot'], '--build-arches: um has no per-patch build'),
	(['--build-arches=', '--no-boot'], '--build-arches: no arch given'),
	(['--all-arches', '--build-arches=arm'], '--all-arches contradicts --build-arches=arm'),
	(['--from-patch=0'], '--from-patch: must be at least 1, not 0'),
	(['--from-patch=x'], "--from-patch: not a whole number: 'x'"),
	(['--from-patch=54'], '--from-patch 54: the series has 53 patches'),
	(['--to-patch=54'], '--to-patch 54: the series has 53 patches'),
	(['--to-patch=0'], '--to-patch: must be at least 1, not 0'),
	(['--from-patch=9', '--to-patch=8'], '--to-patch 8 is before --from-patch 9'),
	(['--boot-timeout=0'], '--boot-timeout: must be at least 1'),
])
def test_bad_options_are_one_clear_error(argv, message):
	with pytest.raises(UserError) as e:
		SeriesOptions.from_args(args(*argv), 53)
	assert message in str(e.value) and '\n' not in str(e.value)


def test_bad_options_reach_the_user_as_one_line_before_anything_is_written(tmp_path, capsys):
	cache = tmp_path / 'cache'
	for argv in (['--from-patch=0'], ['--build-arches=sparc'], ['--checks=boot'],
		     ['--from-patch=999'], ['--go7007-arch=vax']):
		rc = cli.main(['check-series', '--cache-dir', str(cache), '--no-install', *argv])
		err = capsys.readouterr().err.strip().splitlines()
		assert rc == 2 and len(err) == 1 and err[0].startswith('kunit.py check-series: error: ')
	assert not cache.exists()
	with pytest.raises(SystemExit):
		cli.build_parser().parse_args(['check-series', '--boot-suites=some'])
	assert "invalid choice: 'some'" in capsys.readouterr().err


def test_the_parser_reads_what_seriesoptions_needs():
	a = args('--build-arches=arm64', '--from-patch', '7', '--boot-suites=all', '--boot-slow',
		 '--boot-timeout=30', '--no-boot')
	assert isinstance(a, argparse.Namespace)
	o = SeriesOptions.from_args(a, 53)
	assert (o.build_arches, o.from_patch, o.scope, o.slow, o.boot_timeout) == (
		('arm64',), 7, BootScope.ALL, True, 30)
