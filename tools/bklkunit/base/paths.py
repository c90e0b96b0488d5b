# SPDX-License-Identifier: GPL-2.0
"""Where things live: the repository, the cache, the per-arch settings."""

import contextlib
import enum
import fcntl
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from .errors import UserError

REPO = Path(__file__).resolve().parents[3]
PATCH_DIR = REPO / 'kernel-patches'
SERIES_FILE = PATCH_DIR / 'series'
KUNITCONFIG = REPO / '.kunitconfig'
KUNIT_DIR = REPO / 'kunit'

# The distro source package this project targets.
SOURCE_PACKAGE = 'linux-source-6.12'
SOURCE_TARBALL = Path('/usr/src/linux-source-6.12.tar.xz')

CACHE_ENV = 'BKL_KUNIT_CACHE'


def cache_dir(override: Optional[str] = None) -> Path:
	"""The cache: --cache-dir, then $BKL_KUNIT_CACHE, then XDG."""
	if override:
		return Path(override).expanduser().resolve()
	env = os.environ.get(CACHE_ENV)
	if env:
		return Path(env).expanduser().resolve()
	xdg = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
	return (Path(xdg) / 'bkl-kunit').resolve()


class Endian(str, enum.Enum):
	"""The byte order of an arch's CPU (what fs32_to_cpu() swaps from)."""
	LITTLE = 'little'
	BIG = 'big'


@dataclass(frozen=True)
class Arch:
	name: str              # our --arch: build and results directories, baselines
	cross_compile: str     # '' for the host compiler
	packages: List[str]    # Debian packages this arch needs on an amd64 host
	qemu: str              # the QEMU binary, '' for UML
	# kunit.py --arch (its qemu_configs/<name>.py) and the kernel's ARCH=,
	# when they are not name: Debian's name (s390x) is ours.
	kunit_arch: str = ''
	endian: Endian = Endian.LITTLE
	bits: int = 64
	# The QEMU machine takes more than one CPU and the arch has CONFIG_SMP
	# (m68k has neither): run gives its guests run --smp vCPUs only then.
	smp: bool = True

	@property
	def kernel_arch(self) -> str:
		"""kunit.py --arch, and make ARCH=."""
		return self.kunit_arch or self.name


LE, BE = Endian.LITTLE, Endian.BIG

ARCHES: Dict[str, Arch] = {
	'x86_64': Arch('x86_64', '', ['qemu-system-x86'], 'qemu-system-x86_64'),
	'i386': Arch('i386', '', ['qemu-system-x86'], 'qemu-system-i386', bits=32),
	'arm': Arch('arm', 'arm-linux-gnueabihf-',
		    ['qemu-system-arm', 'gcc-arm-linux-gnueabihf'], 'qemu-system-arm', bits=32),
	'arm64': Arch('arm64', 'aarch64-linux-gnu-',
		      ['qemu-system-arm', 'gcc-aarch64-linux-gnu'], 'qemu-system-aarch64'),
	# Debian's release architectures s390x (big-endian) and riscv64, and
	# its ports powerpc64 (ppc64: big-endian, the pseries machine) and m68k
	# (the virt machine), through the tree's qemu_configs/s390.py,
	# powerpc.py, riscv.py and m68k.py.  qemu-system-misc has
	# qemu-system-s390x, -riscv64 and -m68k; qemu-system-data the firmware
	# (s390-ccw.img, slof.bin, OpenSBI).
	's390x': Arch('s390x', 's390x-linux-gnu-',
		      ['qemu-system-misc', 'gcc-s390x-linux-gnu'], 'qemu-system-s390x',
		      kunit_arch='s390', endian=BE),
	'powerpc64': Arch('powerpc64', 'powerpc64-linux-gnu-',
			  ['qemu-system-ppc', 'gcc-powerpc64-linux-gnu'], 'qemu-system-ppc64',
			  kunit_arch='powerpc', endian=BE),
	'riscv64': Arch('riscv64', 'riscv64-linux-gnu-',
			['qemu-system-misc', 'gcc-riscv64-linux-gnu'], 'qemu-system-riscv64',
			kunit_arch='riscv'),
	'm68k': Arch('m68k', 'm68k-linux-gnu-', ['qemu-system-misc', 'gcc-m68k-linux-gnu'],
		     'qemu-system-m68k', endian=BE, bits=32, smp=False),
	'um': Arch('um', '', [], ''),
}

# Every QEMU arch, in the order a run takes them (`--arch=all`).
QEMU_ARCHES = ['x86_64', 'i386', 'arm', 'arm64', 's390x', 'powerpc64', 'riscv64', 'm68k']
# `run` with no --arch: one arch of each byte order, both 64-bit and SMP,
# the quickest of each to build and boot (README: what each costs).
DEFAULT_ARCHES = ['x86_64', 's390x']


# What check-series builds per patch (--all-arches, --go7007-arch=all):
# the four arches its baselines (go7007 W=1 warnings, the modules check's
# fragments) are kept for.  The arches of issue #31 are run targets.
SERIES_ARCHES = QEMU_ARCHES[:4]


def new_stamped_dir(base: Path, suffix: str = '') -> Path:
	"""A new directory <base>/<YYYYmmdd-HHMMSS>[-n]<suffix> (base made if
	need be): the first of those names nobody has taken, mkdir being the
	claim, so two runs started in the same second get one each."""
	base.mkdir(parents=True, exist_ok=True)
	stamp = time.strftime('%Y%m%d-%H%M%S')
	n = 0
	while True:
		d = base / (stamp + (f'-{n}' if n else '') + suffix)
		try:
			d.mkdir()
			return d
		except FileExistsError:
			n += 1


def parse_arches(spec: str, everything: Sequence[str] = ()) -> List[str]:
	"""'all', one arch, or a comma-separated list, in a stable order.
	'all' is everything (default: QEMU_ARCHES)."""
	names: List[str] = []
	for part in spec.split(','):
		part = part.strip()
		if not part:
			continue
		if part == 'all':
			names.extend(everything or QEMU_ARCHES)
		elif part in ARCHES:
			names.append(part)
		else:
			raise ValueError(f'unknown arch {part!r}; choose from '
					 f'{", ".join(list(ARCHES) + ["all"])}')
	out: List[str] = []
	for n in names:
		if n not in out:
			out.append(n)
	if not out:
		raise ValueError('no arch given')
	return out


def usable_dir(path: Path, what: str, probe: bool = False) -> None:
	"""Raise a UserError unless path is a directory this process can write
	into, or one it can make.  probe: also make and remove a temporary
	directory where it would go (what os.access cannot tell: /proc, a
	read-only mount, root's view of permissions).  Nothing is left behind."""
	p = Path(path)
	where = p
	while not where.exists():
		if where.parent == where:
			break
		where = where.parent
	if where.exists() and not where.is_dir():
		raise UserError(f'{what} {p}: {where} exists and is not a directory')
	if not os.access(where, os.W_OK | os.X_OK):
		raise UserError(f'{what} {p}: {where} is not writable by this user')
	if probe:
		try:
			os.rmdir(tempfile.mkdtemp(prefix='.bkl-kunit-probe-', dir=where))
		except OSError as e:
			raise UserError(f'{what} {p}: cannot create a directory in {where} '
					f'({e.strerror})')


@contextlib.contextmanager
def locked(path: Path, what: str, shared: bool = False, wait: bool = True) -> Iterator[None]:
	"""Hold an exclusive flock on path (made if missing) for the block: two
	kunit.py processes sharing a cache (a developer and CI, two `ab` runs)
	take turns on a build directory or the pristine tree instead of building
	into it at once.  shared: a shared flock (readers of the work tree:
	any number at once, none beside its exclusive writer).  A process that
	has to wait says who holds it (the pid of an exclusive holder); with
	wait=False it does not wait: a UserError says who holds it.  A lock
	file removed while this process waited for it (`clean` removes a
	build directory's under that lock) is made again and locked anew: a
	lock on a file no longer there would lock nothing."""
	while True:
		path.parent.mkdir(parents=True, exist_ok=True)
		f = open(path, 'a+')
		try:
			mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
			try:
				fcntl.flock(f, mode | fcntl.LOCK_NB)
			except BlockingIOError:
				f.seek(0)
				holder = f.read().strip() or 'another kunit.py'
				if not wait:
					raise UserError(f'{what} is in use by {holder} ({path})')
				print(f'Waiting for {what}: in use by {holder} ({path}) ...', flush=True)
				fcntl.flock(f, mode)
			try:
				st = os.stat(path)
				same = (st.st_dev, st.st_ino) == (os.fstat(f.fileno()).st_dev,
								  os.fstat(f.fileno()).st_ino)
			except FileNotFoundError:
				same = False
			if not same:
				continue        # the finally below closes (and so unlocks) it
			if not shared:
				f.seek(0)
				f.truncate()
				f.write(f'pid {os.getpid()}\n')
				f.flush()
			try:
				yield
			finally:
				if not shared:
					f.seek(0)
					f.truncate()
					f.flush()
				fcntl.flock(f, fcntl.LOCK_UN)
			return
		finally:
			f.close()
