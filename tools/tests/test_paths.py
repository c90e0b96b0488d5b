# SPDX-License-Identifier: GPL-2.0
"""paths: the arch list and where the cache lives."""

from pathlib import Path

import os
import pytest

from bklkunit import paths

QEMU4 = ['x86_64', 'i386', 'arm', 'arm64']


def test_all_is_the_four_qemu_arches_in_order():
	assert paths.parse_arches('all') == QEMU4
	assert paths.QEMU_ARCHES == QEMU4


@pytest.mark.parametrize('spec, want', [
	('x86_64', ['x86_64']),
	('arm64,x86_64', ['arm64', 'x86_64']),          # the order given is kept
	(' arm , i386 ', ['arm', 'i386']),               # spaces around names
	('arm,arm,arm64,arm', ['arm', 'arm64']),         # duplicates dropped
	('arm64,all', ['arm64', 'x86_64', 'i386', 'arm']),
	('all,all', QEMU4),
	('x86_64,,i386,', ['x86_64', 'i386']),           # empty items skipped
	('um', ['um']),                                  # UML is not in 'all' but allowed
	('all,um', QEMU4 + ['um']),
])
def test_parse_arches(spec, want):
	assert paths.parse_arches(spec) == want


@pytest.mark.parametrize('spec', ['mips', 'x86_64,sparc', 'ARM64', 'x86-64'])
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
	for name in QEMU4:
		a = paths.ARCHES[name]
		assert a.name == name
		assert a.qemu.startswith('qemu-system-')
		assert any(p.startswith('qemu-system-') for p in a.packages)
	assert paths.ARCHES['arm'].cross_compile == 'arm-linux-gnueabihf-'
	assert paths.ARCHES['arm64'].cross_compile == 'aarch64-linux-gnu-'
	assert paths.ARCHES['x86_64'].cross_compile == ''


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
		'from bklkunit import paths\n'
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
