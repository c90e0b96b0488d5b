# SPDX-License-Identifier: GPL-2.0
"""The coverage of a run as text: run's closing table, `compare`'s notes."""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..results.model import ArchResult

KINDS = ('lines', 'functions', 'branches')


def cell(c: Dict[str, Any]) -> str:
	"""'123/456 27.0%' of one kind ({'hit', 'total', 'percent'})."""
	if not c or not c.get('total'):
		return '-'
	return f'{c["hit"]}/{c["total"]} {c["percent"]:.1f}%'


def rows(cov: Dict[str, Any]) -> List[Tuple[str, ...]]:
	"""One row per measured file, per subsystem and the total."""
	out: List[Tuple[str, ...]] = []
	for path, f in sorted(cov.get('files', {}).items()):
		out.append((path + (' *' if f.get('goal') else ''),) + tuple(cell(f.get(k, {})) for k in KINDS))
	for name, s in sorted(cov.get('subsystems', {}).items()):
		out.append((f'[{name}]',) + tuple(cell(s.get(k, {})) for k in KINDS))
	if cov.get('total'):
		out.append(('[total]',) + tuple(cell(cov['total'].get(k, {})) for k in KINDS))
	return out


def align(table: Sequence[Tuple[str, ...]]) -> str:
	widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
	lines = []
	for i, r in enumerate(table):
		lines.append('  '.join(c.ljust(w) if j == 0 else c.rjust(w)
				       for j, (c, w) in enumerate(zip(r, widths))).rstrip())
		if i == 0:
			lines.append('  '.join('-' * w for w in widths))
	return '\n'.join(lines)


def format_arch(arch: str, cov: Optional[Dict[str, Any]], status: str = '') -> str:
	if not cov:
		return f'{arch}: no coverage' + (f' ({status}: not booted)' if status else '')
	if cov.get('error'):
		return f'{arch}: coverage not measured: {cov["error"]}'
	head = f'{arch}: coverage of the suites (boot subtracted); * = a goal file'
	return head + '\n' + align([('file', 'lines', 'functions', 'branches')] + rows(cov))


def format_run(results: Sequence[ArchResult]) -> str:
	return '\n\n'.join(format_arch(r.arch, r.coverage, '' if r.coverage else str(r.status))
			   for r in results if r.counted)
