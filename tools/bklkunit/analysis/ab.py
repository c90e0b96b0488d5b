# SPDX-License-Identifier: GPL-2.0
"""`kunit.py ab`: each arch built and booted from the pristine tree (A) and
from the tree with the series (B); every case labelled by what the series
did to it.

  B  the normal run: the prepared work tree, <cache>/build/<key>/<arch>
  A  by default (`--a-side=tests`) the pristine commit with the series'
     patches that carry no `Fixes:` tag cherry-picked on top: the tests
     without the fixes, so a test written for a bug reads "fixed by the
     series" and a fix that breaks a test "regressed by the series".  A
     test patch that does not apply without the fixes before it is left
     out (and said so); its cases read "new test".  `--a-side=pristine`:
     the pristine commit alone, every case of the series a "new test".
     `--a-side=without:99-101`: the series less the patches numbered
     (1 the first), for a series whose tests no longer build without
     every fix (a test that uses what a fix added): the tests of those
     fixes read "fixed by the series", everything else "unchanged".
     A is checked out in a detached git worktree of the prepared
     repository, <cache>/pristine/src/<name> (the tests commit is kept as
     refs/bkl-kunit/ab-a and made again only when the series changed),
     built in <cache>/pristine/build/<key>/<arch>.  The main work tree is
     never touched.  One `ab` at a time uses it (<cache>/pristine/ab.lock);
     a second one waits.  The layout mirrors <cache>/src and <cache>/build, so
     the relative paths ccache sees (CCACHE_BASEDIR is the cache) are the
     same as B's and an A build hits B's cache for every object the series
     does not change.

A is built with the same .kunitconfig and fragments, less the options the
pristine tree cannot have:
  1. every option whose symbol no Kconfig file of the pristine commit
     defines (`git grep` of `config`/`menuconfig` lines at that commit):
     the series' own test suites;
  2. should kunit.py build still refuse options on A ("Not all Kconfig
     options selected ... Missing: ..."), e.g. because the series changed
     the dependencies of a symbol both trees have, those options, after
     which A is built once more (the refused attempt's log is kept as
     build.refused.log).
The filtered fragments are written to <results>/a/<arch>/kunitconfig/.

Results: <results>/a and <results>/b are results directories of their own
(summary.json, <arch>/..., junit.xml, index.html), each written as `run`
writes its own (runner.run_arch per arch, then runner.finish: rundir's
verdict.json and summary.json, the reports), <results>/ab.json has the
labels.  The cases are baseline.py's (cases.py's reading of the consoles
plus the crash re-run boots, as runner.finish read them once per side),
compared with baseline.compare_arch as if A were B's baseline.
"""

import argparse
import contextlib
import hashlib
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..base import atomic, deps, paths
from ..base.errors import UserError
from ..compare import baseline
from ..compare.baseline import BAD, FLAKY, MISSING, PASS, SKIP
from ..results import kunit_tool, rundir
from ..results.model import ArchResult, ArchStatus, NOT_BUILT, now
from ..run import profiles, progress, runner
from ..run.plan import RunOptions, RunRequest, kunitconfigs
from ..source import commitmsg, kconfig, tree

FORMAT = 1

REGRESSED = 'regressed by the series'     # A pass -> B fail, crash or missing
FIXED = 'fixed by the series'             # A fail, crash, missing or flaky -> B pass
NEW = 'new test'                          # not on A (A ran to its end), on B
REMOVED = 'removed'                       # on A, not on B (B ran to its end)
NOT_RUN_A = 'not run on A'                # on B; A stopped early, so it may exist there
NOT_RUN_B = 'not run on B'                # skipped on A, cut off on B
NEW_SKIP = 'skipped by the series'        # A ran it, B skips it
UNSKIPPED = 'no longer skipped'           # A skipped it, B ran it
FLAKY_LABEL = 'flaky'                     # failed, then passed when run again
SAME_FAIL = 'unchanged fail'              # fail, crash or missing on both
SAME_SKIP = 'unchanged skip'
SAME_PASS = 'unchanged pass'
LABELS = (REGRESSED, FIXED, NEW, REMOVED, NOT_RUN_A, NOT_RUN_B, NEW_SKIP, UNSKIPPED,
	  FLAKY_LABEL, SAME_FAIL, SAME_SKIP, SAME_PASS)

# What each side is called: A's name depends on --a-side (side_names).
SIDES: Mapping[str, str] = MappingProxyType({'a': 'pristine', 'b': 'series'})
A_SIDES = {'tests': 'tests only', 'pristine': 'pristine'}   # --a-side -> A's name
WITHOUT = 'without:'    # --a-side without:N[-M][,...]: the series less those patches


def parse_a_side(text: str) -> str:
	"""--a-side: tests, pristine, or without: and patch numbers of the
	series (1 the first) and ranges N-M, comma-separated; returned as
	without: and the numbers in order, one each."""
	if text in A_SIDES:
		return text
	if not text.startswith(WITHOUT):
		raise argparse.ArgumentTypeError(
			f'{text!r}: not tests, pristine or without:N[-M][,...] (patch numbers)')
	numbers: Set[int] = set()
	for part in text[len(WITHOUT):].split(','):
		m = re.fullmatch(r'\s*(\d+)(?:-(\d+))?\s*', part)
		low, high = (int(m[1]), int(m[2] or m[1])) if m else (0, 0)
		if not m or low < 1 or high < low:
			raise argparse.ArgumentTypeError(
				f'{text!r}: {part.strip()!r} is not a patch number (1 the first) '
				'or a range N-M')
		numbers.update(range(low, high + 1))
	return WITHOUT + ','.join(str(n) for n in sorted(numbers))


def left_numbers(mode: str) -> Set[int]:
	"""The patch numbers a without: mode leaves out (none for the others)."""
	if not mode.startswith(WITHOUT):
		return set()
	return {int(n) for n in mode[len(WITHOUT):].split(',')}


def side_names(mode: str) -> Mapping[str, str]:
	"""{'a': ..., 'b': 'series'} for --a-side mode."""
	a = A_SIDES.get(mode) or 'without ' + ','.join(f'{n:04d}' for n in sorted(left_numbers(mode)))
	return MappingProxyType({'a': a, 'b': SIDES['b']})
A_REF = 'refs/bkl-kunit/ab-a'
A_STATE = 'bkl-kunit-ab-a.json'          # in the prepared repository's .git
LEFT_FIX = 'a fix (Fixes: tag)'
LEFT_ASKED = 'left out by --a-side'
LEFT_CONFLICT = 'does not apply without the fixes before it'
NOT_DEFINED = 'not defined by any Kconfig file of the pristine tree'
REFUSED = 'kunit.py build could not select it on the pristine tree'


# ------------------------------------------------------------ the pristine tree


def pristine_dir(cache: Path, main: Path) -> Path:
	return Path(cache) / 'pristine' / 'src' / Path(main).name


def build_dir(cache: Path, key: str, profile: str, arch: str) -> Path:
	return Path(cache) / 'pristine' / 'build' / profiles.build_key(key, profile) / arch


def pristine_commit(main: Path) -> str:
	proc = tree.git(main, 'rev-parse', '--verify', '-q', tree.PRISTINE_REF + '^{commit}',
			check=False)
	if proc.returncode != 0 or not proc.stdout.strip():
		raise UserError(f'{main} has no {tree.PRISTINE_REF}: not a tree made by '
				'`./tools/kunit.py prepare`')
	return proc.stdout.strip()


def pristine_tree(main: Path, cache: Path, commit: Optional[str] = None) -> Tuple[Path, str, str]:
	"""The A tree: (worktree, commit, what was done: created, moved,
	restored or up to date).  commit: what to check out, default the
	pristine commit.  Made with `git worktree add --detach` on first use, or
	when the old one no longer belongs to main's repository (prepare
	unpacked it anew); checked out again when the commit moved or a
	tracked file was changed.  Only main's .git/worktrees/ is written."""
	main = Path(main)
	commit = commit or pristine_commit(main)
	wt = pristine_dir(cache, main)
	done = tree.scratch_worktree(
		main, wt, commit,
		making=(f'Making the pristine tree {wt}: a worktree of {main.name} at {commit[:12]} '
			'(once) ...'),
		checking_out=f'Checking out {commit[:12]} in the pristine tree {wt} ...')
	return wt, commit, done


def series_commits(main: Path, base: str) -> List[Tuple[str, str, bool]]:
	"""The commits of main's HEAD over base, oldest first: (sha, subject,
	whether the message has a `Fixes:` tag)."""
	shas = tree.git(main, 'rev-list', '--reverse', f'{base}..HEAD').stdout.split()
	out = []
	for sha in shas:
		msg = commitmsg.split(tree.git(main, 'log', '-1', '--format=%B', sha).stdout)
		out.append((sha, msg.subject or sha[:12], bool(msg.tags('Fixes'))))
	return out


def tests_commit(main: Path, wt: Path, pristine: str,
		 mode: str) -> Tuple[str, List[Dict[str, str]]]:
	"""A for --a-side=tests: pristine plus every commit of main's series
	without a `Fixes:` tag, cherry-picked in order in the A worktree wt
	(committer and dates kept, so the same series gives the same commits);
	for --a-side=without:...: every commit but the patches named.  A commit
	that no longer applies is left out too.  Returns (commit, [{commit,
	subject, why}] left out).  Kept as A_REF with its key (the mode, the
	pristine and series commits) in main's .git/A_STATE, and made again
	only when the key changed."""
	commits = series_commits(main, pristine)
	leave = left_numbers(mode)
	if leave and max(leave) > len(commits):
		raise UserError(f'--a-side {mode}: the series has {len(commits)} patches')
	key = hashlib.sha256('\n'.join([mode, pristine] + [c for c, _, _ in commits])
			     .encode()).hexdigest()
	state = Path(main) / '.git' / A_STATE
	try:
		st = json.loads(state.read_text())
		ref = tree.git(main, 'rev-parse', '--verify', '-q', A_REF, check=False).stdout.strip()
		if st.get('key') == key and ref and ref == st.get('commit'):
			return ref, st.get('left_out', [])
	except (OSError, ValueError):
		pass
	what = (f'patches {",".join(str(n) for n in sorted(leave))}' if leave else 'its fixes')
	print(f'Making A: the pristine tree plus the series without {what}, in {wt} ...',
	      flush=True)
	tree.git(wt, 'checkout', '-q', '-f', '--detach', pristine)
	left: List[Dict[str, str]] = []
	for number, (sha, subject, fix) in enumerate(commits, 1):
		if number in leave or (fix and not leave):
			left.append({'commit': sha, 'subject': subject,
				     'why': LEFT_ASKED if leave else LEFT_FIX})
			continue
		who = tree.git(main, 'log', '-1', '--format=%cn%x00%ce%x00%cD', sha).stdout.strip()
		name, email, date = who.split('\0')
		env = {'GIT_COMMITTER_NAME': name, 'GIT_COMMITTER_EMAIL': email,
		       'GIT_COMMITTER_DATE': date}
		picked = tree.git(wt, 'cherry-pick', '--allow-empty', '--keep-redundant-commits', sha,
				  check=False, env=env)
		if picked.returncode != 0:
			tree.git(wt, 'cherry-pick', '--abort', check=False)
			tree.git(wt, 'reset', '-q', '--hard', check=False)
			left.append({'commit': sha, 'subject': subject, 'why': LEFT_CONFLICT})
	head = tree.git(wt, 'rev-parse', 'HEAD').stdout.strip()
	tree.git(main, 'update-ref', A_REF, head)
	atomic.write_text(state, json.dumps({'key': key, 'commit': head, 'left_out': left}, indent=1)
			  + '\n')
	return head, left


def make_a_tree(main: Path, cache: Path, mode: str) -> Tuple[Path, str, str, List[Dict[str, str]]]:
	"""The A worktree checked out at A's commit for --a-side mode:
	(worktree, commit, what was done, patches left out)."""
	pristine = pristine_commit(main)
	if mode == 'pristine':
		wt, commit, done = pristine_tree(main, cache, pristine)
		return wt, commit, done, []
	wt = pristine_dir(cache, main)
	if not tree.is_worktree_of(wt, main):
		pristine_tree(main, cache, pristine)
	commit, left = tests_commit(main, wt, pristine, mode)
	wt, commit, done = pristine_tree(main, cache, commit)
	return wt, commit, done, left


# ------------------------------------------------------------------ Kconfig

def defined_symbols(repo: Path, commit: str) -> Set[str]:
	"""Every symbol a Kconfig file (Kconfig, Kconfig.debug, ...) of commit
	defines with `config` or `menuconfig`, read from git's object store."""
	proc = tree.git(repo, 'grep', '-h', '-I', '-E', r'^[[:space:]]*(menu)?config[[:space:]]',
			commit, '--', '*Kconfig*', check=False)
	if proc.returncode not in (0, 1):
		raise UserError(f'git grep of the Kconfig files at {commit[:12]} failed in {repo}:\n'
				+ proc.stderr.strip())
	found = set(kconfig.KCONFIG_DEFINITION.findall(proc.stdout))
	if not found:
		raise UserError(f'no Kconfig symbol defined at {commit[:12]} in {repo}: '
				'is it a kernel tree?')
	return found


def filter_text(text: str, why: Callable[[str], Optional[str]]) -> Tuple[str, List[Tuple[str, str]]]:
	"""A kunitconfig fragment without the options why() has a reason to drop:
	(new text, [(option line, reason)]).  A dropped line stays as a comment."""
	out, dropped = [], []
	for line in text.splitlines():
		sym = kconfig.option_symbol(line)
		reason = why(sym) if sym else None
		if reason:
			dropped.append((line.strip(), reason))
			out.append(f'# kunit.py ab: dropped on the pristine tree ({reason}): {line.strip()}')
		else:
			out.append(line)
	return '\n'.join(out) + '\n', dropped


def a_fragments(fragments: Sequence[Path], why: Callable[[str], Optional[str]],
		dest: Path) -> Tuple[List[Path], List[Dict[str, str]]]:
	"""The fragments A builds with: each one as it is when nothing in it is
	dropped, else a filtered copy in dest (NN-<name>, in order)."""
	if dest.exists():
		shutil.rmtree(dest)
	out: List[Path] = []
	dropped: List[Dict[str, str]] = []
	for n, frag in enumerate(fragments, 1):
		text, gone = filter_text(Path(frag).read_text(), why)
		if not gone:
			out.append(Path(frag))
			continue
		dest.mkdir(parents=True, exist_ok=True)
		copy_ = dest / f'{n:02d}-{Path(frag).name.lstrip(".")}'
		atomic.write_text(copy_, f'# {frag}, for the pristine tree (kunit.py ab)\n' + text)
		out.append(copy_)
		dropped += [{'option': o, 'fragment': str(frag), 'why': r} for o, r in gone]
	return out, dropped




def run_a(wt: Path, arch: str, bdir: Path, out: Path, options: RunOptions, cache: Path,
	  defined: Set[str], sides: Mapping[str, str] = SIDES
	  ) -> Tuple[ArchResult, List[Dict[str, str]]]:
	"""runner.run_arch on the pristine tree with the filtered kunitconfigs; a
	second build when kunit.py refused options of the first."""
	fragments = kunitconfigs(arch, options.kunitconfig, options.profile.name)
	refused: Dict[str, str] = {}

	def why(sym: str) -> Optional[str]:
		return refused.get(sym) or (None if sym in defined else NOT_DEFINED)
	for attempt in (1, 2):
		use, dropped = a_fragments(fragments, why, out / 'kunitconfig')
		kept = []
		for k in options.kconfig_add:
			sym = kconfig.option_symbol(k)
			reason = why(sym) if sym else None
			if reason:
				dropped.append({'option': k, 'fragment': '--kconfig-add', 'why': reason})
			else:
				kept.append(k)
		r = runner.run_arch(wt, arch, bdir, out, options.with_kconfig_add(kept), cache,
				 fragments=use, tag=sides['a'])
		if r.status != ArchStatus.CONFIG_FAILED or attempt == 2:
			break
		log = out / 'build.log'
		more = [s for s in kunit_tool.refused_symbols(log.read_text(errors='replace')) if not why(s)]
		if not more:
			break
		for s in more:
			refused[s] = REFUSED
		log.replace(out / 'build.refused.log')
		progress.say(f'{arch} ({sides["a"]})', 'kunit.py build refused '
			      + ', '.join(f'CONFIG_{s}' for s in more) + ': building again without')
	return r, dropped


# ------------------------------------------------------------------- labels


@dataclass
class Row:
	case: str
	a: Optional[str]          # A's status, None: not there
	b: Optional[str]          # B's status, None: not there (B ran to its end)
	label: str


def _same_or_other(a: str, b: str) -> str:
	"""The label of a case compare_arch did not call a regression, fix, new
	or vanished case."""
	if FLAKY in (a, b):
		return FLAKY_LABEL
	if a == b == PASS:
		return SAME_PASS
	if a == b == SKIP:
		return SAME_SKIP
	if a in BAD and b in BAD:
		return SAME_FAIL
	if b == SKIP:
		return NEW_SKIP
	if a == SKIP:
		return NOT_RUN_B if b == MISSING else UNSKIPPED
	return REGRESSED if a == PASS else FIXED      # what compare_arch catches first


def suite_of(key: str) -> str:
	return key.split('.', 1)[0]


def label_cases(a: baseline.ArchCases, b: baseline.ArchCases, filter_glob: str = '',
		a_listed: Optional[Set[str]] = None) -> List[Row]:
	"""Every case of either side, labelled; A is B's baseline.  a_listed: the
	suites A's kernel listed (`kunit.py exec --list_tests`, booted after a
	crash), which tells a new suite from one A's crash kept from running.
	A case a side that stopped early announced but never reached (missing,
	named from its kunit.list.log) counts as not there, as one known only by
	its position does (baseline.case_map): not run on that side, never a fix
	or a new case."""
	a, b = (x if x.complete else replace(x, cases={k: v for k, v in x.cases.items()
						       if v != MISSING}) for x in (a, b))
	c = baseline.compare_arch(baseline.baseline_document(a), b, Path('A'), filter_glob)
	labels: Dict[str, str] = {}
	for key, _, _ in c.regressions:
		labels[key] = REGRESSED
	for key, _, _ in c.fixes:
		labels[key] = FIXED
	for key, _ in c.new:
		known_absent = a.complete or (a_listed is not None and suite_of(key) not in a_listed)
		labels[key] = NEW if known_absent else NOT_RUN_A
	for key, _ in c.vanished:
		labels[key] = REMOVED
	rows = []
	for key in sorted(set(a.cases) | set(b.cases)):
		if not baseline.in_filter(key, filter_glob):
			continue
		sa = a.cases.get(key)
		sb = b.cases.get(key) or (None if b.complete else MISSING)
		label = labels.get(key) or _same_or_other(sa or MISSING, sb or MISSING)
		rows.append(Row(key, sa, sb, label))
	rows.sort(key=lambda r: (LABELS.index(r.label), r.case))
	return rows


def counts(rows: Sequence[Row]) -> Dict[str, int]:
	out: Dict[str, int] = {}
	for r in rows:
		out[r.label] = out.get(r.label, 0) + 1
	return {l: out[l] for l in LABELS if l in out}


def side_problem(side: str, status: str, has_cases: bool,
		 sides: Mapping[str, str] = SIDES) -> str:
	"""Why a side gave nothing to compare, '' when it did."""
	name = f'{side.upper()} ({sides[side]})'
	if status in NOT_BUILT:
		return f'{name} could not build ({status})'
	if status in (ArchStatus.ERROR, ArchStatus.NOT_RUN):
		return f'{name} could not run ({status})'
	if status in (ArchStatus.CRASH, ArchStatus.TIMEOUT) and not has_cases:
		return f'{name} could not boot ({status}, no KTAP result)'
	if side == 'b' and status == ArchStatus.NO_TESTS:
		return f'{name} ran no test (NO_TESTS)'
	return ''


def listed_suites(adir: Path) -> Optional[Set[str]]:
	"""The suites a --list_tests boot of this arch named, None without one."""
	tests = rundir.listed_tests(adir)
	return {t.split('.', 1)[0] for t in tests or []} or None


@dataclass
class ArchAB:
	arch: str
	a: ArchResult
	b: ArchResult
	dropped: List[Dict[str, str]] = field(default_factory=list)
	rows: List[Row] = field(default_factory=list)
	problems: List[str] = field(default_factory=list)

	@property
	def regressed(self) -> int:
		return sum(r.label == REGRESSED for r in self.rows)

	def document(self) -> Dict[str, Any]:
		def side(r: ArchResult, extra: Dict[str, Any]) -> Dict[str, Any]:
			return dict({'status': r.status, 'reason': r.reason, 'passed': r.passed,
				     'failed': r.failed, 'skipped': r.skipped, 'crashed': r.crashed}, **extra)
		return {'arch': self.arch,
			'a': side(self.a, {'kunitconfig_dropped': self.dropped}),
			'b': side(self.b, {}),
			'problems': self.problems, 'counts': counts(self.rows),
			'cases': [asdict(r) for r in self.rows]}


def compare_sides(rdir: Path, a_tree: Path, b_tree: Path, results: List[ArchAB],
		  filter_glob: str, sides: Mapping[str, str] = SIDES,
		  loaded: Optional[Mapping[str, Optional[rundir.Loaded]]] = None) -> None:
	"""Load both sides' cases (baseline.load_results) and label them.
	loaded: each side's results as runner.finish already read them (a side
	missing there, or None, is read from its directory)."""
	loaded = loaded or {}
	_, a_cases = baseline.load_results(rdir / 'a', a_tree, probe=False, loaded=loaded.get('a'))
	_, b_cases = baseline.load_results(rdir / 'b', b_tree, probe=False, loaded=loaded.get('b'))
	a_by, b_by = {c.arch: c for c in a_cases}, {c.arch: c for c in b_cases}
	for x in results:
		if x.a.status == profiles.SKIPPED:
			continue
		ca = a_by.get(x.arch) or baseline.ArchCases(ArchResult(x.arch, x.a.status))
		cb = b_by.get(x.arch) or baseline.ArchCases(ArchResult(x.arch, x.b.status))
		x.problems = [p for p in (side_problem('a', ca.status, bool(ca.cases), sides),
					  side_problem('b', cb.status, bool(cb.cases), sides)) if p]
		# A side whose console does not bear its verdict out (rundir.py).
		x.problems += [f'{side.upper()} ({sides[side]}) results damaged: {c.damaged}'
			       for side, c in (('a', ca), ('b', cb)) if c.damaged]
		x.rows = label_cases(ca, cb, filter_glob, listed_suites(rdir / 'a' / x.arch))


# ------------------------------------------------------------------ output


def _table(rows: Sequence[Tuple[str, ...]], right: int = 99) -> List[str]:
	widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
	out = []
	for n, r in enumerate(rows):
		out.append('  '.join(c.rjust(w) if i >= right else c.ljust(w)
				     for i, (c, w) in enumerate(zip(r, widths))).rstrip())
		if n == 0:
			out.append('  '.join('-' * w for w in widths))
	return out


def _status_lines(side: str, r: ArchResult, sides: Mapping[str, str]) -> List[str]:
	"""'A (pristine): CRASH: <first line of the reason>', then the rest of
	the reason (a build's tail, the re-run boots) indented."""
	reason = r.reason.splitlines() if r.status != ArchStatus.PASS else []
	head = f'  {side.upper()} ({sides[side]}): {r.status}' + (f': {reason[0]}' if reason else '')
	return [head] + ['      ' + l for l in reason[1:20]]


def format_arch(x: ArchAB, sides: Mapping[str, str] = SIDES) -> List[str]:
	lines = [f'== {x.arch}'] + _status_lines('a', x.a, sides) + _status_lines('b', x.b, sides)
	if x.dropped:
		shown = [d['option'] + (' (refused by kunit.py)' if d['why'] == REFUSED else '')
			 for d in x.dropped]
		lines.append('  A kunitconfig without: ' + ', '.join(dict.fromkeys(shown)))
	for p in x.problems:
		lines.append(f'  {p}')
	if x.rows:
		table = [('label', 'case', 'A', 'B')] + [
			(r.label, r.case, r.a or '-', r.b or '-') for r in x.rows]
		lines += ['  ' + l for l in _table(table)]
	lines.append('  ' + (', '.join(f'{n} {l}' for l, n in counts(x.rows).items())
			     or 'no case results'))
	return lines


SUMMARY_COLUMNS = (('regressed', (REGRESSED,)), ('fixed', (FIXED,)), ('new', (NEW,)),
		   ('removed', (REMOVED,)), ('same pass', (SAME_PASS,)),
		   ('same fail', (SAME_FAIL,)),
		   ('skips', (NEW_SKIP, UNSKIPPED, SAME_SKIP)),
		   ('other', (NOT_RUN_A, NOT_RUN_B, FLAKY_LABEL)))


def format_summary(results: List[ArchAB], sides: Mapping[str, str] = SIDES) -> List[str]:
	rows = [('arch', f'A ({sides["a"]})', f'B ({sides["b"]})')
		+ tuple(c for c, _ in SUMMARY_COLUMNS)]
	for x in results:
		n = counts(x.rows)
		rows.append((x.arch, x.a.status, x.b.status)
			    + tuple(str(sum(n.get(l, 0) for l in ls)) for _, ls in SUMMARY_COLUMNS))
	return _table(rows, right=3)


# -------------------------------------------------------------------- main


def add_arguments(p: argparse.ArgumentParser) -> None:
	"""run's options, less --tree, --apply-series and --compare; --a-side."""
	runner.add_arguments(p, one_tree=False)
	p.add_argument('--a-side', type=parse_a_side, default='tests',
		       metavar='{tests,pristine,without:N[-M][,...]}',
		       help='A: the pristine tree with the series\' patches that have no Fixes: '
		       'tag (tests; default: a bug test reads "fixed by the series"), the '
		       'pristine tree alone (pristine: every case of the series is a new test), '
		       'or the series less the patches numbered (without:99-101: a bug test '
		       'red without those fixes, where the series without every fix does not '
		       'build)')


def _run_side(fn: Callable[[], Any], arch: str, profile: str) -> Any:
	try:
		return fn()
	except UserError:
		raise
	except Exception as e:  # one side's trouble must not hide the other
		return ArchResult(arch, status=ArchStatus.ERROR, reason=f'{type(e).__name__}: {e}',
				      profile=profile)


@dataclass(frozen=True)
class AbRequest:
	"""`ab`'s command line, read once: run's part and --a-side."""
	run: RunRequest
	a_side: str = 'tests'

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'AbRequest':
		return cls(RunRequest.from_args(args), vars(args).get('a_side') or 'tests')


def main(request: AbRequest) -> int:
	"""`ab` (cli.py reads its command line into request)."""
	req = request.run
	runner.check_arguments(req)
	held = contextlib.ExitStack()
	with paths.locked(req.cache / 'pristine' / 'ab.lock', 'the pristine tree of kunit.py ab'):
		try:
			return _main(req, request.a_side, held)
		finally:
			held.close()


def _main(req: RunRequest, mode: str, held: contextlib.ExitStack) -> int:
	arches, cache, filter_glob = list(req.arches), req.cache, req.options.filter_glob
	# As run: when it started, where the time goes (each side's summary.json).
	timings: Dict[str, float] = {}
	t0 = time.time()
	started = now()
	sides = side_names(mode)
	prof = req.profile
	deps.ensure(deps.for_arches([a for a in arches if prof.supports(a)] or arches),
		    allow_install=req.allow_install)
	timings['deps'] = time.time() - t0
	t1 = time.time()
	b_tree, key, info = runner.resolve_tree(req)
	runner.hold_tree(held, req, b_tree, info)
	a_tree, commit, done, left_out = make_a_tree(b_tree, cache, mode)
	timings['tree'] = time.time() - t1
	print(f'A ({sides["a"]}): {a_tree} at {commit[:12]} ({done})', flush=True)
	for lo in left_out:
		print(f'  not on A: {lo["subject"]} ({lo["why"]})')
	defined = defined_symbols(b_tree, commit)
	rdir = runner.results_dir(req, point_latest=False)
	if prof.name != profiles.DEFAULT:
		print(f'Profile {prof.name}: {prof.what}')
	on_a = ('none (pristine)' if mode == 'pristine' else
		 'the series without ' + (', '.join(lo['subject'] for lo in left_out) or 'nothing'))
	a_info: Dict[str, Any] = {'tree': str(a_tree), 'kernel_version': info.get('kernel_version'),
		  'debian_version': info.get('debian_version'), 'series': on_a,
		  'series_hash': '', 'head': commit, 'a_side': mode, 'left_out': left_out}
	# What each side is to do, before it does any (as run's run.json): an
	# ab stopped half-way leaves two results directories that report,
	# compare and baseline read as far as they went.
	for side, side_info in (('a', a_info), ('b', info)):
		rundir.write_plan(rdir / side, side_info, arches, prof.name, filter_glob, started)
	options = req.options

	def one(arch: str, opts: RunOptions) -> ArchAB:
		"""Both sides of one arch: B (the series), then A."""
		if not prof.supports(arch):
			x = ArchAB(arch, runner.skipped_profile(arch, prof), runner.skipped_profile(arch, prof))
			progress.say(arch, f'{profiles.SKIPPED}: {prof.why_not(arch)}')
		else:
			bdir = cache / 'build' / profiles.build_key(key, prof.name) / arch
			bdir.parent.mkdir(parents=True, exist_ok=True)
			rb = _run_side(lambda: runner.run_arch(b_tree, arch, bdir, rdir / 'b' / arch, opts,
							   cache, tag=sides['b']), arch, prof.name)
			adir = build_dir(cache, key, prof.name, arch)
			adir.parent.mkdir(parents=True, exist_ok=True)
			got = _run_side(lambda: run_a(a_tree, arch, adir, rdir / 'a' / arch, opts, cache,
						      defined, sides), arch, prof.name)
			ra, dropped = got if isinstance(got, tuple) else (got, [])
			x = ArchAB(arch, ra, rb, dropped)
			for side, r in (('b', rb), ('a', ra)):
				progress.say(f'{arch} ({sides[side]})',
					      f'{r.status} ({r.passed} passed, {r.failed} failed, '
					      f'{r.skipped} skipped, {r.crashed} crashed)')
		rundir.write_verdict(rdir / 'a', x.a)
		rundir.write_verdict(rdir / 'b', x.b)
		return x

	# The arches run as `run` runs them: --parallel N at once (runner.run_concurrently).
	todo = [a for a in arches if prof.supports(a)]
	workers = runner.parallel_workers(req.parallel, len(todo))
	by_arch = ({a: one(a, options) for a in arches} if workers <= 1 else
		   dict(runner.run_concurrently(todo, workers, options, b_tree, one),
			**{a: one(a, options) for a in arches if a not in todo}))
	results: List[ArchAB] = [by_arch[a] for a in arches]
	# Each side is finished as `run` finishes its results directory: its
	# consoles read once, for its divergence, its reports and the labels.
	loaded: Dict[str, Optional[rundir.Loaded]] = {}
	for side, side_info, ktree in (('a', a_info, a_tree), ('b', info, b_tree)):
		side_dir = rdir / side
		summary = rundir.summary_of(side_info, [getattr(x, side) for x in results], side_dir,
					    filter_glob, prof.name, started, ab_side=sides[side])
		fin = runner.finish(side_dir, ktree, summary, dict(timings), t0)
		loaded[side] = fin.loaded
		for problem in fin.problems:
			print(f'{side}/: {problem}', file=sys.stderr)
		if fin.reports:
			print(f'Reports ({sides[side]}): ' + ', '.join(
				f'{side}/{k}' for k in sorted(fin.reports)))
	try:
		compare_sides(rdir, a_tree, b_tree, results, filter_glob, sides, loaded)
	except Exception as e:  # without labels there is no verdict: say so, fail
		for x in results:
			if x.a.status != profiles.SKIPPED:
				x.problems.append(f'cases not compared: {type(e).__name__}: {e}')
	print()
	for x in results:
		if x.a.status == profiles.SKIPPED:
			print(f'== {x.arch}\n  {profiles.SKIPPED}: {x.a.reason}\n')
			continue
		print('\n'.join(format_arch(x, sides)) + '\n')
	print('\n'.join(format_summary(results, sides)))
	problems = [f'{x.arch}: {p}' for x in results for p in x.problems]
	bad = [f'{x.arch}: {x.regressed} {REGRESSED}' for x in results if x.regressed] + problems
	rc = 1 if bad else 0
	doc = {'format': FORMAT, 'results_dir': str(rdir), 'filter_glob': filter_glob,
	       'profile': prof.name, 'labels': list(LABELS),
	       'a': {'side': sides['a'], 'a_side': mode, 'left_out': left_out,
		     'tree': str(a_tree), 'commit': commit,
		     'results': 'a', 'build_dirs': str(build_dir(cache, key, prof.name, '*'))},
	       'b': dict({'side': sides['b'], 'results': 'b'},
			 **{k: info.get(k) for k in ('tree', 'head', 'series', 'series_hash')}),
	       'arches': [x.document() for x in results],
	       'regressed': sum(x.regressed for x in results),
	       'problems': problems,
	       'exit': rc}
	atomic.write_text(rdir / 'ab.json', json.dumps(doc, indent=1) + '\n')
	if not req.results_dir:
		runner.set_latest(cache, rdir)
	print(f'\nResults: {rdir} (ab.json; a/ and b/ are results directories of their own)')
	if bad:
		print('ab: ' + '; '.join(bad))
	else:
		print(f'ab: nothing {REGRESSED}')
	return rc
