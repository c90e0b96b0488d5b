# SPDX-License-Identifier: GPL-2.0
"""Result exporters: JUnit XML, KCIDB v5.3 JSON and a static HTML page.

Everything is read back from a results directory that `kunit.py run` wrote
(summary.json and <arch>/console.log, build.log, ...) and written next to it:

  <rdir>/<arch>/junit.xml  one arch, for Jenkins or GitLab
  <rdir>/junit.xml         every arch
  <rdir>/kcidb.json        KCIDB v5.3: one checkout, one build per arch, one
                           test per case
  <rdir>/index.html        a test x arch matrix, self-contained

The consoles are read by the kernel tree's own kunit_parser (kunit_tool.py
loads it); nothing here parses KTAP by itself.  What the parser does not keep is
taken from the lines it consumed, which it hands over in order with their
console line numbers: the '# SKIP' reason of a result line and the printk
timestamps that give each case its duration.  Without timestamps there is
no duration, never a guessed one.

Case statuses use KCIDB's names: PASS, FAIL, SKIP, ERROR (the case that was
running when the guest crashed or hung, or that never printed its result)
and MISS (announced by a plan but never reached).
"""

import hashlib
import html
import json
import re
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import kunit_tool, ktap, paths
from .results import (ARCH_TO_KCIDB, BUILT, ERROR, FAIL, MISS, NOT_BUILT, PASS, RAN_TO_THE_END,
		      SKIP, ArchRun, ArchStatus, Case, Outcome, Suite, stopped_note)
from .errors import UserError

DEFAULT_ORIGIN = 'bkl_kunit'
TREE_NAME = 'debian-linux-source-6.12'
CONFIG_NAME = 'kunit-default'        # KCIDB config_name: kunit-<profile>
KCIDB_VERSION = {'major': 5, 'minor': 3}
LOG_EXCERPT_MAX = 16384          # KCIDB v5.3 maxLength of every log_excerpt

# printk's "[    1.234567] " (also "[    1.234567][    T1] " with the caller).
TIMESTAMP = re.compile(r'^\s*\[\s*(\d+\.\d+)\]')
# kunit_info()/kunit_err() print "# <case name>: ..." while a case runs.
CASE_MESSAGE = re.compile(r'^\s*# ([A-Za-z_][A-Za-z0-9_]*): ')
BANNER = re.compile(r'Linux version \S+ \([^)]*\) \((.*)\) #')
XML_BAD = re.compile('[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]')
PATH_BAD = re.compile(r'[^a-zA-Z0-9_-]')


# ------------------------------------------------- reading a console, with the parser


def _timestamps(lines: Sequence[str]) -> Dict[int, float]:
	"""Console line number (1-based, as extract_tap_lines counts) -> printk time."""
	out = {}
	for n, line in enumerate(lines, 1):
		m = TIMESTAMP.match(line)
		if m:
			out[n] = float(m.group(1))
	return out


def _dedent(log: Sequence[str]) -> List[str]:
	text = textwrap.dedent('\n'.join(l.rstrip() for l in log))
	return text.strip('\n').splitlines() if text.strip() else []


class _Reader:
	"""Turns parsed documents into Suites and Cases."""

	def __init__(self, parsed: kunit_tool.Documents, stamps: Dict[int, float], stopped: str):
		self.parsed, self.marks = parsed, parsed.marks
		self.stamps, self.stopped = stamps, stopped

	def placeholder(self, t) -> bool:
		"""A Test the parser made up for a subtest its plan announced."""
		return (not t.subtests and id(t) not in self.marks.header
			and id(t) not in self.marks.result)

	def duration(self, start: Optional[int], end: Optional[int]) -> Optional[float]:
		if start is None or end is None or start not in self.stamps or end not in self.stamps:
			return None
		d = self.stamps[end] - self.stamps[start]
		return round(d, 6) if d >= 0 else None

	def span(self, t) -> Optional[float]:
		end = self.marks.result.get(id(t), (None, ''))[0]
		start = self.marks.header.get(id(t), self.marks.start.get(id(t)))
		return self.duration(start, end)

	def leaf(self, t, suite: str, name: str, params: Tuple[str, ...]) -> Case:
		c = Case(suite, name, params, diagnostics=_dedent(t.log), duration=self.span(t))
		start = self.marks.start.get(id(t))
		if id(t) in self.marks.result and start is not None:
			c.span = (start, self.marks.result[id(t)][0])
		if id(t) not in self.marks.result:
			c.status = ERROR
			c.message = 'no result line: it did not finish' + self.stopped
			c.duration = None
		elif t.status.name == 'SUCCESS':
			c.status = PASS
		elif t.status.name == 'FAILURE':
			c.status = FAIL
		elif t.status.name in ('SKIPPED', 'NO_TESTS'):
			c.status = SKIP
			c.message = (self.parsed.skip_reason(self.marks.result[id(t)][1])
				     if t.status.name == 'SKIPPED' else 'no tests run')
		else:
			c.status = ERROR
			c.message = f'kunit_parser: {t.status.name}'
		return c

	def case(self, t, suite: str, params: Tuple[str, ...], out: List[Case]) -> None:
		"""A case and, when it is parameterised, one row per parameter."""
		name = params[0] if params else t.name
		if not t.subtests:
			out.append(self.leaf(t, suite, name, params[1:]))
			return
		for m, sub in enumerate(t.subtests, 1):
			if self.placeholder(sub):
				# KUnit prints no plan for parameters, but KTAP may.
				out.append(Case(suite, name, params[1:] + (f'param{m}',), status=MISS,
						named=False, diagnostics=_dedent(sub.log),
						message=f'never reached: subtest {m} of the plan 1..{t.expected_count}'))
				continue
			self.case(sub, suite, (params or (t.name,)) + (sub.name,), out)
		if id(t) not in self.marks.result:
			# Its header and some parameters were printed, its result not:
			# it was running (the parameter has no name yet).
			c = self.leaf(t, suite, name, params[1:])
			c.message = (f'running when the guest stopped, after {len(t.subtests)} '
				     'parameter(s)' + self.stopped)
			c.running = True
			out.append(c)

	def suite(self, t) -> Suite:
		s = Suite(t.name, duration=self.span(t))
		if not t.subtests and id(t) not in self.marks.header:
			# "not ok N suite" alone: its suite_init failed (Linux prints
			# "# failed to initialize (-N)" and no plan), or KTAP without cases.
			s.cases.append(self.leaf(t, t.name, '', ()))
			return s
		expected = t.expected_count
		made_up = []
		for m, sub in enumerate(t.subtests, 1):
			if self.placeholder(sub):
				# The plan announced it but its name was never printed: it
				# is known only by its position.
				c = Case(t.name, f'case{m}', status=MISS, named=False,
					 diagnostics=_dedent(sub.log),
					 message=f'never reached: case {m} of the plan 1..{expected}')
				s.cases.append(c)
				made_up.append(c)
			else:
				self.case(sub, t.name, (), s.cases)
		unfinished = id(t) not in self.marks.result
		if unfinished and made_up and not any(c.status == ERROR for c in s.cases):
			# The suite never printed its result: the first case it did not
			# report is the one that was running when the guest stopped.
			c = made_up[0]
			c.status, c.running = ERROR, True
			c.message = 'running when the guest stopped' + self.stopped
			for line in c.diagnostics:
				said = CASE_MESSAGE.match(line)
				taken = {x.name for x in s.cases}
				if said and said.group(1) != t.name and said.group(1) not in taken:
					# kunit printed "# <case>: ..." for it: that is its name.
					c.name, c.named = said.group(1), True
					break
		return s

	def document(self, doc, k: int) -> List[Suite]:
		out = []
		for n, t in enumerate(doc.subtests, 1):
			if self.placeholder(t):
				name = f'suite_{n}' if k == 1 else f'doc{k}_suite_{n}'
				out.append(Suite(name, [Case(name, '', status=MISS, named=False,
					message=f'never started: suite {n} of the plan 1..{doc.expected_count}')]))
			else:
				out.append(self.suite(t))
		return out


def parse_console(kernel_tree: Path, lines: Sequence[str], stopped: str = '',
		  attribute: bool = True) -> List[Suite]:
	"""The suites and cases of a console (or of a ktap.log), in order.

	stopped: why the guest stopped (e.g. 'TIMEOUT: guest killed after 300 s'),
	added to the message of the case that was running then.  attribute: a
	kernel report (lockdep, KASAN, WARN, ...) printed while a case ran fails
	that case (reports.py)."""
	return read_console(kernel_tree, lines, stopped, attribute)[0]


def read_console(kernel_tree: Path, lines: Sequence[str], stopped: str = '',
		 attribute: bool = True) -> Tuple[List[Suite], list]:
	"""parse_console, and the kernel reports that belong to no case."""
	from . import reports
	lines = [l.rstrip('\r\n') for l in lines]
	parsed = kunit_tool.documents(kernel_tree, lines)
	reader = _Reader(parsed, _timestamps(lines), f' ({stopped})' if stopped else '')
	suites: List[Suite] = []
	for k, doc in enumerate(parsed.docs, 1):
		suites.extend(reader.document(doc, k))
	strays: list = []
	if attribute:
		_, strays = reports.attach(suites, reports.find(lines), reports.ktap_start(lines))
	return suites, strays


# --------------------------------------------------------- a results directory


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


def _seconds(v: Any) -> Optional[float]:
	return round(float(v), 3) if isinstance(v, (int, float)) and v > 0 else None


# summary.json keys that are text when present, and per-arch counts.
SUMMARY_TEXT = ('tree', 'kernel_version', 'debian_version', 'series', 'series_hash', 'head',
		'filter_glob', 'profile', 'results_dir')
ENTRY_COUNTS = ('passed', 'failed', 'skipped', 'crashed')
ARCH_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]*')


def load_summary(rdir: Path) -> Dict[str, Any]:
	"""summary.json of a results directory, checked: an object with a list
	of arches, each an object with an arch name and a status.  Anything else
	is a UserError naming the file (never an AttributeError later)."""
	f = Path(rdir) / 'summary.json'
	try:
		text = f.read_text()
	except FileNotFoundError:
		raise UserError(f'{f} not found: is {rdir} a results directory of `kunit.py run`?')
	except OSError as e:
		raise UserError(f'{f}: cannot read it ({e.strerror})')
	except UnicodeError:
		raise UserError(f'{f}: not JSON (not even text)')
	try:
		summary = json.loads(text)
	except ValueError as e:
		raise UserError(f'{f}: not JSON ({e})')
	problem = summary_problem(summary)
	if problem:
		raise UserError(f'{f}: not a summary of `kunit.py run`: {problem}')
	return summary


def summary_problem(summary: Any) -> str:
	"""What makes a loaded summary.json unusable, or ''."""
	if not isinstance(summary, dict):
		return f'a JSON {type(summary).__name__}, not an object'
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
		if arch in seen:
			return f'arch {arch} is listed twice'
		seen.add(arch)
		if not isinstance(e.get('status'), str) or not e['status']:
			return f'arch {arch} has no "status"'
		if e.get('reason') is not None and not isinstance(e['reason'], str):
			return f'arch {arch}: "reason" is not text'
		for k in ENTRY_COUNTS:
			v = e.get(k, 0)
			if isinstance(v, bool) or not isinstance(v, int) or v < 0:
				return f'arch {arch}: "{k}" is not a count ({v!r})'
		if not isinstance(e.get('flaky', []) or [], list):
			return f'arch {arch}: "flaky" is not a list'
	return ''


def continuation_consoles(adir: Path, verdict: Dict[str, Any]) -> List[Path]:
	"""The consoles of the boots that ran what a crash cut off, in order."""
	boots = verdict.get('boots', []) or []
	return [Path(adir) / b['console'] for b in (boots if isinstance(boots, list) else [])
		if isinstance(b, dict) and b.get('purpose') == 'continue'
		and isinstance(b.get('console'), str) and b['console']
		and '/' not in b['console'] and b['console'] not in ('.', '..')]


def judge_again(kernel_tree: Path, r: 'ArchRun', entry: Dict[str, Any], adir: Path,
		console: Sequence[str], source: str) -> Optional[Tuple[str, str]]:
	"""The arch judged from its console alone (ktap.judge, as `run` judged
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
	v = ktap.judge(kernel_tree, [l + '\n' for l in console], _read(Path(adir) / 'kunit.log'))
	later = continuation_consoles(adir, load_verdict(adir, entry))
	# (FLAKY after a crash: the crashed case passed again, later boots ran the rest.)
	if (recorded in RAN_TO_THE_END and v.status in (ArchStatus.CRASH, ArchStatus.TIMEOUT)
	    and not (recorded == ArchStatus.FLAKY and later)):
		return v.status, f'{said}{source}: {v.reason}'
	got = v.passed + v.failed + v.skipped
	for p in later:
		w = ktap.judge(kernel_tree, [l + '\n' for l in _read(p).splitlines()])
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
	"""<arch>/verdict.json, or the arch's summary entry when it is missing
	or not an object."""
	try:
		verdict = json.loads((Path(adir) / 'verdict.json').read_text())
	except (OSError, ValueError):
		verdict = None
	return verdict if isinstance(verdict, dict) else dict(entry)


Loaded = Tuple[Dict[str, Any], List[ArchRun]]


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
		adir = rdir / arch
		r = ArchRun(arch, str(entry.get('status', ArchStatus.ERROR)), str(entry.get('reason', '') or ''))
		r.build_seconds = _seconds(entry.get('build_seconds'))
		r.run_seconds = _seconds(entry.get('run_seconds'))
		for name in ('console.log', 'ktap.log', 'build.log', 'kunit.log', 'results.json',
			     'verdict.json'):
			if (adir / name).is_file():
				r.logs[name] = f'{arch}/{name}'
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
			judged = judge_again(kernel_tree, r, entry, adir, console, source)
			if judged:
				r.recorded_status, r.disagreement = r.status, judged[1]
				r.status = judged[0]
				r.reason = '\n'.join(x for x in (judged[1], r.reason) if x)
			r.suites = parse_console(kernel_tree, console, stopped_note(r.status, r.reason))
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


# ------------------------------------------------------------------- JUnit


def _xml(s: str) -> str:
	return XML_BAD.sub('\ufffd', s)


def _attr(s: str, limit: int = 1000) -> str:
	s = _xml(s)
	return s if len(s) <= limit else s[:limit - 3] + '...'


def _fmt_time(t: float) -> str:
	return f'{t:.6f}'.rstrip('0').rstrip('.') if t else '0'


def _testsuite(parent: ET.Element, name: str, cases: List[Tuple[str, Case]],
	       duration: Optional[float], props: Dict[str, str]) -> Dict[str, int]:
	"""cases: (classname, case)."""
	n = {'tests': len(cases),
	     'failures': sum(c.status == FAIL for _, c in cases),
	     'errors': sum(c.status == ERROR for _, c in cases),
	     'skipped': sum(c.status in (SKIP, MISS) for _, c in cases)}
	ts = ET.SubElement(parent, 'testsuite', {'name': _attr(name),
						 **{k: str(v) for k, v in n.items()}})
	if duration is not None:
		ts.set('time', _fmt_time(duration))
	if props:
		pe = ET.SubElement(ts, 'properties')
		for k, v in props.items():
			ET.SubElement(pe, 'property', name=k, value=_attr(v))
	for classname, c in cases:
		tc = ET.SubElement(ts, 'testcase', classname=_attr(classname), name=_attr(c.label))
		if c.duration is not None:
			tc.set('time', _fmt_time(c.duration))
		text = _xml('\n'.join(c.diagnostics))
		if c.status == FAIL:
			el = ET.SubElement(tc, 'failure', message=_attr(c.summary()), type=c.kind or Outcome.FAIL)
			el.text = text
		elif c.status == ERROR:
			el = ET.SubElement(tc, 'error', message=_attr(c.summary()),
					   type=c.kind or ArchStatus.CRASH)
			el.text = text
		elif c.status == SKIP:
			ET.SubElement(tc, 'skipped', message=_attr(c.message))
		elif c.status == MISS:
			ET.SubElement(tc, 'skipped', message=_attr('not run: ' + c.message))
	return n


def _arch_problem(r: ArchRun) -> Optional[Case]:
	"""A testcase for an arch that is not PASS while no case says why:
	"build" when it did not build, "run" otherwise (no KTAP, a crash after
	the last case, a timeout, no tests)."""
	if r.status == ArchStatus.PASS or r.blamed():
		return None
	if r.status == ArchStatus.SKIPPED_PROFILE:
		return Case(r.arch, 'profile', status=SKIP, message=r.reason.split('\n')[0])
	name = 'run' if r.built else 'build'
	text = r.build_tail if not r.built and r.build_tail else r.reason
	c = Case(r.arch, name, status=ERROR, message=f'{r.status}: {r.reason}'.split('\n')[0],
		 diagnostics=text.splitlines(), kind=r.status)
	if r.status == ArchStatus.FAIL:
		c.status = FAIL
	return c


def junit_element(runs: List[ArchRun], summary: Dict[str, Any]) -> ET.Element:
	root = ET.Element('testsuites', name='bkl-kunit')
	totals = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
	for r in runs:
		props = {'arch': r.arch, 'arch_status': r.status}
		for k in ('kernel_version', 'debian_version', 'series_hash', 'profile'):
			if summary.get(k):
				props[k] = str(summary[k])
		if r.compiler:
			props['compiler'] = r.compiler
		if r.qemu:
			props['qemu'] = r.qemu
		problem = _arch_problem(r)
		if problem:
			n = _testsuite(root, r.arch, [(r.arch, problem)], None, props)
			for k in totals:
				totals[k] += n[k]
		for s in r.suites:
			cls = f'{r.arch}.{s.name}'
			n = _testsuite(root, cls, [(cls, c) for c in s.cases], s.duration, props)
			for k in totals:
				totals[k] += n[k]
	for k, v in totals.items():
		root.set(k, str(v))
	return root


def _write_xml(root: ET.Element, path: Path) -> None:
	ET.indent(root)
	path.parent.mkdir(parents=True, exist_ok=True)
	ET.ElementTree(root).write(path, encoding='utf-8', xml_declaration=True)


# ------------------------------------------------------------------- KCIDB


def path_part(s: str) -> str:
	"""One part of a KCIDB test path: [a-zA-Z0-9_-]+."""
	return PATH_BAD.sub('_', s) or '_'


def _clean(obj: Any) -> Any:
	"""No nulls, no NULs: what KCIDB refuses."""
	if isinstance(obj, dict):
		out = {k: _clean(v) for k, v in obj.items() if v is not None}
		return {k: v for k, v in out.items() if v != {}}
	if isinstance(obj, list):
		return [_clean(v) for v in obj if v is not None]
	if isinstance(obj, str):
		return obj.replace('\0', '')
	if isinstance(obj, Path):
		return str(obj)
	return obj


def _excerpt(lines: Sequence[str], tail: bool = False) -> Optional[str]:
	text = '\n'.join(lines).strip('\n')
	if not text:
		return None
	if len(text) > LOG_EXCERPT_MAX:
		text = text[-LOG_EXCERPT_MAX:] if tail else text[:LOG_EXCERPT_MAX]
	return text


def kcidb_patchset_hash(patches: Sequence[Path]) -> str:
	"""KCIDB's patchset_hash: sha256 over each patch's newline-terminated sha256
	(`sha256sum *.patch | cut -c-64 | sha256sum`)."""
	h = hashlib.sha256()
	for p in patches:
		h.update((hashlib.sha256(p.read_bytes()).hexdigest() + '\n').encode())
	return h.hexdigest()


def _patches(summary: Dict[str, Any], patch_dir: Path) -> Optional[List[Path]]:
	"""kernel-patches/, if it is still the series the run applied."""
	from . import tree
	try:
		patches = tree.read_series(patch_dir)
	except (UserError, OSError):
		return None
	if not patches or tree.series_hash(patches) != summary.get('series_hash'):
		return None
	return patches


def _run_id(rdir: Path, summary_text: str) -> str:
	name = re.sub(r'[^A-Za-z0-9_.-]', '_', Path(rdir).resolve().name)
	return f'{name}-{hashlib.sha256(summary_text.encode()).hexdigest()[:12]}'


def check_origin(origin: str) -> None:
	if not re.fullmatch(r'[a-z0-9_]+', origin):
		raise UserError(f'KCIDB origin {origin!r}: use lower-case letters, digits and _')


def kcidb_document(rdir: Path, summary: Dict[str, Any], runs: List[ArchRun],
		   origin: str = DEFAULT_ORIGIN, patch_dir: Path = paths.PATCH_DIR) -> Dict[str, Any]:
	check_origin(origin)
	run_id = _run_id(rdir, json.dumps(summary, sort_keys=True))
	checkout_id = f'{origin}:{run_id}'
	series = str(summary.get('series', '') or '')
	patches = _patches(summary, patch_dir) if series == 'applied' else None
	debver = summary.get('debian_version')
	checkout = {
		'id': checkout_id,
		'origin': origin,
		'tree_name': TREE_NAME if debver else None,
		'patchset_hash': kcidb_patchset_hash(patches) if patches else None,
		'comment': (f'Debian linux-source-6.12 {debver}' if debver else
			    f'Linux {summary.get("kernel_version") or "?"} from {summary.get("tree")}')
			   + f', series {series or "unknown"}',
		'valid': (series not in ('not applied', 'partly applied')) and any(r.built for r in runs),
		'misc': {
			'debian_version': debver,
			'kernel_version': summary.get('kernel_version'),
			'series': series or None,
			'series_hash': summary.get('series_hash'),
			'patches': [p.name for p in patches] if patches else None,
			'head': summary.get('head'),
			'filter_glob': summary.get('filter_glob') or None,
			'profile': summary.get('profile'),
		},
	}
	builds, tests = [], []
	profile = str(summary.get('profile') or 'default')
	config_name = CONFIG_NAME if profile == 'default' else f'kunit-{profile}'
	for r in runs:
		if r.status == ArchStatus.SKIPPED_PROFILE:
			continue      # nothing was built: the profile does not exist there
		build_id = f'{checkout_id}:{r.arch}'
		if r.built:
			bstatus = PASS
		elif r.status in NOT_BUILT:
			bstatus = FAIL
		else:
			bstatus = ERROR     # the runner failed before or while building
		builds.append({
			'id': build_id, 'origin': origin, 'checkout_id': checkout_id,
			'architecture': re.sub(r'[^a-z0-9_]', '_', r.arch.lower()),
			'compiler': r.compiler or None,
			'config_name': config_name,
			'duration': r.build_seconds,
			'command': r.build_command or None,
			'status': bstatus,
			'log_excerpt': _excerpt(r.build_tail.splitlines(), tail=True)
			if bstatus != PASS else None,
			'comment': f'{r.arch}: {r.status}',
			'misc': {'arch': r.arch, 'arch_status': r.status,
				 'reason': r.reason or None, 'run_seconds': r.run_seconds},
		})
		if not r.built:
			continue
		env = {'comment': r.qemu or None, 'misc': {'arch': r.arch, 'qemu': r.qemu or None}}
		seen: Dict[str, int] = {}

		def add(path: str, status: str, build_id: str = build_id, env: Dict = env,
			seen: Dict[str, int] = seen, **kw) -> None:
			# Two parameters may sanitise to one path: ids stay unique.
			n = seen[path] = seen.get(path, 0) + 1
			tests.append(dict({'id': f'{build_id}:{path}' + (f'#{n}' if n > 1 else ''),
					   'build_id': build_id, 'origin': origin, 'path': path,
					   'status': status, 'environment': env}, **kw))

		add('kunit', ARCH_TO_KCIDB.get(r.status, MISS), duration=r.run_seconds,
		    comment=f'the whole KUnit run on {r.arch}: {r.status}',
		    log_excerpt=_excerpt(r.reason.splitlines()),
		    misc={'arch': r.arch, 'arch_status': r.status})
		for c in r.cases:
			parts = ['kunit', c.suite] + ([c.name] if c.name else []) + list(c.params)
			add('.'.join(path_part(p) for p in parts), c.status,
			    duration=c.duration,
			    comment=f'{c.row}: {c.message}' if c.message else c.row,
			    log_excerpt=_excerpt(c.diagnostics, tail=c.status == ERROR)
			    if c.status in (FAIL, ERROR) else None,
			    misc={'arch': r.arch, 'suite': c.suite, 'case': c.name or None,
				  'params': list(c.params) or None, 'message': c.message or None,
				  'name_known': c.named})
	doc = {'version': KCIDB_VERSION, 'checkouts': [checkout], 'builds': builds, 'tests': tests}
	return _clean(doc)


# -------------------------------------------------------------------- HTML

CELL = {PASS: ('pass', 'pass'), FAIL: ('fail', 'FAIL'), SKIP: ('skip', 'skip'),
	ERROR: ('crash', 'CRASH'), MISS: ('missing', 'missing')}

CSS = '''
body { font: 14px/1.4 sans-serif; margin: 1.5em; color: #111; background: #fff; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #bbb; padding: .25em .6em; text-align: left; vertical-align: top; }
thead th { background: #eee; }
td.num { text-align: right; white-space: nowrap; }
.matrix td { text-align: center; min-width: 6em; }
.matrix th[scope=row] { font-family: monospace; font-weight: normal; }
.pass { background: #d5f5d5; } .fail { background: #f7c6c6; font-weight: bold; }
.skip { background: #fdf0c2; } .crash { background: #e8c4f0; font-weight: bold; }
.missing { background: #e4e4e4; color: #444; font-style: italic; }
.st-PASS { background: #d5f5d5; } .st-FAIL, .st-BUILD_FAILED, .st-CONFIG_FAILED { background: #f7c6c6; }
.st-CRASH, .st-TIMEOUT, .st-ERROR { background: #e8c4f0; } .st-NO_TESTS { background: #e4e4e4; }
.st-SKIPPED_PROFILE { background: #fdf0c2; }
.dur, .note { display: block; font-size: .8em; color: #444; font-weight: normal; font-style: normal; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: .5em; overflow-x: auto; margin: .3em 0; }
details { margin: .3em 0; } summary { cursor: pointer; }
code { font-family: monospace; }
'''


def _e(s: Any) -> str:
	return html.escape(str(s), quote=True)


def fmt_duration(d: Optional[float]) -> str:
	if d is None:
		return ''
	return f'{d * 1000:.1f} ms' if d < 1 else f'{d:.2f} s'


def _matrix_rows(runs: List[ArchRun]) -> List[Tuple[str, str]]:
	"""(suite, row) in order: suites as first seen, cases as first seen."""
	suites: Dict[str, List[str]] = {}
	for r in runs:
		for c in r.cases:
			rows = suites.setdefault(c.suite, [])
			if c.row not in rows:
				rows.append(c.row)
	return [(s, row) for s, rows in suites.items() for row in rows]


def html_page(summary: Dict[str, Any], runs: List[ArchRun], origin: str) -> str:
	debver = summary.get('debian_version') or ''
	title = f'KUnit results: Linux {summary.get("kernel_version") or "?"}' + (
		f' (Debian {debver})' if debver else '')
	out = ['<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">',
	       f'<title>{_e(title)}</title>', f'<style>{CSS}</style>', '</head>', '<body>',
	       f'<h1>{_e(title)}</h1>']
	ok = sum(r.status == ArchStatus.PASS for r in runs)
	out.append(f'<p class="overall">{ok} of {len(runs)} arch(es) PASS: '
		   + ', '.join(f'<span class="st-{_e(r.status)}">{_e(r.arch)} {_e(r.status)}</span>'
			       for r in runs) + '</p>')

	out.append('<h2 id="environment">Environment</h2>\n<table class="env">')
	env = [('kernel package', f'linux-source-6.12 {debver}' if debver else 'not a Debian tree'),
	       ('kernel version', summary.get('kernel_version')), ('tree', summary.get('tree')),
	       ('series', summary.get('series')), ('series hash', summary.get('series_hash')),
	       ('head', summary.get('head')), ('filter', summary.get('filter_glob') or '(all suites)'),
	       ('profile', summary.get('profile') or 'default'),
	       ('KCIDB origin', origin)]
	for k, v in env:
		if v:
			out.append(f'<tr><th scope="row">{_e(k)}</th><td><code>{_e(v)}</code></td></tr>')
	out.append('</table>')

	out.append('<h2 id="arches">Arches</h2>\n<table class="arches"><thead><tr>'
		   '<th>arch</th><th>status</th><th>pass</th><th>fail</th><th>skip</th>'
		   '<th>crash</th><th>not run</th><th>build</th><th>run</th><th>compiler</th><th>QEMU</th>'
		   '<th>logs</th></tr></thead><tbody>')
	for r in runs:
		links = ' '.join(f'<a href="{_e(rel)}">{_e(name)}</a>' for name, rel in r.logs.items()
				 if name.endswith('.log'))
		links += f' <a href="{_e(r.arch)}/junit.xml">junit.xml</a>'
		reason = ''
		if r.reason:
			first, _, rest = r.reason.partition('\n')
			reason = (f'<details><summary>{_e(first)}</summary><pre>{_e(rest)}</pre></details>'
				  if rest else f'<span class="note">{_e(first)}</span>')
		out.append(
			f'<tr data-arch="{_e(r.arch)}"><th scope="row">{_e(r.arch)}</th>'
			f'<td class="st-{_e(r.status)}"><b>{_e(r.status)}</b>{reason}</td>'
			+ ''.join(f'<td class="num">{sum(c.status == k for c in r.cases)}</td>'
				  for k in (PASS, FAIL, SKIP, ERROR, MISS))
			+ f'<td class="num">{_e(fmt_duration(r.build_seconds))}</td>'
			f'<td class="num">{_e(fmt_duration(r.run_seconds))}</td>'
			f'<td>{_e(r.compiler or "unknown")}</td><td>{_e(r.qemu or "unknown")}</td>'
			f'<td>{links}</td></tr>')
	out.append('</tbody></table>')

	out.append('<h2 id="matrix">Cases</h2>')
	out.append('<p>Each cell says what happened; <i>missing</i> means no result on that arch '
		   '(not reached, not built, or not in its output). Times come from the guest\'s '
		   'printk timestamps, when it printed them.</p>')
	out.append('<table class="matrix"><thead><tr><th>suite.case</th>'
		   + ''.join(f'<th>{_e(r.arch)}</th>' for r in runs) + '</tr></thead><tbody>')
	by_arch = [{c.row: c for c in r.cases} for r in runs]
	for _, row in _matrix_rows(runs):
		cells = []
		for r, cases in zip(runs, by_arch):
			c = cases.get(row)
			if c is None:
				why = ('profile not supported' if r.status == ArchStatus.SKIPPED_PROFILE else
				       'did not build' if not r.built else 'not reported')
				cells.append(f'<td class="missing" data-arch="{_e(r.arch)}" '
					     f'data-status="missing" title="{_e(why)}">missing'
					     f'<span class="note">{_e(why)}</span></td>')
				continue
			cls, text = CELL[c.status]
			note = {SKIP: c.message, MISS: 'never reached',
				ERROR: 'was running' if c.running else 'no result'}.get(c.status, '')
			cells.append(f'<td class="{cls}" data-arch="{_e(r.arch)}" data-status="{cls}" '
				     f'title="{_e(c.summary() if c.status != PASS else "")}">'
				     f'{text}'
				     + (f'<span class="note">{_e(note)}</span>' if note else '')
				     + (f'<span class="dur">{_e(fmt_duration(c.duration))}</span>'
					if c.duration is not None else '') + '</td>')
		out.append(f'<tr><th scope="row">{_e(row)}</th>{"".join(cells)}</tr>')
	out.append('</tbody></table>')

	bad = [(r, c) for r in runs for c in r.cases if c.status in (FAIL, ERROR)]
	problems = [(r, p) for r in runs for p in [_arch_problem(r)] if p is not None]
	out.append('<h2 id="failures">Failures</h2>')
	if not bad and not problems:
		out.append('<p>None.</p>')
	for r, c in problems + bad:
		label = f'{r.arch}: {c.row}' if c.suite != r.arch else f'{r.arch}: {c.label}'
		out.append(f'<details class="failure" data-arch="{_e(r.arch)}"><summary>'
			   f'<b>{_e(c.kind or CELL[c.status][1])}</b> {_e(label)} — {_e(c.summary())}'
			   '</summary>')
		out.append(f'<pre>{_e(chr(10).join(c.diagnostics) or "(no diagnostic lines)")}</pre>'
			   '</details>')

	out.append('<h2 id="legend">Legend</h2><table><tbody>'
		   '<tr><td class="pass">pass</td><td>ok</td></tr>'
		   '<tr><td class="fail">FAIL</td><td>not ok; the diagnostics are under Failures</td></tr>'
		   '<tr><td class="skip">skip</td><td>ok # SKIP, with its reason</td></tr>'
		   '<tr><td class="crash">CRASH</td><td>running when the guest crashed or hung, '
		   'or never printed its result</td></tr>'
		   '<tr><td class="missing">missing</td><td>announced but never reached, or no '
		   'result on that arch</td></tr></tbody></table>')
	out.append('</body>\n</html>\n')
	return '\n'.join(out)


# ------------------------------------------------------------------ entry point


def write_reports(rdir: Path, kernel_tree: Path, origin: str = DEFAULT_ORIGIN, *,
		  environment: Optional[Dict[str, Dict[str, str]]] = None, probe: bool = True,
		  patch_dir: Path = paths.PATCH_DIR,
		  runs_out: Optional[List[ArchRun]] = None,
		  loaded: Optional[Loaded] = None) -> Dict[str, Path]:
	"""Write <arch>/junit.xml, junit.xml, kcidb.json and index.html into rdir.

	kernel_tree: the tree whose kunit_parser reads the consoles (summary.json's
	"tree" is the one the run used).  environment: {arch: {'compiler': ...,
	'qemu': ...}} to report; what is not given comes from summary.json, the
	kernel banner in the console, or (probe) `<cc> --version` and
	`<qemu> --version` on this host.  Returns {path relative to rdir: path};
	runs_out, if given, gets the arches as read (ArchRun.disagreement: a
	console that does not bear summary.json out).  loaded: what load_run
	already read (`run` reads every console once for all it writes)."""
	rdir = Path(rdir)
	check_origin(origin)             # before anything is written
	summary, runs = loaded or load_run(rdir, kernel_tree, environment, probe)
	if runs_out is not None:
		runs_out.extend(runs)
	written: Dict[str, Path] = {}
	for r in runs:
		p = rdir / r.arch / 'junit.xml'
		_write_xml(junit_element([r], summary), p)
		written[f'{r.arch}/junit.xml'] = p
	p = rdir / 'junit.xml'
	_write_xml(junit_element(runs, summary), p)
	written['junit.xml'] = p
	p = rdir / 'kcidb.json'
	p.write_text(json.dumps(kcidb_document(rdir, summary, runs, origin, patch_dir), indent=1)
		     + '\n')
	written['kcidb.json'] = p
	p = rdir / 'index.html'
	p.write_text(html_page(summary, runs, origin))
	written['index.html'] = p
	return written
