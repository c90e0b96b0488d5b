# SPDX-License-Identifier: GPL-2.0
"""Skip `kunit.py build` when nothing it depends on changed.

kunit_tool's build step always runs `make olddefconfig` and then a full
`make all compile_commands.json`: on an unchanged tree that is still a walk
of the whole kernel build (tens of seconds on two cores).  When every input
of the last successful build is the same, the build directory already holds
the kernel it would produce, so `run` boots it without building.

The inputs (`inputs()`), all compared for equality:
  tree       HEAD, and the path, status and content hash of every modified,
             deleted, untracked or ignored file (`git status --ignored`)
  command    the `kunit.py build` argv without --jobs (arch, build dir,
             cross compiler, kunitconfig paths, --kconfig_add, make options)
  fragments  the content of every --kunitconfig file
  env        the environment variables the kernel's make reads (KBUILD_*,
             K*FLAGS, CROSS_COMPILE, ARCH, LLVM, CC, ...)
  toolchain  `<cross>gcc --version` and `<cross>ld --version`, first lines
  output     <build>/.config (sha256) and <build>/vmlinux (size, mtime):
             what the last build left is still there and untouched

No stamp, a stamp from another version of this file, a tree that is not a
git repository or has too many stray files (an in-tree build) all mean
"build".  The stamp is removed before a build starts and written only after
it succeeded, so an interrupted or failed build is never skipped.  Not seen:
host packages other than the compiler and linker (make, flex, bison, libelf
or libssl headers); after upgrading those, run once with --always-build.
"""

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from ..base import atomic

VERSION = 1
STAMP = '.bkl-kunit-build.json'
# More stray files than this (an in-tree build, say): not worth hashing.
MAX_DIRTY = 2000
ENV_PREFIXES = ('KBUILD_', 'KCFLAGS', 'KCPPFLAGS', 'KAFLAGS', 'KRUSTFLAGS', 'LLVM')
ENV_NAMES = ('ARCH', 'CROSS_COMPILE', 'CC', 'HOSTCC', 'LD', 'AR', 'CLANG_FLAGS',
	     'INSTALL_MOD_PATH', 'O', 'W', 'C', 'V')


def _sha256(path: Path) -> str:
	h = hashlib.sha256()
	with open(path, 'rb') as f:
		for chunk in iter(lambda: f.read(1 << 20), b''):
			h.update(chunk)
	return h.hexdigest()


def tree_fingerprint(ktree: Path) -> Optional[str]:
	"""HEAD plus every file that differs from it, hashed; None when it
	cannot be known cheaply (not git, git failing, too many stray files)."""
	env = dict(os.environ, GIT_OPTIONAL_LOCKS='0', LC_ALL='C')
	try:
		head = subprocess.run(['git', '-C', str(ktree), 'rev-parse', '--verify', 'HEAD'],
				      capture_output=True, text=True, env=env)
		if head.returncode != 0 or not (ktree / '.git').exists():
			return None
		st = subprocess.run(['git', '-C', str(ktree), 'status', '--porcelain=v1', '-z',
				     '--ignored', '--untracked-files=all', '--no-renames'],
				    capture_output=True, env=env)
	except OSError:
		return None
	if st.returncode != 0:
		return None
	h = hashlib.sha256(b'HEAD ' + head.stdout.strip().encode() + b'\n')
	entries = [e for e in st.stdout.split(b'\0') if e]
	entries = [e for e in entries if b'__pycache__/' not in e and not e.endswith(b'.pyc')]
	if len(entries) > MAX_DIRTY:
		return None
	for e in sorted(entries):
		h.update(e + b'\n')
		p = ktree / os.fsdecode(e[3:])
		try:
			if p.is_file() and not p.is_symlink():
				h.update(_sha256(p).encode() + b'\n')
			elif p.is_symlink():
				h.update(os.readlink(p).encode() + b'\n')
		except OSError:
			return None
	return h.hexdigest()


def _first_line(cmd: List[str]) -> str:
	try:
		out = subprocess.run(cmd, capture_output=True, text=True).stdout
	except OSError:
		return ''
	return (out.splitlines() or [''])[0]


def _toolchain(cross_compile: str) -> List[str]:
	"""The compiler's and the linker's first --version lines (what Kconfig
	records as CONFIG_CC_VERSION_TEXT, CONFIG_LD_VERSION)."""
	return [_first_line([cross_compile + tool, '--version']) for tool in ('gcc', 'ld')]


def _output(build_dir: Path) -> Optional[Dict[str, object]]:
	config, vmlinux = build_dir / '.config', build_dir / 'vmlinux'
	try:
		st = vmlinux.stat()
		return {'config': _sha256(config), 'vmlinux': [st.st_size, st.st_mtime_ns]}
	except OSError:
		return None


def inputs(tree_fp: Optional[str], cmd: List[str], fragments: List[Path],
	   cross_compile: str, env: Dict[str, str]) -> Optional[Dict[str, object]]:
	"""What a build depends on, or None if it cannot be pinned down."""
	if not tree_fp:
		return None
	try:
		frags = {str(f): _sha256(Path(f)) for f in fragments}
	except OSError:
		return None
	return {
		'version': VERSION,
		'tree': tree_fp,
		'command': [a for a in cmd if not a.startswith('--jobs=')],
		'fragments': frags,
		'env': {k: v for k, v in sorted(env.items())
			if k.startswith(ENV_PREFIXES) or k in ENV_NAMES},
		'toolchain': _toolchain(cross_compile),
	}


def unchanged(build_dir: Path, want: Optional[Dict[str, object]]) -> bool:
	"""Whether the last successful build in build_dir had exactly these
	inputs and its .config and vmlinux are as it left them."""
	if want is None:
		return False
	try:
		have = json.loads((build_dir / STAMP).read_text())
	except (OSError, ValueError):
		return False
	out = _output(build_dir)
	return (out is not None and have.get('inputs') == want
		and have.get('output') == out)


def forget(build_dir: Path) -> None:
	"""Before a build: whatever happens next, the old stamp no longer holds."""
	try:
		(build_dir / STAMP).unlink()
	except FileNotFoundError:
		pass


def record(build_dir: Path, want: Optional[Dict[str, object]]) -> None:
	"""After a successful build: what it was built from."""
	out = _output(build_dir)
	if want is None or out is None:
		return
	atomic.write_text(build_dir / STAMP, json.dumps({'inputs': want, 'output': out}, indent=1) + '\n')
