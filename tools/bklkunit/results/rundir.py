# SPDX-License-Identifier: GPL-2.0
"""A results directory of `kunit.py run` (or of a side of `ab`): written,
and read back and checked.

write_verdict and write_summary are the one writer of <arch>/verdict.json
and summary.json (runner.finish decides what goes in them).

summary.json and each arch's verdict.json, build.log and consoles (the
first boot's, and those of the boots that ran what a crash cut off) become
one ArchResult per arch (model.py), every console read by cases.py, the
cases a crash kept from running named from kunit.list.log when it has them
(model.name_unreached; else known by their position, suite.case<N>).  A
console that does not bear summary.json out wins: the arch is then what its
console shows (ArchResult.disagreement says why).  Each case's start_time is
its boot's recorded start plus its printk time (place_in_time); results
written before the starts were recorded load without them.
"""

import json
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, cast

from . import kunit_tool, verdicts
from .cases import parse_console
from .model import (
	ArchResult, ArchStatus, BUILT, DEFAULT_PROFILE, NOT_BUILT, RAN_TO_THE_END,
	Suite, at_clock, merge_boots, name_unreached, parse_time, stopped_note)
from ..base import atomic, paths
from ..base.errors import UserError

BANNER = re.compile(r'Linux version \S+ \([^)]*\) \((.*)\) #')
LOG_EXCERPT_MAX = 16384          # KCIDB v5.3 maxLength of every log_excerpt: a build's tail


# The version of what a results directory's summary.json, verdict.json and
# run.json hold ("format"): every reader refuses a newer one, and a file
# without one (written before it was recorded) reads as format 1.
FORMAT = 1
# Every arch status a results directory may hold: anything else is refused.
STATUSES = frozenset(s.value for s in ArchStatus)


def versioned(doc: Dict[str, Any]) -> Dict[str, Any]:
	"""doc as written: "format" first, then the rest as it was."""
	return dict({'format': FORMAT}, **{k: v for k, v in doc.items() if k != 'format'})


def version_problem(v: Any, current: int) -> str:
	"""What makes format version @v unreadable by a reader of format
	@current and older, or ''."""
	if isinstance(v, bool) or not isinstance(v, int) or v < 1:
		return f'"format" is not a version number ({v!r})'
	if v > current:
		return (f'format {v}, written by a newer kunit.py (this one reads format {current} '
			'and older)')
	return ''


def format_problem(doc: Dict[str, Any]) -> str:
	"""What makes a document's "format" unreadable here, or ''."""
	v = doc.get('format')
	return '' if v is None else version_problem(v, FORMAT)


def status_problem(status: Any) -> str:
	"""What is wrong with an arch's status, or '' for one of STATUSES."""
	if not isinstance(status, str) or not status:
		return 'no "status"'
	if status not in STATUSES:
		return (f'unknown status {status!r} (known: '
			f'{", ".join(s.value for s in ArchStatus)})')
	return ''


def write_verdict(rdir: Path, r: ArchResult) -> None:
	"""<rdir>/<arch>/verdict.json of one arch."""
	atomic.write_text(Path(rdir) / r.arch / 'verdict.json',
			  json.dumps(versioned(r.recorded()), indent=1) + '\n')


def summary_of(info: Dict[str, Any], results: Sequence[ArchResult], rdir: Path,
	       filter_glob: str, profile: str, started: str, **extra: Any) -> Dict[str, Any]:
	"""summary.json as `run` and each side of `ab` write it: the tree
	(info), every arch's verdict, where, the filter, the profile, when it
	started, and what else the caller records (extra)."""
	return dict(info, arches=[r.recorded() for r in results], results_dir=str(rdir),
		    filter_glob=filter_glob, profile=profile, started=started, **extra)


def write_summary(rdir: Path, summary: Dict[str, Any]) -> None:
	"""<rdir>/summary.json; summary gets the "format" it is written with."""
	summary['format'] = FORMAT
	atomic.write_text(Path(rdir) / 'summary.json', json.dumps(versioned(summary), indent=1) + '\n')


PLAN = 'run.json'


def write_plan(rdir: Path, info: Dict[str, Any], arches: Sequence[str], profile: str,
	       filter_glob: str, started: str) -> None:
	"""<rdir>/run.json, written when a run starts: its tree (info), the
	arches it is to run, its profile, filter and start.  A job that dies
	before summary.json leaves this and the verdicts of the arches it
	finished: `merge` reads them (the others are not a pass)."""
	atomic.write_text(Path(rdir) / PLAN, json.dumps(versioned(
		dict(info, arches=list(arches), profile=profile, filter_glob=filter_glob,
		     started=started)), indent=1) + '\n')


def entry_profile(summary: Dict[str, Any], entry: Dict[str, Any]) -> str:
	"""The profile an arch entry ran with: its own (a merged results
	directory has several), else the run's."""
	p = entry.get('profile') or summary.get('profile') or DEFAULT_PROFILE
	return str(p)


def entry_dir(entry: Dict[str, Any]) -> str:
	"""The subdirectory of an arch entry: its "dir" (a merged results
	directory: slot_name, <arch> or <arch>-<profile>), else its arch (a run's,
	whatever its profile)."""
	d = entry.get('dir')
	return d if isinstance(d, str) and d else str(entry.get('arch'))


def profiles_of(summary: Dict[str, Any]) -> List[str]:
	"""The profiles of a results directory's arches, in order."""
	out: List[str] = []
	for e in summary.get('arches', []) or []:
		if isinstance(e, dict):
			p = entry_profile(summary, e)
			if p not in out:
				out.append(p)
	return out


def _first_line(cmd: List[str]) -> str:
	if not shutil.which(cmd[0]):
		return ''
	try:
		proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
	except (OSError, subprocess.SubprocessError):
		return ''
	out = proc.stdout.strip().splitlines()
	return out[0].strip() if proc.returncode == 0 and out else ''


def probe_tools(arch: str) -> Dict[str, str]:
	"""The compiler and QEMU of an arch on this host (first --version line)."""
	a = paths.ARCHES.get(arch)
	out = {'compiler': _first_line([(a.cross_compile if a else '') + 'gcc', '--version'])}
	if a and a.qemu:
		out['qemu'] = _first_line([a.qemu, '--version'])
	return {k: v for k, v in out.items() if v}


def _banner_compiler(lines: Sequence[str]) -> str:
	"""'gcc (Debian 12.2.0-14+deb12u1) 12.2.0' from the kernel's own banner."""
	for line in lines[:400]:
		m = BANNER.search(line)
		if m:
			return m.group(1).split(', ')[0].strip()
	return ''


def _read(p: Path) -> str:
	try:
		return p.read_text(errors='replace')
	except OSError:
		return ''


def _tail(text: str, lines: int = 60, chars: int = LOG_EXCERPT_MAX) -> str:
	t = '\n'.join(text.rstrip().splitlines()[-lines:])
	return t[-chars:]


def _text(v: Any) -> str:
	"""A recorded time as text ('' for anything else): ArchResult.build_start
	and boot_start read it (model.parse_time)."""
	return v if isinstance(v, str) else ''


def _seconds(v: Any) -> Optional[float]:
	return round(float(v), 3) if isinstance(v, (int, float)) and v > 0 else None


# summary.json keys that are text when present, and per-arch counts.
SUMMARY_TEXT = ('tree', 'kernel_version', 'debian_version', 'series', 'series_hash', 'head',
		'filter_glob', 'profile', 'results_dir')
ENTRY_TEXT = ('reason', 'profile', 'dir')
ENTRY_COUNTS = ('passed', 'failed', 'skipped', 'crashed')
ARCH_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]*')


def _json(f: Path) -> Any:
	"""A JSON file, or a UserError naming it."""
	try:
		text = f.read_text()
	except OSError as e:
		raise UserError(f'{f}: cannot read it ({e.strerror})')
	except UnicodeError:
		raise UserError(f'{f}: not JSON (not even text)')
	try:
		return json.loads(text)
	except ValueError as e:
		raise UserError(f'{f}: not JSON ({e})')


def load_summary(rdir: Path) -> Dict[str, Any]:
	"""summary.json of a results directory, checked: an object of a format
	this tool reads, with a list of arches, each an object with an arch name
	and a known status.  Anything else is a UserError naming the file (never
	an AttributeError later).  A run that ended before its summary.json
	(killed, ^C, out of time, the machine down) is read from its run.json
	and verdicts (summary_of_unfinished)."""
	f = Path(rdir) / 'summary.json'
	if not f.is_file() and (Path(rdir) / PLAN).is_file():
		return summary_of_unfinished(rdir)
	if not f.exists():
		raise UserError(f'{f} not found (nor {PLAN}): is {rdir} a results directory of '
				'`kunit.py run`?')
	summary = _json(f)
	problem = summary_problem(summary)
	if problem:
		raise UserError(f'{f}: not a summary of `kunit.py run`: {problem}')
	return cast(Dict[str, Any], summary)


def load_plan(rdir: Path) -> Dict[str, Any]:
	"""<rdir>/run.json, checked: a UserError naming it unless it is what
	run writes (a list of arch names, a profile) in a format it reads."""
	f = Path(rdir) / PLAN
	plan = _json(f)
	if not isinstance(plan, dict):
		raise UserError(f'{f}: not what run writes (not an object)')
	problem = format_problem(plan)
	if problem:
		raise UserError(f'{f}: {problem}')
	arches, prof = plan.get('arches'), plan.get('profile') or DEFAULT_PROFILE
	if (not isinstance(arches, list) or not arches
	    or not all(isinstance(a, str) and ARCH_NAME.fullmatch(a) for a in arches)
	    or not isinstance(prof, str)):
		raise UserError(f'{f}: not what run writes (no list of arches, or no profile)')
	return plan


def read_verdict(adir: Path) -> Optional[Dict[str, Any]]:
	"""<adir>/verdict.json, checked (an object, a format this tool reads, a
	known status); None when there is none.  Anything else is a UserError
	naming the file."""
	f = Path(adir) / 'verdict.json'
	if not f.exists():
		return None
	v = _json(f)
	if not isinstance(v, dict):
		raise UserError(f'{f}: not a verdict (a JSON {type(v).__name__}, not an object)')
	problem = format_problem(v) or status_problem(v.get('status'))
	if problem:
		raise UserError(f'{f}: {problem}')
	return v


def unfinished_entry(arch: str, profile: str, adir: Path) -> Dict[str, Any]:
	"""An arch a run was to run and has no verdict of: it was running when
	the run ended (ERROR, "died": what its logs show is kept), or the run
	ended before it (NOT_RUN, no log of it there).  Never a pass."""
	counts = dict.fromkeys(ENTRY_COUNTS, 0)
	# Started: kunit.py build's log is made first (report's junit.xml in
	# the directory of an arch not reached does not count).
	if any((adir / n).is_file() for n in ('build.log', 'kunit.log', 'console.log')):
		return {'arch': arch, 'profile': profile, 'status': ArchStatus.ERROR.value,
			'reason': (f'the job ended before {arch} had a verdict (killed, out of time, '
				   f'or the runner died): no {adir.name}/verdict.json; what its logs '
				   'show is kept'),
			**counts, 'died': True}
	return {'arch': arch, 'profile': profile, 'status': ArchStatus.NOT_RUN.value,
		'reason': f'not reached: the run ended before it started {arch}', **counts}


def unfinished_entries(rdir: Path, plan: Dict[str, Any]) -> List[Dict[str, Any]]:
	"""One summary entry per arch of run.json: its verdict where it has one,
	else unfinished_entry."""
	prof = str(plan.get('profile') or DEFAULT_PROFILE)
	out = []
	for arch in plan['arches']:
		adir = Path(rdir) / arch
		v = read_verdict(adir)
		if v is not None and v.get('arch') == arch:
			out.append(dict({k: x for k, x in v.items() if k != 'format'}, profile=prof))
		else:
			out.append(unfinished_entry(arch, prof, adir))
	return out


def summary_of_unfinished(rdir: Path) -> Dict[str, Any]:
	"""The summary of a run that ended before it wrote summary.json, from
	its run.json (the tree, the arches it was to run) and the verdict.json
	of each arch it finished: the others are ERROR or NOT_RUN
	(unfinished_entry); "complete" is false.  Read, never written: the
	directory stays what a job that died leaves (`merge` reads it so)."""
	plan = load_plan(rdir)
	summary = dict({k: v for k, v in plan.items() if k != 'format'},
		       arches=unfinished_entries(rdir, plan), results_dir=str(rdir), complete=False)
	summary = versioned(summary)
	problem = summary_problem(summary)
	if problem:
		raise UserError(f'{Path(rdir) / PLAN}: {problem}')
	return summary


def summary_problem(summary: Any) -> str:
	"""What makes a loaded summary.json unusable, or ''."""
	if not isinstance(summary, dict):
		return f'a JSON {type(summary).__name__}, not an object'
	problem = format_problem(summary)
	if problem:
		return problem
	for k in SUMMARY_TEXT:
		if summary.get(k) is not None and not isinstance(summary[k], str):
			return f'"{k}" is not text'
	arches = summary.get('arches')
	if not isinstance(arches, list):
		return '"arches" is missing or not a list'
	if not arches:
		return 'it lists no arch (the run ended before any arch ran?)'
	seen = set()
	for n, e in enumerate(arches, 1):
		if not isinstance(e, dict):
			return f'arch entry {n} is not an object'
		arch = e.get('arch')
		if not isinstance(arch, str) or not ARCH_NAME.fullmatch(arch):
			return f'arch entry {n} has no usable "arch" name ({arch!r})'
		for k in ENTRY_TEXT:
			if e.get(k) is not None and not isinstance(e[k], str):
				return f'arch {arch}: "{k}" is not text'
		where = entry_dir(e)
		if not ARCH_NAME.fullmatch(where):
			return f'arch {arch}: "dir" is not a directory name ({where!r})'
		if where in seen:
			return f'arch {where} is listed twice'
		seen.add(where)
		problem = status_problem(e.get('status'))
		if problem:
			return f'arch {arch}: {problem}'
		for k in ENTRY_COUNTS:
			v = e.get(k, 0)
			if isinstance(v, bool) or not isinstance(v, int) or v < 0:
				return f'arch {arch}: "{k}" is not a count ({v!r})'
		if not isinstance(e.get('flaky', []) or [], list):
			return f'arch {arch}: "flaky" is not a list'
	return ''


def continuation_boots(adir: Path,
		       verdict: Dict[str, Any]) -> List[Tuple[Path, Optional[datetime]]]:
	"""The consoles of the boots that ran what a crash cut off, in order,
	each with when that boot was started (None in results from before it
	was recorded)."""
	boots = verdict.get('boots', []) or []
	return [(Path(adir) / b['console'], parse_time(b.get('started')))
		for b in (boots if isinstance(boots, list) else [])
		if isinstance(b, dict) and b.get('purpose') == 'continue'
		and isinstance(b.get('console'), str) and b['console']
		and '/' not in b['console'] and b['console'] not in ('.', '..')]


def continuation_consoles(adir: Path, verdict: Dict[str, Any]) -> List[Path]:
	"""The consoles of the boots that ran what a crash cut off, in order."""
	return [p for p, _ in continuation_boots(adir, verdict)]


LIST_LOG = 'kunit.list.log'      # kunit.py exec --list_tests, booted after a crash (laterboots.py)


def listed_tests(adir: Path) -> Optional[List[str]]:
	"""suite.case of every test <adir>/kunit.list.log names, in the
	kernel's order (for the filter the run had); None without that file."""
	p = Path(adir) / LIST_LOG
	if not p.is_file():
		return None
	return kunit_tool.listed_tests(_read(p))


def place_in_time(suites: Sequence[Suite], started: Optional[datetime]) -> None:
	"""Give each suite and case of one boot its wall-clock start_time: the
	boot's start plus its printk time (Case.clock).  Without either it
	has none."""
	for s in suites:
		s.start_time = at_clock(started, s.clock)
		for c in s.cases:
			c.start_time = at_clock(started, c.clock)


def judge_again(kernel_tree: Path, r: ArchResult, entry: Dict[str, Any], adir: Path,
		console: Sequence[str], source: str,
		parsed: Optional[kunit_tool.Documents] = None) -> Optional[Tuple[str, str]]:
	"""The arch judged from its console alone (verdicts.judge, as `run` judged
	it), against what summary.json says: (status, why) when they disagree,
	None when the console bears the summary out.

	A status of a run that went to its end (PASS, FAIL, FLAKY, NO_TESTS)
	needs a complete KTAP plan on the console; every status needs at least
	the case results summary.json counts (over the boots that continued
	after a crash, too); PASS needs a console without a failed case.  A
	disagreement is a CRASH (the console is incomplete: its missing cases
	are crashes or regressions), or a FAIL for failed cases under a PASS."""
	recorded = r.status
	said = f'summary.json says {recorded}, but '
	v = verdicts.judge(kernel_tree, [l + '\n' for l in console], _read(Path(adir) / 'kunit.log'),
		       parsed, source)
	later = continuation_consoles(adir, load_verdict(adir, entry))
	# (FLAKY after a crash: the crashed case passed again, later boots ran the rest.)
	if (recorded in RAN_TO_THE_END and v.status in (ArchStatus.CRASH, ArchStatus.TIMEOUT)
	    and not (recorded == ArchStatus.FLAKY and later)):
		return v.status, f'{said}{source}: {v.reason}'
	got = v.passed + v.failed + v.skipped
	for p in later:
		w = verdicts.judge(kernel_tree, [l + '\n' for l in _read(p).splitlines()], source=p.name)
		got += w.passed + w.failed + w.skipped
	want = sum(entry.get(k, 0) or 0 for k in ('passed', 'failed', 'skipped'))
	if got < want:
		where = source + (f' and {len(later)} later console(s) have' if later else ' has')
		return (ArchStatus.CRASH if recorded in RAN_TO_THE_END else recorded,
			f'{said}{where} {got} case result(s), summary.json counts {want}')
	if recorded == ArchStatus.PASS and v.status != ArchStatus.PASS:
		detail = f'{len(v.failures)} failed case(s)' if v.failures else v.reason or v.status
		return (ArchStatus.FAIL if v.status == ArchStatus.FAIL else ArchStatus.CRASH,
			f'{said}{source} shows {v.status}: {detail}')
	return None


def load_verdict(adir: Path, entry: Dict[str, Any]) -> Dict[str, Any]:
	"""<arch>/verdict.json (read_verdict: checked), or the arch's summary
	entry when there is none."""
	verdict = read_verdict(adir)
	return verdict if verdict is not None else dict(entry)


Loaded = Tuple[Dict[str, Any], List[ArchResult]]


def load_run(rdir: Path, kernel_tree: Path, environment: Optional[Dict[str, Dict[str, str]]] = None,
	     probe: bool = True, summary: Optional[Dict[str, Any]] = None) -> Loaded:
	"""summary.json and every arch of it, consoles parsed.  summary: the
	summary `run` is about to write (it is not read back from rdir then;
	the one returned is that object)."""
	rdir = Path(rdir)
	if summary is None:
		summary = load_summary(rdir)
	else:
		problem = summary_problem(summary)
		if problem:
			raise UserError(f'not a summary of `kunit.py run`: {problem}')
	environment = environment or {}
	runs = []
	for entry in summary.get('arches', []):
		arch = str(entry.get('arch', 'unknown'))
		slot = entry_dir(entry)
		adir = rdir / slot
		r = ArchResult(arch, str(entry.get('status', ArchStatus.ERROR)),
			       str(entry.get('reason', '') or ''), profile=entry_profile(summary, entry),
			       slot=slot)
		r.build_seconds = _seconds(entry.get('build_seconds'))
		r.run_seconds = _seconds(entry.get('run_seconds'))
		cov = entry.get('coverage')
		r.coverage = cov if isinstance(cov, dict) else {}
		verdict = load_verdict(adir, entry)
		# Older results have neither: no start times then.
		r.build_started = _text(entry.get('build_started') or verdict.get('build_started'))
		r.boot_started = _text(entry.get('boot_started') or verdict.get('boot_started'))
		for name in ('console.log', 'ktap.log', 'build.log', 'kunit.log', 'results.json',
			     'verdict.json'):
			if (adir / name).is_file():
				r.logs[name] = f'{slot}/{name}'
		# ERROR (the runner's own trouble) built if kunit.py exec was started.
		r.built = (r.status in BUILT
			   or (r.status not in NOT_BUILT and (adir / 'kunit.log').is_file()))
		build_log = _read(adir / 'build.log')
		first = build_log.splitlines()[0] if build_log else ''
		r.build_command = first[2:] if first.startswith('$ ') else ''
		if not r.built:
			r.build_tail = _tail(build_log)
		console: List[str] = []
		if r.built:
			source = 'console.log'
			console = _read(adir / 'console.log').splitlines()
			if not console:
				console = _read(adir / 'ktap.log').splitlines()
				source = 'ktap.log' if console else (
					'console.log is ' + ('empty' if (adir / 'console.log').is_file()
							     else 'missing')
					+ ' and there is no ktap.log')
			# One pass of the parser for the check and the cases.
			parsed = kunit_tool.documents(kernel_tree, console)
			judged = judge_again(kernel_tree, r, entry, adir, console, source, parsed)
			if judged:
				r.recorded_status, r.disagreement = r.status, judged[1]
				r.status = judged[0]
				r.reason = '\n'.join(x for x in (judged[1], r.reason) if x)
			# Every boot's cases: the first's, with the suites a crash cut off
			# as the boots after it ran them (laterboots.py), as verdict.json counts.
			first_boot = parse_console(kernel_tree, console, stopped_note(r.status, r.reason),
						   parsed=parsed)
			place_in_time(first_boot, r.boot_start)
			later = []
			for p, started in continuation_boots(adir, verdict):
				suites = parse_console(kernel_tree, _read(p).splitlines())
				place_in_time(suites, started)
				later.append(suites)
			r.suites = merge_boots(first_boot, later)
			# The cases a crash kept from running, named as the kernel
			# listed them (positional names where the list does not fit).
			name_unreached(r.suites, listed_tests(adir) or [])
		env = dict(environment.get(arch, {}))
		r.compiler = (env.get('compiler') or str(entry.get('compiler', '') or '')
			      or _banner_compiler(console))
		r.qemu = env.get('qemu') or str(entry.get('qemu', '') or '')
		if probe and (not r.compiler or not r.qemu):
			found = probe_tools(arch)
			r.compiler = r.compiler or found.get('compiler', '')
			r.qemu = r.qemu or found.get('qemu', '')
		runs.append(r)
	return summary, runs
