# SPDX-License-Identifier: GPL-2.0
"""check-series' `boot` check: a patch's x86_64 build booted as it stands.

The build directory the per-patch build left is booted with the tree's own
`kunit.py exec` (plan.ArchPlan.exec_command, through runner.boot: the console
is read once by the project's result model, kernel reports included), with
the suites checkplan.boot_plan chose.  A crash, a hang (kunit.py's
--timeout), a failed case or a kernel report is a FAIL whose first line
names the patch.  A boot whose filter ran no suite passes only when the
build has none of the series' suites it asked for (the fixes come before
the tests): the .config is read for the *_KUNIT_TEST symbols the series has
added by then, in the subsystems the filter covers.

Each boot leaves its results directory (<cache>/series/boots/<patch>/, as
run's per-arch one) and a record (boots.json beside it): cases passed,
failed, skipped, seconds.

A boot runs beside the build of the next patch (checkseries): stage()
copies what `kunit.py exec` reads of a build directory (the kernel image
its qemu_configs/<arch>.py names, .config, .kunitconfig) into the boot's
own directory, so the next build can overwrite the build directory while
the guest runs.
"""

import enum
import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import checkplan
from .checkplan import BOOT_ARCH, BootPlan, SKIP_SLOW
from ..base import atomic
from ..base.errors import UserError
from ..results.model import ArchResult, ArchStatus
from ..run import profiles, runner
from ..run.plan import ArchPlan, RunOptions, build_env, kunitconfigs
from ..source import subsystems

# The profile of the per-patch build (PROFILE): the boot
# runs that kernel, so its exec options are that profile's.
PROFILE = 'faults'


class BootStatus(enum.StrEnum):
	PASS = 'PASS'
	NO_SUITE = 'NO_SUITE'          # passed: the build has no suite the filter asks for yet
	FAIL = 'FAIL'


@dataclass
class BootRecord:
	"""One patch's boot, as boots.json records it."""
	patch: str
	status: BootStatus
	suites: str                 # what ran: BootPlan.suites
	why: List[str] = field(default_factory=list)
	passed: int = 0
	failed: int = 0
	skipped: int = 0
	crashed: int = 0
	seconds: float = 0.0        # kunit.py exec, wall clock
	reason: str = ''            # one line for a FAIL, what NO_SUITE means
	failures: List[str] = field(default_factory=list)
	results: str = ''           # the boot's results directory

	@property
	def ok(self) -> bool:
		return self.status != BootStatus.FAIL

	def detail(self) -> str:
		"""The check's detail: the reason first (it names the patch), then
		what ran and what it gave."""
		counts = (f'{self.passed} passed, {self.failed} failed, {self.skipped} skipped'
			  + (f', {self.crashed} crashed' if self.crashed else ''))
		lines = [self.reason] if self.reason else []
		lines.append(f'{BOOT_ARCH}, {self.suites}: {counts}; results {self.results}')
		lines += [f'  {f}' for f in self.failures[:20]]
		return '\n'.join(lines)


def present(config_text: str, symbols: Dict[str, str], plan: BootPlan) -> List[str]:
	"""The series' suite symbols (test_symbols: {symbol: Kconfig file})
	a .config enables, of the subsystems plan's filter covers."""
	on = {l.split('=', 1)[0][len('CONFIG_'):] for l in config_text.splitlines()
	      if l.startswith('CONFIG_') and l.split('=', 1)[-1] in ('y', 'm')}
	out = []
	for sym, kconfig in sorted(symbols.items()):
		if sym not in on:
			continue
		if plan.glob and checkplan.suite_glob(subsystems.of_file(kconfig)) != plan.glob:
			continue
		out.append(sym)
	return out


def verdict(plan: BootPlan, res: ArchResult, enabled: Sequence[str]) -> BootRecord:
	"""What a boot (runner.boot's ArchResult) means for the patch: enabled
	is present()'s answer for its build."""
	rec = BootRecord(plan.patch, BootStatus.FAIL, plan.suites, list(plan.why), res.passed,
			 res.failed, res.skipped, res.crashed, round(res.run_seconds or 0.0, 1),
			 failures=list(res.failures))
	first = (res.reason or '').split('\n')[0]
	if res.status == ArchStatus.PASS:
		rec.status = BootStatus.PASS
		# A pass can carry a note (runner.boot: kunit.py exec misread the console).
		rec.reason = f'{plan.patch}: {first}' if first else ''
	elif res.status == ArchStatus.NO_TESTS and res.reports:
		rec.reason = (f'{plan.patch}: a kernel report outside any case: '
			      f'{res.reports[0].get("title", "")}'.rstrip(': '))
	elif res.status == ArchStatus.NO_TESTS and not enabled:
		rec.status = BootStatus.NO_SUITE
		rec.reason = ('no suite is present yet: the build enables none of the series\' '
			      'suites' + (f' matching \'{plan.glob}\'' if plan.glob else '')
			      + ' (it booted, and printed no kernel report)')
	elif res.status == ArchStatus.NO_TESTS:
		rec.reason = (f'{plan.patch}: the filter ran no suite, but the build enables '
			      f'{", ".join("CONFIG_" + s for s in enabled)}: is a suite not named '
			      'after its subsystem?')
	elif res.status == ArchStatus.FAIL and res.failed:
		rec.reason = (f'{plan.patch}: {res.failed} case(s) failed: '
			      + ', '.join(res.failures[:3]) + (' ...' if len(res.failures) > 3 else ''))
	else:
		rec.reason = f'{plan.patch}: {res.status}: {first or "no reason given"}'
	return rec


KERNEL_PATH_RE = re.compile(r"""kernel_path\s*=\s*['"]([^'"]+)['"]""")


def kernel_image(ktree: Path, arch: str) -> str:
	"""The kernel image of arch, relative to a build directory, as the
	tree's own kunit_tool boots it (qemu_configs/<arch>.py)."""
	cfg = ktree / 'tools' / 'testing' / 'kunit' / 'qemu_configs' / f'{arch}.py'
	try:
		m = KERNEL_PATH_RE.search(cfg.read_text())
	except OSError as e:
		raise UserError(f'cannot read the QEMU configuration of {arch}: {e}')
	if not m:
		raise UserError(f'{cfg}: no kernel_path=... for {arch}')
	return m.group(1)


def stage(ktree: Path, build_dir: Path, dest: Path, arch: str = BOOT_ARCH) -> Path:
	"""A directory `kunit.py exec --build_dir` can boot, with build_dir's
	kernel image, .config and .kunitconfig copied into it (dest, emptied
	first): the build directory is free for the next build at once."""
	image = kernel_image(ktree, arch)
	if dest.exists():
		shutil.rmtree(dest)
	if not (build_dir / image).is_file():
		raise UserError(f'{build_dir}: the build left no {image} to boot')
	(dest / image).parent.mkdir(parents=True)
	shutil.copyfile(build_dir / image, dest / image)
	for name in ('.config', '.kunitconfig'):
		if (build_dir / name).is_file():
			shutil.copyfile(build_dir / name, dest / name)
	return dest


def boot_patch(ktree: Path, build_dir: Path, out: Path, cache: Path, plan: BootPlan,
	       symbols: Dict[str, str], timeout: int, use_ccache: bool = True,
	       verbose: bool = False) -> BootRecord:
	"""Boot build_dir (the tree ktree, checked out at the patch, built
	there) with plan's suites into the results directory out."""
	prof = profiles.PROFILES[PROFILE]
	options = RunOptions(profile=prof, filter_glob=plan.glob, timeout=timeout,
			     use_ccache=use_ccache, verbose=verbose, crash_rerun=False,
			     attr_filter=SKIP_SLOW if plan.skip_slow else '')
	p = ArchPlan(ktree, BOOT_ARCH, build_dir, out, options,
		     kunitconfigs(BOOT_ARCH, [], PROFILE), tag=plan.patch[:4])
	res = runner.boot(p, ArchResult(BOOT_ARCH, profile=PROFILE), build_env(cache))
	config = build_dir / '.config'
	text = config.read_text(errors='replace') if config.is_file() else ''
	rec = verdict(plan, res, present(text, symbols, plan))
	rec.results = str(out)
	return rec


def write_records(path: Path, records: Sequence[BootRecord]) -> None:
	"""boots.json: every boot of a check-series run, in patch order."""
	atomic.write_text(path, json.dumps([asdict(r) for r in records], indent=1) + '\n')


def summary(records: Sequence[BootRecord]) -> Optional[str]:
	"""One line over a run's boots, or None without any."""
	if not records:
		return None
	total = sum(r.seconds for r in records)
	return (f'boots: {len(records)} patch(es), {sum(r.passed for r in records)} cases passed, '
		f'{sum(r.failed for r in records)} failed, {sum(r.skipped for r in records)} skipped; '
		f'{sum(1 for r in records if r.status == BootStatus.NO_SUITE)} with no suite yet; '
		f'{total:.0f} s of kunit.py exec')
