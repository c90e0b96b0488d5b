# SPDX-License-Identifier: GPL-2.0
"""`run --coverage` (issue #30, docs/coverage.md): the GCOV_PROFILE
expression under a real make, the counters read back from a recorded
console, the initramfs, lcov tracefiles subtracted and counted, the page,
KCIDB and summary entries, and compare's drop against a baseline.  No
kernel is built and no guest booted: the recorded data under
tools/tests/data/coverage/ came from a real x86_64 guest."""

import base64
import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bklkunit.compare import covbaseline
from bklkunit.coverage import gcovdump, gcovinit, lcovinfo, measure, scope, table, umlgcov
from bklkunit.results.export import html, kcidb
from bklkunit.results.model import ArchResult, ArchStatus
from bklkunit.run import plan

DATA = Path(__file__).resolve().parent / 'data' / 'coverage'


# ------------------------------------------------------- what is profiled


MAKE_TOP = '''
all:
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=fs/ufs
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=fs/ufs/tests
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=net/appletalk
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=lib/kunit
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=fs/ext4
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=fs/ufsx
\t@$(MAKE) -s -f $(CURDIR)/sub.mk obj=arch/x86/boot
'''
# As a kbuild Makefile that opts out, and Makefile.lib's use of it.
MAKE_SUB = '''
GCOV_PROFILE := n
GCOV_PROFILE_skip.o := n
all:
\t@echo $(obj) $(GCOV_PROFILE) [$(if $(patsubst n%,,$(GCOV_PROFILE_skip.o)$(GCOV_PROFILE)),gcov,plain)]
'''


@pytest.mark.skipif(not shutil.which('make'), reason='needs make')
def test_gcov_profile_expression_under_make(tmp_path):
	"""The command-line GCOV_PROFILE reaches every sub-make as written, wins
	over a Makefile's own GCOV_PROFILE := n, and is y exactly in the
	profiled directories and below; a file's own := n still wins."""
	(tmp_path / 'Makefile').write_text(MAKE_TOP)
	(tmp_path / 'sub.mk').write_text(MAKE_SUB)
	out = subprocess.run(['make', '-s', '-C', str(tmp_path), scope.make_option()],
			     capture_output=True, text=True, check=True).stdout.split('\n')
	assert out[:7] == ['fs/ufs y [plain]', 'fs/ufs/tests y [plain]', 'net/appletalk y [plain]',
			   'lib/kunit y [plain]', 'fs/ext4 n [plain]', 'fs/ufsx n [plain]',
			   'arch/x86/boot n [plain]']


def test_gcov_profile_expression_compiles_a_file(tmp_path):
	"""Without the per-file opt-out, the profiled directory's object gets the
	flags and another's does not (Makefile.lib's test as it is)."""
	(tmp_path / 'Makefile').write_text(MAKE_TOP.replace('sub.mk', 'sub2.mk'))
	(tmp_path / 'sub2.mk').write_text(
		'all:\n\t@echo $(obj) [$(if $(patsubst n%,,$(GCOV_PROFILE_x.o)$(GCOV_PROFILE)),'
		'-fprofile-arcs,)]\n')
	out = subprocess.run(['make', '-s', '-C', str(tmp_path), scope.make_option()],
			     capture_output=True, text=True, check=True).stdout.split('\n')
	assert out[0] == 'fs/ufs [-fprofile-arcs]'
	assert out[4] == 'fs/ext4 []'


def test_build_and_exec_commands(tmp_path):
	o = plan.RunOptions(coverage=True)
	p = plan.ArchPlan(tmp_path / 'linux', 'x86_64', tmp_path / 'b', tmp_path / 'out', o,
			  plan.kunitconfigs('x86_64', (), with_coverage=True))
	build = p.build_command()
	assert f'--make_options={scope.make_option()}' in build
	assert f'--kunitconfig={scope.fragment("x86_64")}' in build
	assert '--arch=x86_64' in build
	p.qemu_config = tmp_path / 'b' / 'cfg.py'
	ex = p.exec_command()
	assert f'--qemu_config={p.qemu_config}' in ex and '--arch=x86_64' not in ex
	# UML: CONFIG_GCOV, no make variable, no qemu_config.
	u = plan.ArchPlan(tmp_path / 'linux', 'um', tmp_path / 'b', tmp_path / 'out', o,
			  plan.kunitconfigs('um', (), with_coverage=True))
	assert not any('GCOV_PROFILE' in a for a in u.build_command())
	assert '--arch=um' in u.exec_command()
	assert scope.fragment('um').name == 'uml.config'
	assert 'CONFIG_GCOV=y' in scope.fragment('um').read_text().splitlines()


def test_measured_files():
	kunit = ['lib/kunit/watch.c', 'lib/kunit/thread.c']
	assert scope.measured('fs/ufs/inode.c', kunit)
	assert scope.measured('net/appletalk/ddp.c', kunit)
	assert scope.measured('lib/kunit/watch.c', kunit)
	assert not scope.measured('lib/kunit/test.c', kunit)         # KUnit itself
	assert not scope.measured('lib/kunit/watch-test.c', kunit)   # a suite
	assert not scope.measured('fs/ufs/tests/image_kunit.c', kunit)
	assert not scope.measured('fs/ext4/inode.c', kunit)


# ------------------------------------------------------- the console dump


def dump_lines(files, cut=None):
	"""What gcov-init.c prints for files {path: bytes}."""
	out = ['BKL-GCOV BEGIN 1']
	for path, data in files.items():
		out.append(f'BKL-GCOV FILE {path} {len(data)} {gcovdump.fnv1a32(data):08x}')
		b = base64.b64encode(data).decode()
		out += [f'BKL-GCOV D {b[i:i + 76]}' for i in range(0, len(b), 76)]
		out.append('BKL-GCOV END')
	out.append(f'BKL-GCOV DONE {len(files)} 0')
	return [l + '\n' for l in out[:cut]]


def test_recorded_console_dump(tmp_path):
	"""A console a real x86_64 guest printed: KTAP, then the dump."""
	console = (DATA / 'console_x86_64.log').read_text().splitlines(keepends=True)
	d = gcovdump.read(console)
	assert d.complete, d.problems
	assert d.files and all(p.endswith('.gcda') for p in d.files)
	assert any(p.endswith('/fs/autofs/init.gcda') for p in d.files)
	assert not any(gcovdump.MARK in l for l in d.console)
	assert any('ok 20 appletalk_ddp' in l for l in d.console)
	written = gcovdump.write_files(d, tmp_path)
	assert sorted(p.read_bytes() for p in written) == sorted(d.files.values())
	# gcda files start with the magic 'gcda' (little-endian 'adcg').
	assert all(v[:4] == b'adcg' for v in d.files.values())


def test_dump_round_trip_and_printk_between():
	files = {'/b/fs/ufs/inode.gcda': bytes(range(256)) * 3, '/b/fs/ufs/dir.gcda': b'x'}
	lines = dump_lines(files)
	lines.insert(3, '[    5.1] random: crng init done\n')
	lines[5] = '[    5.2] ' + lines[5]        # a prefix before the marker
	d = gcovdump.read(['KTAP version 1\n'] + lines)
	assert d.complete and d.files == files
	assert d.console == ['KTAP version 1\n', '[    5.1] random: crng init done\n', '[    5.2] \n']


@pytest.mark.parametrize('damage, problem', [
	(lambda l: l[:-2], 'no DONE line'),                                    # guest stopped
	(lambda l: l[:3] + l[4:], 'bytes read back'),                          # a line lost
	(lambda l: [x.replace('AAEC', 'AAED') for x in l], 'checksum'),        # a byte changed
	(lambda l: l[:-1], 'no DONE'),
	(lambda l: l + ['BKL-GCOV ERROR /dbg/gcov/x 13\n'], 'could not read'),
])
def test_damaged_dump_is_named(damage, problem):
	files = {'/b/fs/ufs/inode.gcda': bytes(range(256)) * 3}
	d = gcovdump.read(damage(dump_lines(files)))
	assert not d.complete
	assert any(problem in p for p in d.problems), d.problems


def test_dump_path_cannot_leave_the_directory(tmp_path):
	d = gcovdump.Dump(files={'/../../etc/x.gcda': b'x'})
	with pytest.raises(ValueError):
		gcovdump.write_files(d, tmp_path)


# ------------------------------------------------------- the initramfs


def read_newc(data: bytes):
	out, off = [], 0
	while True:
		assert data[off:off + 6] == b'070701'
		f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
		namesize, filesize = f[11], f[6]
		name = data[off + 110: off + 110 + namesize - 1].decode()
		off = (off + 110 + namesize + 3) & ~3
		body = data[off: off + filesize]
		off = (off + filesize + 3) & ~3
		if name == 'TRAILER!!!':
			return out
		out.append((name, f[1], (f[9] << 8) | f[10], body))


def test_initramfs_is_newc_with_console_and_init():
	entries = read_newc(gcovinit.initramfs(b'\x7fELF...'))
	names = {n: (mode, rdev, body) for n, mode, rdev, body in entries}
	assert names['init'][2] == b'\x7fELF...' and names['init'][0] & 0o111
	assert names['dev/console'][0] & 0o170000 == 0o020000 and names['dev/console'][1] == (5 << 8) | 1
	if shutil.which('cpio'):
		proc = subprocess.run(['cpio', '-it', '--quiet'], input=gcovinit.initramfs(b'x'),
				      capture_output=True, check=True)
		assert proc.stdout.decode().split() == ['dev', 'dev/console', 'init']


QEMU_CONFIG_PY = '''from dataclasses import dataclass
from typing import List
@dataclass(frozen=True)
class QemuArchParams:
  linux_arch: str
  kconfig: str
  qemu_arch: str
  kernel_path: str
  kernel_command_line: str
  extra_qemu_params: List[str]
  serial: str = 'stdio'
'''
ARCH_PY = '''from ..qemu_config import QemuArchParams
QEMU_ARCH = QemuArchParams(linux_arch='x86_64', kconfig='', qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage', kernel_command_line='console=ttyS0',
			   extra_qemu_params=['-bios', 'qboot.rom'])
'''


def test_qemu_config_is_the_trees_with_initrd_and_dashes(tmp_path, monkeypatch):
	"""Loaded as kunit_tool loads a --qemu_config (a module of its
	qemu_configs package, wherever the file is)."""
	kt = tmp_path / 'linux' / 'tools' / 'testing' / 'kunit'
	(kt / 'qemu_configs').mkdir(parents=True)
	(kt / '__init__.py').write_text('')
	(kt / 'qemu_configs' / '__init__.py').write_text('')
	(kt / 'qemu_config.py').write_text(QEMU_CONFIG_PY)
	(kt / 'qemu_configs' / 'x86_64.py').write_text(ARCH_PY)
	cfg = tmp_path / 'bkl_coverage_x86_64.py'
	cfg.write_text(gcovinit.qemu_config_text(tmp_path / 'linux', 'x86_64', Path('/c/initramfs.cpio')))
	monkeypatch.syspath_prepend(str(tmp_path / 'linux' / 'tools' / 'testing'))
	spec = importlib.util.spec_from_file_location('kunit.qemu_configs.bkl_coverage_x86_64', cfg)
	mod = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(mod)
	q = mod.QEMU_ARCH
	assert q.kernel_command_line == 'console=ttyS0 --'
	assert q.extra_qemu_params == ['-bios', 'qboot.rom', '-initrd', '/c/initramfs.cpio']
	for m in [m for m in sys.modules if m == 'kunit' or m.startswith('kunit.')]:
		del sys.modules[m]


def test_init_source_is_in_the_repo_and_no_binary():
	src = gcovinit.INIT_SOURCE.read_text()
	assert 'BKL-GCOV BEGIN' in src and 'LINUX_REBOOT_CMD_RESTART' in src
	assert not any(p.suffix in ('', '.o', '.cpio') and p.is_file() and p.name != 'README'
		       for p in gcovinit.INIT_SOURCE.parent.iterdir()), 'a binary in kunit/coverage'


# ------------------------------------------------------- tracefiles


INFO_FULL = '''TN:
SF:/t/fs/ufs/inode.c
FN:10,ufs_init
FN:20,ufs_get
FNDA:1,ufs_init
FNDA:5,ufs_get
FNF:2
FNH:2
BRDA:21,0,0,3
BRDA:21,0,1,2
BRDA:30,0,0,-
BRDA:30,0,1,-
BRF:4
BRH:2
DA:10,1
DA:11,1
DA:20,5
DA:21,5
DA:22,3
DA:30,0
DA:31,0
DA:32,0
LF:8
LH:5
end_of_record
'''
INFO_BOOT = '''TN:
SF:/t/fs/ufs/inode.c
FN:10,ufs_init
FN:20,ufs_get
FNDA:1,ufs_init
FNDA:1,ufs_get
BRDA:21,0,0,1
BRDA:21,0,1,-
DA:10,1
DA:11,1
DA:20,1
DA:21,1
DA:22,1
end_of_record
'''


def test_subtract_leaves_what_the_suites_did():
	full = lcovinfo.parse(INFO_FULL)
	boot = lcovinfo.parse(INFO_BOOT)
	c = full['/t/fs/ufs/inode.c'].counts()
	assert (c.lines_hit, c.lines, c.functions_hit, c.functions, c.branches_hit, c.branches) == \
		(5, 8, 2, 2, 2, 4)
	mine = lcovinfo.subtract(full, boot)['/t/fs/ufs/inode.c']
	c = mine.counts()
	# The init function ran at boot only: not the suites'.
	assert (c.lines_hit, c.lines, c.functions_hit, c.functions, c.branches_hit, c.branches) == \
		(3, 8, 1, 2, 2, 4)
	assert mine.lines[10] == 0 and mine.lines[20] == 4
	assert mine.uncovered_runs() == [(30, 32), (10, 11)]
	assert mine.uncovered_regions() == [(30, 32, 3, 'ufs_get'), (10, 11, 2, 'ufs_init')]
	again = lcovinfo.parse(lcovinfo.dumps([mine]))['/t/fs/ufs/inode.c']
	assert again == mine
	# Lines only the boot ran (the init function) are named, and left out
	# of the second percentage.
	mine.path = 'fs/ufs/inode.c'
	doc = measure.summarize({'fs/ufs/inode.c': mine}, [],
				  {'fs/ufs/inode.c': boot['/t/fs/ufs/inode.c']})
	f = doc['files']['fs/ufs/inode.c']
	assert f['boot_only_lines'] == 2
	assert f['lines']['percent'] == 37.5 and f['lines']['percent_without_boot_only'] == 50.0
	assert f['uncovered'][0] == {'lines': [30, 32], 'count': 3, 'function': 'ufs_get'}
	assert doc['goal']['below'] == ['fs/ufs/inode.c']


def test_subtract_never_goes_below_zero():
	full = lcovinfo.parse(INFO_BOOT)
	boot = lcovinfo.parse(INFO_FULL)
	mine = lcovinfo.subtract(full, boot)['/t/fs/ufs/inode.c']
	assert min(mine.lines.values()) == 0 and mine.counts().lines_hit == 0


def test_recorded_info_summarized():
	"""A tracefile lcov wrote from a real guest's counters, measured as run does."""
	files = lcovinfo.parse((DATA / 'suites_x86_64.info').read_text())
	rel = {}
	for p, f in files.items():
		r = p.split('/linux-6.12.118-1_deb12u1/', 1)[-1]
		f.path = r
		rel[r] = f
	doc = measure.summarize(rel, ['lib/kunit/watch.c', 'lib/kunit/thread.c',
					'lib/kunit/fault.c'])
	assert set(doc['subsystems']) <= {'ufs', 'appletalk', 'autofs', 'kunit'}
	assert doc['files'] and all(scope.subsystem_of(p) for p in doc['files'])
	assert not any('/tests/' in p for p in doc['files'])
	t = doc['total']['lines']
	assert 0 < t['hit'] <= t['total']
	assert t['total'] == sum(f['lines']['total'] for f in doc['files'].values())
	for p in doc['files']:
		assert doc['files'][p]['goal'] == (p in scope.GOAL_FILES)


# ------------------------------------------------------- reports


COV = {'total': {'lines': {'hit': 80, 'total': 100, 'percent': 80.0},
		 'functions': {'hit': 9, 'total': 10, 'percent': 90.0},
		 'branches': {'hit': 30, 'total': 60, 'percent': 50.0}},
       'subsystems': {'ufs': {'lines': {'hit': 80, 'total': 100, 'percent': 80.0},
			      'functions': {'hit': 9, 'total': 10, 'percent': 90.0},
			      'branches': {'hit': 30, 'total': 60, 'percent': 50.0}}},
       'files': {'fs/ufs/inode.c': {'lines': {'hit': 80, 'total': 100, 'percent': 80.0},
				    'functions': {'hit': 9, 'total': 10, 'percent': 90.0},
				    'branches': {'hit': 30, 'total': 60, 'percent': 50.0},
				    'subsystem': 'ufs', 'goal': True}},
       'goal_below': ['fs/ufs/inode.c'], 'html': 'coverage/html/index.html'}


def test_page_has_the_per_file_table_and_links():
	r = ArchResult('x86_64', ArchStatus.PASS, coverage=COV)
	u = ArchResult('um', ArchStatus.PASS, coverage={'error': 'the suites boot left no .gcda'})
	page = '\n'.join(html.coverage_section([r, u]))
	assert 'href="x86_64/coverage/html/index.html"' in page
	assert '<tr data-file="fs/ufs/inode.c">' in page and '80.0%' in page and '50.0%' in page
	assert 'um: coverage not measured: the suites boot left no .gcda' in page
	assert html.coverage_section([ArchResult('x86_64', ArchStatus.PASS)]) == []


def test_kcidb_misc_and_text_table():
	assert kcidb.kcidb_coverage(COV, 'x86_64')['total']['lines']['percent'] == 80.0
	assert kcidb.kcidb_coverage(COV, 'x86_64')['html'] == 'x86_64/coverage/html/index.html'
	assert kcidb.kcidb_coverage({}, 'x86_64') is None
	text = table.format_run([ArchResult('x86_64', coverage=COV)])
	assert 'fs/ufs/inode.c *' in text and '80/100 80.0%' in text and '[total]' in text


def test_compare_flags_a_drop(tmp_path):
	summary = {'profile': 'default', 'arches': [{'arch': 'x86_64', 'coverage': COV}]}
	written, _ = covbaseline.write(summary, {}, tmp_path)
	assert written == [tmp_path / 'coverage' / 'x86_64.json']
	out = io.StringIO()
	assert covbaseline.compare(summary, {}, tmp_path, out) == []
	worse = json.loads(json.dumps(COV))
	worse['files']['fs/ufs/inode.c']['lines'] = {'hit': 70, 'total': 100, 'percent': 70.0}
	out = io.StringIO()
	dropped = covbaseline.compare({'arches': [{'arch': 'x86_64', 'coverage': worse}]}, {},
				      tmp_path, out)
	assert dropped == ['x86_64']
	assert 'fs/ufs/inode.c: lines 80.0% -> 70.0% (70/100)' in out.getvalue()
	# Within DROP_POINTS: not a drop; an arch that lost its coverage: a drop.
	worse['files']['fs/ufs/inode.c']['lines']['percent'] = 79.5
	assert covbaseline.compare({'arches': [{'arch': 'x86_64', 'coverage': worse}]}, {},
				   tmp_path, io.StringIO()) == []
	assert covbaseline.compare({'arches': [{'arch': 'x86_64', 'coverage': {'error': 'x'}}]},
				   {}, tmp_path, io.StringIO()) == ['x86_64']


def test_coverage_refused_with_kasan_and_kcsan(tmp_path, capsys):
	from bklkunit import cli
	for prof in ('kasan', 'kcsan'):
		rc = cli.main(['run', '--coverage', '--profile', prof, '--cache-dir', str(tmp_path / 'c'),
			       '--no-install', '--arch', 'x86_64'])
		err = capsys.readouterr().err
		assert rc == 2 and err.count('\n') == 1
		assert f'--coverage with --profile {prof}:' in err
	assert not (tmp_path / 'c').exists()
	assert scope.profile_problem('default') == scope.profile_problem('faults') == ''


def test_coverage_refused_on_an_arch_without_its_init(tmp_path, capsys):
	"""The arches of issue 31 have no coverage /init (gcovinit): refused
	before anything is written, not after a build."""
	from bklkunit import cli
	rc = cli.main(['run', '--coverage', '--cache-dir', str(tmp_path / 'c'), '--no-install',
		       '--results-dir', str(tmp_path / 'r'), '--arch', 'x86_64,s390x,m68k'])
	err = capsys.readouterr().err
	assert rc == 2 and err.count('\n') == 1
	assert '--coverage on s390x, m68k: no coverage /init for them yet' in err
	assert not (tmp_path / 'c').exists() and not (tmp_path / 'r').exists()


# ------------------------------------------------------- UML under gcc >= 8


CLASH = 'char *mangle_path(char *s, const char *p, const char *e) { return s; }\n' \
	'int main(void) { return 0; }\n'


@pytest.mark.skipif(not (shutil.which('gcc') and shutil.which('objcopy')), reason='needs gcc')
def test_uml_libgcov_clash_and_its_workaround(tmp_path):
	"""A program that defines mangle_path, as the kernel does, does not link
	with the compiler's libgcov (when that has the symbol: gcc >= 8), and
	links with umlgcov's copy found through the -L the UML link line gets."""
	src = tmp_path / 't.c'
	src.write_text(CLASH)
	plain = subprocess.run(['gcc', '-fprofile-arcs', '-o', str(tmp_path / 't'), str(src)],
			       capture_output=True, text=True)
	lib = umlgcov.prepare(tmp_path / 'build')
	nm = subprocess.run(['nm', str(lib)], capture_output=True, text=True).stdout
	if plain.returncode == 0:
		assert ' T mangle_path' not in nm          # an older libgcov: nothing to do
	else:
		assert "multiple definition of `mangle_path'" in plain.stderr
		assert ' t mangle_path' in nm and ' T mangle_path' not in nm
	um = tmp_path / 'linux' / 'arch' / 'um'
	um.mkdir(parents=True)
	(um / 'Makefile').write_text('LINK_WRAPS = -Wl,--wrap,malloc -Wl,--wrap,free\n')
	[opt] = umlgcov.make_options(tmp_path / 'linux', tmp_path / 'build')
	assert opt == (f'LINK_WRAPS=-Wl,--wrap,malloc -Wl,--wrap,free -L{lib.parent} '
		       f'{lib.parent}/uml-gcov-dump.o')
	fixed = subprocess.run(['gcc', '-fprofile-arcs'] + opt.split()[2:]
			       + ['-o', str(tmp_path / 't'), str(src)], capture_output=True, text=True)
	assert fixed.returncode == 0, fixed.stderr




@pytest.mark.skipif(not (shutil.which('gcc') and shutil.which('objcopy')), reason='needs gcc')
def test_uml_gcov_dump_object_writes_the_counters(tmp_path):
	"""A profiled program whose gcov destructors are lost (their
	.fini_array.00100 renamed away, as UML's script leaves them out) writes
	no .gcda; linked with umlgcov's object it does."""
	src = tmp_path / 'p.c'
	src.write_text('int f(int x) { return x ? 1 : 2; }\nint main(void) { return f(0) - 2; }\n')
	obj = tmp_path / 'p.o'
	subprocess.run(['gcc', '-fprofile-arcs', '-ftest-coverage', '-c', '-o', str(obj), str(src)],
		       check=True, cwd=tmp_path)
	subprocess.run(['objcopy', '--rename-section', '.fini_array.00100=.bkl_lost', str(obj)],
		       check=True)
	lib = umlgcov.prepare(tmp_path / 'build')
	for extra, wrote in (([], False), ([str(lib.parent / 'uml-gcov-dump.o')], True)):
		gcda = tmp_path / 'p.gcda'
		if gcda.exists():
			gcda.unlink()
		exe = tmp_path / 'p'
		subprocess.run(['gcc', '-fprofile-arcs', '-L', str(lib.parent), str(obj)] + extra
			       + ['-o', str(exe)], check=True)
		assert subprocess.run([str(exe)]).returncode == 0
		assert gcda.exists() == wrote


def test_uml_build_command_has_the_libgcov_dir(tmp_path):
	o = plan.RunOptions(coverage=True)
	u = plan.ArchPlan(tmp_path / 'linux', 'um', tmp_path / 'b', tmp_path / 'out', o,
			  plan.kunitconfigs('um', (), with_coverage=True))
	d = f'{tmp_path}/b/bkl-coverage/libgcov'
	assert f'--make_options=LINK_WRAPS=-L{d} {d}/uml-gcov-dump.o' in u.build_command()


def test_baseline_coverage_only_writes_no_case_baseline(tmp_path, capsys):
	from bklkunit import cli
	rdir = tmp_path / 'r'
	rdir.mkdir()
	entry = {'arch': 'x86_64', 'status': 'PASS', 'passed': 1, 'failed': 0, 'skipped': 0,
		 'crashed': 0, 'coverage': COV}
	(rdir / 'summary.json').write_text(json.dumps({'tree': str(tmp_path), 'profile': 'default',
						       'arches': [entry]}))
	bdir = tmp_path / 'b'
	bdir.mkdir()
	rc = cli.main(['baseline', '--coverage-only', '--baseline-dir', str(bdir), str(rdir),
		       '--tree', str(tmp_path)])
	assert rc == 0, capsys.readouterr().err
	assert sorted(p.relative_to(bdir).as_posix() for p in bdir.rglob('*.json')) == \
		['coverage/x86_64.json']
	doc = json.loads((bdir / 'coverage' / 'x86_64.json').read_text())
	assert doc['files']['fs/ufs/inode.c']['lines']['percent'] == 80.0


def test_libgcc_only_from_the_target_multilib(tmp_path):
	"""gcc -m32 without Debian's gcc-multilib names the 64-bit libgcc.a,
	which the 32-bit link of /init skips ("cannot find -lgcc"): no -lgcc
	then (results 20261207-185949, i386)."""
	from bklkunit.coverage import gcovinit
	lib64 = tmp_path / 'lib' / 'libgcc.a'
	lib32 = tmp_path / 'lib' / '32' / 'libgcc.a'
	lib64.parent.mkdir(parents=True)
	lib64.write_bytes(b'!<arch>\n')
	cc = tmp_path / 'gcc'

	def fake(libgcc: Path, multi: str) -> None:
		cc.write_text('#!/bin/sh\nfor a; do case "$a" in\n'
			      f'-print-libgcc-file-name) echo {libgcc};;\n'
			      f'-print-multi-directory) echo {multi};;\nesac; done\n')
		cc.chmod(0o755)
	fake(lib64, '32')
	assert not gcovinit.has_libgcc(str(cc), ['-m32'])
	lib32.parent.mkdir()
	lib32.write_bytes(b'!<arch>\n')
	fake(lib32, '32')
	assert gcovinit.has_libgcc(str(cc), ['-m32'])
	fake(lib64, '.')
	assert gcovinit.has_libgcc(str(cc), [])
	fake(tmp_path / 'none.a', '.')
	assert not gcovinit.has_libgcc(str(cc), [])


def test_coverage_installs_rsync_for_headers_install() -> None:
	# The guest's /init is built against `make headers_install`'s UAPI headers,
	# and that target runs rsync: a fresh Debian 12 without it measured nothing
	# (2026-12-08, i386: "rsync: not found").
	from bklkunit.base import deps
	assert 'rsync' in deps.COVERAGE_PACKAGES
	assert 'lcov' in deps.COVERAGE_PACKAGES
