# SPDX-License-Identifier: GPL-2.0
"""seriesboot: a patch's build booted through runner.boot with a stub kunit.py
and recorded consoles (tools/tests/data), and what each console means for
the patch: pass, no suite yet, or a FAIL naming the patch."""

import json

import pytest

from bklkunit.results import rundir
from bklkunit.results.model import ArchResult, ArchStatus
from bklkunit.series import bootcheck
from bklkunit.series.bootcheck import BootStatus
from bklkunit.series.checkplan import BootPlan
from test_run import fake  # noqa: F401  (fixture)

PATCH = '0043-appletalk-add-KUnit-tests-for-the-interface-and-rout.patch'
PLAN = BootPlan(PATCH, ('touches net/appletalk/tests/ioctl_kunit.c',), ('appletalk',),
		'appletalk_*', skip_slow=True)
HEAD = BootPlan('0053-x.patch', ('series head',), ('appletalk',), '', skip_slow=False)
# The series' suites up to some patch, as checkplan.test_symbols gives them.
SYMBOLS = {'ATALK_DDP_KUNIT_TEST': 'net/appletalk/Kconfig',
	   'UFS_MAP_KUNIT_TEST': 'fs/ufs/Kconfig'}


@pytest.fixture
def booting(fake, monkeypatch):
	"""fake (test_run) plus the faults fragment and a built x86_64 directory."""
	(fake.repo / 'kunit' / 'profiles' / 'faults.config').write_text('CONFIG_FAULT_INJECTION=y\n')
	monkeypatch.setattr(rundir, 'probe_tools', lambda arch: {})
	fake.bdir = fake.cache / 'series' / 'build' / 'debian' / 'x86_64'
	fake.bdir.mkdir(parents=True)
	fake.config = lambda text: (fake.bdir / '.config').write_text(text)
	fake.config('CONFIG_SMP=y\n')
	return fake


def boot(f, plan=PLAN, **scenario):
	f.scenario('x86_64', **scenario)
	return bootcheck.boot_patch(f.tree, f.bdir, f.cache / 'series' / 'boots' / plan.patch[:-6],
				     f.cache, plan, SYMBOLS, timeout=600, use_ccache=False)


def test_a_passing_boot(booting):
	r = boot(booting, console='console_pass.log')
	assert r.status == BootStatus.PASS and r.ok and r.reason == ''
	assert (r.passed, r.failed) == (10, 0)
	assert 'x86_64, \'appletalk_*\' (slow cases skipped): 10 passed, 0 failed' in r.detail()
	call = booting.calls('exec')[0]['argv']
	assert 'appletalk_*' in call and '--filter=speed>slow' in call
	assert '--filter_action=skip' in call and '--timeout=600' in call
	assert '--kernel_args=printk.time=1' in call and '--qemu_args=-smp 2' in call
	out = booting.cache / 'series' / 'boots' / PATCH[:-6]
	assert (out / 'console.log').is_file() and (out / 'ktap.log').is_file()


def test_the_head_runs_every_suite_and_the_slow_cases(booting):
	boot(booting, plan=HEAD, console='console_pass.log')
	call = booting.calls('exec')[0]['argv']
	assert not [a for a in call if a.startswith('--filter')]
	assert not [a for a in call if not a.startswith('--')]       # no glob


def test_slow_cases_skipped_are_counted_as_skipped(booting):
	"""A real faults-profile boot: autofs_* with speed>slow skipped."""
	r = boot(booting, console='series_boot_autofs_slow_skipped.log')
	assert r.status == BootStatus.PASS
	assert r.skipped == 1 and r.failed == 0 and r.passed > 20     # autofs_faults_mount


def test_a_failed_case_fails_the_boot_naming_the_patch(booting):
	r = boot(booting, console='console_fail.log', exec_rc=1)
	assert r.status == BootStatus.FAIL and not r.ok
	assert r.reason.startswith(f'{PATCH}: 1 case(s) failed: autofs_protocol.')
	assert '\n' not in r.reason and r.failed == 1


def test_a_crash_fails_the_boot(booting):
	r = boot(booting, console='console_panic.log', exec_rc=1)
	assert r.status == BootStatus.FAIL
	assert r.reason.startswith(f'{PATCH}: CRASH: ') and 'NULL pointer' in r.reason


def test_a_hang_fails_the_boot(booting):
	r = boot(booting, console='console_timeout.log', exec_out='kunit_timeout.log', exec_rc=1)
	assert r.status == BootStatus.FAIL
	assert r.reason.startswith(f'{PATCH}: TIMEOUT: guest killed after 300 s')


def test_no_console_at_all_fails_the_boot(booting):
	r = boot(booting, exec_out='qemu-system-x86_64: cannot boot\n', exec_rc=1)
	assert r.status == BootStatus.FAIL and 'no KTAP output' in r.reason


def test_no_suite_yet_passes_with_a_detail(booting):
	"""A real boot of a fix's build (no suite of the series yet): 1..0."""
	booting.config('CONFIG_SMP=y\nCONFIG_UFS_MAP_KUNIT_TEST=y\n')   # another subsystem's
	r = boot(booting, console='series_boot_no_suite.log', exec_rc=1)
	assert r.status == BootStatus.NO_SUITE and r.ok
	assert r.reason.startswith("no suite is present yet: the build enables none of the "
				   "series' suites matching 'appletalk_*'")


def test_a_filter_that_runs_no_suite_of_a_present_subsystem_fails(booting):
	booting.config('CONFIG_SMP=y\nCONFIG_ATALK_DDP_KUNIT_TEST=y\n')
	r = boot(booting, console='series_boot_no_suite.log', exec_rc=1)
	assert r.status == BootStatus.FAIL
	assert r.reason == (f'{PATCH}: the filter ran no suite, but the build enables '
			    'CONFIG_ATALK_DDP_KUNIT_TEST: is a suite not named after its subsystem?')


def test_a_uniprocessor_build_fails_the_boot(booting):
	booting.config('# CONFIG_SMP is not set\n')
	r = boot(booting, console='console_pass.log')
	assert r.status == BootStatus.FAIL and 'CONFIG_FAILED' in r.reason


def test_verdict_of_a_kernel_report_outside_any_case():
	res = ArchResult('x86_64', status=ArchStatus.NO_TESTS,
			 reports=[{'kind': 'lockdep', 'title': 'WARNING: possible circular locking'}])
	r = bootcheck.verdict(PLAN, res, [])
	assert r.status == BootStatus.FAIL
	assert r.reason == f'{PATCH}: a kernel report outside any case: WARNING: possible ' \
		'circular locking'


def test_verdict_of_a_pass_keeps_its_note():
	note = 'kunit.py exec exited 1: kunit_parser read 1 line(s) of other kernel output'
	r = bootcheck.verdict(PLAN, ArchResult('x86_64', status=ArchStatus.PASS, reason=note), [])
	assert r.status == BootStatus.PASS and r.reason == f'{PATCH}: {note}'
	r = bootcheck.verdict(PLAN, ArchResult('x86_64', status=ArchStatus.PASS), [])
	assert r.status == BootStatus.PASS and r.reason == ''


def test_present_reads_the_config_by_subsystem():
	cfg = 'CONFIG_ATALK_DDP_KUNIT_TEST=y\nCONFIG_UFS_MAP_KUNIT_TEST=m\n# CONFIG_X is not set\n'
	assert bootcheck.present(cfg, SYMBOLS, PLAN) == ['ATALK_DDP_KUNIT_TEST']
	assert bootcheck.present(cfg, SYMBOLS, HEAD) == ['ATALK_DDP_KUNIT_TEST',
							   'UFS_MAP_KUNIT_TEST']
	assert bootcheck.present('# CONFIG_ATALK_DDP_KUNIT_TEST is not set\n', SYMBOLS, PLAN) == []


def test_records_and_summary(tmp_path):
	recs = [bootcheck.BootRecord('0001-a.patch', BootStatus.NO_SUITE, 'x', seconds=3.0),
		bootcheck.BootRecord('0043-b.patch', BootStatus.PASS, 'y', passed=60, skipped=4,
				      seconds=41.5)]
	bootcheck.write_records(tmp_path / 'boots.json', recs)
	back = json.loads((tmp_path / 'boots.json').read_text())
	assert [b['patch'] for b in back] == ['0001-a.patch', '0043-b.patch']
	assert back[1]['passed'] == 60 and back[0]['status'] == 'NO_SUITE'
	assert bootcheck.summary(recs) == ('boots: 2 patch(es), 60 cases passed, 0 failed, '
					    '4 skipped; 1 with no suite yet; 44 s of kunit.py exec')
	assert bootcheck.summary([]) is None


def _qemu_config(tree, arch, text):
	d = tree / 'tools' / 'testing' / 'kunit' / 'qemu_configs'
	d.mkdir(parents=True, exist_ok=True)
	(d / f'{arch}.py').write_text(text)


def test_stage_copies_what_kunit_exec_boots(tmp_path):
	"""The image the tree's qemu_configs/<arch>.py names, .config and
	.kunitconfig; an older staged directory is emptied first."""
	tree = tmp_path / 'linux'
	_qemu_config(tree, 'x86_64', "QEMU_ARCH = QemuArchParams(linux_arch='x86_64',\n"
			   "\t\t\t   kernel_path='arch/x86/boot/bzImage',\n)\n")
	bdir = tmp_path / 'build'
	(bdir / 'arch/x86/boot').mkdir(parents=True)
	(bdir / 'arch/x86/boot/bzImage').write_bytes(b'kernel')
	(bdir / '.config').write_text('CONFIG_SMP=y\n')
	(bdir / '.kunitconfig').write_text('CONFIG_KUNIT=y\n')
	(bdir / 'vmlinux').write_bytes(b'not copied')
	dest = tmp_path / 'boots' / 'p' / 'kernel'
	dest.mkdir(parents=True)
	(dest / 'test.log').write_text('an older boot')
	assert bootcheck.stage(tree, bdir, dest) == dest
	assert sorted(str(p.relative_to(dest)) for p in dest.rglob('*') if p.is_file()) == [
		'.config', '.kunitconfig', 'arch/x86/boot/bzImage']
	assert (dest / 'arch/x86/boot/bzImage').read_bytes() == b'kernel'


def test_stage_errors_are_one_line(tmp_path):
	from bklkunit.base.errors import UserError
	tree = tmp_path / 'linux'
	with pytest.raises(UserError, match='cannot read the QEMU configuration of x86_64'):
		bootcheck.stage(tree, tmp_path, tmp_path / 'd')
	_qemu_config(tree, 'x86_64', 'QEMU_ARCH = None\n')
	with pytest.raises(UserError, match='no kernel_path=... for x86_64'):
		bootcheck.stage(tree, tmp_path, tmp_path / 'd')
	_qemu_config(tree, 'x86_64', "kernel_path = 'arch/x86/boot/bzImage'\n")
	with pytest.raises(UserError, match='the build left no arch/x86/boot/bzImage to boot'):
		bootcheck.stage(tree, tmp_path / 'build', tmp_path / 'd')


def test_kernel_image_of_each_arch_in_the_prepared_tree(kernel_tree):
	"""The tree's own qemu_configs name each arch's image."""
	assert bootcheck.kernel_image(kernel_tree, 'x86_64') == 'arch/x86/boot/bzImage'
	assert bootcheck.kernel_image(kernel_tree, 'i386') == 'arch/x86/boot/bzImage'
	assert bootcheck.kernel_image(kernel_tree, 'arm') == 'arch/arm/boot/zImage'
	assert bootcheck.kernel_image(kernel_tree, 'arm64') == 'arch/arm64/boot/Image.gz'


def test_pc_guests_boot_without_ps2_ports():
	"""x86_64 and i386 guests (run, ab, the series' boots) get no PS/2
	keyboard or mouse: their asynchronous probe printed between a nested
	KTAP header's two lines makes the 6.12 parser report a passing suite
	crashed.  The arm guests have no i8042."""
	from bklkunit.run import plan
	for arch in ('x86_64', 'i386'):
		args = plan.RunOptions().exec_options(arch)
		assert '--kernel_args=i8042.nokbd' in args and '--kernel_args=i8042.noaux' in args
		assert '--kernel_args=printk.time=1' in args
	for arch in ('arm', 'arm64'):
		args = plan.RunOptions().exec_options(arch)
		assert not [a for a in args if 'i8042' in a] and '--kernel_args=printk.time=1' in args
