# SPDX-License-Identifier: GPL-2.0
"""The guest side of coverage on the QEMU arches: the initramfs whose /init
prints the gcov counters (kunit/coverage/gcov-init.c), and the qemu_config
that boots it.

Built when a run needs it, in <build dir>/bkl-coverage/, from the kernel
tree under test: its UAPI headers (`make headers_install`, once per build
directory, in a directory of its own: the source tree stays clean) and its
nolibc (tools/include/nolibc), with the arch's compiler.  No C library, no
busybox, nothing binary in the repository.

The qemu_config is the tree's own tools/testing/kunit/qemu_configs/<arch>.py
with two changes: QEMU gets `-initrd`, and the kernel command line ends in
` --`.  kunit_tool appends `kunit_shutdown=reboot` after it, which would
restart the guest as soon as the suites end, before /init; after `--` the
kernel leaves it to init as an argument.
"""

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from ..base import atomic, paths
from ..base.errors import UserError

INIT_SOURCE = paths.KUNIT_DIR / 'coverage' / 'gcov-init.c'
# headers_install's ARCH per kunit arch.
HEADER_ARCH: Dict[str, str] = {'x86_64': 'x86_64', 'i386': 'i386', 'arm': 'arm', 'arm64': 'arm64'}
CFLAGS: Tuple[str, ...] = ('-Os', '-static', '-nostdlib', '-fno-stack-protector',
			   '-fno-asynchronous-unwind-tables', '-fno-ident', '-Wall')


@dataclass(frozen=True)
class Initramfs:
	cpio: Path
	qemu_config: Path



def work_dir(build_dir: Path) -> Path:
	return build_dir / 'bkl-coverage'


def _run(cmd: Sequence[str], what: str, cwd: Path) -> None:
	proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
	if proc.returncode != 0:
		tail = '\n'.join((proc.stdout + proc.stderr).splitlines()[-10:])
		raise UserError(f'coverage: {what} failed (exit {proc.returncode}): '
				f'{" ".join(cmd)}\n{tail}')


def sysroot(ktree: Path, arch: str, work: Path) -> Path:
	"""The tree's UAPI headers for arch, installed once into work/sysroot."""
	root = work / 'sysroot'
	done = root / '.bkl-done'
	if done.exists():
		return root
	_run(['make', '-s', '-C', str(ktree), f'O={work / "hdr"}', f'ARCH={HEADER_ARCH[arch]}',
	      'headers_install', f'INSTALL_HDR_PATH={root}'], 'the UAPI headers for /init', work)
	shutil.rmtree(work / 'hdr', ignore_errors=True)
	atomic.write_text(done, '')
	return root


def compile_command(ktree: Path, arch: str, sysroot_dir: Path, out: Path) -> List[str]:
	"""The compiler line of /init: nolibc from the tree, -lgcc when the
	compiler has one for this target (i386 from the host gcc may not)."""
	cc = paths.ARCHES[arch].cross_compile + 'gcc'
	target = ['-m32'] if arch == 'i386' else []
	cmd = [cc] + target + list(CFLAGS) + [
		'-isystem', str(sysroot_dir / 'include'),
		'-include', str(ktree / 'tools' / 'include' / 'nolibc' / 'nolibc.h'),
		'-o', str(out), str(INIT_SOURCE)]
	if has_libgcc(cc, target):
		cmd.append('-lgcc')
	return cmd


def has_libgcc(cc: str, target: Sequence[str]) -> bool:
	"""Whether cc has a libgcc for target.  Without the multilib installed
	(Debian's gcc-multilib), `gcc -m32 -print-libgcc-file-name` names the
	64-bit one, which the 32-bit link skips ("cannot find -lgcc"): the
	file must be in the target's multilib directory (`-print-multi-directory`:
	"32" for -m32, "." for a compiler of one target)."""
	def ask(opt: str) -> str:
		return subprocess.run([cc] + list(target) + [opt],
				      capture_output=True, text=True).stdout.strip()
	libgcc = ask('-print-libgcc-file-name')
	if not libgcc or not Path(libgcc).is_file():
		return False
	multi = ask('-print-multi-directory')
	return multi in ('', '.') or Path(libgcc).parent.name == multi


def newc(entries: Sequence[Tuple[str, int, int, bytes]]) -> bytes:
	"""An uncompressed cpio archive (the kernel's initramfs format, "newc"):
	entries of (name, mode, rdev as (major << 8 | minor), data), made
	without root (a device node is only a header)."""
	out = bytearray()

	def pad4() -> None:
		out.extend(b'\0' * (-len(out) % 4))

	def entry(ino: int, name: str, mode: int, rdev: int, data: bytes) -> None:
		nb = name.encode() + b'\0'
		fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev >> 8, rdev & 0xff, len(nb), 0]
		out.extend(b'070701' + b''.join(b'%08X' % f for f in fields))
		out.extend(nb)
		pad4()
		out.extend(data)
		pad4()

	for i, (name, mode, rdev, data) in enumerate(entries, 1):
		entry(i, name, mode, rdev, data)
	entry(0, 'TRAILER!!!', 0, 0, b'')
	return bytes(out)


def initramfs(init: bytes) -> bytes:
	"""/init and what it needs: /dev/console (the kernel opens it for init's
	stdin/out/err before a /dev exists) and the mount point of debugfs."""
	return newc([
		('dev', stat.S_IFDIR | 0o755, 0, b''),
		('dev/console', stat.S_IFCHR | 0o600, (5 << 8) | 1, b''),
		('init', stat.S_IFREG | 0o755, 0, init),
	])


QEMU_CONFIG_TAIL = '''
# bkl-kunit coverage (tools/bklkunit/coverage/gcovinit.py): the above, with the
# initramfs whose /init prints the gcov counters, and " --" at the end of the
# kernel command line so that kunit_tool's kunit_shutdown=reboot, which it
# appends, goes to init as an argument instead of restarting the guest before
# init runs.
import dataclasses as _bkl_dataclasses
QEMU_ARCH = _bkl_dataclasses.replace(
	QEMU_ARCH,
	kernel_command_line=QEMU_ARCH.kernel_command_line + ' --',
	extra_qemu_params=list(QEMU_ARCH.extra_qemu_params) + ['-initrd', {initrd!r}])
'''


def qemu_config_text(ktree: Path, arch: str, initrd: Path) -> str:
	src = ktree / 'tools' / 'testing' / 'kunit' / 'qemu_configs' / f'{arch}.py'
	if not src.is_file():
		raise UserError(f'coverage: {src} does not exist: kunit_tool has no QEMU config '
				f'for {arch}')
	return src.read_text() + QEMU_CONFIG_TAIL.format(initrd=str(initrd))


def prepare(ktree: Path, arch: str, build_dir: Path) -> Initramfs:
	"""The initramfs and qemu_config of a coverage boot of arch, made anew
	when the init source, the tree's nolibc or its qemu_config changed."""
	if arch not in HEADER_ARCH:
		raise UserError(f'coverage: no initramfs for {arch}')
	work = work_dir(build_dir)
	work.mkdir(parents=True, exist_ok=True)
	root = sysroot(ktree, arch, work)
	init = work / 'init'
	cmd = compile_command(ktree, arch, root, init)
	nolibc = ktree / 'tools' / 'include' / 'nolibc'
	key = hashlib.sha256(' '.join(cmd).encode() + INIT_SOURCE.read_bytes() + b''.join(
		p.read_bytes() for p in sorted(nolibc.glob('*.h')))).hexdigest()
	stamp = work / 'init.key'
	if not (init.is_file() and stamp.is_file() and stamp.read_text() == key):
		_run(cmd, 'compiling /init', work)
		atomic.write_text(stamp, key)
	cpio = work / 'initramfs.cpio'
	atomic.write_bytes(cpio, initramfs(init.read_bytes()))
	cfg = work / f'bkl_coverage_{arch}.py'
	atomic.write_text(cfg, qemu_config_text(ktree, arch, cpio))
	os.chmod(cfg, 0o644)
	return Initramfs(cpio, cfg)
