# SPDX-License-Identifier: GPL-2.0
"""Where things live: the repository, the cache, the per-arch settings."""

import contextlib
import fcntl
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional

from .errors import UserError

REPO = Path(__file__).resolve().parents[2]
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


@dataclass(frozen=True)
class Arch:
	name: str              # kunit.py --arch
	cross_compile: str     # '' for the host compiler
	packages: List[str]    # Debian packages this arch needs on an amd64 host
	qemu: str              # the QEMU binary, '' for UML


ARCHES: Dict[str, Arch] = {
	'x86_64': Arch('x86_64', '', ['qemu-system-x86'], 'qemu-system-x86_64'),
	'i386': Arch('i386', '', ['qemu-system-x86'], 'qemu-system-i386'),
	'arm': Arch('arm', 'arm-linux-gnueabihf-',
		    ['qemu-system-arm', 'gcc-arm-linux-gnueabihf'], 'qemu-system-arm'),
	'arm64': Arch('arm64', 'aarch64-linux-gnu-',
		      ['qemu-system-arm', 'gcc-aarch64-linux-gnu'], 'qemu-system-aarch64'),
	'um': Arch('um', '', [], ''),
}

QEMU_ARCHES = ['x86_64', 'i386', 'arm', 'arm64']


def parse_arches(spec: str) -> List[str]:
	"""'all', one arch, or a comma-separated list, in a stable order."""
	names: List[str] = []
	for part in spec.split(','):
		part = part.strip()
		if not part:
			continue
		if part == 'all':
			names.extend(QEMU_ARCHES)
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
def locked(path: Path, what: str, shared: bool = False) -> Iterator[None]:
	"""Hold an exclusive flock on path (made if missing) for the block: two
	kunit.py processes sharing a cache (a developer and CI, two `ab` runs)
	take turns on a build directory or the pristine tree instead of building
	into it at once.  shared: a shared flock (readers of the work tree:
	any number at once, none beside its exclusive writer).  A process that
	has to wait says who holds it (the pid of an exclusive holder)."""
	path.parent.mkdir(parents=True, exist_ok=True)
	mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
	with open(path, 'a+') as f:
		try:
			fcntl.flock(f, mode | fcntl.LOCK_NB)
		except BlockingIOError:
			f.seek(0)
			holder = f.read().strip() or 'another kunit.py'
			print(f'Waiting for {what}: in use by {holder} ({path}) ...', flush=True)
			fcntl.flock(f, mode)
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


def _umask() -> int:
	mask = os.umask(0o022)
	os.umask(mask)
	return mask


_UMASK = _umask()


def write_atomic(path: Path, data: str) -> None:
	"""Write a file whole or not at all: a temporary file beside it, then
	one rename (a reader, or a job killed half-way, never sees it cut)."""
	write_bytes_atomic(path, data.encode())


def write_bytes_atomic(path: Path, data: bytes) -> None:
	"""write_atomic of bytes."""
	path = Path(path)
	path.parent.mkdir(parents=True, exist_ok=True)
	fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
	try:
		with os.fdopen(fd, 'wb') as f:
			f.write(data)
		os.chmod(tmp, 0o666 & ~_UMASK)       # as open() would have made it
		os.replace(tmp, path)
	except BaseException:
		with contextlib.suppress(OSError):
			os.unlink(tmp)
		raise
