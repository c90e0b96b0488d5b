# SPDX-License-Identifier: GPL-2.0
"""Boots after the first one of an arch, in run_arch.

Crash re-runs: when the guest panicked or hung with KTAP on its console,
the suites the crash cut off never ran.  `kunit.py exec --list_tests` gives
the ordered suite list; each suite that did not appear in the first boot
runs in a boot of its own (kunit's filter_glob takes one glob), with
`--timeout=<--suite-timeout>`.  The results are merged (model.merge_boots):
the case that was running is crash, the rest of its suite missing (named
from the list: model.name_unreached), the later suites whatever their own
boots said.

Flakes (`--rerun-failures N`): each failed or crashed case runs again on its
own (filter_glob suite.case), up to N times; a case that passes in one of
them is FLAKY, reported as such, neither a pass nor a failure.

Files, in <results>/<arch>/: console.N.log, kunit.N.log and results.N.json
for boot N (the first boot keeps console.log, kunit.log, results.json);
console.list.log and kunit.list.log for the --list_tests boot; ktap.log is
the KTAP of every test boot, one after the other.  verdict.json "boots"
lists them (boot, purpose continue|rerun|list, filter, console, status,
started: when that kunit.py exec was started).
"""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import progress
from .plan import ArchPlan
from ..base import atomic
from ..results import kunit_tool, model, verdicts
from ..results.cases import parse_console
from ..results.model import (
	ArchResult, ArchStatus, ERROR, FAIL, MISS, PASS, SKIP, Suite, merge_boots,
	name_unreached, now, placeholder_suite, stopped_note)

# What kunit.py exec --list_tests prints for each test (its own filter).


@dataclass
class Booter:
	plan: ArchPlan            # the arch as its first boot ran it
	env: Dict[str, str]
	boots: List[Dict[str, Any]] = field(default_factory=list)
	seconds: float = 0.0
	started: str = ''         # when the last boot was started (model.now())
	listed: List[str] = field(default_factory=list)   # what list_tests found

	@property
	def ktree(self) -> Path:
		return self.plan.ktree

	@property
	def out(self) -> Path:
		return self.plan.out

	@property
	def shown(self) -> str:
		"""The arch as progress lines call it."""
		return self.plan.name

	def _exec(self, extra: List[str], name: str, label: str) -> Tuple[int, str, List[str]]:
		"""One kunit.py exec; (exit status, its output, the console).  When
		it was started is self.started."""
		o = self.plan.options
		cmd = self.plan.exec_command(extra, timeout=o.suite_timeout)
		src = self.plan.build_dir / 'test.log'
		if src.exists():
			src.unlink()
		t0 = time.time()
		self.started = now()
		rc = progress.stream(cmd, self.out / f'kunit.{name}.log', self.env, o.verbose,
				     f'{self.shown} {label}', o.progress_interval,
				     deadline=self.plan.exec_deadline(o.suite_timeout))
		self.seconds += time.time() - t0
		console = self.out / f'console.{name}.log'
		atomic.write_bytes(console, src.read_bytes() if src.exists() else b'')
		return (rc, (self.out / f'kunit.{name}.log').read_text(errors='replace'),
			console.read_text(errors='replace').splitlines(keepends=True))

	def list_tests(self, filter_glob: str) -> List[str]:
		"""suite.case of every test the kernel would run, in its order."""
		progress.say(self.shown, 'list tests')
		rc, output, _ = self._exec(['--list_tests'] + ([filter_glob] if filter_glob else []),
					   'list', 'list')
		# Only a listing kunit.py exec finished is believed: one killed past
		# its deadline may be cut short, and one it gave up on (its own
		# --timeout, a guest that panicked before listing: a traceback) lists
		# nothing the kernel said.  No list: no continuing boot, the suites
		# the crash cut off stay unrun (as their notes say).
		tests = self.listed = kunit_tool.listed_tests(output) if rc == 0 else []
		boot = {'boot': 'list', 'purpose': 'list', 'filter': filter_glob,
			'console': 'console.list.log', 'kunit_log': 'kunit.list.log',
			'exit': rc, 'tests': len(tests), 'started': self.started}
		if rc == progress.PAST_DEADLINE:
			boot['reason'] = self.killed('console.list.log')
		elif rc:
			boot['reason'] = (f'kunit.py exec --list_tests exited {rc}: its listing is not '
					  'read (kunit.list.log)')
		self.boots.append(boot)
		return tests

	def killed(self, console: str) -> str:
		"""Why a boot killed at its deadline is not believed (ArchPlan.exec_killed)."""
		return self.plan.exec_killed(self.plan.options.suite_timeout, console)

	def boot(self, glob: str, purpose: str) -> Tuple[List[Suite], verdicts.Verdict]:
		"""A test boot of just glob; its suites as cases.py reads them."""
		n = sum(1 for b in self.boots if isinstance(b.get('boot'), int)) + 2
		progress.say(self.shown, f'boot {n} ({purpose}): {glob}')
		rc, output, console = self._exec([f'--json={self.out / f"results.{n}.json"}', glob],
						 str(n), purpose)
		parsed = kunit_tool.documents(self.ktree, console)
		v = verdicts.judge(self.ktree, console, output, parsed, source=f'console.{n}.log')
		if rc == progress.PAST_DEADLINE:
			# A CRASH, never a pass, whatever its console shows.
			v.status = ArchStatus.CRASH
			v.reason = self.killed(f'console.{n}.log') + (f'\n{v.reason}' if v.reason else '')
		suites = parse_console(self.ktree, console, stopped_note(v.status, v.reason),
				       parsed=parsed)
		self.boots.append({'boot': n, 'purpose': purpose, 'filter': glob,
				   'console': f'console.{n}.log', 'kunit_log': f'kunit.{n}.log',
				   'exit': rc, 'status': v.status, 'reason': v.reason,
				   'started': self.started})
		log = self.out / 'ktap.log'
		atomic.write_text(log, (log.read_text(errors='replace') if log.is_file() else '')
				  + ''.join(l + '\n' for l in v.ktap))
		return suites, v


def _suites_in_order(tests: List[str]) -> List[str]:
	out: List[str] = []
	for t in tests:
		s = t.split('.', 1)[0]
		if s not in out:
			out.append(s)
	return out


def continue_after_crash(b: Booter, first: List[Suite]) -> List[List[Suite]]:
	"""Boot once per suite the crash kept from running; their suites."""
	if not any(placeholder_suite(s) for s in first):
		return []          # the crash was in the last suite: nothing was cut off
	glob = b.plan.options.filter_glob
	listed = _suites_in_order(b.list_tests(glob))
	seen = {s.name for s in first if not placeholder_suite(s)}
	case_glob = glob.split('.', 1)[1] if '.' in glob else ''
	later = []
	for suite in listed:
		if suite in seen:
			continue
		suites, _ = b.boot(f'{suite}.{case_glob}' if case_glob else suite, 'continue')
		later.append(suites)
	return later


def rerun_failures(b: Booter, suites: List[Suite], times: int) -> List[str]:
	"""Run each failed or crashed case again, up to times boots each; the
	rows (suite.case[/param]) that passed in one of them."""
	want: Dict[str, List[str]] = {}          # filter glob -> rows
	for s in suites:
		for c in s.cases:
			if c.status == FAIL or (c.status == ERROR and c.named and c.name):
				want.setdefault(f'{c.suite}.{c.name}' if c.name else c.suite,
						[]).append(c.row)
	flaky: List[str] = []
	for glob, rows in want.items():
		pending = list(rows)
		for _ in range(times):
			again, _ = b.boot(glob, 'rerun')
			if b.boots[-1]['exit'] == progress.PAST_DEADLINE:
				continue        # killed: what its console shows is not a pass
			got = model.case_map(again)
			for row in list(pending):
				if got.get(row) == model.Recorded.PASS:
					flaky.append(row)
					pending.remove(row)
			if not pending:
				break
	return sorted(flaky)


def after_first_boot(b: Booter, res: ArchResult, v: verdicts.Verdict,
		     first: Optional[List[Suite]] = None) -> None:
	"""Continue after a crash and re-run failures as the arguments ask;
	update res (a ArchResult) in place.  first: the first boot's
	console as run read it (kernel reports given to their cases), else it
	is read here."""
	if first is None:
		console = (b.out / 'console.log').read_text(errors='replace').splitlines()
		first = parse_console(b.ktree, console, stopped_note(res.status, res.reason))
	later: List[List[Suite]] = []
	if (res.status in (ArchStatus.CRASH, ArchStatus.TIMEOUT) and v.ktap
	    and b.plan.options.crash_rerun):
		later = continue_after_crash(b, first)
	merged = merge_boots(first, later)
	# As rundir.load_run names them: the cut-off cases from the list.
	name_unreached(merged, b.listed)
	flaky: List[str] = []
	times = b.plan.options.rerun_failures
	if times > 0 and res.status in (ArchStatus.FAIL, ArchStatus.CRASH, ArchStatus.TIMEOUT):
		flaky = rerun_failures(b, merged, times)
	res.boots = b.boots
	res.run_seconds = (res.run_seconds or 0.0) + b.seconds
	ran = [bt for bt in b.boots if bt['purpose'] == 'continue']
	for bt in b.boots:
		if bt['purpose'] == 'list' and bt.get('reason'):
			res.reason += (f'\nthe --list_tests boot: {bt["reason"]}; '
				       'the suites the crash cut off were not re-run')
		elif bt['purpose'] == 'list' and not bt['tests']:
			res.reason += ('\nkunit.py exec --list_tests listed nothing (see kunit.list.log): '
				       'the suites the crash cut off were not re-run')
	if not ran and not flaky:
		return
	res.flaky = flaky
	rows = [c for s in merged if not placeholder_suite(s) for c in s.cases]
	left = [c for c in rows if c.row not in flaky]
	res.passed = sum(c.status == PASS for c in left)
	res.failed = sum(c.status == FAIL for c in left)
	res.skipped = sum(c.status == SKIP for c in left)
	res.crashed = sum(c.status in (ERROR, MISS) for c in left)
	names = {FAIL: 'FAILURE', ERROR: 'TEST_CRASHED', MISS: 'TEST_CRASHED'}
	res.failures = [f'{c.row}: '
			+ (c.flagged if c.status == FAIL and c.flagged else names[c.status])
			for c in left if c.status in names]
	if ran:
		cut = [bt['filter'] for bt in ran]
		bad = [f'{bt["filter"]} {bt["status"]}' for bt in ran if bt['status'] != ArchStatus.PASS]
		res.reason += (f'\nre-ran {len(cut)} suite(s) the crash cut off, one boot each '
			       f'(console.2.log ...): ' + ', '.join(cut)
			       + (f'; not PASS: {", ".join(bad)}' if bad else ''))
	if flaky and not res.failures:
		was = res.status
		res.status = ArchStatus.FLAKY
		res.reason = (f'{len(flaky)} case(s) failed, then passed when run again '
			      f'(was {was}): ' + ', '.join(flaky)
			      + ('\n' + res.reason if res.reason else ''))
