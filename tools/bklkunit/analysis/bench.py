# SPDX-License-Identifier: GPL-2.0
"""`kunit.py bench`: the kernel's own kunit.py and our `run`, side by side.

Per arch, three rows, each run by the plain side and then by ours (never
concurrently):
  cold  both build directories and both ccache directories emptied
  warm  run again at once, nothing changed
  edit  one test file of the series changed (a new string constant appended,
        so that ccache cannot hit), both sides building that same edit; the
        file is put back byte for byte afterwards, whatever happened
Plain is exactly what a developer types in the tree,
  tools/testing/kunit/kunit.py run --arch=A --build_dir=<cache>/bench/plain/A
      --kunitconfig=... [--cross_compile=...]
(no printk.time=1 on its kernel command line, unlike every boot of ours:
with --same-guest it gets our guest, printk timestamps included), with the
compiler wrapper and environment `run` gives kunit.py (ccache with a
CCACHE_DIR of its own, reproducible KBUILD_BUILD_* stamps).  Ours is
./tools/kunit.py run --arch=A with --build-dir <cache>/bench/ours and a
ccache directory of its own, fixtures and reports included.  Both build one
source tree, a git worktree of the prepared repository at its HEAD
(<cache>/bench/src), so the developer's work tree is never touched.

Everything the bench writes or empties is under <cache>/bench/:
  src/                 the worktree both sides build
  plain/<arch>/        plain build directories       ours/<arch>/  ours
  ccache/plain/        plain CCACHE_DIR               ccache/ours/  ours
  results/<stamp>/     bench.json, and per <arch>/<row>/ plain.log, the
                       plain console, and ours/ (our results directory)
See docs/speed.md.
"""

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..base import atomic, deps, paths
from ..base.errors import UserError
from ..results import kunit_tool, rundir
from ..run import plan, profiles
from ..source import tree

ROWS = ('cold', 'warm', 'edit')
LIMIT_PCT = 2.0            # the issue: our overhead at most 2% of plain kunit.py
# The other goals, for our side: seconds.
GOAL_WALL = {'warm': 15.0, 'edit': 45.0}
GOAL_GUEST = 20.0
DEFAULT_EDIT = 'fs/autofs/tests/autofs_kunit.c'   # added by the series (the first autofs test patch)


def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('--arch', default='x86_64',
		       help='arch or comma list to measure (default: x86_64)')
	p.add_argument('--rows', default=','.join(ROWS),
		       help=f'which rows, a comma list of {", ".join(ROWS)} (default: all, '
			    'in that order)')
	p.add_argument('--profile', default=profiles.DEFAULT, choices=list(profiles.PROFILES),
		       help='the debug profile both sides build (default: default)')
	p.add_argument('--edit-file', default=DEFAULT_EDIT, metavar='PATH',
		       help=f'the test file the edit row changes, relative to the kernel tree '
			    f'(default: {DEFAULT_EDIT})')
	p.add_argument('--ccache', choices=('on', 'off'), default='on',
		       help='both sides with ccache, each with a CCACHE_DIR of its own emptied '
			    'for the cold row (default), or both without')
	p.add_argument('--same-guest', action='store_true',
		       help='give the plain side the guest ours boots (--qemu_args: vCPUs and '
			    'the fixture disks; --kernel_args=printk.time=1), to compare the '
			    'tools alone')
	p.add_argument('--ours-first', action='store_true',
		       help='in each row run ours before plain (the first cold build also '
			    'warms the page cache for the second)')
	p.add_argument('--results-dir', default=None,
		       help='where bench.json and the logs go (default: '
			    '<cache>/bench/results/<timestamp>)')
	p.add_argument('--limit', type=float, default=LIMIT_PCT, metavar='PCT',
		       help=f'flag a row whose overhead exceeds PCT%% of plain (default {LIMIT_PCT})')
	p.add_argument('--dry-run', action='store_true',
		       help='print what would be emptied and run; do nothing')


@dataclass(frozen=True)
class BenchOptions:
	"""`bench`'s command line, read once (from_args)."""
	arch: str = 'x86_64'             # an arch or a comma list, as given
	rows: str = ','.join(ROWS)
	profile: str = profiles.DEFAULT
	edit_file: str = DEFAULT_EDIT
	ccache: str = 'on'               # on | off
	same_guest: bool = False
	ours_first: bool = False
	results_dir: Optional[str] = None
	limit: float = LIMIT_PCT
	dry_run: bool = False
	cache_dir: Optional[str] = None
	allow_install: bool = True       # not --no-install

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'BenchOptions':
		a = vars(args)
		d = cls()
		return cls(arch=a.get('arch') or d.arch, rows=a.get('rows') or d.rows,
			   profile=a.get('profile') or d.profile,
			   edit_file=a.get('edit_file') or d.edit_file, ccache=a.get('ccache') or d.ccache,
			   same_guest=bool(a.get('same_guest')), ours_first=bool(a.get('ours_first')),
			   results_dir=a.get('results_dir'), limit=a.get('limit', d.limit),
			   dry_run=bool(a.get('dry_run')), cache_dir=a.get('cache_dir'),
			   allow_install=not a.get('no_install', False))


# ------------------------------------------------------------------ layout


class Layout:
	"""Every path the bench uses; all of it under <cache>/bench."""

	def __init__(self, cache: Path):
		self.cache = Path(cache)
		self.root = self.cache / 'bench'
		self.src = self.root / 'src'

	def build(self, side: str, arch: str) -> Path:
		return self.root / side / arch

	def ccache(self, side: str) -> Path:
		return self.root / 'ccache' / side


def empty(path: Path, root: Path) -> None:
	"""Remove path (a build or ccache directory): only ever inside root, the
	bench's own directory, and never root itself or its source tree."""
	path, root = Path(path).resolve(), Path(root).resolve()
	if root.name != 'bench' or path == root or root not in path.parents:
		raise UserError(f'refusing to empty {path}: not inside {root}')
	if path == root / 'src' or root / 'src' in path.parents:
		raise UserError(f'refusing to empty {path}: that is the source tree')
	if path.is_symlink() or path.is_file():
		path.unlink()
	elif path.exists():
		shutil.rmtree(path)


# ------------------------------------------------------------ the two sides


def plain_command(lay: Layout, arch: str, o: BenchOptions,
		  qemu_args: Optional[List[str]] = None) -> List[str]:
	"""kunit.py run as a developer types it, on the same fragments as ours."""
	cmd = [sys.executable, str(lay.src / 'tools/testing/kunit/kunit.py'), 'run',
	       f'--arch={paths.ARCHES[arch].kernel_arch}', f'--build_dir={lay.build("plain", arch)}']
	cmd += [f'--kunitconfig={k}' for k in plan.kunitconfigs(arch, [], o.profile)]
	cross = paths.ARCHES[arch].cross_compile
	if cross:
		cmd.append(f'--cross_compile={cross}')
	cmd += [f'--make_options={m}' for m in plan.make_options(arch, o.ccache == 'on')]
	# --same-guest: our guest, printk timestamps included; otherwise the
	# kernel command line kunit.py gives it (the profile's own arguments only).
	cmd += profiles.exec_options(o.profile, qemu_args or [],
				     plan.guest_kernel_args(arch) if o.same_guest else (), arch)
	return cmd


def plain_env(lay: Layout) -> Dict[str, str]:
	"""The environment runner.py gives kunit.py, with plain's own CCACHE_DIR."""
	return plan.build_env(lay.cache, lay.ccache('plain'))


def ours_command(lay: Layout, arch: str, o: BenchOptions, rdir: Path) -> List[str]:
	cmd = [sys.executable, str(paths.REPO / 'tools' / 'kunit.py'), 'run', f'--arch={arch}',
	       '--cache-dir', str(lay.cache), '--tree', str(lay.src),
	       '--build-dir', str(lay.root / 'ours'), '--results-dir', str(rdir),
	       '--profile', o.profile,
	       # kunit.py's own default, so both sides make with the same -j
	       '--jobs', str(len(os.sched_getaffinity(0)))]
	cmd += ['--ccache-dir', str(lay.ccache('ours'))] if o.ccache == 'on' else ['--no-ccache']
	if not o.allow_install:
		cmd.append('--no-install')
	return cmd


def _execute(cmd: List[str], env: Optional[Dict[str, str]], log: Path) -> int:
	"""Run cmd with its output in log; the exit status."""
	log.parent.mkdir(parents=True, exist_ok=True)
	with open(log, 'w') as f:
		f.write('$ ' + shlex.join(cmd) + '\n')
		f.flush()
		return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
				      stdin=subprocess.DEVNULL).returncode


# ------------------------------------------------------------ measurements

ELAPSED_RUN, ELAPSED = kunit_tool.ELAPSED_RUN, kunit_tool.ELAPSED
PRINTK = re.compile(r'^\[\s*(\d+\.\d+)\]\s?(.*)$')
RESULT = re.compile(r'^\s*(not )?ok \d+')
# kunit_tool's parsed view, printed as the guest runs: [hh:mm:ss] stamps.
TOOL_STAMP, TOOL_SUITE = kunit_tool.TOOL_STAMP, kunit_tool.TOOL_SUITE


def guest_seconds(console: str) -> Optional[float]:
	"""Seconds the suites took inside the guest, from the printk timestamps:
	the first `KTAP version` line to the last test result.  None without
	timestamps (CONFIG_PRINTK_TIME off) or without KTAP."""
	start = end = None
	for line in console.splitlines():
		m = PRINTK.match(line.rstrip('\r'))
		if not m:
			continue
		t, msg = float(m.group(1)), m.group(2)
		if start is None and 'KTAP version' in msg:
			start = t
		elif start is not None and RESULT.match(msg):
			end = t
	if start is None or end is None:
		return None
	return round(end - start, 6)


def tool_seconds(output: str) -> Optional[float]:
	"""The same span from kunit_tool's own output (kunit.py run's, or exec's
	kunit.log), to the second: the first suite header to `Testing complete`.
	None if it has neither."""
	start = end = None
	for line in output.splitlines():
		m = TOOL_STAMP.match(line.rstrip('\r'))
		if not m:
			continue
		t = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
		if start is None and TOOL_SUITE.match(m.group(4)):
			start = t
		elif start is not None and m.group(4).startswith(kunit_tool.TOOL_DONE):
			end = t
	if start is None or end is None:
		return None
	return float((end - start) % 86400)     # past midnight


def ccache_stats(ccache_dir: Path) -> Dict[str, int]:
	"""ccache's counters for a directory: hits and misses."""
	if not shutil.which('ccache') or not ccache_dir.is_dir():
		return {}
	env = dict(os.environ, CCACHE_DIR=str(ccache_dir))
	out = subprocess.run(['ccache', '--print-stats'], capture_output=True, text=True,
			     env=env).stdout
	vals: Dict[str, int] = {}
	for line in out.splitlines():
		k, _, v = line.partition('\t')
		if v.strip().isdigit():
			vals[k.strip()] = int(v)
	return {'hits': vals.get('direct_cache_hit', 0) + vals.get('preprocessed_cache_hit', 0),
		'misses': vals.get('cache_miss', 0)}


def _delta(after: Dict[str, int], before: Dict[str, int]) -> Dict[str, int]:
	return {k: v - before.get(k, 0) for k, v in after.items()}


@dataclass
class Side:
	"""One side of one row."""
	name: str                        # plain or ours
	wall: float = 0.0                # seconds, the whole command
	rc: int = 0
	guest: Optional[float] = None    # in-guest seconds
	guest_source: str = ''           # printk, kunit_tool (its [hh:mm:ss]) or exec (boot too)
	parts: Dict[str, float] = field(default_factory=dict)   # where the time went
	ccache: Dict[str, int] = field(default_factory=dict)    # hits, misses in this run
	status: str = ''                 # ours: the arch's status; plain: rc
	build_skipped: bool = False      # ours: no input changed, kunit.py build not run
	log: str = ''


def plain_parts(wall: float, output: str) -> Dict[str, float]:
	"""config, build, exec from kunit.py run's closing line; tool = the rest."""
	m = None
	for m in ELAPSED_RUN.finditer(output):
		pass
	if not m:
		return {}
	total, cfg, build, exe = (float(x) for x in m.groups())
	return {'config': cfg, 'build': build, 'exec': exe, 'tool': round(wall - total, 3)}


def ours_parts(wall: float, summary: Dict[str, Any]) -> Dict[str, float]:
	"""From our summary.json: setup (deps, tree), build, exec, judge
	(verdict and kernel reports after each boot), reports (divergence, junit,
	kcidb, html), other (interpreter start, imports, result files: the rest)."""
	t = summary.get('timings') or {}
	arches = summary.get('arches') or []
	build = sum(a.get('build_seconds', 0.0) for a in arches)
	exe = sum(a.get('run_seconds', 0.0) for a in arches)
	judge = sum(a.get('judge_seconds', 0.0) for a in arches)
	parts = {'setup': t.get('deps', 0.0) + t.get('tree', 0.0),
		 'build': build, 'exec': exe, 'judge': judge,
		 'reports': t.get('divergence', 0.0) + t.get('reports', 0.0)}
	parts['other'] = wall - sum(parts.values())
	return {k: round(v, 3) for k, v in parts.items()}


def compare(plain: float, ours: float, limit: float = LIMIT_PCT) -> Dict[str, Any]:
	"""overhead = ours - plain, ratio = ours / plain, pct = overhead in % of
	plain; flagged when pct exceeds limit."""
	overhead = ours - plain
	ratio = ours / plain if plain > 0 else None
	pct = overhead / plain * 100 if plain > 0 else None
	return {'overhead': round(overhead, 3), 'ratio': None if ratio is None else round(ratio, 4),
		'pct': None if pct is None else round(pct, 2),
		'flagged': pct is None or pct > limit}


# ---------------------------------------------------------------- the edit


def edit_text(original: bytes, nonce: str) -> bytes:
	"""What the edit appends.  A comment would not do: ccache's preprocessor
	mode sees through it and the 'edit' would cost no compile."""
	sep = b'' if original.endswith(b'\n') or not original else b'\n'
	return sep + (f'\n/* bkl-kunit bench edit, undone after the row */\n'
		      f'static const char bkl_bench_edit[] __maybe_unused = "{nonce}";\n').encode()


@contextlib.contextmanager
def edited(path: Path, nonce: str) -> Iterator[Dict[str, object]]:
	"""The file with the edit appended; afterwards exactly the bytes it had
	(its mtime is left new, so that make rebuilds the object next time)."""
	if path.suffix not in ('.c', '.h'):
		raise UserError(f'{path}: the edit row edits a C file (.c or .h)')
	try:
		original = path.read_bytes()
	except OSError as e:
		raise UserError(f'the edit row cannot read {path}: {e}')
	info: Dict[str, object] = {'file': str(path),
				   'sha256': hashlib.sha256(original).hexdigest(),
				   'appended': edit_text(original, nonce).decode()}
	atomic.write_bytes(path, original + edit_text(original, nonce))
	try:
		yield info
	finally:
		atomic.write_bytes(path, original)
		info['restored'] = hashlib.sha256(path.read_bytes()).hexdigest() == info['sha256']


# ------------------------------------------------------------- the source


def prepared_tree(o: BenchOptions) -> Tuple[Path, str]:
	"""The prepared work tree and its HEAD (prepared as `run` would)."""
	prep = tree.prepare(paths.cache_dir(o.cache_dir), allow_install=o.allow_install,
			    quiet=True, keep_local=True)
	if prep.local:
		print(f'Note: the bench builds the HEAD of {prep.path}; uncommitted changes '
		      'there, if any, are not in it.')
	return prep.path, prep.head


def source_worktree(main: Path, head: str, lay: Layout) -> float:
	"""<cache>/bench/src: a worktree of main, detached at head, clean.  Files
	that did not change keep their mtimes, so builds stay warm across benches.
	Returns the seconds it took."""
	t0 = time.monotonic()
	wt = lay.src
	tree.scratch_worktree(main, wt, head, clean=True,
			      making=f'Creating the bench source tree {wt} (a worktree of {main}) ...')
	return time.monotonic() - t0


# ----------------------------------------------------------------- a row


@dataclass
class Row:
	arch: str
	row: str
	plain: Side
	ours: Side
	overhead: float = 0.0
	ratio: Optional[float] = None
	pct: Optional[float] = None
	flagged: bool = False
	failed: bool = False             # a side exited non-zero: compare with care


def run_plain(lay: Layout, arch: str, o: BenchOptions, out: Path,
	      qemu_args: List[str]) -> Side:
	cmd = plain_command(lay, arch, o, qemu_args)
	lay.build('plain', arch).parent.mkdir(parents=True, exist_ok=True)
	before = ccache_stats(lay.ccache('plain')) if o.ccache == 'on' else {}
	console = lay.build('plain', arch) / 'test.log'
	if console.exists():
		console.unlink()
	_progress(f'{arch} {out.name}: plain kunit.py run')
	t0 = time.monotonic()
	rc = _execute(cmd, plain_env(lay), out / 'plain.log')
	wall = time.monotonic() - t0
	side = Side('plain', round(wall, 3), rc, status='ok' if rc == 0 else f'exit {rc}',
		    log=str(out / 'plain.log'))
	output = (out / 'plain.log').read_text(errors='replace')
	side.parts = plain_parts(wall, output)
	text = console.read_text(errors='replace') if console.exists() else ''
	atomic.write_text(out / 'plain-console.log', text)
	_guest(side, text, output, side.parts.get('exec'))
	if o.ccache == 'on':
		side.ccache = _delta(ccache_stats(lay.ccache('plain')), before)
	return side


def run_ours(lay: Layout, arch: str, o: BenchOptions, out: Path) -> Side:
	rdir = out / 'ours'
	if rdir.exists():
		shutil.rmtree(rdir)
	cmd = ours_command(lay, arch, o, rdir)
	before = ccache_stats(lay.ccache('ours')) if o.ccache == 'on' else {}
	_progress(f'{arch} {out.name}: ./tools/kunit.py run')
	t0 = time.monotonic()
	rc = _execute(cmd, None, out / 'ours.log')
	wall = time.monotonic() - t0
	side = Side('ours', round(wall, 3), rc, log=str(out / 'ours.log'))
	try:
		summary = rundir.load_summary(rdir)      # checked: its format, its statuses
	except UserError:
		summary = {}
	side.parts = ours_parts(wall, summary) if summary else {}
	a = (summary.get('arches') or [{}])[0]
	side.status = a.get('status', f'exit {rc}')
	side.build_skipped = bool(a.get('build_skipped'))
	kunit_log = rdir / arch / 'kunit.log'
	klog = kunit_log.read_text(errors='replace') if kunit_log.exists() else ''
	m = ELAPSED.findall(klog)
	console = rdir / arch / 'console.log'
	_guest(side, console.read_text(errors='replace') if console.exists() else '', klog,
	       float(m[-1]) if m else None)
	if o.ccache == 'on':
		side.ccache = _delta(ccache_stats(lay.ccache('ours')), before)
	return side


def _guest(side: Side, console: str, tool_output: str, exec_seconds: Optional[float]) -> None:
	"""In-guest time of the suites: printk timestamps, else kunit_tool's
	own stamps (to the second), else the whole exec (boot included)."""
	for source, g in (('printk', guest_seconds(console)),
			  ('kunit_tool', tool_seconds(tool_output)), ('exec', exec_seconds)):
		if g is not None:
			side.guest, side.guest_source = g, source
			break


def _progress(msg: str) -> None:
	print(f'[{time.strftime("%H:%M:%S")}] {msg}', flush=True)


def measure_row(lay: Layout, arch: str, row: str, o: BenchOptions, out: Path,
		qemu_args: List[str]) -> Row:
	"""One row: the two sides one after the other."""
	out.mkdir(parents=True, exist_ok=True)
	if row == 'cold':
		for side in ('plain', 'ours'):
			empty(lay.build(side, arch), lay.root)
			empty(lay.ccache(side), lay.root)
			lay.ccache(side).mkdir(parents=True)
	sides: Dict[str, Side] = {}
	order = ('ours', 'plain') if o.ours_first else ('plain', 'ours')
	for name in order:
		if name == 'plain':
			sides[name] = run_plain(lay, arch, o, out, qemu_args)
		else:
			sides[name] = run_ours(lay, arch, o, out)
	r = Row(arch, row, sides['plain'], sides['ours'])
	c = compare(r.plain.wall, r.ours.wall, o.limit)
	r.overhead, r.ratio, r.pct, r.flagged = c['overhead'], c['ratio'], c['pct'], c['flagged']
	r.failed = r.plain.rc != 0 or r.ours.rc != 0
	return r


# ------------------------------------------------------------------ output


def _f(v: Optional[float], fmt: str = '.1f') -> str:
	return '-' if v is None else format(v, fmt)


def format_table(rows: List[Row], limit: float = LIMIT_PCT) -> str:
	head = ('arch', 'row', 'plain s', 'ours s', 'overhead s', 'ratio', 'overhead %',
		'guest plain s', 'guest ours s', '')
	lines = [head]
	for r in rows:
		guest = [(_f(s.guest) + (f' ({s.guest_source})' if s.guest_source else ''))
			 for s in (r.plain, r.ours)]
		flag = []
		if r.flagged:
			flag.append(f'OVER {limit:g}%')
		if r.failed:
			flag.append('FAILED: ' + ', '.join(f'{s.name} {s.status}' for s in (r.plain, r.ours)
							   if s.rc != 0))
		lines.append((r.arch, r.row, _f(r.plain.wall), _f(r.ours.wall),
			      ('+' if r.overhead >= 0 else '') + _f(r.overhead), _f(r.ratio, '.3f'),
			      ('' if r.pct is None or r.pct < 0 else '+') + _f(r.pct, '.2f'),
			      guest[0], guest[1], '  '.join(flag)))
	widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
	out = []
	for i, l in enumerate(lines):
		out.append('  '.join(c.ljust(w) if j < 2 or j == len(head) - 1 else c.rjust(w)
				     for j, (c, w) in enumerate(zip(l, widths))).rstrip())
		if i == 0:
			out.append('  '.join('-' * w for w in widths[:-1]))
	return '\n'.join(out)


def format_breakdown(r: Row) -> List[str]:
	"""Where each side's time went, and the overhead split the same way."""
	def parts(s: Side) -> str:
		return ' + '.join(f'{k} {v:.1f}' for k, v in s.parts.items())
	p, o = r.plain.parts, r.ours.parts
	out = [f'{r.arch} {r.row}:',
	       f'  plain {r.plain.wall:7.1f} s = ' + (parts(r.plain) or '(no Elapsed line)'),
	       f'  ours  {r.ours.wall:7.1f} s = ' + (parts(r.ours) or '(no summary.json)')
	       + ('  [build skipped: inputs unchanged]' if r.ours.build_skipped else '')]
	if p and o:
		build = o['build'] - p['config'] - p['build']
		exe = o['exec'] - p['exec']
		tool = o['setup'] + o['judge'] + o['reports'] + o['other'] - p['tool']
		out.append(f'  overhead {r.overhead:+.1f} s = build {build:+.1f} (kunit.py build vs '
			   f'config+build) + exec {exe:+.1f} + tool {tool:+.1f} (setup {o["setup"]:.1f}, '
			   f'judge {o["judge"]:.1f}, reports {o["reports"]:.1f}, other {o["other"]:.1f}; '
			   f'plain\'s own {p["tool"]:.1f})')
	if r.plain.ccache or r.ours.ccache:
		out.append('  ccache hits/misses: plain {}/{}, ours {}/{}'.format(
			r.plain.ccache.get('hits', '-'), r.plain.ccache.get('misses', '-'),
			r.ours.ccache.get('hits', '-'), r.ours.ccache.get('misses', '-')))
	return out


def goals(rows: List[Row], limit: float = LIMIT_PCT) -> List[Dict[str, Any]]:
	"""The issue's goals, each with the figure measured and whether it was met."""
	out: List[Dict[str, object]] = []
	for r in rows:
		out.append({'arch': r.arch, 'row': r.row, 'goal': f'overhead <= {limit:g}% of plain',
			    'value': r.pct, 'unit': '%', 'met': not r.flagged})
		if r.row in GOAL_WALL:
			what = ('one-test edit -> result' if r.row == 'edit' else 'no-change rerun')
			out.append({'arch': r.arch, 'row': r.row,
				    'goal': f'{what} <= {GOAL_WALL[r.row]:g} s', 'value': r.ours.wall,
				    'unit': 's', 'met': r.ours.wall <= GOAL_WALL[r.row]})
		if r.ours.guest is not None:
			out.append({'arch': r.arch, 'row': r.row,
				    'goal': f'all suites in the guest <= {GOAL_GUEST:g} s '
					    f'({r.ours.guest_source})',
				    'value': r.ours.guest, 'unit': 's', 'met': r.ours.guest <= GOAL_GUEST})
	return out


def results_dir(o: BenchOptions, lay: Layout) -> Path:
	if not o.results_dir:
		return paths.new_stamped_dir(lay.root / 'results')
	d = Path(o.results_dir).resolve()
	d.mkdir(parents=True, exist_ok=True)
	return d


def write_json(rdir: Path, doc: Dict[str, Any], rows: List[Row], limit: float) -> None:
	doc = dict(doc, rows=[asdict(r) for r in rows], goals=goals(rows, limit))
	atomic.write_text(rdir / 'bench.json', json.dumps(doc, indent=1) + '\n')


def parse_rows(spec: str) -> List[str]:
	want = [s.strip() for s in spec.split(',') if s.strip()]
	bad = [s for s in want if s not in ROWS]
	if bad or not want:
		raise UserError(f'--rows: {", ".join(bad) or "nothing"}; choose from {", ".join(ROWS)}')
	return [r for r in ROWS if r in want]


# -------------------------------------------------------------------- main


def main(o: BenchOptions) -> int:
	"""`bench` (cli.py reads its command line into o)."""
	try:
		arches = paths.parse_arches(o.arch)
	except ValueError as e:
		raise UserError(str(e))
	rows_wanted = parse_rows(o.rows)
	prof = profiles.get(o.profile)
	arches_run = [a for a in arches if prof.supports(a)]
	for a in arches:
		if a not in arches_run:
			print(f'{a}: profile {prof.name} not supported ({prof.why_not(a)}); not measured')
	if not arches_run:
		raise UserError(f'no arch of {o.arch} has profile {prof.name}')
	cache = paths.cache_dir(o.cache_dir)
	lay = Layout(cache)
	if o.dry_run:
		return dry_run(lay, arches_run, rows_wanted, o)
	deps.ensure(deps.for_arches(arches_run), allow_install=o.allow_install)
	main_tree, head = prepared_tree(o)
	setup_s = source_worktree(main_tree, head, lay)
	edit_path = lay.src / o.edit_file
	if 'edit' in rows_wanted and not edit_path.is_file():
		raise UserError(f'--edit-file {o.edit_file}: no such file in {lay.src}')
	rdir = results_dir(o, lay)

	qemu_args: Dict[str, List[str]] = {}
	for a in arches_run:
		qemu_args[a] = plan.qemu_extra(a, prof) if o.same_guest else []

	doc: Dict[str, Any] = {
		'date': time.strftime('%Y-%m-%d %H:%M:%S %z'),
		'host': {'cpus': os.cpu_count(), 'cpus_usable': len(os.sched_getaffinity(0)),
			 'machine': platform.machine(), 'kernel': platform.release(),
			 'python': platform.python_version()},
		'source': str(lay.src), 'head': head, 'profile': prof.name,
		'arches': arches_run, 'rows_wanted': rows_wanted, 'ccache': o.ccache,
		'same_guest': o.same_guest, 'order': 'ours first' if o.ours_first
		else 'plain first', 'limit_pct': o.limit,
		'source_tree_seconds': round(setup_s, 3),
		'commands': {a: {'plain': plain_command(lay, a, o, qemu_args[a]),
				 'ours': ours_command(lay, a, o, rdir / a / '<row>' / 'ours')}
			     for a in arches_run},
		'edits': [],
	}
	print(f'Bench: {", ".join(arches_run)}; rows {", ".join(rows_wanted)}; source {lay.src} '
	      f'at {head[:12]}; results {rdir}')
	rows: List[Row] = []
	try:
		for arch in arches_run:
			for row in rows_wanted:
				out = rdir / arch / row
				if row == 'edit':
					with edited(edit_path, f'{time.time_ns()}-{os.getpid()}') as info:
						doc['edits'].append(info)
						rows.append(measure_row(lay, arch, row, o, out, qemu_args[arch]))
					if not info['restored']:
						raise UserError(f'{edit_path} is not as it was after the edit row')
				else:
					rows.append(measure_row(lay, arch, row, o, out, qemu_args[arch]))
				r = rows[-1]
				_progress(f'{arch} {row}: plain {r.plain.wall:.1f} s, ours {r.ours.wall:.1f} s, '
					  f'ratio {_f(r.ratio, ".3f")}')
				write_json(rdir, doc, rows, o.limit)
	finally:
		write_json(rdir, doc, rows, o.limit)
	print()
	print(format_table(rows, o.limit))
	print('\nWhere the time goes (seconds):')
	for r in rows:
		print('\n'.join(format_breakdown(r)))
	print('\nGoals (ours):')
	for g in goals(rows, o.limit):
		v = _f(g['value'], '.2f' if g['unit'] == '%' else '.1f')
		print(f'  {g["arch"]:<7} {g["row"]:<5} {g["goal"]:<48} {v:>8} {g["unit"]:<2} '
		      f'{"met" if g["met"] else "MISSED"}')
	print(f'\nBench: {rdir / "bench.json"}')
	flagged = [f'{r.arch} {r.row}' for r in rows if r.flagged]
	failed = [f'{r.arch} {r.row}' for r in rows if r.failed]
	if flagged:
		print(f'Overhead above {o.limit:g}%: {", ".join(flagged)}')
	if failed:
		print(f'A side exited non-zero (see the logs): {", ".join(failed)}')
	return 1 if flagged or failed else 0


def dry_run(lay: Layout, arches: List[str], rows: List[str], o: BenchOptions) -> int:
	rdir = Path(o.results_dir or lay.root / 'results' / '<timestamp>')
	print(f'source: {lay.src} (a worktree of the prepared tree at its HEAD)')
	for arch in arches:
		for row in rows:
			print(f'# {arch} {row}')
			if row == 'cold':
				for side in ('plain', 'ours'):
					print(f'empty {lay.build(side, arch)}')
					print(f'empty {lay.ccache(side)}')
			if row == 'edit':
				print(f'edit {lay.src / o.edit_file} (appended, restored afterwards)')
			same = plan.qemu_extra(arch, plan.profile_named(o.profile)) \
				if o.same_guest else []
			cmds = [('plain', plain_command(lay, arch, o, same)),
				('ours', ours_command(lay, arch, o, rdir / arch / row / 'ours'))]
			for name, cmd in (cmds[::-1] if o.ours_first else cmds):
				env = (f'CCACHE_DIR={lay.ccache("plain")} ' if name == 'plain' and
				       o.ccache == 'on' else '')
				print(f'{name}: {env}' + shlex.join(cmd))
	return 0
