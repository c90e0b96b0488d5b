# SPDX-License-Identifier: GPL-2.0
"""paths: the arch list and where the cache lives."""

from pathlib import Path

import os
import pytest

from bklkunit.base import paths

QEMU4 = ['x86_64', 'i386', 'arm', 'arm64']
NEW4 = ['s390x', 'powerpc64', 'riscv64', 'm68k']
QEMU8 = QEMU4 + NEW4


def test_all_is_the_eight_qemu_arches_in_order():
	assert paths.parse_arches('all') == QEMU8
	assert paths.QEMU_ARCHES == QEMU8


def test_the_default_is_one_arch_of_each_byte_order():
	assert paths.DEFAULT_ARCHES == ['x86_64', 's390x']
	assert {paths.ARCHES[a].endian for a in paths.DEFAULT_ARCHES} == set(paths.Endian)
	assert set(paths.DEFAULT_ARCHES) <= set(paths.QEMU_ARCHES)


@pytest.mark.parametrize('spec, want', [
	('x86_64', ['x86_64']),
	('arm64,x86_64', ['arm64', 'x86_64']),          # the order given is kept
	(' arm , i386 ', ['arm', 'i386']),               # spaces around names
	('arm,arm,arm64,arm', ['arm', 'arm64']),         # duplicates dropped
	('arm64,all', ['arm64', 'x86_64', 'i386', 'arm'] + NEW4),
	('all,all', QEMU8),
	('m68k,s390x', ['m68k', 's390x']),
	('x86_64,,i386,', ['x86_64', 'i386']),           # empty items skipped
	('um', ['um']),                                  # UML is not in 'all' but allowed
	('all,um', QEMU8 + ['um']),
])
def test_parse_arches(spec, want):
	assert paths.parse_arches(spec) == want


@pytest.mark.parametrize('spec', ['mips', 'x86_64,sparc', 'ARM64', 'x86-64',
				  # kunit.py's names of the new arches are not ours (Debian's are)
				  's390', 'powerpc', 'riscv', 'ppc64', 'riscv32'])
def test_unknown_arch_is_a_clear_error(spec):
	bad = [p.strip() for p in spec.split(',') if p.strip() not in paths.ARCHES][0]
	with pytest.raises(ValueError) as ei:
		paths.parse_arches(spec)
	msg = str(ei.value)
	assert 'unknown arch' in msg
	assert repr(bad) in msg
	# The message lists what is accepted.
	for name in list(paths.ARCHES) + ['all']:
		assert name in msg


@pytest.mark.parametrize('spec', ['', ' ', ',', ' , ,'])
def test_no_arch_is_an_error(spec):
	with pytest.raises(ValueError, match='no arch'):
		paths.parse_arches(spec)


def test_every_qemu_arch_has_a_qemu_binary_and_packages():
	for name in QEMU8:
		a = paths.ARCHES[name]
		assert a.name == name
		assert a.qemu.startswith('qemu-system-')
		assert any(p.startswith('qemu-system-') for p in a.packages)
	assert paths.ARCHES['arm'].cross_compile == 'arm-linux-gnueabihf-'
	assert paths.ARCHES['arm64'].cross_compile == 'aarch64-linux-gnu-'
	assert paths.ARCHES['x86_64'].cross_compile == ''


@pytest.mark.parametrize('name, kernel_arch, cross, qemu, endian, bits, smp', [
	('x86_64', 'x86_64', '', 'qemu-system-x86_64', 'little', 64, True),
	('i386', 'i386', '', 'qemu-system-i386', 'little', 32, True),
	('arm', 'arm', 'arm-linux-gnueabihf-', 'qemu-system-arm', 'little', 32, True),
	('arm64', 'arm64', 'aarch64-linux-gnu-', 'qemu-system-aarch64', 'little', 64, True),
	('s390x', 's390', 's390x-linux-gnu-', 'qemu-system-s390x', 'big', 64, True),
	('powerpc64', 'powerpc', 'powerpc64-linux-gnu-', 'qemu-system-ppc64', 'big', 64, True),
	('riscv64', 'riscv', 'riscv64-linux-gnu-', 'qemu-system-riscv64', 'little', 64, True),
	('m68k', 'm68k', 'm68k-linux-gnu-', 'qemu-system-m68k', 'big', 32, False),
])
def test_the_arch_table(name, kernel_arch, cross, qemu, endian, bits, smp):
	a = paths.ARCHES[name]
	assert (a.kernel_arch, a.cross_compile, a.qemu, a.endian.value, a.bits, a.smp) == (
		kernel_arch, cross, qemu, endian, bits, smp)
	# Debian's cross compiler for it, and the package with the QEMU binary.
	if cross:
		assert f'gcc-{cross[:-1]}' in a.packages


def test_every_kernel_arch_has_a_kunit_tool_qemu_config(kernel_tree):
	"""kunit.py --arch is a file of the tree's qemu_configs/; the kernel's ARCH= a
	directory of arch/."""
	for name in QEMU8:
		a = paths.ARCHES[name]
		assert (kernel_tree / 'tools/testing/kunit/qemu_configs' / f'{a.kernel_arch}.py').is_file()
		src = 'x86' if a.kernel_arch in ('x86_64', 'i386') else a.kernel_arch
		assert (kernel_tree / 'arch' / src / 'Kconfig').is_file()
		text = (kernel_tree / 'tools/testing/kunit/qemu_configs' / f'{a.kernel_arch}.py').read_text()
		assert f"qemu_arch='{a.qemu[len('qemu-system-'):]}'" in text


# ---------------------------------------------------------------- cache_dir


@pytest.fixture
def env(tmp_path, monkeypatch):
	"""A clean slate: HOME in tmp_path and no cache variables."""
	home = tmp_path / 'home'
	home.mkdir()
	monkeypatch.setenv('HOME', str(home))
	monkeypatch.delenv(paths.CACHE_ENV, raising=False)
	monkeypatch.delenv('XDG_CACHE_HOME', raising=False)
	return tmp_path


def test_cache_default_is_home_dot_cache(env):
	assert paths.cache_dir() == (env / 'home' / '.cache' / 'bkl-kunit').resolve()


def test_cache_xdg_beats_home(env, monkeypatch):
	monkeypatch.setenv('XDG_CACHE_HOME', str(env / 'xdg'))
	assert paths.cache_dir() == (env / 'xdg' / 'bkl-kunit').resolve()


def test_cache_empty_xdg_is_ignored(env, monkeypatch):
	monkeypatch.setenv('XDG_CACHE_HOME', '')
	assert paths.cache_dir() == (env / 'home' / '.cache' / 'bkl-kunit').resolve()


def test_cache_env_beats_xdg(env, monkeypatch):
	monkeypatch.setenv('XDG_CACHE_HOME', str(env / 'xdg'))
	monkeypatch.setenv(paths.CACHE_ENV, str(env / 'bkl'))
	# $BKL_KUNIT_CACHE is the cache itself, no bkl-kunit/ appended.
	assert paths.cache_dir() == (env / 'bkl').resolve()


def test_cache_override_beats_everything(env, monkeypatch):
	monkeypatch.setenv('XDG_CACHE_HOME', str(env / 'xdg'))
	monkeypatch.setenv(paths.CACHE_ENV, str(env / 'bkl'))
	assert paths.cache_dir(str(env / 'cli')) == (env / 'cli').resolve()


def test_cache_empty_override_falls_through(env, monkeypatch):
	monkeypatch.setenv(paths.CACHE_ENV, str(env / 'bkl'))
	assert paths.cache_dir('') == (env / 'bkl').resolve()
	assert paths.cache_dir(None) == (env / 'bkl').resolve()


def test_cache_paths_are_absolute_and_expanded(env, monkeypatch):
	monkeypatch.chdir(env)
	got = paths.cache_dir('relative/cache')
	assert got.is_absolute()
	assert got == (env / 'relative' / 'cache').resolve()
	assert paths.cache_dir('~/c') == (env / 'home' / 'c').resolve()
	monkeypatch.setenv(paths.CACHE_ENV, '~/from-env')
	assert paths.cache_dir() == (env / 'home' / 'from-env').resolve()


def test_repo_paths_point_into_this_repository():
	assert (paths.REPO / 'tools' / 'kunit.py').is_file()
	assert paths.PATCH_DIR == paths.REPO / 'kernel-patches'
	assert paths.SERIES_FILE == paths.PATCH_DIR / 'series'
	assert isinstance(paths.SOURCE_TARBALL, Path)


def test_locked_makes_a_second_holder_wait_and_says_who_holds_it(tmp_path, capsys,
								   monkeypatch):
	import fcntl
	import subprocess
	import sys
	lock = tmp_path / 'build' / 'x86_64.lock'
	# Another process holds the lock until told to let go: only once this
	# one has found it held and starts to wait (no sleep, no deadline).
	code = ('import sys; sys.path.insert(0, %r); from pathlib import Path; '
		'from bklkunit.base import paths\n'
		'with paths.locked(Path(%r), "x"):\n'
		'    print("held", flush=True); sys.stdin.readline(); Path(%r).write_text("done")\n') % (
			str(paths.REPO / 'tools'), str(lock), str(tmp_path / 'done'))
	other = subprocess.Popen([sys.executable, '-c', code], stdin=subprocess.PIPE,
				 stdout=subprocess.PIPE, text=True)
	assert other.stdout.readline().strip() == 'held'
	real_flock = fcntl.flock

	def flock(f, op):
		if op == fcntl.LOCK_EX:             # the blocking wait, after LOCK_NB failed
			other.stdin.write('go\n')
			other.stdin.flush()
		return real_flock(f, op)
	monkeypatch.setattr(paths.fcntl, 'flock', flock)
	with paths.locked(lock, 'the build directory x86_64'):
		# Only after the other holder finished its block.
		assert (tmp_path / 'done').read_text() == 'done'
		assert lock.read_text() == f'pid {os.getpid()}\n'
	other.stdin.close()
	assert other.wait() == 0
	out = capsys.readouterr().out
	assert f'Waiting for the build directory x86_64: in use by pid {other.pid}' in out
	assert lock.read_text() == ''
	# Free: no message.
	with paths.locked(lock, 'x'):
		pass
	assert capsys.readouterr().out == ''


# ---------------------------------------------------------------- packages


@pytest.mark.parametrize('arch, want', [
	('s390x', {'gcc-s390x-linux-gnu', 'qemu-system-misc'}),
	('powerpc64', {'gcc-powerpc64-linux-gnu', 'qemu-system-ppc'}),
	('riscv64', {'gcc-riscv64-linux-gnu', 'qemu-system-misc'}),
	('m68k', {'gcc-m68k-linux-gnu', 'qemu-system-misc'}),
])
def test_deps_of_the_new_arches(arch, want):
	from bklkunit.base import deps
	pkgs = deps.for_arches([arch])
	assert want <= set(pkgs)
	assert set(deps.BUILD_PACKAGES) <= set(pkgs)
	# Nothing of another arch.
	assert not {'gcc-aarch64-linux-gnu', 'gcc-arm-linux-gnueabihf', 'qemu-system-arm'} & set(pkgs)


def test_deps_of_all_and_of_the_default():
	from bklkunit.base import deps
	every = set(deps.for_arches(paths.parse_arches('all')))
	for cross in ('arm-linux-gnueabihf', 'aarch64-linux-gnu', 's390x-linux-gnu',
		      'powerpc64-linux-gnu', 'riscv64-linux-gnu', 'm68k-linux-gnu'):
		assert f'gcc-{cross}' in every
	assert {'qemu-system-x86', 'qemu-system-arm', 'qemu-system-misc', 'qemu-system-ppc'} <= every
	first = set(deps.for_arches(paths.DEFAULT_ARCHES))
	assert {'qemu-system-x86', 'qemu-system-misc', 'gcc-s390x-linux-gnu'} <= first
	assert 'gcc-m68k-linux-gnu' not in first


def test_series_checks_keep_the_four_arches():
	assert paths.SERIES_ARCHES == QEMU4
	assert paths.parse_arches('all', paths.SERIES_ARCHES) == QEMU4
	assert paths.parse_arches('all,s390x', paths.SERIES_ARCHES) == QEMU4 + ['s390x']


def test_new_stamped_dir_never_reuses_a_name(tmp_path, monkeypatch):
	"""Runs started in the same second each get a directory of their own."""
	monkeypatch.setattr(paths.time, 'strftime', lambda fmt: '20261207-120000')
	base = tmp_path / 'results'
	got = [paths.new_stamped_dir(base) for _ in range(3)]
	assert [d.name for d in got] == ['20261207-120000', '20261207-120000-1',
					 '20261207-120000-2']
	assert all(d.is_dir() for d in got)
	assert paths.new_stamped_dir(base, '-mutate').name == '20261207-120000-mutate'
	assert paths.new_stamped_dir(base, '-mutate').name == '20261207-120000-1-mutate'
