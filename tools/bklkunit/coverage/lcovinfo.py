# SPDX-License-Identifier: GPL-2.0
"""lcov tracefiles (.info): read, one subtracted from another, written, and
counted per file.

Only what geninfo writes is kept: TN, SF, FN, FNDA, BRDA, DA (the counts
LF/LH, FNF/FNH, BRF/BRH are made again from them).  The suites' coverage
is the run that booted them minus the boot that ran none (measure.py):
a line counts as the suites' when they executed it more times than boot
alone did.
"""

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Tuple

BranchKey = Tuple[int, str, str]          # line, block, branch


@dataclass
class Counts:
	lines_hit: int = 0
	lines: int = 0
	functions_hit: int = 0
	functions: int = 0
	branches_hit: int = 0
	branches: int = 0

	def add(self, o: 'Counts') -> None:
		self.lines_hit += o.lines_hit
		self.lines += o.lines
		self.functions_hit += o.functions_hit
		self.functions += o.functions
		self.branches_hit += o.branches_hit
		self.branches += o.branches

	def as_dict(self) -> Dict[str, Dict[str, object]]:
		return {k: {'hit': h, 'total': t, 'percent': percent(h, t)}
			for k, h, t in (('lines', self.lines_hit, self.lines),
					('functions', self.functions_hit, self.functions),
					('branches', self.branches_hit, self.branches))}


def percent(hit: int, total: int) -> Optional[float]:
	return round(100.0 * hit / total, 1) if total else None


@dataclass
class FileCov:
	path: str
	lines: Dict[int, int] = field(default_factory=dict)
	functions: Dict[str, int] = field(default_factory=dict)       # name -> calls
	function_lines: Dict[str, int] = field(default_factory=dict)  # name -> first line
	branches: Dict[BranchKey, Optional[int]] = field(default_factory=dict)  # None: '-'

	def counts(self) -> Counts:
		return Counts(
			lines_hit=sum(1 for c in self.lines.values() if c > 0), lines=len(self.lines),
			functions_hit=sum(1 for c in self.functions.values() if c > 0),
			functions=len(self.functions),
			branches_hit=sum(1 for c in self.branches.values() if c), branches=len(self.branches))

	def function_at(self, line: int) -> str:
		"""The function a line is in: the last one that starts at or before it."""
		best, at = '', -1
		for name, ln in self.function_lines.items():
			if at < ln <= line:
				best, at = name, ln
		return best

	def uncovered_regions(self) -> List[Tuple[int, int, int, str]]:
		"""uncovered_runs with their size: (first, last, instrumented lines
		not executed, function), largest first."""
		out = []
		for a, b in self.uncovered_runs():
			n = sum(1 for ln, c in self.lines.items() if a <= ln <= b and c == 0)
			out.append((a, b, n, self.function_at(a)))
		out.sort(key=lambda r: (-r[2], r[0]))
		return out

	def uncovered_runs(self) -> List[Tuple[int, int]]:
		"""Runs of instrumented lines not executed, as (first, last) source
		lines, largest (most instrumented lines) first."""
		runs: List[Tuple[int, int, int]] = []
		start = prev = -1
		n = 0
		for line in sorted(self.lines):
			if self.lines[line] == 0:
				if start < 0:
					start, n = line, 0
				prev = line
				n += 1
			elif start >= 0:
				runs.append((n, start, prev))
				start = -1
		if start >= 0:
			runs.append((n, start, prev))
		runs.sort(key=lambda r: (-r[0], r[1]))
		return [(a, b) for _, a, b in runs]


def parse(text: str) -> Dict[str, FileCov]:
	"""A tracefile's files by SF path (the records of a file listed twice
	are added up, as lcov does)."""
	files: Dict[str, FileCov] = {}
	cur: Optional[FileCov] = None
	for raw in text.splitlines():
		line = raw.strip()
		if not line or line.startswith('TN:'):
			continue
		tag, _, rest = line.partition(':')
		if tag == 'SF':
			cur = files.setdefault(rest, FileCov(rest))
		elif line == 'end_of_record':
			cur = None
		elif cur is None:
			continue
		elif tag == 'DA':
			parts = rest.split(',')
			ln, cnt = int(parts[0]), int(parts[1])
			cur.lines[ln] = cur.lines.get(ln, 0) + cnt
		elif tag == 'FN':
			ln_s, _, name = rest.partition(',')
			cur.function_lines[name] = int(ln_s)
			cur.functions.setdefault(name, 0)
		elif tag == 'FNDA':
			cnt_s, _, name = rest.partition(',')
			cur.functions[name] = cur.functions.get(name, 0) + int(cnt_s)
		elif tag == 'BRDA':
			ln_s, block, branch, taken = rest.split(',')
			key = (int(ln_s), block, branch)
			was = cur.branches.get(key)
			now = None if taken == '-' else int(taken)
			cur.branches[key] = now if was is None else was + (now or 0)
	return files


def subtract(full: Dict[str, FileCov], boot: Dict[str, FileCov]) -> Dict[str, FileCov]:
	"""What full executed beyond boot: each count less boot's, never below 0."""
	out: Dict[str, FileCov] = {}
	for path, f in full.items():
		b = boot.get(path, FileCov(path))
		g = FileCov(path, function_lines=dict(f.function_lines))
		g.lines = {ln: max(0, c - b.lines.get(ln, 0)) for ln, c in f.lines.items()}
		g.functions = {n: max(0, c - b.functions.get(n, 0)) for n, c in f.functions.items()}
		for key, taken in f.branches.items():
			if taken is None:
				g.branches[key] = None
			else:
				g.branches[key] = max(0, taken - (b.branches.get(key) or 0))
		out[path] = g
	return out


def dumps(files: Iterable[FileCov], test_name: str = '') -> str:
	"""A tracefile of these files, as geninfo writes one."""
	out: List[str] = []
	for f in sorted(files, key=lambda f: f.path):
		out.append(f'TN:{test_name}')
		out.append(f'SF:{f.path}')
		for name, ln in sorted(f.function_lines.items(), key=lambda kv: (kv[1], kv[0])):
			out.append(f'FN:{ln},{name}')
		for name, ln in sorted(f.function_lines.items(), key=lambda kv: (kv[1], kv[0])):
			out.append(f'FNDA:{f.functions.get(name, 0)},{name}')
		c = f.counts()
		out.append(f'FNF:{c.functions}')
		out.append(f'FNH:{c.functions_hit}')
		for (ln, block, branch), taken in sorted(f.branches.items(),
							 key=lambda kv: (kv[0][0], int(kv[0][1]) if kv[0][1].isdigit() else 0, kv[0][1], int(kv[0][2]) if kv[0][2].isdigit() else 0, kv[0][2])):
			out.append(f'BRDA:{ln},{block},{branch},{"-" if taken is None else taken}')
		out.append(f'BRF:{c.branches}')
		out.append(f'BRH:{c.branches_hit}')
		for ln in sorted(f.lines):
			out.append(f'DA:{ln},{f.lines[ln]}')
		out.append(f'LF:{c.lines}')
		out.append(f'LH:{c.lines_hit}')
		out.append('end_of_record')
	return '\n'.join(out) + '\n'
