# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures for the tools/bklkunit tests.

Everything a test writes lives under pytest's tmp_path: the cache, the
kernel-patches directory, fake kernel sources and fake kernel trees.  The
only thing read from outside is the prepared tree's own kunit_parser (see
`kernel_tree`), which is copied into a temporary directory before use.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional

import pytest

sys.dont_write_bytecode = True
TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))

from bklkunit.base import deps, paths  # noqa: E402
from bklkunit.run import progress  # noqa: E402
from bklkunit.source import tree  # noqa: E402

# The never-ending commands of the deadline tests must take SIGINT, also
# under a CI runner or a shell that started pytest with SIGINT ignored.
progress.let_children_take_sigint()

DATA = Path(__file__).resolve().parent / 'data'
DEBVER = '6.12.118-1~deb12u1'
UPSTREAM = '6.12.118'
TARBALL_MTIME = 1764547200          # 2025-12-01 00:00:00 UTC

# Resolved before any test changes the environment: where a developer's
# `./tools/kunit.py prepare` put the real tree, and how to ask dpkg for it.
_REAL_CACHE = paths.cache_dir()
_REAL_DEBIAN_VERSION = tree.debian_version

# The kunit_tool modules verdicts.judge needs (kunit_parser imports kunit_printer).
PARSER_FILES = ('kunit_parser.py', 'kunit_printer.py', 'kunit_json.py')

# The start of every stub standing in for tools/testing/kunit/kunit.py: its
# control directory, verb, --opt=value options, arch, --list_tests and
# filter glob, parsed the way kunit.py's argparse sees them.
STUB_ARGS = r'''
import json, os, re, sys
from pathlib import Path

ctl = Path(os.environ['BKL_STUB_CTL'])
verb, rest = sys.argv[1], sys.argv[2:]
opts, positional = {}, []
for a in rest:
	if a.startswith('--') and '=' in a:
		k, v = a[2:].split('=', 1)
		opts.setdefault(k, []).append(v)
	else:
		positional.append(a)
# A coverage boot names its arch by its qemu_config (bkl_coverage_<arch>.py).
arch = (opts['arch'][0] if 'arch' in opts
	else Path(opts['qemu_config'][0]).stem.replace('bkl_coverage_', ''))
listing = '--list_tests' in positional
glob = ([p for p in positional if not p.startswith('--')] or [''])[0]
'''

# The end of a stub kunit.py exec that never ends, as one whose kunit_parser
# loops on the console it has read (docs/design.md): a child that stays (its
# QEMU: its pid in <arch>.exec_child) and a '[CRASHED] ' line for each Test
# the parser makes up, for ever.  Only run's deadline stops it.
STUB_HANG = r'''
def hang():
	import subprocess, time
	sys.stdout.flush()
	child = subprocess.Popen(['sleep', '1000'])
	(ctl / f'{arch}.exec_child').write_text(str(child.pid))
	while True:
		print('[07:01:03] [CRASHED] ', flush=True)
		time.sleep(0.01)
'''
# Seconds all_ended() waits for processes that must have ended already: a
# guard against a hang of the test, not a measure.
WATCHDOG = 60.0


def ended(pid: int) -> bool:
	"""The process has ended: gone, or a zombie."""
	try:
		stat = Path(f'/proc/{pid}/stat').read_text()
	except FileNotFoundError:
		return True
	return stat.rsplit(')', 1)[1].split()[0] in ('Z', 'X')


def deadline_after(monkeypatch: Any, lines: int, marker: str = '') -> None:
	"""progress.stream's clock stands still until the command has printed
	`lines` lines (containing marker, when given), then runs (real time, far
	past any deadline): a deadline passes once that output is there, and
	only then, however slowly a busy machine starts the command."""
	from bklkunit.run import progress
	seen = [0]
	real = progress.next_line

	def counting(queue: Any, timeout: float) -> Optional[str]:
		got = real(queue, timeout)
		if got and marker in got:
			seen[0] += 1
		return got

	def clock() -> float:
		return 0.0 if seen[0] < lines else time.monotonic() + 1e6
	monkeypatch.setattr(progress, 'next_line', counting)
	monkeypatch.setattr(progress, 'clock', clock)


def in_group(pgid: int) -> List[int]:
	"""The processes of a process group that have not ended (not zombies)."""
	out = []
	for d in Path('/proc').iterdir():
		if d.name.isdigit():
			try:
				fields = (d / 'stat').read_text().rsplit(')', 1)[1].split()
			except (FileNotFoundError, ProcessLookupError, IndexError):
				continue
			if int(fields[2]) == pgid and fields[0] not in ('Z', 'X'):
				out.append(int(d.name))
	return out


def all_ended(pids: Iterable[int], group: Optional[int] = None) -> bool:
	"""Every pid, and every process of the process group `group`, has
	ended, or does within WATCHDOG seconds (for processes that were killed
	and whose output has ended: they are past closing it)."""
	until = time.monotonic() + WATCHDOG
	while not all(ended(p) for p in pids) or (group is not None and in_group(group)):
		if time.monotonic() > until:
			return False
		time.sleep(0.05)
	return True


# ------------------------------------------------------------------ isolation


@pytest.fixture(autouse=True)
def _hermetic(tmp_path, monkeypatch):
	"""No test may reach the real cache, dpkg or apt-get by accident."""
	monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / 'default-cache'))
	monkeypatch.setenv('GIT_CONFIG_NOSYSTEM', '1')
	monkeypatch.setenv('GIT_CONFIG_GLOBAL', os.devnull)
	monkeypatch.setattr(tree, 'debian_version', lambda: DEBVER)

	def no_apt(packages, allow_install=True):
		raise AssertionError(f'a test tried to install packages: {sorted(set(packages))}')
	monkeypatch.setattr(deps, 'ensure', no_apt)


# ------------------------------------------------------------ the real parser


def _forget_parser():
	from bklkunit.results import kunit_tool
	kunit_tool.forget_parsers()
	for name in ('kunit_parser', 'kunit_printer', 'kunit_json'):
		sys.modules.pop(name, None)
	sys.path[:] = [p for p in sys.path if not p.endswith('/tools/testing/kunit')]


@pytest.fixture(autouse=True)
def _fresh_parser():
	"""kunit_tool caches each tree's kunit_parser; every test starts without it."""
	_forget_parser()
	yield
	_forget_parser()


@pytest.fixture(scope='session')
def kernel_tree() -> Path:
	"""The tree `./tools/kunit.py prepare` made (read only, for its parser)."""
	with pytest.MonkeyPatch.context() as mp:
		mp.setattr(tree, 'debian_version', _REAL_DEBIAN_VERSION)
		try:
			ktree = tree.find_prepared(_REAL_CACHE)
		except Exception as e:  # UserError, or dpkg missing
			pytest.fail(f'no prepared kernel tree in {_REAL_CACHE} ({e}); '
				    'run ./tools/kunit.py prepare first', pytrace=False)
	kdir = ktree / 'tools' / 'testing' / 'kunit'
	missing = [f for f in PARSER_FILES if not (kdir / f).is_file()]
	if missing:
		pytest.fail(f'{kdir} lacks {", ".join(missing)}; '
			    'run ./tools/kunit.py prepare first', pytrace=False)
	return ktree


def copy_parser(kernel_tree: Path, dest_root: Path) -> Path:
	"""Copy the tree's kunit_tool parser modules into dest_root/tools/testing/kunit."""
	src = kernel_tree / 'tools' / 'testing' / 'kunit'
	dst = dest_root / 'tools' / 'testing' / 'kunit'
	dst.mkdir(parents=True, exist_ok=True)
	for name in PARSER_FILES:
		shutil.copyfile(src / name, dst / name)
	return dst


@pytest.fixture(scope='session')
def parser_tree(kernel_tree, tmp_path_factory) -> Path:
	"""A fake kernel tree holding only a copy of the real kunit_parser."""
	root = tmp_path_factory.mktemp('parser-tree')
	copy_parser(kernel_tree, root)
	return root


# ------------------------------------------------------- a fake Debian source

FAKE_SOURCE: Dict[str, str] = {
	'Makefile': ('VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = {sublevel}\nEXTRAVERSION =\n'
		     'NAME = Baby Opossum Posse\n\n# SPDX-License-Identifier: GPL-2.0\n'
		     'all:\n\t@echo this is not a kernel\n'),
	# Like Debian's linux-source tarball: everything at the top is ignored.
	'.gitignore': '/*\n!/debian/\n',
	'debian/changelog': ('linux (6.12.118-1~deb12u1) bookworm-security; urgency=high\n\n'
			     '  * Fake changelog for the bklkunit tests.\n'),
	'fs/autofs/Makefile': ('# SPDX-License-Identifier: GPL-2.0\n'
			       'obj-$(CONFIG_AUTOFS_FS) += autofs4.o\n'
			       'autofs4-objs := init.o inode.o root.o symlink.o waitq.o expire.o dev-ioctl.o\n'),
	'fs/autofs/Kconfig': ('# SPDX-License-Identifier: GPL-2.0-only\nconfig AUTOFS_FS\n'
			      '\ttristate "Kernel automounter support (supports v3, v4 and v5)"\n'),
	'fs/autofs/inode.c': ''.join(f'{line}\n' for line in [
		'// SPDX-License-Identifier: GPL-2.0-or-later',
		'/*',
		' * Copyright 1997-1998 Transmeta Corporation -- All Rights Reserved',
		' * Copyright 2005-2006 Ian Kent <raven@themaw.net>',
		' */',
		'',
		'#include <linux/seq_file.h>',
		'#include <linux/pagemap.h>',
		'',
		'#include "autofs_i.h"',
		'',
		'struct autofs_info *autofs_new_ino(struct autofs_sb_info *sbi)',
		'{',
		'\tstruct autofs_info *ino;',
		'',
		'\tino = kzalloc(sizeof(*ino), GFP_KERNEL);',
		'\tif (ino) {',
		'\t\tINIT_LIST_HEAD(&ino->active);',
		'\t\tINIT_LIST_HEAD(&ino->expiring);',
		'\t\tino->last_used = jiffies;',
		'\t\tino->sbi = sbi;',
		'\t\tino->count = 1;',
		'\t}',
		'\treturn ino;',
		'}',
		'',
		'void autofs_clean_ino(struct autofs_info *ino)',
		'{',
		'\tino->uid = GLOBAL_ROOT_UID;',
		'\tino->gid = GLOBAL_ROOT_GID;',
		'\tino->last_used = jiffies;',
		'}',
		'',
		'void autofs_free_ino(struct autofs_info *ino)',
		'{',
		'\tkfree_rcu(ino, rcu);',
		'}',
		'',
		'static int autofs_validate_protocol(struct fs_context *fc)',
		'{',
		'\tstruct autofs_sb_info *sbi = fc->s_fs_info;',
		'',
		'\t/* Test versions first */',
		'\tif (sbi->max_proto < AUTOFS_MIN_PROTO_VERSION ||',
		'\t    sbi->min_proto > AUTOFS_MAX_PROTO_VERSION) {',
		'\t\terrorf(fc, "kernel does not match daemon version");',
		'\t\treturn -EINVAL;',
		'\t}',
		'\treturn 0;',
		'}',
	]),
	'fs/autofs/symlink.c': ('// SPDX-License-Identifier: GPL-2.0-or-later\n'
				'#include "autofs_i.h"\n'),
	'include/uapi/linux/auto_fs.h': ('/* SPDX-License-Identifier: GPL-2.0+ WITH Linux-syscall-note */\n'
					 '#define AUTOFS_PROTO_VERSION\t\t5\n'
					 '#define AUTOFS_MIN_PROTO_VERSION\t3\n'
					 '#define AUTOFS_MAX_PROTO_VERSION\t5\n'),
	'Documentation/filesystems/autofs.rst': '=====================\nautofs - how it works\n=====================\n',
	'scripts/checkpatch.pl': '#!/usr/bin/perl\nexit 0;\n',
}

# fs/autofs/Kconfig after one and after two patches that each append a block.
KCONFIG_A = FAKE_SOURCE['fs/autofs/Kconfig'] + (
	'\nconfig AUTOFS_PROTOCOL_KUNIT_TEST\n\tbool "KUnit tests for autofs" if !KUNIT_ALL_TESTS\n'
	'\tdepends on KUNIT=y && AUTOFS_FS=y\n\tdefault KUNIT_ALL_TESTS\n')
KCONFIG_B = KCONFIG_A + (
	'\nconfig AUTOFS_END_STATE_KUNIT_TEST\n\tbool "KUnit end-state checks"\n'
	'\tdepends on KUNIT=y && AUTOFS_FS=y\n')


def write_source(root: Path, sublevel: int = 118) -> Dict[str, str]:
	"""Write the fake source under root; return {relative path: text}."""
	files = {}
	for rel, text in FAKE_SOURCE.items():
		if rel == 'Makefile':
			text = text.format(sublevel=sublevel)
		p = root / rel
		p.parent.mkdir(parents=True, exist_ok=True)
		p.write_text(text)
		files[rel] = text
	(root / 'scripts/checkpatch.pl').chmod(0o755)
	return files


def make_tarball(where: Path, sublevel: int = 118, top: str = 'linux-source-6.12') -> Path:
	"""linux-source-6.12.tar.xz with one top-level directory, like Debian's."""
	stage = where / 'stage'
	write_source(stage / top, sublevel)
	tarball = where / 'linux-source-6.12.tar.xz'
	with tarfile.open(tarball, 'w:xz') as tf:
		tf.add(stage / top, arcname=top)
	os.utime(tarball, (TARBALL_MTIME, TARBALL_MTIME))
	shutil.rmtree(stage)
	return tarball


@pytest.fixture(scope='session')
def source_tarball(tmp_path_factory) -> Path:
	return make_tarball(tmp_path_factory.mktemp('debian-source'))


@pytest.fixture
def make_source_tarball(tmp_path):
	"""Factory for odd tarballs (wrong version, ...)."""
	n = [0]

	def make(**kw) -> Path:
		n[0] += 1
		d = tmp_path / f'tarball-{n[0]}'
		d.mkdir()
		return make_tarball(d, **kw)
	return make


# ------------------------------------------------------------------- git


AUTHOR = {'GIT_AUTHOR_NAME': 'Ada Tester', 'GIT_AUTHOR_EMAIL': 'ada@example.org',
	  'GIT_COMMITTER_NAME': 'Ada Tester', 'GIT_COMMITTER_EMAIL': 'ada@example.org'}


def git(repo: Path, *args: str, env: Optional[Dict[str, str]] = None) -> str:
	"""Plain git, as a developer would run it in the work tree."""
	e = dict(os.environ, GIT_CONFIG_NOSYSTEM='1', GIT_CONFIG_GLOBAL=os.devnull, LC_ALL='C')
	e.update(AUTHOR)
	if env:
		e.update(env)
	proc = subprocess.run(['git', '-C', str(repo)] + list(args), capture_output=True,
			      text=True, env=e)
	if proc.returncode != 0:
		raise AssertionError(f'git {" ".join(args)} failed:\n{proc.stdout}{proc.stderr}')
	return proc.stdout


def commit(repo: Path, message: str, files: Optional[Dict[str, str]] = None,
	   delete: Iterable[str] = (), date: str = '2026-01-02T03:04:05+01:00',
	   author: Optional[Dict[str, str]] = None) -> str:
	"""Write files, delete others, `git add -f` and commit; return the new HEAD."""
	files = files or {}
	for rel, text in files.items():
		p = repo / rel
		p.parent.mkdir(parents=True, exist_ok=True)
		p.write_text(text)
	if files:
		git(repo, 'add', '-f', '--', *files)
	if delete:
		git(repo, 'rm', '-q', '--', *delete)
	env = {'GIT_AUTHOR_DATE': date, 'GIT_COMMITTER_DATE': date}
	env.update(author or {})
	git(repo, 'commit', '-q', '-m', message, env=env)
	return git(repo, 'rev-parse', 'HEAD').strip()


def read_data(name: str) -> str:
	return (DATA / name).read_text()


def in_threads(work: Callable[[int], None], n: int) -> None:
	"""work(0), ..., work(n - 1) in n threads at once, switching between
	them often (sys.setswitchinterval) so that races show."""
	interval = sys.getswitchinterval()
	sys.setswitchinterval(1e-5)
	try:
		threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
		for t in threads:
			t.start()
		for t in threads:
			t.join()
	finally:
		sys.setswitchinterval(interval)
