# SPDX-License-Identifier: GPL-2.0
"""buildstamp: `run` skips `kunit.py build` only when no input changed."""

import json
import os
import shutil

import pytest

from bklkunit.run import buildinputs
from conftest import git
from test_run import STUB, fake  # noqa: F401 (the fixture)

# The stub's build also leaves what a real one does: .config and vmlinux.
STUB_OUTPUTS = STUB.replace(
	"\tPath(opts['build_dir'][0]).mkdir(exist_ok=True)     # as kunit.py does\n",
	"\tbd = Path(opts['build_dir'][0])\n"
	"\tbd.mkdir(exist_ok=True)     # as kunit.py does\n"
	"\t(bd / '.config').write_text('CONFIG_KUNIT=y\\n')\n"
	"\t(bd / 'vmlinux').write_bytes(os.urandom(64))\n")


@pytest.fixture
def gfake(fake):
	"""The fake tree of test_run as a git repository, as a prepared tree is."""
	assert STUB_OUTPUTS != STUB
	(fake.tree / 'tools/testing/kunit/kunit.py').write_text(STUB_OUTPUTS)
	(fake.tree / 'fs/autofs/tests').mkdir(parents=True)
	(fake.tree / 'fs/autofs/tests/autofs_kunit.c').write_text('// a test\n')
	git(fake.tree, 'init', '-q', '-b', 'work')
	git(fake.tree, 'add', '-f', '-A', '.')
	git(fake.tree, 'commit', '-q', '-m', 'pristine + series')
	fake.scenario('x86_64', console='console_pass.log')
	return fake


def builds(f):
	return len(f.calls('build'))


def test_an_unchanged_rerun_does_not_build(gfake):
	r, out = gfake.run_arch('x86_64')
	assert r.status == 'PASS' and not r.build_skipped and builds(gfake) == 1
	bdir = gfake.cache / 'build' / 'debian' / 'x86_64'
	assert (bdir / buildinputs.STAMP).is_file()
	r, out = gfake.run_arch('x86_64')
	assert builds(gfake) == 1, 'built again with nothing changed'
	assert r.build_skipped and r.status == 'PASS', r.reason
	assert len(gfake.calls('exec')) == 2          # the boot still happens
	log = (out / 'build.log').read_text()
	assert log.startswith('$ ') and 'not run' in log and '--always-build' in log
	assert r.config_hash                          # of the .config it boots
	# --always-build builds anyway.
	r, _ = gfake.run_arch('x86_64', '--always-build')
	assert builds(gfake) == 2 and not r.build_skipped


def test_an_edit_and_its_undo_each_rebuild(gfake):
	f = gfake.tree / 'fs/autofs/tests/autofs_kunit.c'
	gfake.run_arch('x86_64')
	f.write_text('// a test, edited\n')
	gfake.run_arch('x86_64')
	assert builds(gfake) == 2
	# Back to the committed bytes: the objects in the build directory are
	# from the edit, so this must build again.
	f.write_text('// a test\n')
	gfake.run_arch('x86_64')
	assert builds(gfake) == 3
	gfake.run_arch('x86_64')
	assert builds(gfake) == 3


@pytest.mark.parametrize('change', ['untracked', 'ignored', 'deleted', 'commit', 'fragment',
				    'kconfig_add', 'vmlinux', 'config', 'no_vmlinux', 'env',
				    'ccache', 'toolchain'])
def test_any_input_change_rebuilds(gfake, monkeypatch, change):
	argv = []
	gfake.run_arch('x86_64')
	bdir = gfake.cache / 'build' / 'debian' / 'x86_64'
	t = gfake.tree
	if change == 'untracked':
		(t / 'fs/autofs/tests/new_kunit.c').write_text('// new\n')
	elif change == 'ignored':
		(t / '.gitignore').write_text('*.o\n')
		git(t, 'add', '-f', '.gitignore')
		git(t, 'commit', '-q', '-m', 'ignore')
		gfake.run_arch('x86_64')
		(t / 'fs/autofs/stray.o').write_bytes(b'\0')
	elif change == 'deleted':
		(t / 'fs/autofs/tests/autofs_kunit.c').unlink()
	elif change == 'commit':
		git(t, 'commit', '-q', '--allow-empty', '-m', 'empty')
	elif change == 'fragment':
		(gfake.repo / 'kunit/arch/x86_64.config').write_text('# x86_64\nCONFIG_PCI=y\n')
	elif change == 'kconfig_add':
		argv = ['--kconfig-add', 'CONFIG_KASAN=y']
	elif change == 'vmlinux':
		os.utime(bdir / 'vmlinux', ns=(1, 1))
	elif change == 'config':
		(bdir / '.config').write_text('CONFIG_KUNIT=y\nCONFIG_X=y\n')
	elif change == 'no_vmlinux':
		(bdir / 'vmlinux').unlink()
	elif change == 'env':
		monkeypatch.setenv('KCFLAGS', '-O1')
	elif change == 'ccache':
		monkeypatch.setattr(shutil, 'which', lambda name: '/usr/bin/ccache')
	elif change == 'toolchain':
		real = buildinputs._first_line
		monkeypatch.setattr(buildinputs, '_first_line',
				    lambda cmd: 'GNU ld 2.41' if cmd[0].endswith('ld') else real(cmd))
	n = builds(gfake)
	r, _ = gfake.run_arch('x86_64', *argv)
	assert builds(gfake) == n + 1, change
	assert not r.build_skipped


def test_jobs_and_pycache_do_not_count(gfake):
	gfake.run_arch('x86_64')
	(gfake.tree / 'tools/testing/kunit/__pycache__').mkdir()
	(gfake.tree / 'tools/testing/kunit/__pycache__/kunit.cpython-311.pyc').write_bytes(b'x')
	gfake.run_arch('x86_64', '--jobs', '1')
	assert builds(gfake) == 1


def test_a_failed_build_is_never_skipped(gfake):
	gfake.run_arch('x86_64')
	bdir = gfake.cache / 'build' / 'debian' / 'x86_64'
	(gfake.tree / 'fs/autofs/tests/autofs_kunit.c').write_text('broken\n')
	gfake.scenario('x86_64', build='build_compile_error.log', build_rc=1)
	r, _ = gfake.run_arch('x86_64')
	assert r.status == 'BUILD_FAILED'
	assert not (bdir / buildinputs.STAMP).exists()      # the old stamp is gone too
	(gfake.tree / 'fs/autofs/tests/autofs_kunit.c').write_text('// a test\n')
	gfake.scenario('x86_64', console='console_pass.log')
	r, _ = gfake.run_arch('x86_64')
	assert builds(gfake) == 3 and r.status == 'PASS'


def test_a_tree_without_git_always_builds(fake):
	(fake.tree / 'tools/testing/kunit/kunit.py').write_text(STUB_OUTPUTS)
	fake.scenario('x86_64', console='console_pass.log')
	fake.run_arch('x86_64')
	fake.run_arch('x86_64')
	assert len(fake.calls('build')) == 2
	assert buildinputs.tree_fingerprint(fake.tree) is None


def test_fingerprint(tmp_path):
	t = tmp_path / 't'
	t.mkdir()
	(t / 'a.c').write_text('a\n')
	git(t, 'init', '-q')
	git(t, 'add', 'a.c')
	git(t, 'commit', '-q', '-m', 'a')
	clean = buildinputs.tree_fingerprint(t)
	assert clean and clean == buildinputs.tree_fingerprint(t)
	(t / 'a.c').write_text('b\n')
	edited = buildinputs.tree_fingerprint(t)
	(t / 'a.c').write_text('c\n')                       # same size, other bytes
	assert buildinputs.tree_fingerprint(t) not in (clean, edited)
	(t / 'a.c').write_text('a\n')
	assert buildinputs.tree_fingerprint(t) == clean
	# An in-tree build's worth of stray files: not hashed, so never skipped.
	for i in range(buildinputs.MAX_DIRTY + 1):
		(t / f'{i}.o').write_bytes(b'')
	assert buildinputs.tree_fingerprint(t) is None


def test_stamp_is_versioned(gfake):
	gfake.run_arch('x86_64')
	stamp = gfake.cache / 'build' / 'debian' / 'x86_64' / buildinputs.STAMP
	doc = json.loads(stamp.read_text())
	assert doc['inputs']['version'] == buildinputs.VERSION
	assert not any(a.startswith('--jobs=') for a in doc['inputs']['command'])
	doc['inputs']['version'] = buildinputs.VERSION + 1
	stamp.write_text(json.dumps(doc))
	gfake.run_arch('x86_64')
	assert builds(gfake) == 2
