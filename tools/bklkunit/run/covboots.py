# SPDX-License-Identifier: GPL-2.0
"""The boots of `run --coverage` and where their counters go.

QEMU arches: every boot gets the initramfs (gcovinit.prepare: the
qemu_config given to kunit.py exec), its /init prints the counters after the
suites; take_dump() moves them out of console.log (into
coverage/<kind>/gcov-console.log, decoded under coverage/<kind>/gcda/), so
the console the verdict is read from is what the kernel printed.

UML: the UML process writes its .gcda files when it exits, each at its
object's path under $GCOV_PREFIX (libgcov): boot_env() points that at
coverage/<kind>/gcda/ (only the profiled directories are kept).

After the first boot, finish() boots once more with a filter glob that
matches no suite (scope.BOOT_ONLY_GLOB) and has covreport subtract it.
"""

import shutil
import time
from pathlib import Path
from typing import Dict, Optional, Tuple

from . import progress
from .plan import ArchPlan
from ..base import atomic
from ..coverage import gcovdump, gcovinit, measure, scope
from ..results.model import ArchResult

SUITES = 'suites'
BOOT = 'boot'


def cov_dir(p: ArchPlan) -> Path:
	return p.out / 'coverage'


def gcda_root(p: ArchPlan, kind: str) -> Path:
	return cov_dir(p) / kind / 'gcda'


def prepare(p: ArchPlan) -> None:
	"""Before the first boot: the initramfs and qemu_config of a QEMU arch."""
	cov_dir(p).mkdir(parents=True, exist_ok=True)
	if scope.uses_console(p.arch):
		p.qemu_config = gcovinit.prepare(p.ktree, p.arch, p.build_dir).qemu_config


def boot_env(p: ArchPlan, env: Dict[str, str], kind: str) -> Dict[str, str]:
	"""The environment of a boot: UML's libgcov writes under GCOV_PREFIX
	(a scratch directory in the build directory; take_files keeps ours)."""
	if scope.uses_console(p.arch):
		return env
	scratch = p.build_dir / 'bkl-coverage' / f'gcda-{kind}'
	if scratch.exists():
		shutil.rmtree(scratch)
	scratch.mkdir(parents=True)
	return dict(env, GCOV_PREFIX=str(scratch))


def take_dump(p: ArchPlan, console: Path, kind: str) -> gcovdump.Dump:
	"""The counters a QEMU guest printed, out of its console: console keeps
	every other line, coverage/<kind>/gcov-console.log the dump's own."""
	lines = console.read_text(errors='replace').splitlines(keepends=True)
	d = gcovdump.read(lines)
	where = cov_dir(p) / kind
	where.mkdir(parents=True, exist_ok=True)
	atomic.write_text(where / 'gcov-console.log', ''.join(d.lines))
	if d.lines:
		atomic.write_text(console, ''.join(d.console))
	root = gcda_root(p, kind)
	if root.exists():
		shutil.rmtree(root)
	gcovdump.write_files(d, root)
	return d


def take_files(p: ArchPlan, kind: str) -> int:
	"""UML: the .gcda files of the profiled directories from GCOV_PREFIX's
	scratch directory; the rest (the whole kernel is built with
	-fprofile-arcs under CONFIG_GCOV) is removed."""
	scratch = p.build_dir / 'bkl-coverage' / f'gcda-{kind}'
	root = gcda_root(p, kind)
	if root.exists():
		shutil.rmtree(root)
	n = 0
	for f in scratch.rglob('*.gcda'):
		rel = measure.build_relative(f.relative_to(scratch), p.build_dir)
		if rel is None:
			continue
		dest = root / rel
		dest.parent.mkdir(parents=True, exist_ok=True)
		shutil.move(str(f), dest)
		n += 1
	shutil.rmtree(scratch, ignore_errors=True)
	return n


def after_boot(p: ArchPlan, console: Path, kind: str) -> str:
	"""The counters of a boot taken; '' or why there are none."""
	if scope.uses_console(p.arch):
		d = take_dump(p, console, kind)
		if not d.begun:
			return (f'the {kind} boot printed no counters (no "{gcovdump.MARK}BEGIN": '
				'the guest did not reach /init)')
		if d.problems:
			return f'the counters of the {kind} boot are damaged: ' + '; '.join(d.problems[:3])
		return ''
	if take_files(p, kind) == 0:
		return (f'the {kind} boot left no .gcda file of {", ".join(scope.DIRS)} '
			'(UML writes them when it exits)')
	return ''


def finish(p: ArchPlan, res: ArchResult, env: Dict[str, str],
	   first_boot_problem: Optional[str]) -> None:
	"""After the first boot: the boot that runs no suite, the report, and
	res.coverage (its totals, or {'error': why})."""
	t0 = time.time()
	problem = first_boot_problem or ''
	seconds = 0.0
	if not problem:
		problem, seconds = boot_only(p, env)
	if not problem:
		try:
			doc = measure.arch_coverage(p.arch, cov_dir(p), p.build_dir, p.ktree,
					       gcda_root(p, SUITES), gcda_root(p, BOOT))
			res.coverage = measure.entry(doc)
		except measure.CoverageError as e:
			problem = str(e)
	if problem:
		res.coverage = {'error': problem}
	res.coverage['seconds'] = round(time.time() - t0, 1)
	res.coverage['boot_only_seconds'] = round(seconds, 1)


def boot_only(p: ArchPlan, env: Dict[str, str]) -> Tuple[str, float]:
	"""The boot that runs no suite: '' or why its counters are missing, and
	its seconds."""
	o = p.options
	where = cov_dir(p) / BOOT
	where.mkdir(parents=True, exist_ok=True)
	console_src = p.build_dir / 'test.log'
	if console_src.exists():
		console_src.unlink()
	cmd = p.exec_command([scope.BOOT_ONLY_GLOB], timeout=o.suite_timeout)
	progress.say(p.name, 'coverage: the boot that runs no suite')
	t0 = time.time()
	progress.stream(cmd, where / 'kunit.log', boot_env(p, env, BOOT), o.verbose,
			f'{p.name} boot (no suite)', o.progress_interval,
			deadline=p.exec_deadline(o.suite_timeout))
	seconds = time.time() - t0
	console = where / 'console.log'
	if console_src.exists():
		shutil.copyfile(console_src, console)
	else:
		atomic.write_text(console, '')
	return after_boot(p, console, BOOT), seconds
