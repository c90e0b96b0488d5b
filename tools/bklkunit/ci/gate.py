# SPDX-License-Identifier: GPL-2.0
"""`kunit.py test` (what `make test` and CI run): the tool's pytest suite,
the series checks and the KUnit suites on the CI arches, with one closing
line `N passed, N failed` over all of them.

What every change must pass, within half of CI's 90 minutes from an empty
cache on two cores (docs/series-checks.md#make-test): check-series with
every patch built in its lean configuration (tinyconfig with every suite
built in, at W=1: SERIES_ARGS) and every check
that reads the patches, go7007 on x86_64; and the series head's suites
booted on x86_64 and one 32-bit arch (CI_ARCHES, default profile).  The
rest of the matrix - the per-patch builds in the full configuration and
their boots, the modules check, go7007 and the builds on the other arches,
the profiles - is `make check-series`'s and `make test-profiles`'.

pytest and then the KUnit run on the CI arches run beside check-series,
one after the other in a thread of their own: pytest is one process on
one core while check-series' first steps (apply, checkpatch) use one core
too, and the run's cold builds, at a lower priority (RUN_NICE), take the
core check-series' per-patch builds leave idle while they walk the tree
and link (single-threaded).  Their output goes to pytest.log and
kunit.log; their closing lines are printed when check-series has ended
and they have."""

import argparse
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, FrozenSet, List, Optional, Tuple

from ..base import deps, paths
from ..base.errors import UserError
from ..results import rundir
from ..results.model import ArchStatus
from ..run import progress
from ..series.checkplan import BOOT_ARCH

KUNIT = [sys.executable, str(paths.REPO / 'tools' / 'kunit.py')]
CI_ARCHES = 'x86_64,arm'
# check-series in `make test`: everything but the boots, the modules check
# and the other arches' builds, every patch built in the lean configuration.
SERIES_ARGS = ['--build-config=lean', '--go7007-arch=x86_64',
	       '--checks=apply,checkpatch,fixes,maintainers,build,bkl-scan,go7007,mail']


def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('--arch', default=CI_ARCHES,
		       help=f'arches for the KUnit run of the series head (default: {CI_ARCHES})')
	p.add_argument('--skip', default='',
		       help='comma list of steps to leave out: pytest, series, kunit')


# The niceness of the KUnit run beside check-series: it gets what the
# series' builds and boots leave of the CPUs, so that it does not lengthen
# them (`nice`; the commands it runs in sessions of their own keep it:
# progress.stream gives their autogroups its niceness).
RUN_NICE = 10


def _run(cmd: List[str], log: Path, echo: bool = True, nice: int = 0) -> Tuple[int, str]:
	"""cmd's exit status and output, written to log (and to stdout with
	echo); started with `nice -n` when nice is given."""
	cmd = progress.niced(cmd, nice)
	print('$ ' + shlex.join(cmd) + ('' if echo else f'  (beside what follows; output: {log})'),
	      flush=True)
	proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
				errors='replace', cwd=paths.REPO)
	assert proc.stdout is not None
	out = []
	with open(log, 'w') as f:
		for line in proc.stdout:
			if echo:
				sys.stdout.write(line)
				sys.stdout.flush()
			f.write(line)
			out.append(line)
	return proc.wait(), ''.join(out)


Waiter = Callable[[], Tuple[int, str]]


def _beside(cmds: List[Tuple[List[str], Path, int]]) -> List[Waiter]:
	"""Each (cmd, log, nice) run by _run, one after the other, in a thread
	beside the caller, their output not echoed; returns one function per
	command, which waits for that command and gives what _run gave (a
	command that cannot be started or read gives status 1 and why, and the
	next one still runs: no waiter is left waiting)."""
	got: List[Tuple[int, str]] = [(1, 'the step did not run\n')] * len(cmds)
	done = [threading.Event() for _ in cmds]

	def chain() -> None:
		for i, (cmd, log, nice) in enumerate(cmds):
			try:
				got[i] = _run(cmd, log, echo=False, nice=nice)
			except Exception as e:      # the step's failure, not the chain's end
				got[i] = (1, f'{cmd[0]} could not be run: {type(e).__name__}: {e}\n')
			finally:
				done[i].set()

	threading.Thread(target=chain, daemon=True).start()

	def waiter(i: int) -> Waiter:
		def wait() -> Tuple[int, str]:
			done[i].wait()
			return got[i]
		return wait
	return [waiter(i) for i in range(len(cmds))]


# pytest's lines printed when it ran beside check-series: all of them when it
# failed (its failure report), else this many (its closing line).
PYTEST_TAIL = 3


def _print_beside(name: str, rc: int, out: str, tail: Optional[int]) -> None:
	"""What a step that ran beside the others printed: all of it when it
	failed or tail is None, else its last tail lines."""
	lines = out.splitlines(keepends=True)
	print(f'\n== {name} (ran beside the steps above)', flush=True)
	sys.stdout.write(''.join(lines if rc != 0 or tail is None else lines[-tail:]))
	sys.stdout.flush()


def _pytest_step(wait: Waiter) -> Tuple[str, int, int]:
	rc, out = wait()
	_print_beside('pytest', rc, out, PYTEST_TAIL)
	p, f = counts_from(out)
	if rc != 0 and f == 0:
		f = 1   # pytest died before its summary (or ran nothing)
	if rc == 5 or p + f == 0:
		f = max(f, 1)
	return ('pytest', p, f)


def _kunit_step(wait: Waiter, rdir: Path, arches: List[str]) -> Tuple[str, int, int]:
	"""The KUnit run's line, from its summary.json: every arch's cases,
	and a failure for an arch that did not pass with no case to blame."""
	rc, out = wait()
	_print_beside('kunit.py run', rc, out, None)
	p = f = 0
	try:
		summary = rundir.load_summary(rdir)      # checked: its format, its statuses
		for a in summary['arches']:
			if a['status'] == ArchStatus.SKIPPED_PROFILE:
				continue     # the profile does not exist there: no verdict
			p += a['passed']
			f += a['failed'] + a['crashed']
			if a['status'] != ArchStatus.PASS and a['failed'] + a['crashed'] == 0:
				f += 1   # a build failure, timeout or crash with no case to blame
	except (UserError, KeyError, TypeError):
		f += 1
	if rc != 0 and f == 0:
		f = 1
	return (f'KUnit cases ({",".join(arches)})', p, f)


def counts_from(output: str) -> Tuple[int, int]:
	"""(passed, failed) from pytest's or our own closing line."""
	passed = failed = 0
	tail = output.strip().splitlines()[-5:]
	for line in reversed(tail):
		p = re.search(r'(\d+) passed', line)
		f = re.search(r'(\d+) (failed|error)', line)
		if p or f:
			passed = int(p.group(1)) if p else 0
			failed = sum(int(n) for n, _ in re.findall(r'(\d+) (failed|errors?)\b', line))
			return passed, failed
	return 0, 0


@dataclass(frozen=True)
class GateOptions:
	"""`test`'s command line, read once (from_args)."""
	skip: FrozenSet[str]
	cache: Path
	arch: str                    # the CI arches, as given
	allow_install: bool = True   # not --no-install

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'GateOptions':
		return cls(frozenset(s.strip() for s in args.skip.split(',') if s.strip()),
			   paths.cache_dir(args.cache_dir), args.arch, not args.no_install)


def main(o: GateOptions) -> int:
	"""`test` (cli.py reads its command line into o)."""
	skip, cache = o.skip, o.cache
	logdir = cache / 'test-logs' / time.strftime('%Y%m%d-%H%M%S')
	logdir.mkdir(parents=True, exist_ok=True)
	arches = paths.parse_arches(o.arch)
	deps.ensure(deps.for_arches(arches + [BOOT_ARCH, 'arm64']) + deps.TEST_PACKAGES,
		    allow_install=o.allow_install)
	common = ['--cache-dir', str(cache)] + ([] if o.allow_install else ['--no-install'])
	total_p = total_f = 0
	steps = []

	# The pytest suite reads the prepared tree's own kunit_tool parser, so the
	# tree is prepared first (a no-op when it is up to date); on a fresh
	# machine pytest would otherwise error on every parser test.
	rc, _ = _run(KUNIT + ['prepare'] + common, logdir / 'prepare.log')
	if rc != 0:
		steps.append(('prepare', 0, 1))

	beside: List[Tuple[List[str], Path, int]] = []
	if 'pytest' not in skip:
		beside.append(([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
				'tools/tests'], logdir / 'pytest.log', 0))
	rdir = logdir / 'kunit'
	if 'kunit' not in skip:
		beside.append((KUNIT + ['run', f'--arch={",".join(arches)}', '--results-dir',
					str(rdir)] + common, logdir / 'kunit.log', RUN_NICE))
	waits = _beside(beside) if beside else []
	pytest = waits.pop(0) if 'pytest' not in skip else None
	kunit = waits.pop(0) if 'kunit' not in skip else None

	if 'series' not in skip:
		rc, out = _run(KUNIT + ['check-series'] + SERIES_ARGS + common, logdir / 'series.log')
		p, f = counts_from(out)
		if rc != 0 and f == 0:
			f = 1
		steps.append(('series checks', p, f))
	if pytest is not None:
		steps.insert(1 if steps and steps[0][0] == 'prepare' else 0, _pytest_step(pytest))
	if kunit is not None:
		steps.append(_kunit_step(kunit, rdir, arches))

	print('\nSummary')
	for name, p, f in steps:
		total_p += p
		total_f += f
		print(f'  {name:<28} {p:5d} passed, {f:3d} failed')
	print(f'Logs: {logdir}')
	print(f'{total_p} passed, {total_f} failed')
	return 1 if total_f else 0
