# SPDX-License-Identifier: GPL-2.0
"""profiles: --profile, its fragments, its build directory, and the arches
that cannot have it (SKIPPED_PROFILE)."""

import json
import xml.etree.ElementTree as ET

import pytest

from bklkunit import cli
from bklkunit.base import paths
from bklkunit.compare import baseline
from bklkunit.results import export
from bklkunit.run import plan, profiles, runner
from test_report import make_rdir
from test_run import fake, main_env  # noqa: F401  (fixtures)

REAL_PROFILES = paths.KUNIT_DIR / 'profiles'


@pytest.fixture
def with_profiles(main_env):
	for name in profiles.PROFILES:
		if name != profiles.DEFAULT:
			(main_env.repo / 'kunit' / 'profiles' / f'{name}.config').write_text(
				f'# {name}\nCONFIG_{name.upper()}=y\n')
	return main_env


def summary(f):
	return json.loads((f.results / 'summary.json').read_text())


# ---------------------------------------------------------------- the table


def test_every_profile_has_a_fragment_in_the_repository():
	for name in profiles.PROFILES:
		assert (REAL_PROFILES / f'{name}.config').is_file(), name
	text = {n: (REAL_PROFILES / f'{n}.config').read_text() for n in profiles.PROFILES}
	for opt in ('CONFIG_PROVE_LOCKING=y', 'CONFIG_DEBUG_LIST=y', 'CONFIG_DEBUG_ATOMIC_SLEEP=y',
		    'CONFIG_DEBUG_MUTEXES=y'):
		assert opt in text['default']
	assert 'CONFIG_KASAN=y' in text['kasan'] and 'CONFIG_KASAN_GENERIC=y' in text['kasan']
	assert 'CONFIG_KCSAN=y' in text['kcsan'] and 'CONFIG_EXPERT=y' in text['kcsan']
	assert 'CONFIG_KASAN' not in text['kcsan']            # KCSAN depends on !KASAN
	for opt in ('CONFIG_FAULT_INJECTION=y', 'CONFIG_FAILSLAB=y', 'CONFIG_FAIL_PAGE_ALLOC=y',
		    'CONFIG_FAULT_INJECTION_DEBUG_FS=y', 'CONFIG_DEBUG_FS=y', 'CONFIG_DEBUG_KMEMLEAK=y'):
		assert opt in text['faults']


def test_which_arches_each_profile_supports():
	table = {n: [a for a in paths.QEMU_ARCHES if p.supports(a)]
		 for n, p in profiles.PROFILES.items()}
	assert table == {'default': ['x86_64', 'i386', 'arm', 'arm64', 's390x', 'powerpc64',
				     'riscv64', 'm68k'],
			 'kasan': ['x86_64', 'arm', 'arm64', 's390x', 'powerpc64', 'riscv64'],
			 'kcsan': ['x86_64', 'arm64', 's390x', 'powerpc64'],
			 'faults': ['x86_64', 'i386', 'arm', 'arm64', 's390x', 'powerpc64', 'riscv64']}
	# Every arch x profile that cannot exist says why, naming the Kconfig.
	for p in profiles.PROFILES.values():
		for arch, why in p.unsupported.items():
			assert arch in paths.ARCHES and why.startswith('no ') and 'Kconfig' in why, \
				(p.name, arch)


def test_the_reasons_match_the_kernel_kconfig(kernel_tree):
	"""What profiles.py says about each arch, checked against the tree."""
	def kconfig(arch):
		return (kernel_tree / 'arch' / arch / 'Kconfig').read_text()
	import re
	assert re.search(r'select HAVE_ARCH_KASAN\s+if X86_64\n', kconfig('x86'))
	assert re.search(r'select HAVE_ARCH_KCSAN\s+if X86_64\n', kconfig('x86'))
	assert re.search(r'select HAVE_ARCH_KASAN if MMU && !XIP_KERNEL\n', kconfig('arm'))
	assert 'HAVE_ARCH_KCSAN' not in kconfig('arm')
	assert re.search(r'select HAVE_ARCH_KASAN\n', kconfig('arm64'))
	assert re.search(r'select HAVE_ARCH_KCSAN if EXPERT\n', kconfig('arm64'))
	assert 'depends on DEBUG_KERNEL && !KASAN' in (kernel_tree / 'lib' / 'Kconfig.kcsan').read_text()
	for a in ('x86', 'arm64'):
		assert 'select HAVE_DEBUG_KMEMLEAK' in kconfig(a)
	assert 'select HAVE_DEBUG_KMEMLEAK if !XIP_KERNEL' in kconfig('arm')
	# The arches of issue #31.
	assert re.search(r'select HAVE_ARCH_KASAN\n', kconfig('s390'))
	assert re.search(r'select HAVE_ARCH_KCSAN\n', kconfig('s390'))
	assert re.search(r'select HAVE_ARCH_KASAN if MMU && 64BIT\n', kconfig('riscv'))
	assert 'HAVE_ARCH_KCSAN' not in kconfig('riscv')
	assert re.search(r'select HAVE_ARCH_KASAN\s+if PPC_RADIX_MMU\n', kconfig('powerpc'))
	assert re.search(r'select HAVE_ARCH_KCSAN\n', kconfig('powerpc'))
	kasan_ppc = (kernel_tree / 'arch/powerpc/mm/kasan/init_book3s_64.c').read_text()
	assert 'KASAN not enabled as it requires radix!' in kasan_ppc
	assert "'-cpu', 'power8'" in (kernel_tree / 'tools/testing/kunit/qemu_configs/powerpc.py').read_text()
	for a in ('s390', 'riscv', 'powerpc'):
		assert re.search(r'select HAVE_DEBUG_KMEMLEAK\n', kconfig(a)), a
	for sym in ('HAVE_ARCH_KASAN', 'HAVE_ARCH_KCSAN', 'HAVE_DEBUG_KMEMLEAK', 'LOCKDEP_SUPPORT'):
		assert sym not in kconfig('m68k'), sym


def test_build_key_keeps_the_default_directory():
	assert profiles.build_key('debian', 'default') == 'debian'
	assert profiles.build_key('debian', 'kasan') == 'debian-kasan'
	assert profiles.build_key('tree-0123456789', 'kcsan') == 'tree-0123456789-kcsan'


def test_exec_options():
	assert profiles.exec_options('default', []) == []
	assert profiles.exec_options('default', ['-m 1G']) == ['--qemu_args=-m 1G']
	assert profiles.exec_options('kcsan', ['-m 1G']) == ['--qemu_args=-smp 2',
							      '--qemu_args=-m 1G']
	assert profiles.exec_options('kasan', []) == [
		'--kernel_args=kasan_multi_shot', '--kernel_args=rcupdate.rcu_cpu_stall_timeout=300']
	assert profiles.exec_options('kasan', [], ('printk.time=1',))[-1] == \
		'--kernel_args=printk.time=1'
	# powerpc64's KASAN needs the radix MMU: a POWER9, after kunit_tool's
	# own -cpu power8 (QEMU takes the last), before the user's arguments.
	assert profiles.exec_options('kasan', ['-m 1G'], arch='powerpc64')[:2] == [
		'--qemu_args=-cpu power9', '--qemu_args=-m 1G']
	assert profiles.exec_options('kasan', [], arch='s390x') == \
		profiles.exec_options('kasan', [])
	assert profiles.exec_options('default', [], arch='powerpc64') == []


def test_parser_knows_the_profiles():
	assert cli.build_parser().parse_args(['run']).profile == 'default'
	assert cli.build_parser().parse_args(['run', '--profile', 'kcsan']).profile == 'kcsan'
	with pytest.raises(SystemExit):
		cli.build_parser().parse_args(['run', '--profile', 'kmsan'])


def test_kunitconfigs_with_a_profile(fake):
	(fake.repo / 'kunit/profiles/kasan.config').write_text('CONFIG_KASAN=y\n')
	assert plan.kunitconfigs('x86_64', [], 'kasan') == [
		fake.repo / '.kunitconfig', fake.repo / 'kunit/profiles/default.config',
		fake.repo / 'kunit/profiles/kasan.config', fake.repo / 'kunit/arch/x86_64.config']


# ------------------------------------------------------------------- a run


def test_default_profile_is_what_it_was(main_env):
	f = main_env
	f.scenario('x86_64', console='console_pass.log')
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64', '--no-ccache'))) == 0
	[b] = f.calls('build')
	bdir = f.cache / 'build' / 'debian' / 'x86_64'
	assert f'--build_dir={bdir}' in b['argv']
	assert len([a for a in b['argv'] if a.startswith('--kunitconfig=')]) == 3
	[e] = f.calls('exec')
	# No kernel argument of the profile's; printk timestamps on every boot,
	# and no PS/2 ports on a PC guest (plan.PC_GUEST_KERNEL_ARGS).
	assert [a for a in e['argv'] if a.startswith('--kernel_args')] == [
		'--kernel_args=printk.time=1', '--kernel_args=i8042.nokbd',
		'--kernel_args=i8042.noaux']
	# The profile adds no QEMU arguments; the run's default two vCPUs are there.
	assert [a for a in e['argv'] if a.startswith('--qemu_args')] == ['--qemu_args=-smp 2']
	s = summary(f)
	assert s['profile'] == 'default' and s['arches'][0]['profile'] == 'default'


def test_kasan_profile_skips_i386(with_profiles, capsys):
	f = with_profiles
	f.scenario('x86_64', console='console_pass.log')
	f.scenario('i386', console='console_pass.log')
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'x86_64,i386', '--no-ccache', '--profile', 'kasan')))
	assert rc == 0                               # a skipped arch is not a failure
	assert f.calls(arch='i386') == []            # ... nor is it built or booted
	[b] = f.calls('build', 'x86_64')
	assert f'--build_dir={f.cache / "build" / "debian-kasan" / "x86_64"}' in b['argv']
	assert f'--kunitconfig={f.repo / "kunit/profiles/kasan.config"}' in b['argv']
	[e] = f.calls('exec', 'x86_64')
	assert [a for a in e['argv'] if a.startswith('--kernel_args')] == [
		'--kernel_args=kasan_multi_shot', '--kernel_args=rcupdate.rcu_cpu_stall_timeout=300',
		'--kernel_args=printk.time=1', '--kernel_args=i8042.nokbd', '--kernel_args=i8042.noaux']
	s = summary(f)
	assert s['profile'] == 'kasan'
	x86, i386 = s['arches']
	assert (x86['status'], x86['profile']) == ('PASS', 'kasan')
	assert i386['status'] == 'SKIPPED_PROFILE'
	assert 'no KASAN on 32-bit x86' in i386['reason']
	v = json.loads((f.results / 'i386' / 'verdict.json').read_text())
	assert v['status'] == 'SKIPPED_PROFILE' and v['profile'] == 'kasan'
	out = capsys.readouterr().out
	assert '1 arch(es) passed, 0 failed; profile kasan not supported (SKIPPED_PROFILE, ' \
	       'not counted): i386' in out


def test_kcsan_profile_two_cpus_and_no_arm(with_profiles):
	f = with_profiles
	f.scenario('arm64', console='console_fail.log', exec_rc=1)
	rc = runner.main(plan.RunRequest.from_args(f.args('--arch', 'arm,arm64', '--no-ccache', '--profile', 'kcsan',
			     '--qemu-args', '-m 512')))
	assert rc == 1                                # arm64 failed; arm does not hide it
	[e] = f.calls('exec', 'arm64')
	qemu = [a for a in e['argv'] if a.startswith('--qemu_args')]
	assert qemu == ['--qemu_args=-smp 2', '--qemu_args=-m 512']
	assert (f.cache / 'build' / 'debian-kcsan' / 'arm64').is_dir()
	assert [a['status'] for a in summary(f)['arches']] == ['SKIPPED_PROFILE', 'FAIL']


def test_every_arch_skipped_is_exit_0(with_profiles):
	f = with_profiles
	assert runner.main(plan.RunRequest.from_args(f.args('--arch', 'i386', '--no-ccache', '--profile', 'kcsan'))) == 0
	assert f.calls() == []


def test_a_missing_fragment_is_a_user_error(main_env):
	from bklkunit.base.errors import UserError
	with pytest.raises(UserError, match='kasan.config'):
		runner.main(plan.RunRequest.from_args(main_env.args('--arch', 'x86_64', '--profile', 'kasan')))


# --------------------------------------------- reports and baselines of a profile


@pytest.fixture
def skipped_rdir(tmp_path):
	rdir = make_rdir(tmp_path, {
		'x86_64': ('PASS', '', 'console_pass.log', 'build_ok.log'),
		'i386': ('SKIPPED_PROFILE', 'profile kasan not run: no KASAN on 32-bit x86', None,
			 None)}, profile='kasan')
	# runner.main writes no build.log and no console for a skipped arch.
	(rdir / 'i386' / 'build.log').unlink()
	return rdir


def test_reports_of_a_profile_with_a_skipped_arch(skipped_rdir, parser_tree):
	out = export.write_reports(skipped_rdir, parser_tree, probe=False)
	doc = json.loads(out['kcidb.json'].read_text())
	assert [b['architecture'] for b in doc['builds']] == ['x86_64']
	assert doc['builds'][0]['config_name'] == 'kunit-kasan'
	root = ET.parse(out['i386/junit.xml']).getroot()
	[tc] = root.iter('testcase')
	assert tc.get('name') == 'profile'
	assert tc.find('skipped').get('message') == 'profile kasan not run: no KASAN on 32-bit x86'
	assert root.get('failures') == '0' and root.get('errors') == '0'
	assert 'SKIPPED_PROFILE' in out['index.html'].read_text()


def test_baselines_leave_a_skipped_arch_out(skipped_rdir, parser_tree):
	_, results = baseline.load_results(skipped_rdir, parser_tree, probe=False)
	assert [a.arch for a in results] == ['x86_64']
	assert baseline.divergence(results)['no_results'] == {}


def test_a_profile_has_its_own_baselines(fake):
	assert baseline.default_dir() == fake.repo / 'kunit' / 'baselines'
	assert baseline.default_dir('default') == fake.repo / 'kunit' / 'baselines'
	assert baseline.default_dir('kasan') == fake.repo / 'kunit' / 'baselines' / 'kasan'


# ------------------------------------------------- an arch's own default profile


def _options(path):
	return {l.strip() for l in path.read_text().splitlines() if l.startswith('CONFIG_')}


def test_only_m68k_has_a_default_profile_of_its_own():
	for arch in paths.QEMU_ARCHES:
		want = 'default-m68k.config' if arch == 'm68k' else 'default.config'
		assert profiles.default_fragment(arch) == REAL_PROFILES / want, arch
	assert sorted(p.name for p in REAL_PROFILES.glob('default-*.config')) == ['default-m68k.config']


def test_m68k_drops_only_what_it_cannot_have(kernel_tree):
	"""default-m68k.config is default.config less PROVE_LOCKING and
	DEBUG_ATOMIC_SLEEP, and the tree says why each cannot exist there."""
	dropped = _options(REAL_PROFILES / 'default.config') - _options(REAL_PROFILES / 'default-m68k.config')
	assert dropped == {'CONFIG_PROVE_LOCKING=y', 'CONFIG_DEBUG_ATOMIC_SLEEP=y'}
	assert _options(REAL_PROFILES / 'default-m68k.config') < _options(REAL_PROFILES / 'default.config')
	m68k = (kernel_tree / 'arch/m68k/Kconfig').read_text()
	assert 'select ARCH_NO_PREEMPT if !COLDFIRE' in m68k
	for sym in ('LOCKDEP_SUPPORT', 'TRACE_IRQFLAGS_SUPPORT', 'STACKTRACE_SUPPORT'):
		assert sym not in m68k
	debug = (kernel_tree / 'lib/Kconfig.debug').read_text()
	assert 'depends on TRACE_IRQFLAGS_SUPPORT && STACKTRACE_SUPPORT && LOCKDEP_SUPPORT' in debug
	assert 'depends on !ARCH_NO_PREEMPT' in debug


def test_kunitconfigs_use_the_arch_default_profile():
	from bklkunit.run import plan
	assert REAL_PROFILES / 'default-m68k.config' in plan.kunitconfigs('m68k', [], 'faults')
	assert REAL_PROFILES / 'default.config' not in plan.kunitconfigs('m68k', [])
	frags = plan.kunitconfigs('s390x', [], 'kasan')
	assert frags[1:3] == [REAL_PROFILES / 'default.config', REAL_PROFILES / 'kasan.config']
	assert frags[-1] == paths.KUNIT_DIR / 'arch' / 's390x.config'
