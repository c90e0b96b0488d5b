# SPDX-License-Identifier: GPL-2.0
"""seriesmodules: the modules fragment read, its settings and the series'
suite symbols against the .config olddefconfig left (today's series: the
suites pending; the series that lets them be modules; every way it fails),
and what `make vmlinux modules` printed."""

import re
import subprocess
from pathlib import Path

import pytest

from bklkunit.base import paths
from bklkunit.base.errors import UserError
from bklkunit.series import modulescheck
from bklkunit.series.modulescheck import BuildOutput, State, compare, read_fragment
from bklkunit.source.kconfig import config_values

FRAG = """# a comment
CONFIG_MODULES=y
CONFIG_KUNIT=m
# CONFIG_SMP is not set
CONFIG_UFS_MAP_KUNIT_TEST=y
CONFIG_ATALK_DDP_KUNIT_TEST=y
# pending: CONFIG_UFS_MAP_KUNIT_TEST
# built-in only: CONFIG_AUTOFS_END_STATE_KUNIT_TEST: calls kallsyms_lookup_name()
"""
SUITES = ['ATALK_DDP_KUNIT_TEST', 'AUTOFS_END_STATE_KUNIT_TEST', 'UFS_MAP_KUNIT_TEST']


def cfg(text: str):
	return config_values(text)


# ------------------------------------------------------------ the fragment


def test_read_fragment():
	f = read_fragment(FRAG)
	assert f.settings == (('MODULES', 'y'), ('KUNIT', 'm'), ('SMP', 'n'),
			      ('UFS_MAP_KUNIT_TEST', 'y'), ('ATALK_DDP_KUNIT_TEST', 'y'))
	assert f.pending == ('UFS_MAP_KUNIT_TEST',)
	assert f.builtin_only == (('AUTOFS_END_STATE_KUNIT_TEST', 'calls kallsyms_lookup_name()'),)


@pytest.mark.parametrize('text, message', [
	('CONFIG_KUNIT=m\nKUNIT=m\n', "modules.config:2: not a Kconfig fragment line nor a mark: 'KUNIT=m'"),
	('# pending: UFS_MAP_KUNIT_TEST\n', 'modules.config:1: not a Kconfig fragment line'),
	('# pending: CONFIG_UFS_MAP_KUNIT_TEST\n', 'pending CONFIG_UFS_MAP_KUNIT_TEST is not listed'),
	('CONFIG_X_KUNIT_TEST=y\n# built-in only: CONFIG_X_KUNIT_TEST: why\n',
	 'CONFIG_X_KUNIT_TEST is both listed and built-in only'),
])
def test_a_bad_fragment_is_one_clear_error(text, message):
	with pytest.raises(UserError) as e:
		read_fragment(text)
	assert message in str(e.value) and '\n' not in str(e.value)


def test_the_repository_fragment_names_every_suite_of_the_series():
	"""kunit/modules.config lists or marks built-in only every
	*_KUNIT_TEST symbol kernel-patches/ defines."""
	frag = read_fragment((paths.KUNIT_DIR / 'modules.config').read_text())
	defined = set()
	for p in sorted(paths.PATCH_DIR.glob('*.patch')):
		defined |= set(re.findall(r'^\+config (\w+_KUNIT_TEST)\b', p.read_text(), re.M))
	assert len(defined) >= 16
	r = compare(frag, {}, sorted(defined))
	assert r.unnamed == []
	for extra in modulescheck.fragments('arm')[1:]:
		read_fragment(extra.read_text(), extra.name)


# ------------------------------------------- the fragment against a .config


def test_todays_series_the_listed_suites_pending_pass_and_are_reported():
	"""KUNIT=m, the suites `depends on KUNIT=y`: olddefconfig drops them."""
	frag = read_fragment(FRAG.replace('# pending: CONFIG_UFS_MAP_KUNIT_TEST',
					  '# pending: CONFIG_UFS_MAP_KUNIT_TEST CONFIG_ATALK_DDP_KUNIT_TEST'))
	r = compare(frag, cfg('CONFIG_MODULES=y\nCONFIG_KUNIT=m\n'), SUITES)
	assert r.ok and r.problems() == []
	assert r.pending == ['UFS_MAP_KUNIT_TEST', 'ATALK_DDP_KUNIT_TEST']
	assert r.lines() == [
		'suites pending (not modular in the series yet, 2): CONFIG_UFS_MAP_KUNIT_TEST, '
		'CONFIG_ATALK_DDP_KUNIT_TEST',
		'built-in only, not in this build: CONFIG_AUTOFS_END_STATE_KUNIT_TEST '
		'(calls kallsyms_lookup_name())']


def test_a_listed_suite_dropped_by_olddefconfig_fails():
	r = compare(read_fragment(FRAG), cfg('CONFIG_MODULES=y\nCONFIG_KUNIT=m\n'), SUITES)
	assert not r.ok and r.missing == ['ATALK_DDP_KUNIT_TEST']
	assert r.problems()[0] == ('dropped by olddefconfig (its dependencies are not met): '
				   'CONFIG_ATALK_DDP_KUNIT_TEST=y')
	assert 'suites not enabled: CONFIG_ATALK_DDP_KUNIT_TEST' in r.lines()


def test_the_series_landed_a_pending_mark_left_behind_fails():
	config = cfg('CONFIG_MODULES=y\nCONFIG_KUNIT=m\nCONFIG_UFS_MAP_KUNIT_TEST=y\n'
		     'CONFIG_ATALK_DDP_KUNIT_TEST=m\n')
	r = compare(read_fragment(FRAG), config, SUITES)
	assert r.stale == ['UFS_MAP_KUNIT_TEST'] and not r.ok
	assert r.problems() == ['CONFIG_UFS_MAP_KUNIT_TEST is enabled now: remove its `# pending:` '
				'line from kunit/modules.config']
	assert r.lines()[0] == ('suites enabled: CONFIG_UFS_MAP_KUNIT_TEST (=y), '
				'CONFIG_ATALK_DDP_KUNIT_TEST (=m)')
	# ... and once the mark went, it passes.
	r = compare(read_fragment(FRAG.replace('# pending: CONFIG_UFS_MAP_KUNIT_TEST\n', '')),
		    config, SUITES)
	assert r.ok and r.enabled == [('UFS_MAP_KUNIT_TEST', State.BUILTIN),
				      ('ATALK_DDP_KUNIT_TEST', State.MODULE)]


def test_a_setting_olddefconfig_changed_fails():
	r = compare(read_fragment(FRAG), cfg('CONFIG_KUNIT=y\nCONFIG_SMP=y\n'), SUITES)
	assert r.lost == ['CONFIG_MODULES=y asked, the .config has it off',
			  'CONFIG_KUNIT=m asked, the .config has CONFIG_KUNIT=y',
			  'CONFIG_SMP=n asked, the .config has CONFIG_SMP=y']
	assert not r.ok


def test_a_suite_the_fragment_says_nothing_of_fails():
	r = compare(read_fragment(FRAG), cfg('CONFIG_MODULES=y\nCONFIG_KUNIT=m\n'
					     'CONFIG_ATALK_DDP_KUNIT_TEST=y\n'),
		    SUITES + ['UFS_NEW_KUNIT_TEST'])
	assert r.unnamed == ['UFS_NEW_KUNIT_TEST'] and not r.ok
	assert 'says nothing of CONFIG_UFS_NEW_KUNIT_TEST' in r.problems()[0]


def test_a_built_in_only_suite_that_is_enabled_fails():
	r = compare(read_fragment(FRAG), cfg('CONFIG_MODULES=y\nCONFIG_KUNIT=m\n'
					     'CONFIG_ATALK_DDP_KUNIT_TEST=y\n'
					     'CONFIG_AUTOFS_END_STATE_KUNIT_TEST=m\n'), SUITES)
	assert r.builtin_on == ['AUTOFS_END_STATE_KUNIT_TEST'] and not r.ok


# ------------------------------------------------------------ the build


MODPOST = """  MODPOST Module.symvers
ERROR: modpost: "kallsyms_lookup_name" [fs/autofs/autofs4.ko] undefined!
WARNING: modpost: fs/ufs/ufs: section mismatch in reference: x (section: .text) -> y
make[2]: *** [scripts/Makefile.modpost:145: Module.symvers] Error 1
make[1]: *** [Makefile:1961: modpost] Error 2
"""


def test_build_report_reads_modpost_and_compiler_errors():
	r = BuildOutput.of(MODPOST + '../fs/ufs/tests/map.c:12:5: error: implicit declaration\n'
			   '  CC [M]  fs/ufs/super.o\n')
	assert r.errors[0] == ('ERROR: modpost: "kallsyms_lookup_name" [fs/autofs/autofs4.ko] '
			       'undefined!')
	assert len(r.errors) == 4 and 'implicit declaration' in r.errors[3]
	assert r.warnings == ['WARNING: modpost: fs/ufs/ufs: section mismatch in reference: '
			      'x (section: .text) -> y']
	assert BuildOutput.of('  LD [M]  fs/ufs/ufs.ko\n').errors == []


class FakeMake:
	"""seriescheck's make, for a tree whose kconfig drops `drops` and
	whose `make vmlinux modules` prints `output` and exits `rc`."""

	def __init__(self, drops=(), output='', rc=0, kos=()):
		self.drops, self.output, self.rc, self.kos = drops, output, rc, kos
		self.calls = []

	def __call__(self, bdir, arch, targets, extra, log, srcdir):
		self.calls.append(targets)
		if targets == ['tinyconfig']:
			(bdir / '.config').write_text('# CONFIG_MODULES is not set\nCONFIG_KUNIT=y\n')
		elif targets == ['olddefconfig']:
			kept = [l for l in (bdir / '.config').read_text().splitlines()
				if not any(l.startswith(f'CONFIG_{d}=') for d in self.drops)]
			(bdir / '.config').write_text('\n'.join(config_lines(kept)) + '\n')
		else:
			for ko in self.kos:
				(bdir / ko).parent.mkdir(parents=True, exist_ok=True)
				(bdir / ko).write_text('')
			return subprocess.CompletedProcess(targets, self.rc, self.output, '')
		return subprocess.CompletedProcess(targets, 0, '', '')


def config_lines(lines):
	"""The last value of each symbol, as kconfig writes a .config."""
	last = {}
	for l in lines:
		m = re.match(r'^(?:# )?CONFIG_(\w+)[= ]', l)
		if m:
			last[m.group(1)] = l
	return list(last.values())


@pytest.fixture
def srcdir(tmp_path, monkeypatch):
	"""A tree whose merge_config.sh -m appends the fragments to the .config,
	and a repository whose kunit/modules.config is FRAG."""
	src = tmp_path / 'linux'
	(src / 'scripts' / 'kconfig').mkdir(parents=True)
	script = src / 'scripts' / 'kconfig' / 'merge_config.sh'
	script.write_text('#!/bin/sh\n[ "$1" = -m ] && [ "$2" = -O ] || exit 9\n'
			  'out="$3/.config"; base="$4"; shift 4\n'
			  'cat "$base" "$@" > "$out.new" && mv "$out.new" "$out"\n')
	script.chmod(0o755)
	kunit = tmp_path / 'repo' / 'kunit'
	kunit.mkdir(parents=True)
	(kunit / 'modules.config').write_text(FRAG.replace('CONFIG_ATALK_DDP_KUNIT_TEST=y\n', ''))
	monkeypatch.setattr(paths, 'KUNIT_DIR', kunit)
	return src


def run_check(srcdir, tmp_path, make):
	return modulescheck.check(make, srcdir, tmp_path / 'build', 'x86_64', tmp_path / 'm.log',
				   [s for s in SUITES if s != 'ATALK_DDP_KUNIT_TEST'], {})


def test_check_passes_on_todays_series(srcdir, tmp_path):
	make = FakeMake(drops=['UFS_MAP_KUNIT_TEST'], kos=['fs/ufs/ufs.ko', 'lib/kunit/kunit.ko',
							    'kernel/time/time_test.ko'])
	r = run_check(srcdir, tmp_path, make)
	assert r.ok, r.detail
	assert make.calls == [['tinyconfig'], ['olddefconfig'], ['vmlinux', 'modules']]
	first = r.detail.splitlines()[0]
	assert first == ('x86_64: tinyconfig + kunit/modules.config, KUNIT=m: 3 modules '
			 '(fs/ufs/ufs.ko, lib/kunit/kunit.ko), 0 modpost warning(s)')
	assert 'suites pending (not modular in the series yet, 1): CONFIG_UFS_MAP_KUNIT_TEST' \
		in r.detail


def test_check_fails_on_a_modpost_error(srcdir, tmp_path):
	r = run_check(srcdir, tmp_path, FakeMake(drops=['UFS_MAP_KUNIT_TEST'], output=MODPOST,
						rc=2))
	assert not r.ok
	lines = r.detail.splitlines()
	assert lines[0].startswith('make vmlinux modules exited 2; see ')
	assert lines[1] == 'ERROR: modpost: "kallsyms_lookup_name" [fs/autofs/autofs4.ko] undefined!'


def test_check_fails_when_a_setting_is_dropped(srcdir, tmp_path):
	r = run_check(srcdir, tmp_path, FakeMake(drops=['UFS_MAP_KUNIT_TEST', 'KUNIT']))
	assert not r.ok
	assert r.detail.splitlines()[0] == 'CONFIG_KUNIT=m asked, the .config has it off'


def test_check_fails_when_the_series_landed_and_the_mark_stayed(srcdir, tmp_path):
	r = run_check(srcdir, tmp_path, FakeMake())
	assert not r.ok and r.detail.splitlines()[0].startswith(
		'CONFIG_UFS_MAP_KUNIT_TEST is enabled now: remove its `# pending:` line')


def test_check_fails_when_tinyconfig_fails(srcdir, tmp_path):
	def make(bdir, arch, targets, extra, log, src):
		return subprocess.CompletedProcess(targets, 2, '', '*** no such target\n')
	r = run_check(srcdir, tmp_path, make)
	assert not r.ok and r.detail.startswith('make tinyconfig failed; see ')
	assert r.detail.endswith('*** no such target')


def test_arm_gets_its_own_fragment_after_the_common_one():
	frags = modulescheck.fragments('arm')
	assert [f.name for f in frags] == ['modules.config', 'modules-arm.config']
	assert [f.name for f in modulescheck.fragments('x86_64')] == ['modules.config']
	assert isinstance(frags[0], Path)


def test_the_lean_fragment_is_the_modules_fragment_built_in():
	"""Every module of kunit/modules.config built in, every suite marked
	built-in only listed, the arch's extras after: tinyconfig plus it builds
	every suite into vmlinux."""
	from bklkunit.base import paths
	text = modulescheck.lean_fragment('arm')
	frag = modulescheck.read_fragment(text, 'lean')
	mods = modulescheck.read_fragment((paths.KUNIT_DIR / 'modules.config').read_text())
	assert not [s for s, v in frag.settings if v == 'm']
	assert frag.value('KUNIT') == 'y' and frag.value('MMU') == 'y'
	for sym, _ in mods.builtin_only:
		assert frag.value(sym) == 'y'
	for sym, val in mods.settings:
		assert frag.value(sym) == ('y' if val == 'm' else val)
