# SPDX-License-Identifier: GPL-2.0
"""UML's CONFIG_GCOV under gcc >= 7 (docs/coverage.md#uml-under-gcc-12):
two problems, both worked around on the link line, no kernel file changed.

1. The link fails.  CONFIG_GCOV links the UML kernel with the host's libgcov.  Since gcc 8,
libgcov.a's _gcov.o (gcov-io.c built into it) defines a global
`mangle_path`, a helper gcc itself uses at compile time for -fprofile-dir;
the kernel has its own global `mangle_path` (fs/seq_file.c), and the link of
vmlinux fails: "multiple definition of `mangle_path'" (seen with Debian 12's
gcc 12.2).  Nothing in libgcov calls its copy (no relocation refers to it),
so the run links with a copy of libgcov.a in which that symbol is local
(objcopy --localize-symbol), found first through a -L on the link line.

2. No .gcda file is written.  gcc >= 7 writes them from a destructor of
priority 100 in each profiled object (section .fini_array.00100); UML's
linker script (arch/um/kernel/dyn.lds.S) keeps only .fini_array, so the
loader never runs them (the binary's FINI_ARRAYSZ is 8: one entry).  The
link gets one more object, kunit/coverage/uml-gcov-dump.c compiled here,
whose destructor in .fini_array calls libgcov's __gcov_dump().

The -L and the object go in through LINK_WRAPS, a variable of UML's link
line alone (arch/um/Makefile: CFLAGS_vmlinux := $(LINK-y) $(LINK_WRAPS)
$(LD_FLAGS_CMDLINE) $(CC_FLAGS_LTO)), given on make's command line as the
tree's own value (read from arch/um/Makefile) plus the two.  (CC_FLAGS_LTO,
empty without LTO, also reaches the link of UML's vDSO, which must not get
the object.)
"""

import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Tuple

from ..base import paths
from ..base.errors import UserError

# Globals of libgcov that the kernel defines too, and that libgcov never calls.
LOCALIZE: Tuple[str, ...] = ('mangle_path',)
DUMP_SOURCE = paths.KUNIT_DIR / 'coverage' / 'uml-gcov-dump.c'


def lib_dir(build_dir: Path) -> Path:
	return build_dir / 'bkl-coverage' / 'libgcov'


def link_wraps(ktree: Path) -> str:
	"""The tree's own LINK_WRAPS (arch/um/Makefile), '' when it has none."""
	try:
		text = (ktree / 'arch' / 'um' / 'Makefile').read_text()
	except OSError:
		return ''
	m = re.search(r'^LINK_WRAPS\s*:?=\s*(.*)$', text, re.M)
	return m.group(1).strip() if m else ''


def make_options(ktree: Path, build_dir: Path) -> List[str]:
	d = lib_dir(build_dir)
	return ['LINK_WRAPS=' + ' '.join(filter(None, [link_wraps(ktree), f'-L{d}',
						      str(d / 'uml-gcov-dump.o')]))]


def prepare(build_dir: Path, cc: str = 'gcc') -> Path:
	"""<build dir>/bkl-coverage/libgcov/libgcov.a: the compiler's, with
	LOCALIZE made local.  Made anew each time (it is small)."""
	src = subprocess.run([cc, '-print-file-name=libgcov.a'], capture_output=True,
			     text=True).stdout.strip()
	if not src or not Path(src).is_file():
		raise UserError(f'coverage on UML: {cc} has no libgcov.a ({src or "not found"})')
	d = lib_dir(build_dir)
	d.mkdir(parents=True, exist_ok=True)
	out = d / 'libgcov.a'
	tmp = d / 'libgcov.a.tmp'
	shutil.copyfile(src, tmp)
	cmd = ['objcopy'] + [f'--localize-symbol={s}' for s in LOCALIZE] + [str(tmp)]
	proc = subprocess.run(cmd, capture_output=True, text=True)
	if proc.returncode != 0:
		raise UserError(f'coverage on UML: {" ".join(cmd)} failed: {proc.stderr.strip()}')
	tmp.replace(out)
	dump = d / 'uml-gcov-dump.o'
	cmd = [cc, '-O2', '-fno-profile-arcs', '-c', '-o', str(dump), str(DUMP_SOURCE)]
	proc = subprocess.run(cmd, capture_output=True, text=True)
	if proc.returncode != 0:
		raise UserError(f'coverage on UML: {" ".join(cmd)} failed: {proc.stderr.strip()}')
	return out
