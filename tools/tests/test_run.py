# SPDX-License-Identifier: GPL-2.0
"""run: the per-arch loop over a fake kernel tree whose kunit.py is a stub."""

import argparse
import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.base import atomic, deps, paths
from bklkunit.base.errors import UserError
from bklkunit.results import model
from bklkunit.run import plan, runner
from conftest import (STUB_ARGS, STUB_HANG, DATA, KCONFIG_A, KCONFIG_B, all_ended, commit,
		      copy_parser, deadline_after, git, read_data)

# Stands in for tools/testing/kunit/kunit.py.  What it does per arch comes
# from files in $BKL_STUB_CTL: <arch>.build (output), <arch>.build_rc,
# <arch>.console (written to <build_dir>/test.log), <arch>.exec (output),
# <arch>.exec_rc; <arch>.exec_hang: exec never ends, once it has written
# all that (conftest.STUB_HANG).  Every call is appended to calls.jsonl.
STUB = STUB_ARGS + STUB_HANG + r'''with open(ctl / 'calls.jsonl', 'a') as f:
	f.write(json.dumps({'verb': verb, 'argv': rest, 'cwd': os.getcwd(),
			    'ccache_dir': os.environ.get('CCACHE_DIR')}) + '\n')

def get(name, default=None):
	p = ctl / f'{arch}.{name}'
	return p.read_text() if p.exists() else default

if verb == 'build':
	Path(opts['build_dir'][0]).mkdir(exist_ok=True)     # as kunit.py does
	sys.stdout.write(get('build', '[07:00:40] Configuring KUnit Kernel ...\n'
			 '[07:00:42] Building KUnit Kernel ...\n'))
	sys.exit(int(get('build_rc', '0')))
if verb == 'exec':
	build_dir = Path(opts['build_dir'][0])
	console = get('console')
	if console is not None:
		(build_dir / 'test.log').write_text(console)
	sys.stdout.write(get('exec', '[07:01:02] Starting KUnit Kernel (1/1)...\n'))
	Path(opts['json'][0]).write_text('{"name": "KUnit Test Group"}\n')
	if get('exec_hang') is not None:
		hang()
	sys.exit(int(get('exec_rc', '0')))
sys.exit(f'stub kunit.py: unexpected verb {verb}')
'''


class Fake:
	"""A fake kernel tree, the stub's controls, and the repo's config files."""

	def __init__(self, root: Path):
		self.root = root
		self.tree = root / 'linux'
		self.ctl = root / 'ctl'
		self.cache = root / 'cache'
		self.results = root / 'results'

	def scenario(self, arch, build=None, build_rc=0, console=None, exec_out=None, exec_rc=0):
		"""console / build / exec_out: a data file name or literal text."""
		def text(v):
			return read_data(v) if v and '\n' not in v and (DATA / v).is_file() else v
		for name, value in (('build', text(build)), ('console', text(console)),
				    ('exec', text(exec_out))):
			if value is not None:
				(self.ctl / f'{arch}.{name}').write_text(value)
		(self.ctl / f'{arch}.build_rc').write_text(str(build_rc))
		(self.ctl / f'{arch}.exec_rc').write_text(str(exec_rc))

	def calls(self, verb=None, arch=None):
		f = self.ctl / 'calls.jsonl'
		out = [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []
		return [c for c in out if (verb is None or c['verb'] == verb) and
			(arch is None or f'--arch={arch}' in c['argv'])]

	def args(self, *argv):
		return cli.build_parser().parse_args(
			['run', '--cache-dir', str(self.cache), '--results-dir', str(self.results),
			 '--no-install', '--jobs', '3'] + list(argv))

	def run_arch(self, arch, *argv):
		args = self.args('--arch', arch, *argv)
		out = self.results / arch
		bdir = self.cache / 'build' / 'debian' / arch
		bdir.parent.mkdir(parents=True, exist_ok=True)     # as runner.main does
		return runner.run_arch(self.tree, arch, bdir, out, plan.RunOptions.from_args(args),
				       self.cache), out


@pytest.fixture
def fake(tmp_path, kernel_tree, monkeypatch):
	f = Fake(tmp_path)
	kdir = copy_parser(kernel_tree, f.tree)
	(kdir / 'kunit.py').write_text(STUB)
	(f.tree / 'Makefile').write_text('VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n')
	f.ctl.mkdir()
	monkeypatch.setenv('BKL_STUB_CTL', str(f.ctl))
	# The repository's config fragments, as copies.
	repo = tmp_path / 'repo'
	(repo / 'kunit' / 'profiles').mkdir(parents=True)
	(repo / 'kunit' / 'arch').mkdir()
	(repo / '.kunitconfig').write_text('CONFIG_KUNIT=y\nCONFIG_AUTOFS_FS=y\n')
	(repo / 'kunit' / 'profiles' / 'default.config').write_text('CONFIG_DEBUG_KERNEL=y\n')
	for a in paths.QEMU_ARCHES:
		(repo / 'kunit' / 'arch' / f'{a}.config').write_text(f'# {a}\n')
	monkeypatch.setattr(paths, 'KUNITCONFIG', repo / '.kunitconfig')
	monkeypatch.setattr(paths, 'KUNIT_DIR', repo / 'kunit')
	f.repo = repo
	# Decide ccache explicitly in each test.
	monkeypatch.setattr(shutil, 'which', lambda name: None)
	# A run never makes fixture images (the kernel carries them): record any call.
	from bklkunit.ufsimage import fixtures
	f.fixture_builds = []
	monkeypatch.setattr(fixtures, 'build',
			    lambda cache, **kw: f.fixture_builds.append(cache) or [])
	return f


@pytest.fixture
def with_ccache(monkeypatch):
	monkeypatch.setattr(shutil, 'which',
			    lambda name: '/usr/bin/ccache' if name == 'ccache' else None)


# ------------------------------------------------------------- small pieces


def test_format_table():
	rs = [model.ArchResult('x86_64', 'PASS', passed=10, skipped=1, build_seconds=151.4,
			     run_seconds=3.6),
	      model.ArchResult('arm64', 'BUILD_FAILED', build_seconds=12)]
	lines = runner.format_table(rs).splitlines()
	assert len(lines) == 2 + len(rs)
	assert lines[0].split() == ['arch', 'status', 'passed', 'failed', 'skipped', 'crashed',
				    'build', 's', 'run', 's']
	assert set(lines[1].replace(' ', '')) == {'-'}
	assert lines[2].split() == ['x86_64', 'PASS', '10', '0', '1', '0', '151', '4']
	assert lines[3].split() == ['arm64', 'BUILD_FAILED', '0', '0', '0', '0', '12', '0']
	# Columns line up: every line as wide as the header.
	assert len({len(l.rstrip()) for l in lines}) == 1
	assert lines[2].startswith('x86_64  ')


def test_format_table_without_results():
	assert len(runner.format_table([]).splitlines()) == 2


def test_arch_result_ok():
	assert model.ArchResult('arm', 'PASS').ok
	for s in ('FAIL', 'CRASH', 'TIMEOUT', 'NO_TESTS', 'BUILD_FAILED', 'NOT_RUN'):
		assert not model.ArchResult('arm', s).ok


def test_kunitconfigs_order(fake, tmp_path, monkeypatch):
	extra = tmp_path / 'extra.config'
	extra.write_text('CONFIG_X=y\n')
	monkeypatch.chdir(tmp_path)
	got = plan.kunitconfigs('arm64', ['extra.config'])
	assert got == [fake.repo / '.kunitconfig', fake.repo / 'kunit/profiles/default.config',
		       fake.repo / 'kunit/arch/arm64.config', extra.resolve()]
	# No fragment for UML: it is simply left out.
	assert plan.kunitconfigs('um', []) == got[:2]


def test_kunitconfigs_missing_extra_fragment(fake, tmp_path):
	missing = tmp_path / 'nope.config'
	with pytest.raises(UserError) as ei:
		plan.kunitconfigs('x86_64', [str(missing)])
	assert str(missing) in str(ei.value)
	assert 'does not exist' in str(ei.value)


def test_kunitconfigs_missing_repo_file(fake):
	(fake.repo / 'kunit/profiles/default.config').unlink()
	with pytest.raises(UserError, match='default.config'):
		plan.kunitconfigs('x86_64', [])


def test_make_options_with_ccache(with_ccache):
	assert plan.make_options('x86_64', True) == ['CC=ccache gcc', 'HOSTCC=ccache gcc']
	assert plan.make_options('i386', True) == ['CC=ccache gcc', 'HOSTCC=ccache gcc']
	assert plan.make_options('arm', True) == ['CC=ccache arm-linux-gnueabihf-gcc',
						 'HOSTCC=ccache gcc']
	assert plan.make_options('arm64', True) == ['CC=ccache aarch64-linux-gnu-gcc',
						   'HOSTCC=ccache gcc']
	assert plan.make_options('arm64', False) == []


def test_make_options_without_ccache_installed(monkeypatch):
	monkeypatch.setattr(shutil, 'which', lambda name: None)
	assert plan.make_options('x86_64', True) == []
	assert plan.make_options('arm', False) == []


def test_build_env(tmp_path, monkeypatch):
	monkeypatch.delenv('CCACHE_MAXSIZE', raising=False)
	env = plan.build_env(tmp_path)
	assert env['CCACHE_DIR'] == str(tmp_path / 'ccache')
	assert env['CCACHE_BASEDIR'] == str(tmp_path)
	assert env['CCACHE_MAXSIZE'] == '20G'
	assert env['KBUILD_BUILD_TIMESTAMP'] and env['KBUILD_BUILD_USER'] and env['KBUILD_BUILD_HOST']
	assert env['PYTHONDONTWRITEBYTECODE'] == '1'
	monkeypatch.setenv('CCACHE_MAXSIZE', '5G')
	assert plan.build_env(tmp_path)['CCACHE_MAXSIZE'] == '5G'


def test_run_parser_defaults(tmp_path):
	args = cli.build_parser().parse_args(['run'])
	# One arch of each byte order (README: what --arch=all costs instead).
	assert args.arch == 'x86_64,s390x' == ','.join(paths.DEFAULT_ARCHES)
	assert args.timeout is None and plan.RunOptions.from_args(args).guest_timeout() == plan.DEFAULT_TIMEOUT == 300
	assert args.filter_glob == ''
	assert args.kunitconfig == [] and args.kconfig_add == [] and args.qemu_args == []
	assert not args.no_ccache and not args.no_install and not args.verbose
	assert args.tree is None and args.results_dir is None and args.cache_dir is None


def test_results_dir_default_is_timestamped_with_latest(tmp_path):
	args = cli.build_parser().parse_args(['run'])
	d1 = runner.results_dir(request(args, tmp_path))
	d2 = runner.results_dir(request(args, tmp_path))
	assert d1 != d2 and d1.is_dir() and d2.is_dir()
	assert d1.parent == d2.parent == tmp_path / 'results'
	latest = tmp_path / 'results' / 'latest'
	assert latest.is_symlink() and os.readlink(latest) == d2.name
	assert latest.resolve() == d2.resolve()


# ------------------------------------------------------------------ run_arch


def test_run_arch_pass_writes_every_log(fake):
	fake.scenario('x86_64', build='build_ok.log', console='console_pass.log',
		      exec_out='[07:01:02] Starting KUnit Kernel (1/1)...\n[07:01:05] Testing complete.\n')
	r, out = fake.run_arch('x86_64')
	assert r.status == 'PASS', r.reason
	assert (r.passed, r.failed, r.skipped, r.crashed) == (10, 0, 0, 0)
	assert r.failures == [] and r.reason == ''
	assert r.build_seconds >= 0 and r.run_seconds >= 0
	for name in ('build.log', 'kunit.log', 'console.log', 'ktap.log', 'results.json'):
		assert (out / name).is_file(), name
	build_log = (out / 'build.log').read_text()
	assert build_log.startswith('$ ') and ' build ' in build_log.splitlines()[0]
	assert 'Building KUnit Kernel' in build_log
	assert 'Testing complete.' in (out / 'kunit.log').read_text()
	assert (out / 'console.log').read_text() == read_data('console_pass.log')
	ktap_log = (out / 'ktap.log').read_text().splitlines()
	assert ktap_log[0] == 'KTAP version 1'
	assert 'ok 2 autofs_end_state' in ktap_log


def test_run_arch_passes_the_right_arguments(fake, tmp_path):
	fake.scenario('x86_64', console='console_pass.log')
	extra = tmp_path / 'extra.config'
	extra.write_text('CONFIG_X=y\n')
	r, out = fake.run_arch('x86_64', 'autofs_*', '--no-ccache', '--timeout', '77',
			       '--kunitconfig', str(extra), '--kconfig-add', 'CONFIG_KASAN=y',
			       '--qemu-args', '-smp 2')
	assert r.status == 'PASS', r.reason
	bdir = fake.cache / 'build' / 'debian' / 'x86_64'
	[build] = fake.calls('build')
	assert build['argv'][:3] == ['--arch=x86_64', f'--build_dir={bdir}', '--jobs=3']
	assert [a for a in build['argv'] if a.startswith('--kunitconfig=')] == [
		f'--kunitconfig={fake.repo / ".kunitconfig"}',
		f'--kunitconfig={fake.repo / "kunit/profiles/default.config"}',
		f'--kunitconfig={fake.repo / "kunit/arch/x86_64.config"}',
		f'--kunitconfig={extra}']
	assert '--kconfig_add=CONFIG_KASAN=y' in build['argv']
	assert not any(a.startswith('--make_options') for a in build['argv'])
	assert not any(a.startswith('--cross_compile') for a in build['argv'])
	assert build['ccache_dir'] == str(fake.cache / 'ccache')
	[ex] = fake.calls('exec')
	assert ex['argv'][:2] == ['--arch=x86_64', f'--build_dir={bdir}']
	assert '--timeout=77' in ex['argv']
	assert f'--json={out / "results.json"}' in ex['argv']
	assert '--qemu_args=-smp 2' in ex['argv']
	assert ex['argv'][-1] == 'autofs_*'


def test_run_arch_cross_compiles_arm_with_ccache(fake, with_ccache):
	fake.scenario('arm', console='console_pass.log')
	r, _ = fake.run_arch('arm')
	assert r.status == 'PASS', r.reason
	[build] = fake.calls('build')
	assert '--cross_compile=arm-linux-gnueabihf-' in build['argv']
	assert '--make_options=CC=ccache arm-linux-gnueabihf-gcc' in build['argv']
	assert '--make_options=HOSTCC=ccache gcc' in build['argv']
	assert '--cross_compile=arm-linux-gnueabihf-' in fake.calls('exec')[0]['argv']


def test_run_arch_no_ccache_flag(fake, with_ccache):
	fake.scenario('arm64', console='console_pass.log')
	fake.run_arch('arm64', '--no-ccache')
	assert not any(a.startswith('--make_options') for a in fake.calls('build')[0]['argv'])


def test_run_arch_build_failure(fake):
	fake.scenario('x86_64', build='build_compile_error.log', build_rc=1,
		      console='console_pass.log')
	r, out = fake.run_arch('x86_64', '--no-ccache')
	assert r.status == 'BUILD_FAILED'
	assert str(out / 'build.log') in r.reason
	assert 'exited 1' in r.reason
	assert "make: *** [Makefile:224: __sub-make] Error 2" in r.reason    # the tail is quoted
	assert fake.calls('exec') == []                                     # never booted
	assert not (out / 'console.log').exists()


def test_run_arch_config_failure(fake):
	fake.scenario('arm64', build='build_config_missing.log', build_rc=1)
	r, out = fake.run_arch('arm64', '--no-ccache')
	assert r.status == 'CONFIG_FAILED'
	assert 'Missing: CONFIG_CIFS=y' in r.reason
	assert str(out / 'build.log') in r.reason


@pytest.mark.parametrize('ccache', [False, True], ids=['no-ccache', 'ccache'])
def test_conflicting_kunitconfigs_are_a_config_failure(fake, monkeypatch, ccache):
	"""The same kunit.py output must get the same status whether or not the
	build command line carries --make_options=CC=ccache ... ."""
	if ccache:
		monkeypatch.setattr(shutil, 'which', lambda name: '/usr/bin/ccache')
	fake.scenario('x86_64', build='build_config_conflict.log', build_rc=1)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'CONFIG_FAILED', r.reason


def _noisy_console():
	"""console_pass.log with a clocksource line inside a nested KTAP header,
	where the 6.12 kunit_parser (kunit.py exec) sees a crashed suite."""
	lines = read_data('console_pass.log').splitlines(keepends=True)
	at = next(i for i, l in enumerate(lines) if l.endswith('    KTAP version 1\n'))
	return ''.join(lines[:at + 1] + ['[    0.510050] clocksource: Switched to clocksource tsc\n']
		       + lines[at + 1:])


def test_run_arch_pass_when_exec_misread_a_header_we_untangle(fake):
	fake.scenario('x86_64', console=_noisy_console(), exec_rc=1)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'PASS', r.reason
	assert (r.passed, r.failed, r.crashed) == (10, 0, 0)
	assert 'exec exited 1' in r.reason and '1 line(s)' in r.reason


def test_run_arch_exec_failure_unexplained_stays_a_failure(fake):
	# The same clean console, exec failing with nothing untangled: FAIL.
	fake.scenario('x86_64', console='console_pass.log', exec_rc=1)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL' and r.reason == 'kunit.py exec exited 1'
	# Untangled lines explain an exit status of 1 (failed tests), nothing else.
	fake.scenario('x86_64', console=_noisy_console(), exec_rc=2)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL' and r.reason == 'kunit.py exec exited 2'


def test_run_arch_one_failing_case(fake):
	fake.scenario('x86_64', console='console_fail.log', exec_rc=1)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL'
	assert (r.passed, r.failed) == (9, 1)
	assert r.failures[0].startswith('autofs_protocol.autofs_test_no_pipe')


def test_run_arch_crash(fake):
	fake.scenario('i386', console='console_panic.log', exec_rc=1)
	r, out = fake.run_arch('i386')
	assert r.status == 'CRASH'
	assert r.reason
	assert 'Kernel panic' in (out / 'console.log').read_text()


def test_run_arch_timeout(fake):
	fake.scenario('arm', console='console_timeout.log', exec_out='kunit_timeout.log', exec_rc=1)
	r, _ = fake.run_arch('arm')
	assert r.status == 'TIMEOUT'
	assert '300' in r.reason


def test_run_arch_without_any_console_is_a_crash(fake):
	fake.scenario('x86_64', exec_out='qemu-system-x86_64: failed to initialize KVM\n', exec_rc=1)
	r, out = fake.run_arch('x86_64')
	assert r.status == 'CRASH'
	assert 'KTAP' in r.reason
	assert (out / 'console.log').read_text() == ''
	assert (out / 'ktap.log').read_text() == ''


def test_a_stale_console_from_an_earlier_run_is_not_reused(fake):
	bdir = fake.cache / 'build' / 'debian' / 'x86_64'
	bdir.mkdir(parents=True)
	(bdir / 'test.log').write_text(read_data('console_pass.log'))
	fake.scenario('x86_64')                              # exec writes no console
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'CRASH'


def test_exec_failing_with_a_passing_console_is_not_a_pass(fake):
	fake.scenario('x86_64', console='console_pass.log', exec_rc=1)
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'FAIL'
	assert 'exited 1' in r.reason


# ---------------------------------------------------------------------- main


@pytest.fixture
def main_env(fake, monkeypatch):
	ensured = []
	monkeypatch.setattr(deps, 'ensure',
			    lambda pkgs, allow_install=True: ensured.append((list(pkgs), allow_install)))
	info = {'tree': str(fake.tree), 'kernel_version': '6.12.118', 'series': 'applied'}

	def resolve_tree(req):
		assert req.cache == fake.cache
		return fake.tree, 'debian', dict(info)
	monkeypatch.setattr(runner, 'resolve_tree', resolve_tree)
	fake.ensured = ensured
	return fake


def summary(fake):
	return json.loads((fake.results / 'summary.json').read_text())


def test_main_build_failure_does_not_stop_the_next_arch(main_env, capsys):
	f = main_env
	f.scenario('x86_64', build='build_compile_error.log', build_rc=1)
	f.scenario('arm64', console='console_pass.log')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm64', '--no-ccache')))
	assert rc == 1
	assert f.calls('exec', 'x86_64') == []
	assert len(f.calls('exec', 'arm64')) == 1
	s = summary(f)
	assert [(a['arch'], a['status']) for a in s['arches']] == [
		('x86_64', 'BUILD_FAILED'), ('arm64', 'PASS')]
	assert str(f.results / 'x86_64' / 'build.log') in s['arches'][0]['reason']
	assert s['arches'][1]['passed'] == 10
	assert s['results_dir'] == str(f.results)
	assert s['tree'] == str(f.tree) and s['kernel_version'] == '6.12.118'
	for arch in ('x86_64', 'arm64'):
		v = json.loads((f.results / arch / 'verdict.json').read_text())
		assert v['arch'] == arch
	out = capsys.readouterr().out
	assert 'x86_64: BUILD_FAILED' in out
	assert '1 arch(es) passed, 1 failed: x86_64' in out
	# deps were checked once, for both arches, without apt-get.
	[(pkgs, allow)] = f.ensured
	assert allow is False
	assert 'qemu-system-x86' in pkgs and 'gcc-aarch64-linux-gnu' in pkgs
	# One build directory per arch under the tree's key.
	assert (f.cache / 'build' / 'debian' / 'arm64').is_dir()


def test_main_all_pass(main_env, capsys):
	f = main_env
	# The stub is told per kunit.py --arch (s390, powerpc, riscv: the tree's names).
	for a in paths.QEMU_ARCHES:
		f.scenario(paths.ARCHES[a].kernel_arch, console='console_pass.log')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch=all', '--no-ccache', 'autofs_*')))
	assert rc == 0
	s = summary(f)
	assert [a['arch'] for a in s['arches']] == paths.QEMU_ARCHES
	assert {a['status'] for a in s['arches']} == {'PASS'}
	assert s['filter_glob'] == 'autofs_*'
	assert [next(x for x in c['argv'] if x.startswith('--arch=')) for c in f.calls('build')] \
		== ['--arch=' + a for a in ('x86_64', 'i386', 'arm', 'arm64', 's390', 'powerpc',
					   'riscv', 'm68k')]
	out = capsys.readouterr().out
	assert '8 arch(es) passed, 0 failed' in out
	assert runner.format_table([model.ArchResult(**a) for a in s['arches']]) in out


def test_main_crash_returns_1(main_env, capsys):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	f.scenario('i386', console='console_panic.log', exec_rc=1)
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,i386', '--no-ccache')))
	assert rc == 1
	s = summary(f)
	assert [(a['arch'], a['status']) for a in s['arches']] == [('x86_64', 'PASS'), ('i386', 'CRASH')]
	assert 'i386: CRASH' in capsys.readouterr().out


def test_main_unexpected_error_in_one_arch_is_recorded(main_env, monkeypatch):
	f = main_env
	f.scenario('arm64', console='console_pass.log')
	real = runner.run_arch

	def flaky(ktree, arch, *a):
		if arch == 'arm':
			raise OSError('disk full')
		return real(ktree, arch, *a)
	monkeypatch.setattr(runner, 'run_arch', flaky)
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm,arm64', '--no-ccache')))
	assert rc == 1
	s = summary(f)
	assert s['arches'][0]['status'] == 'ERROR' and 'disk full' in s['arches'][0]['reason']
	assert s['arches'][1]['status'] == 'PASS'


def test_main_unknown_arch_is_a_user_error(main_env):
	with pytest.raises(UserError, match='unknown arch'):
		runner.main(plan.RunRequest.from_args(main_env.args('--arch', 'sparc')))
	assert main_env.ensured == []


def test_cli_reports_user_errors_without_a_traceback(tmp_path, capsys):
	rc = cli.main(['run', '--arch', 'sparc', '--cache-dir', str(tmp_path), '--no-install'])
	assert rc == 2
	err = capsys.readouterr().err
	assert err.startswith('kunit.py run: error: unknown arch')
	assert 'Traceback' not in err


# -------------------------------------------------------------- --tree DIR


@pytest.fixture
def user_tree(tmp_path, source_tarball, monkeypatch):
	"""A clean git kernel tree of the right version (the pristine commit of a
	prepared tree) plus a kernel-patches/ exported from work on top of it."""
	from bklkunit.source import tree
	from conftest import DEBVER

	patch_dir = tmp_path / 'kernel-patches'
	patch_dir.mkdir()
	monkeypatch.setattr(paths, 'PATCH_DIR', patch_dir)
	prep = tree.prepare(tmp_path / 'cache', patch_dir=patch_dir, tarball=source_tarball,
			    debver=DEBVER, allow_install=False)

	def series(*steps):
		"""steps: (subject, {path: text}); exported, then the tree reset to pristine."""
		for subject, files in steps:
			commit(prep.path, subject + '\n', files)
		tree.export(tmp_path / 'cache', patch_dir)
		git(prep.path, 'reset', '-q', '--hard', prep.pristine)
		kdir = prep.path / 'tools' / 'testing' / 'kunit'
		kdir.mkdir(parents=True, exist_ok=True)
		(kdir / 'kunit.py').write_text(STUB)         # untracked, like a build helper
		return prep.path, tree.read_series(patch_dir)
	return series


def request(args, cache):
	"""The typed request of a command line, on the cache given."""
	return dataclasses.replace(plan.RunRequest.from_args(args), cache=cache)


def tree_args(t, *extra):
	return cli.build_parser().parse_args(['run', '--tree', str(t), '--no-install'] + list(extra))


def test_resolve_tree_applies_an_independent_series(user_tree, tmp_path, capsys):
	t, patches = user_tree(
		('autofs: one', {'fs/autofs/symlink.c': '// one\n'}),
		('autofs: two', {'include/uapi/linux/auto_fs.h': '/* two */\n'}))
	ktree, key, info = runner.resolve_tree(request(tree_args(t), tmp_path))
	assert ktree == t and key.startswith('tree-')
	assert info['series'] == 'not applied' and info['kernel_version'] == '6.12.118'
	ktree, key2, info = runner.resolve_tree(request(tree_args(t, '--apply-series'), tmp_path))
	assert key2 == key
	assert info['series'] == 'applied'
	assert git(t, 'log', '--format=%s', '-2').splitlines() == ['autofs: two', 'autofs: one']


def test_resolve_tree_applies_a_dependent_series(user_tree, tmp_path, capsys):
	# Like kernel-patches/: the second patch extends what the first added.
	t, patches = user_tree(('autofs: add KUnit tests', {'fs/autofs/Kconfig': KCONFIG_A}),
			       ('autofs: add end-state checks', {'fs/autofs/Kconfig': KCONFIG_B}))
	_, _, info = runner.resolve_tree(request(tree_args(t), tmp_path))
	assert info['series'] == 'not applied'
	_, _, info = runner.resolve_tree(request(tree_args(t, '--apply-series'), tmp_path))
	assert info['series'] == 'applied'
	assert (t / 'fs/autofs/Kconfig').read_text() == KCONFIG_B
	# Run again on the tree that now carries the series.
	_, _, info = runner.resolve_tree(request(tree_args(t), tmp_path))
	assert info['series'] == 'applied'


def test_resolve_tree_refuses_a_dirty_tree(user_tree, tmp_path):
	t, _ = user_tree(('autofs: one', {'fs/autofs/symlink.c': '// one\n'}))
	(t / 'fs/autofs/inode.c').write_text('local edit\n')
	with pytest.raises(UserError, match='uncommitted'):
		runner.resolve_tree(request(tree_args(t, '--apply-series'), tmp_path))
	assert (t / 'fs/autofs/inode.c').read_text() == 'local edit\n'


def test_resolve_tree_needs_kunit_py(tmp_path):
	with pytest.raises(UserError, match='tools/testing/kunit/kunit.py'):
		runner.resolve_tree(request(tree_args(tmp_path), tmp_path))


# ------------------------------------------------------------ guest machine


def _ns(**kw):
	base = dict(profile='default', qemu_args=[], smp=plan.DEFAULT_SMP)
	base.update(kw)
	return argparse.Namespace(**base)


def test_guests_get_two_vcpus_by_default():
	assert plan.DEFAULT_SMP == 2
	assert plan.RunOptions.from_args(_ns()).qemu_extra('x86_64') == ['-smp 2']
	assert cli.build_parser().parse_args(['run']).smp == 2


def test_smp_one_and_user_smp_win():
	assert plan.RunOptions.from_args(_ns(smp=1)).qemu_extra('arm') == []
	assert plan.RunOptions.from_args(_ns(qemu_args=['-smp 4'])).qemu_extra('arm') == ['-smp 4']
	# The kcsan profile brings its own -smp: no second one.
	assert plan.RunOptions.from_args(_ns(profile='kcsan')).qemu_extra('x86_64') == []


def test_no_disks_are_attached(fake):
	"""The UFS images are carried in the kernel: a guest gets vCPUs and the
	user's arguments, no drives."""
	x86 = plan.RunOptions.from_args(_ns()).qemu_extra('x86_64')
	assert x86 == ['-smp 2']
	assert plan.RunOptions.from_args(_ns(qemu_args=['-m 2048'])).qemu_extra('arm64') == ['-smp 2', '-m 2048']
	# UML boots no QEMU: no vCPUs to ask for.
	assert plan.RunOptions.from_args(_ns()).qemu_extra('um') == []
	fake.scenario('x86_64', console='console_pass.log')
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'PASS', r.reason
	[ex] = fake.calls('exec')
	assert '--qemu_args=-smp 2' in ex['argv']
	assert not [a for a in ex['argv'] if '-drive' in a or 'virtio' in a]


def test_main_makes_no_fixture_images(main_env):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache'))) == 0
	# --no-fixtures is still accepted, and changes nothing
	f.scenario('x86_64', console='console_pass.log')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--no-fixtures'))) == 0
	assert f.fixture_builds == []


def test_arch_fragments_need_no_disk_drivers():
	"""No PCI, virtio or block-driver options: the suites bring their disks."""
	for arch in paths.QEMU_ARCHES:
		text = (paths.KUNIT_DIR / 'arch' / f'{arch}.config').read_text()
		for sym in ('CONFIG_PCI', 'CONFIG_VIRTIO', 'CONFIG_BLK_DEV'):
			assert sym not in text, f'{arch}: {sym}'


# ------------------------------------------- --build-dir, --ccache-dir, timings


def test_main_build_dir_and_ccache_dir(main_env, tmp_path):
	f = main_env
	f.scenario('arm64', console='console_pass.log')
	bd, cd = tmp_path / 'bench' / 'ours', tmp_path / 'bench' / 'ccache' / 'ours'
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm64', '--build-dir', str(bd),
			       '--ccache-dir', str(cd)))) == 0
	[build] = f.calls('build')
	assert f'--build_dir={bd / "arm64"}' in build['argv']
	assert build['ccache_dir'] == str(cd)
	assert f'--build_dir={bd / "arm64"}' in f.calls('exec')[0]['argv']
	assert not (f.cache / 'build').exists()


def test_main_records_where_its_time_went(main_env):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64'))) == 0
	s = summary(f)
	t = s['timings']
	assert set(t) == {'deps', 'tree', 'divergence', 'reports', 'total'}
	assert all(v >= 0 for v in t.values())
	a = s['arches'][0]
	assert a['judge_seconds'] > 0 and a['build_skipped'] is False
	assert t['total'] >= t['deps'] + t['tree'] + t['reports'] + \
		a['build_seconds'] + a['run_seconds'] + a['judge_seconds'] - 0.01


# ------------------------------------------------------------ --parallel


def test_parallel_workers_one_arch_per_four_cpus(monkeypatch):
	monkeypatch.setattr(runner.os, 'sched_getaffinity', lambda pid: set(range(2)))
	assert runner.parallel_workers(0, 4) == 1          # this 2-CPU machine: one at a time
	monkeypatch.setattr(runner.os, 'sched_getaffinity', lambda pid: set(range(16)))
	assert runner.parallel_workers(0, 4) == 4
	assert runner.parallel_workers(0, 2) == 2          # never more than the arches
	assert runner.parallel_workers(3, 4) == 3          # --parallel N wins
	assert runner.parallel_workers(8, 1) == 1


def test_main_parallel_runs_arches_at_once_with_their_share_of_jobs(main_env, capsys):
	import threading
	f = main_env
	for a in ('x86_64', 'arm64'):
		f.scenario(a, console='console_pass.log')
	both = threading.Barrier(2, timeout=600)   # a guard against a hang, not a measure
	seen = {}
	real = runner.run_arch

	def run_arch(ktree, arch, bdir, out, args, cache, **kw):
		seen[arch] = args.jobs
		both.wait()           # both arches are in run_arch at the same time
		return real(ktree, arch, bdir, out, args, cache, **kw)
	import pytest
	mp = pytest.MonkeyPatch()
	mp.setattr(runner, 'run_arch', run_arch)
	try:
		rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm64', '--no-ccache', '--parallel', '2',
				     '--jobs', '4')))
	finally:
		mp.undo()
	assert rc == 0
	assert seen == {'x86_64': 2, 'arm64': 2}
	# Results in the order the arches were given, whoever finished first.
	assert [a['arch'] for a in summary(f)['arches']] == ['x86_64', 'arm64']
	out = capsys.readouterr().out
	assert 'Running 2 arches, 2 at a time (2 make jobs each)' in out
	assert '2 arch(es) passed, 0 failed' in out
	assert runner.progress.LINES_ONLY is False
	for a in ('x86_64', 'arm64'):
		assert len(f.calls('build', a)) == 1 and f'--jobs=2' in ' '.join(
			f.calls('build', a)[0]['argv'])


# ------------------------------------------- the guest really has its vCPUs


def test_asked_cpus_reads_the_last_smp_of_the_exec_command():
	assert runner.asked_cpus(['exec', '--arch=x86_64']) == 1
	assert runner.asked_cpus(['--qemu_args=-smp 2', '--qemu_args=-m 1024']) == 2
	assert runner.asked_cpus(['--qemu_args=-m 512 -smp cpus=4']) == 4
	assert runner.asked_cpus(['--qemu_args=-smp 2', '--qemu_args=-smp 3']) == 3
	assert runner.asked_cpus(['--qemu_args=-device virtio-blk-pci,drive=ufs0,serial=x-smp']) == 1


def test_smp_config_problem(tmp_path):
	cfg = tmp_path / '.config'
	assert runner.smp_config_problem(cfg, 2) == ''           # no .config: nothing to say
	cfg.write_text('CONFIG_X86_64=y\n# CONFIG_SMP is not set\n')
	assert runner.smp_config_problem(cfg, 1) == ''
	msg = runner.smp_config_problem(cfg, 2)
	assert 'no CONFIG_SMP' in msg and 'one CPU' in msg
	cfg.write_text('CONFIG_SMP=y\nCONFIG_NR_CPUS=64\n')
	assert runner.smp_config_problem(cfg, 2) == ''


def test_guest_cpus_from_the_console():
	assert runner.guest_cpus(['Linux version 6.12\n', 'smp: Bringing up secondary CPUs ...\n',
			       'smp: Brought up 1 node, 2 CPUs\n']) == 2
	assert runner.guest_cpus(['[    0.1] smp: Brought up 1 node, 1 CPU\n']) == 1
	assert runner.guest_cpus(['Linux version 6.12\n']) is None     # a UP kernel says nothing


def test_run_arch_refuses_a_single_cpu_kernel_given_two_vcpus(fake):
	fake.scenario('x86_64', console='console_pass.log')
	bdir = fake.cache / 'build' / 'debian' / 'x86_64'
	bdir.mkdir(parents=True)
	(bdir / '.config').write_text('CONFIG_X86_64=y\n# CONFIG_SMP is not set\n')
	r, _ = fake.run_arch('x86_64')
	assert r.status == 'CONFIG_FAILED' and 'no CONFIG_SMP' in r.reason
	assert fake.calls('exec') == []         # never booted: nothing to mistake for a pass
	# --smp 1 asks for one CPU: then a UP kernel is what was asked for.
	r, _ = fake.run_arch('x86_64', '--smp', '1')
	assert r.status == 'PASS', r.reason
	# UML boots no QEMU, so -smp means nothing there.
	fake.scenario('um', console='console_pass.log')
	udir = fake.cache / 'build' / 'debian' / 'um'
	udir.mkdir(parents=True)
	(udir / '.config').write_text('CONFIG_UML=y\n# CONFIG_SMP is not set\n')
	r, _ = fake.run_arch('um')
	assert r.status == 'PASS', r.reason


def test_run_arch_fails_a_guest_that_brought_up_fewer_cpus(fake):
	console = read_data('console_pass.log')
	fake.scenario('arm64', console='smp: Brought up 1 node, 1 CPU\n' + console)
	r, _ = fake.run_arch('arm64')
	assert r.status == 'FAIL' and 'brought up 1 of the 2 vCPUs' in r.reason
	assert r.passed == 10
	fake.scenario('arm64', console='smp: Brought up 1 node, 2 CPUs\n' + console)
	r, _ = fake.run_arch('arm64')
	assert r.status == 'PASS', r.reason


def test_guest_timeout_the_option_then_the_profile_then_the_default():
	assert plan.RunOptions.from_args(_ns(timeout=None)).guest_timeout() == plan.DEFAULT_TIMEOUT
	assert plan.RunOptions.from_args(_ns(timeout=None, profile='kasan')).guest_timeout() == 900
	assert plan.RunOptions.from_args(_ns(timeout=77, profile='kasan')).guest_timeout() == 77
	assert plan.RunOptions.from_args(_ns(timeout=None, profile='kcsan')).guest_timeout() == 2400
	assert plan.RunOptions.from_args(_ns(timeout=None, profile='faults')).guest_timeout() == 1800


def test_main_writes_summary_once_and_reads_each_console_once(main_env, monkeypatch):
	f = main_env
	f.scenario('x86_64', console='console_fail.log')
	f.scenario('arm', console='console_pass.log')
	writes, loads = [], []
	real_write, real_load = atomic.write_text, runner.rundir.load_run

	def write_text(path, *a, **kw):      # every file of the tool's that must not be cut
		if Path(path).name == 'summary.json':
			writes.append(path)
		return real_write(path, *a, **kw)

	def load_run(*a, **kw):
		loads.append(a)
		return real_load(*a, **kw)
	monkeypatch.setattr(atomic, 'write_text', write_text)
	monkeypatch.setattr(runner.rundir, 'load_run', load_run)
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,arm'))) == 1
	assert len(writes) == 1 and len(loads) == 1
	s = summary(f)
	assert 'divergence' in s and 'timings' in s
	assert (s['results_dir'] and Path(s['results_dir'], 'kcidb.json').is_file()
		and Path(s['results_dir'], 'junit.xml').is_file())


# ------------------------------------- a kunit.py exec that never ends (its parser loops)


def killed(timeout, grace='0.5', console='console.log'):
	"""The reason of a boot run killed at its deadline."""
	return (f'kunit.py exec did not end within {grace} s of its guest timeout ({timeout} s), or '
		f'printed one line 100,000 times in a row, and was killed; its console parser may '
		f'loop on this console: see {console}')


def test_exec_deadline_is_the_guest_timeout_and_a_grace(fake):
	assert plan.EXEC_GRACE == 300 and plan.RunOptions().exec_grace == 300
	p = plan.ArchPlan(fake.tree, 'x86_64', fake.cache, fake.results, plan.RunOptions(timeout=77), [])
	assert p.exec_deadline() == 377 and p.exec_deadline(45) == 345
	assert plan.RunOptions.from_args(fake.args('--profile', 'kasan')).exec_grace == 300
	assert plan.ArchPlan(fake.tree, 'x86_64', fake.cache, fake.results,
			     plan.RunOptions.from_args(fake.args('--profile', 'kasan')),
			     []).exec_deadline() == 1200
	assert p.exec_killed() == killed(77, '300')


@pytest.mark.parametrize('console', ['console_pass.log', 'garbled_stray_plan.log'])
def test_run_arch_kills_a_kunit_py_exec_that_never_ends(fake, monkeypatch, console):
	"""Its guest's console read, kunit.py exec goes on for ever (as when its
	kunit_parser loops): killed at --timeout + EXEC_GRACE (1.5 s here; the
	clock runs once the stub has written everything), the arch is a CRASH
	saying so, never a pass, whatever its console shows."""
	monkeypatch.setattr(plan, 'EXEC_GRACE', 0.5)
	deadline_after(monkeypatch, 1, '[CRASHED]')      # once it has written it all
	fake.scenario('x86_64', console=console)
	(fake.ctl / 'x86_64.exec_hang').write_text('')
	r, out = fake.run_arch('x86_64', '--timeout', '1', '--no-crash-rerun')
	assert r.status == 'CRASH'
	reason = r.reason.splitlines()
	assert reason[0] == killed(1)
	log = (out / 'kunit.log').read_text().splitlines()
	assert '[07:01:03] [CRASHED] ' in log
	assert log[-1] == ('[bkl-kunit] still running 1.5 s after it was started (its deadline): '
			   'stopped (SIGINT to its process group)')
	assert all_ended([int((fake.ctl / 'x86_64.exec_child').read_text())])     # its "QEMU"
	assert (out / 'console.log').read_text() == read_data(console)
	if console == 'console_pass.log':
		# A console that reads complete: its cases are kept, the arch is no pass.
		assert len(reason) == 1 and (r.passed, r.failed, r.crashed) == (10, 0, 0)
	else:
		assert reason[1] == ("kunit_parser cannot read console.log from line 4 on: it loops "
				     "on line 4 ('1..2') without taking it; what came before is kept")


def test_main_a_kunit_py_exec_that_never_ends_is_reported_as_a_crash(main_env, monkeypatch,
								      capsys):
	"""verdict.json, summary.json, junit.xml, kcidb.json and index.html say
	CRASH, with the reason, as for any crash; and so does `report` when it
	reads the results again."""
	import xml.etree.ElementTree as ET
	f = main_env
	monkeypatch.setattr(plan, 'EXEC_GRACE', 0.5)
	deadline_after(monkeypatch, 1, '[CRASHED]')      # once it has written it all
	f.scenario('x86_64', console='console_pass.log')
	(f.ctl / 'x86_64.exec_hang').write_text('')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache', '--timeout', '1'))) == 1
	out = capsys.readouterr().out
	assert f'x86_64: CRASH: {killed(1)}' in out and '0 arch(es) passed, 1 failed: x86_64' in out
	assert len(f.calls('exec')) == 1          # nothing was cut off: no boot after it
	v = json.loads((f.results / 'x86_64' / 'verdict.json').read_text())
	assert (v['status'], v['reason'], v['passed']) == ('CRASH', killed(1), 10)
	[a] = summary(f)['arches']
	assert (a['status'], a['reason']) == ('CRASH', killed(1))
	for again in (False, True):
		if again:
			assert cli.main(['report', str(f.results)]) == 0     # the console bears it out
		root = ET.parse(f.results / 'junit.xml').getroot()
		[whole] = [ts for ts in root.findall('testsuite') if ts.get('name') == 'x86_64']
		err = whole.find('testcase/error')
		assert err.get('type') == 'CRASH' and err.get('message') == f'CRASH: {killed(1)}'
		kcidb = json.loads((f.results / 'kcidb.json').read_text())
		[kunit] = [t for t in kcidb['tests'] if t['path'] == 'kunit']
		assert kunit['status'] == 'ERROR' and kunit['misc']['arch_status'] == 'CRASH'
		page = (f.results / 'index.html').read_text()
		assert '0 of 1 arch(es) PASS' in page and 'x86_64 CRASH' in page


def test_sigterm_ends_a_verb_through_its_finally_blocks(monkeypatch):
	"""kunit.py and QEMU run in sessions of their own, which a SIGTERM to
	run's process group does not reach: cli.main makes SIGTERM (and SIGHUP,
	unless ignored: nohup) an exception, so that stream() stops them on the
	way out.  The handlers are put back afterwards."""
	import signal
	import time
	from conftest import WATCHDOG
	was = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
	seen = []

	def main(args):
		seen.append(signal.getsignal(signal.SIGHUP))
		try:
			os.kill(os.getpid(), signal.SIGTERM)
			time.sleep(WATCHDOG)               # the handler raises in here
		finally:
			seen.append('finally')
		return 0
	monkeypatch.setattr(runner, 'main', main)
	try:
		signal.signal(signal.SIGTERM, signal.SIG_DFL)
		signal.signal(signal.SIGHUP, signal.SIG_IGN)
		with pytest.raises(SystemExit) as ei:
			cli.main(['run', '--arch', 'x86_64'])
		assert ei.value.code == 128 + signal.SIGTERM
		assert seen == [signal.SIG_IGN, 'finally']          # nohup's SIGHUP stays ignored
		assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
		assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
	finally:
		for s, h in was.items():
			signal.signal(s, h)


def test_run_parallel_interrupted_stops_the_other_arches_commands(fake, monkeypatch):
	"""^C in the main thread of run --parallel: the other threads' commands
	(in sessions of their own) are stopped before the pool waits for them."""
	stopped = []
	monkeypatch.setattr(runner.progress, 'stop_all', lambda: stopped.append(True))

	def one(arch, options):
		if arch == 'x86_64':
			raise KeyboardInterrupt
		return arch
	with pytest.raises(KeyboardInterrupt):
		runner.run_concurrently(['x86_64', 'arm'], 2, plan.RunOptions(always_build=True), fake.tree,
				     one)
	assert stopped == [True]
	assert not runner.progress._stopping.is_set() and runner.progress.LINES_ONLY is False


# ------------------------------------------------------------- --coverage


def test_run_arch_coverage_wiring(fake, monkeypatch, tmp_path):
	"""--coverage: its fragment and make variable in the build, the
	qemu_config in both boots, the dump out of console.log, a second boot
	with the glob that matches no suite, and res.coverage from the report
	(lcov itself is not run here: test_coverage.py reads its output)."""
	import base64
	from bklkunit.coverage import scope, measure, gcovdump, gcovinit
	bdir = fake.cache / 'build' / 'debian' / 'x86_64'
	data = b'adcg' + bytes(200)
	dump = ['BKL-GCOV BEGIN 1\n',
		f'BKL-GCOV FILE {bdir}/fs/ufs/inode.gcda {len(data)} {gcovdump.fnv1a32(data):08x}\n',
		f'BKL-GCOV D {base64.b64encode(data).decode()}\n', 'BKL-GCOV END\n',
		'BKL-GCOV DONE 1 0\n']
	fake.scenario('x86_64', console=read_data('console_pass.log') + ''.join(dump))
	(fake.repo / 'kunit' / 'coverage').mkdir()
	(fake.repo / 'kunit' / 'coverage' / 'gcov.config').write_text('CONFIG_GCOV_KERNEL=y\n')
	cfg = tmp_path / 'bkl_coverage_x86_64.py'
	monkeypatch.setattr(gcovinit, 'prepare', lambda ktree, arch, b: gcovinit.Initramfs(
		tmp_path / 'initramfs.cpio', cfg))
	seen = {}

	def report(arch, cov_dir, build_dir, ktree, suites, boot):
		seen['suites'] = sorted(p.relative_to(suites).as_posix() for p in suites.rglob('*.gcda'))
		seen['boot'] = sorted(p.relative_to(boot).as_posix() for p in boot.rglob('*.gcda'))
		return {'total': {}, 'subsystems': {}, 'files': {}, 'goal': {'below': []},
			'html': 'coverage/html/index.html'}
	monkeypatch.setattr(measure, 'arch_coverage', report)
	r, out = fake.run_arch('x86_64', '--coverage')
	assert r.status == 'PASS', r.reason
	assert r.coverage['html'] == 'coverage/html/index.html' and 'error' not in r.coverage
	[build] = fake.calls('build')
	assert f'--make_options={scope.make_option()}' in build['argv']
	assert f'--kunitconfig={fake.repo}/kunit/coverage/gcov.config' in build['argv']
	first, second = fake.calls('exec', None)
	for call in (first, second):
		assert f'--qemu_config={cfg}' in call['argv']
	assert scope.BOOT_ONLY_GLOB in second['argv'] and scope.BOOT_ONLY_GLOB not in first['argv']
	# The dump is out of the console the verdict was read from.
	assert (out / 'console.log').read_text() == read_data('console_pass.log')
	assert (out / 'coverage' / 'suites' / 'gcov-console.log').read_text() == ''.join(dump)
	rel = f'{bdir.as_posix().lstrip("/")}/fs/ufs/inode.gcda'
	assert seen == {'suites': [rel], 'boot': [rel]}


def test_run_arch_coverage_without_counters_is_named(fake, monkeypatch, tmp_path):
	"""A guest that never reached /init: the arch keeps its verdict, its
	coverage is an error saying so (and run exits 1)."""
	from bklkunit.coverage import gcovinit
	fake.scenario('x86_64', console='console_pass.log')
	(fake.repo / 'kunit' / 'coverage').mkdir()
	(fake.repo / 'kunit' / 'coverage' / 'gcov.config').write_text('CONFIG_GCOV_KERNEL=y\n')
	monkeypatch.setattr(gcovinit, 'prepare', lambda ktree, arch, b: gcovinit.Initramfs(
		tmp_path / 'i.cpio', tmp_path / 'bkl_coverage_x86_64.py'))
	r, out = fake.run_arch('x86_64', '--coverage')
	assert r.status == 'PASS'
	assert 'printed no counters' in r.coverage['error']
	assert len(fake.calls('exec', None)) == 1      # no second boot for nothing
