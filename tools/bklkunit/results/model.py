# SPDX-License-Identifier: GPL-2.0
"""The result model: one vocabulary of statuses, and the cases of an arch.

Three vocabularies, each one str enum (so JSON, JUnit, KCIDB and HTML get the
same text they always did):

  ArchStatus  what happened to an arch: PASS, FAIL, FLAKY, CRASH, TIMEOUT,
              NO_TESTS, BUILD_FAILED, CONFIG_FAILED, SKIPPED_PROFILE, and
              ERROR (the runner's own trouble) / NOT_RUN (never got to it)
  Outcome     what happened to a case, in KCIDB's names: PASS, FAIL, SKIP,
              ERROR (running when the guest crashed or hung, or never printed
              its result) and MISS (announced by a plan but never reached)
  Recorded    a case as a baseline records it (and `ab` labels it): pass,
              fail, skip, crash, missing, flaky

Case and Suite are an arch's cases as read from its consoles; ArchResult is
one arch of a run: what `run` found (verdict.json) and, read back, its cases.

Wall-clock times (when a run, a build, a boot started) are recorded as RFC
3339 text with the local UTC offset (now()) and read back by parse_time(),
which takes nothing without an offset: a time it cannot place is no time.
"""

import copy
import enum
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple


class ArchStatus(enum.StrEnum):
	"""The status of one arch of a run (summary.json, verdict.json)."""
	PASS = 'PASS'
	FAIL = 'FAIL'
	FLAKY = 'FLAKY'                  # --rerun-failures: every failed case passed alone
	CRASH = 'CRASH'
	TIMEOUT = 'TIMEOUT'
	NO_TESTS = 'NO_TESTS'
	BUILD_FAILED = 'BUILD_FAILED'
	CONFIG_FAILED = 'CONFIG_FAILED'
	SKIPPED_PROFILE = 'SKIPPED_PROFILE'
	ERROR = 'ERROR'                  # the runner's own trouble (an exception)
	NOT_RUN = 'NOT_RUN'


DEFAULT_PROFILE = 'default'       # profiles.DEFAULT


def slot_name(arch: str, profile: str) -> str:
	"""An arch x profile's subdirectory of a merged results directory
	(and its name in the reports): <arch> for the default profile, the one
	the baselines record; <arch>-<profile> for the others."""
	return arch if profile in ('', DEFAULT_PROFILE) else f'{arch}-{profile}'


class Outcome(enum.StrEnum):
	"""The result of one case (or parameter), in KCIDB's names."""
	PASS = 'PASS'
	FAIL = 'FAIL'
	SKIP = 'SKIP'
	ERROR = 'ERROR'
	MISS = 'MISS'


class Recorded(enum.StrEnum):
	"""A case's result as a baseline (kunit/baselines/<arch>.json) records it."""
	PASS = 'pass'
	FAIL = 'fail'
	SKIP = 'skip'
	CRASH = 'crash'
	MISSING = 'missing'
	FLAKY = 'flaky'


# An Outcome as a baseline records it.
RECORDED: Dict[str, Recorded] = {
	Outcome.PASS: Recorded.PASS, Outcome.FAIL: Recorded.FAIL, Outcome.SKIP: Recorded.SKIP,
	Outcome.ERROR: Recorded.CRASH, Outcome.MISS: Recorded.MISSING}

PASS, FAIL, SKIP, ERROR, MISS = (Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR,
				 Outcome.MISS)

# Arch statuses for which the kernel was built.
BUILT: FrozenSet[str] = frozenset({ArchStatus.PASS, ArchStatus.FAIL, ArchStatus.CRASH,
				   ArchStatus.TIMEOUT, ArchStatus.NO_TESTS})
NOT_BUILT: FrozenSet[str] = frozenset({ArchStatus.BUILD_FAILED, ArchStatus.CONFIG_FAILED})
# Arch statuses that say the guest ran to the end of its KTAP plan: the
# console must show that complete plan, with at least the cases counted.
RAN_TO_THE_END: FrozenSet[str] = frozenset({ArchStatus.PASS, ArchStatus.FAIL,
					    ArchStatus.FLAKY, ArchStatus.NO_TESTS})
# Arch statuses that say the guest stopped before its end: the case that was
# running then is told why (stopped_note).
STOPPED: FrozenSet[str] = frozenset({ArchStatus.CRASH, ArchStatus.TIMEOUT, ArchStatus.ERROR})
# The arch status as one KCIDB status, for the "kunit" test of each build.
ARCH_TO_KCIDB: Dict[str, Outcome] = {
	ArchStatus.PASS: PASS, ArchStatus.FAIL: FAIL, ArchStatus.CRASH: ERROR,
	ArchStatus.TIMEOUT: ERROR, ArchStatus.ERROR: ERROR, ArchStatus.NO_TESTS: MISS,
	ArchStatus.SKIPPED_PROFILE: SKIP,
	ArchStatus.FLAKY: FAIL}   # run --rerun-failures: failed, then passed alone


def stopped_note(status: str, reason: str) -> str:
	"""Why the guest stopped, for the case that was running then ('' when it
	did not stop early): the first line of 'STATUS: reason', at most 300
	characters."""
	if status not in STOPPED:
		return ''
	return f'{status}: {reason}'.split('\n')[0][:300]


def now() -> str:
	"""This moment as recorded in summary.json and verdict.json: RFC 3339,
	milliseconds, the local UTC offset ('2026-12-05T09:41:07.123+01:00')."""
	return datetime.now().astimezone().isoformat(timespec='milliseconds')


def parse_time(v: Any) -> Optional[datetime]:
	"""A recorded time (now()'s text) as an aware datetime; None for
	anything else: missing (results written before times were recorded),
	not text, not a time, or without a UTC offset."""
	if not isinstance(v, str) or not v:
		return None
	try:
		t = datetime.fromisoformat(v)
	except ValueError:
		return None
	return t if t.tzinfo is not None and t.utcoffset() is not None else None


def rfc3339(t: datetime) -> str:
	"""An aware datetime as KCIDB wants it: RFC 3339 in UTC, microseconds
	('2026-12-05T08:41:07.123000+00:00')."""
	return t.astimezone(timezone.utc).isoformat(timespec='microseconds')


def at_clock(started: Optional[datetime], clock: Optional[float]) -> Optional[datetime]:
	"""The wall-clock moment of a printk time: a boot's start plus the
	guest's seconds since it booted (None when either is unknown)."""
	if started is None or clock is None:
		return None
	return started + timedelta(seconds=clock)


@dataclass
class Case:
	"""One result row: a case, one parameter of a case, or a suite that
	has no cases of its own (its init failed, or it never started)."""
	suite: str
	name: str = ''                  # '' for a suite-level row
	params: Tuple[str, ...] = ()    # parameter descriptions, outermost first
	status: Outcome = Outcome.PASS
	message: str = ''               # SKIP reason; what ERROR/MISS means here
	diagnostics: List[str] = field(default_factory=list)
	duration: Optional[float] = None
	# The printk time (guest seconds) its duration counts from: the line it
	# starts after (cases.py); start_time is that moment on the wall
	# clock, the boot's start plus clock (rundir.py; None when not known).
	clock: Optional[float] = None
	start_time: Optional[datetime] = None
	named: bool = True              # False: the name stands for a plan position
	position: int = 0               # its case's place in the suite's plan (0: not known)
	kind: str = ''                  # JUnit error/failure type when not the default
	running: bool = False           # ERROR: it was running when the guest stopped
	span: Optional[Tuple[int, int]] = None   # console lines: starts after [0], result at [1]
	reports: List[Any] = field(default_factory=list)   # kernel_reports.Report printed while it ran
	flagged: str = ''               # why kernel_reports.py failed it: 'KASAN report', ...

	@property
	def label(self) -> str:
		"""The JUnit testcase name: case, case/param, or the suite name."""
		return '/'.join((self.name or self.suite,) + self.params)

	@property
	def row(self) -> str:
		"""suite.case/param, the row of the HTML matrix."""
		return f'{self.suite}.{self.label}' if self.name else self.suite

	def summary(self) -> str:
		"""One line saying why it is not a pass."""
		if self.flagged and self.message and self.status == FAIL:
			return self.message      # a kernel report, or one expected and not seen
		if self.status in (ERROR, MISS) and self.message:
			return self.message
		for line in self.diagnostics:
			if line.strip().startswith('#'):
				return line.strip()
		for line in self.diagnostics:
			if line.strip():
				return line.strip()
		return self.message or {FAIL: 'not ok', ERROR: 'no result', MISS: 'not run'}.get(
			self.status, '')


@dataclass
class Suite:
	name: str
	cases: List[Case] = field(default_factory=list)
	duration: Optional[float] = None
	clock: Optional[float] = None           # printk time of its header, as Case.clock
	start_time: Optional[datetime] = None
	planned: Optional[int] = None           # the count of its plan (1..N), None without one


# ------------------------------------------------------ the boots of an arch


def placeholder_suite(s: Suite) -> bool:
	"""A suite the top-level plan announced but that never started."""
	return (len(s.cases) == 1 and not s.cases[0].named and not s.cases[0].name
		and s.cases[0].status == MISS)


def merge_boots(first: Sequence[Suite],
		later: Iterable[Sequence[Suite]]) -> List[Suite]:
	"""The first boot's suites with the never-started ones replaced by the
	suites later boots ran (in their order).  A suite a later boot ran again
	takes that boot's result."""
	later_suites = [s for suites in later for s in suites if not placeholder_suite(s)]
	if not later_suites:
		return list(first)
	again = {s.name for s in later_suites}
	out = [s for s in first if not placeholder_suite(s) and s.name not in again]
	return out + later_suites


def unreached(c: Case) -> bool:
	"""A case row its suite's plan announced, never reached, known only by
	its position (cases.py names it case<N>, its parameters param<N>)."""
	return c.status == MISS and not c.named and bool(c.name) and c.position > 0


def name_unreached(suites: Iterable[Suite], listed: Sequence[str]) -> int:
	"""Name the unreached cases of each suite from `kunit.py exec
	--list_tests` (listed: suite.case in the kernel's order, for the filter
	that ran; laterboots.py boots it after a crash): the Nth case listed for a
	suite is the case at position N of its plan.  A suite is left as it is
	(positional names) unless the list has exactly as many cases of it as
	its plan announced and every case it did report has its listed name at
	its position: the list never guesses.  A parameterised case is one list
	entry (its parameters are not listed): unreached, it is one row,
	suite.case; the parameters a case crashed inside never reached stay
	param<N>.  Returns how many rows were named."""
	by_suite: Dict[str, List[str]] = {}
	for t in listed:
		suite, _, case = t.partition('.')
		by_suite.setdefault(suite, []).append(case)
	done = 0
	for s in suites:
		names = by_suite.get(s.name)
		todo = [c for c in s.cases if unreached(c) and not c.params]
		if not todo or not names or s.planned != len(names):
			continue
		known = {c.position: c.name for c in s.cases if c.named and c.name and c.position}
		if any(names[m - 1] != n for m, n in known.items() if m <= len(names)):
			continue
		if any(c.position > len(names) or names[c.position - 1] in known.values()
		       for c in todo):
			continue
		for c in todo:
			c.name, c.named = names[c.position - 1], True
			done += 1
	return done


def case_map(suites: Iterable[Suite], flaky: Iterable[str] = ()) -> Dict[str, str]:
	"""{'suite.case[/param]': status}.  Rows known only by their position
	and never reached (suite_3, suite.case4) are left out: they have no name
	to compare by."""
	flaky = set(flaky)
	out: Dict[str, str] = {}
	for s in suites:
		for c in s.cases:
			if not c.named and c.status == MISS:
				continue
			out.setdefault(c.row, Recorded.FLAKY if c.row in flaky else RECORDED.get(c.status, Recorded.CRASH))
	return out


@dataclass
class ArchResult:
	"""One arch of a run, the one model of it: what `run` found over all its
	boots (the VERDICT_FIELDS: verdict.json, and the arch's entry in
	summary.json, recorded()), and what reading a results directory back
	adds to them (rundir.load_run: its cases over all its boots, its logs,
	whether the console bears the record out)."""
	arch: str
	status: str = ArchStatus.NOT_RUN   # PASS FAIL FLAKY CRASH TIMEOUT NO_TESTS BUILD_FAILED CONFIG_FAILED
				  # SKIPPED_PROFILE (the profile does not exist on this arch)
	reason: str = ''
	passed: int = 0
	failed: int = 0
	skipped: int = 0
	crashed: int = 0
	# None: read back from results that did not record it.
	build_seconds: Optional[float] = 0.0
	run_seconds: Optional[float] = 0.0
	failures: List[str] = field(default_factory=list)
	flaky: List[str] = field(default_factory=list)       # suite.case[/param] that passed again
	config_hash: str = ''     # sha256 of <build_dir>/.config after a successful build
	qemu: str = ''            # `qemu-system-<arch> --version`, first line
	boots: List[Dict[str, Any]] = field(default_factory=list)      # boots after the first (laterboots.py)
	profile: str = DEFAULT_PROFILE
	reports: List[Dict[str, Any]] = field(default_factory=list)    # kernel reports (kernel_reports.py)
	build_skipped: bool = False   # inputs unchanged since the last build (buildinputs.py)
	judge_seconds: float = 0.0    # after the boot: console, verdict, kernel reports
	# When `kunit.py build` and the first `kunit.py exec` were started (now()'s
	# text; '' when not run, or in results written before these were recorded).
	# Each boot after the first has its own "started" in boots.
	build_started: str = ''
	boot_started: str = ''
	# run --coverage: measure.entry() of the arch (totals, per subsystem and
	# file, the HTML), or {'error': why}; {} without --coverage.
	coverage: Dict[str, Any] = field(default_factory=dict)
	# ---- read back from a results directory (rundir.load_run), never recorded.
	built: bool = False
	suites: List[Suite] = field(default_factory=list)
	logs: Dict[str, str] = field(default_factory=dict)   # name -> path relative to rdir
	compiler: str = ''
	build_command: str = ''
	build_tail: str = ''
	# Set when the console does not bear out summary.json (damaged or
	# missing logs): why, and the status summary.json gave.  status is then
	# what the console shows (CRASH, or FAIL), never PASS.
	disagreement: str = ''
	recorded_status: str = ''
	# Its subdirectory of the results directory: <arch> in a run's, <arch>
	# or <arch>-<profile> in a merged one (slot_name).  '' : the arch's name.
	slot: str = ''

	def recorded(self) -> Dict[str, Any]:
		"""The VERDICT_FIELDS, in order: verdict.json, and the arch's entry
		in summary.json."""
		return {name: copy.deepcopy(getattr(self, name)) for name in VERDICT_FIELDS}

	@property
	def build_start(self) -> Optional[datetime]:
		"""When `kunit.py build` was started (None: not recorded)."""
		return parse_time(self.build_started)

	@property
	def boot_start(self) -> Optional[datetime]:
		"""When the first `kunit.py exec` was started (None: not recorded)."""
		return parse_time(self.boot_started)

	@property
	def name(self) -> str:
		"""Its name in every report: its subdirectory (the arch, or
		<arch>-<profile> in a merged results directory)."""
		return self.slot or self.arch

	@property
	def cases(self) -> List[Case]:
		return [c for s in self.suites for c in s.cases]

	def blamed(self) -> bool:
		"""Whether some case carries this arch's trouble."""
		return any(c.status in (FAIL, ERROR) for c in self.cases)

	@property
	def ok(self) -> bool:
		return self.status == ArchStatus.PASS

	@property
	def counted(self) -> bool:
		"""Whether it decides the exit status (a skipped profile does not)."""
		return self.status != ArchStatus.SKIPPED_PROFILE


# What `run` records of an arch (ArchResult.recorded: verdict.json and the
# arch's entry in summary.json), in this order: the fields before `built`.
VERDICT_FIELDS: Tuple[str, ...] = tuple(
	f.name for f in fields(ArchResult)[:[f.name for f in fields(ArchResult)].index('built')])
