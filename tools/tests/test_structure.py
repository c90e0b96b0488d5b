# SPDX-License-Identifier: GPL-2.0
"""The shape of tools/bklkunit: imports at the top of each module, no import
cycle, no module reaching into another's _private names, kunit_parser
touched only through kunit_tool.py, and docs/design.md naming every module."""

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

PKG = Path(__file__).resolve().parents[1] / 'bklkunit'
DESIGN = Path(__file__).resolve().parents[2] / 'docs' / 'design.md'


def _modules() -> Dict[str, Path]:
	"""{'run': path, 'export.junit': path, 'export': export/__init__.py, ...}"""
	out = {}
	for p in sorted(PKG.rglob('*.py')):
		parts = list(p.relative_to(PKG).with_suffix('').parts)
		if parts[-1] == '__init__':
			parts = parts[:-1]
		if parts:
			out['.'.join(parts)] = p
	return out


def _imports(name: str, tree: ast.Module) -> Set[str]:
	"""The bklkunit modules a module imports at its top level."""
	mods = _modules()
	pkg = name.split('.')[:-1] if not _modules()[name].name == '__init__.py' else name.split('.')
	out: Set[str] = set()
	for node in tree.body:
		if not isinstance(node, ast.ImportFrom) or not node.level:
			continue
		base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
		target = '.'.join(base + ([node.module] if node.module else []))
		if target in mods:
			out.add(target)
		for alias in node.names:
			sub = '.'.join(filter(None, [target, alias.name]))
			if sub in mods:
				out.add(sub)
	out.discard(name)
	return out


def test_imports_are_at_the_top_of_each_module():
	local: List[str] = []
	for name, p in _modules().items():
		for node in ast.walk(ast.parse(p.read_text())):
			if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
				for inner in ast.walk(node):
					if isinstance(inner, (ast.Import, ast.ImportFrom)):
						local.append(f'{name}:{inner.lineno}')
	assert not local, f'function-local imports: {local}'


def test_no_import_cycles():
	graph = {n: _imports(n, ast.parse(p.read_text())) for n, p in _modules().items()}
	cycles = []

	def visit(n: str, path: List[str], done: Set[str]) -> None:
		for d in sorted(graph.get(n, ())):
			if d in path:
				cycles.append(' -> '.join(path[path.index(d):] + [d]))
			elif d not in done:
				done.add(d)
				visit(d, path + [d], done)
	for n in graph:
		visit(n, [n], set())
	assert not cycles, cycles[:5]


def test_no_module_calls_another_modules_private_names():
	names = {n.split('.')[-1] for n in _modules()}
	bad = []
	for name, p in _modules().items():
		for m in re.finditer(r'(?<![\w.])(\w+)\._[a-z]\w*', p.read_text()):
			if m.group(1) in names and m.group(1) != name.split('.')[-1]:
				bad.append(f'{name}: {m.group(0)}')
	assert not bad, bad


def test_only_kunit_tool_loads_kunit_parser():
	for name, p in _modules().items():
		if name == 'kunit_tool':
			continue
		text = p.read_text()
		assert not re.search(r'import\s+kunit_(parser|printer)|kunit_printer|import_module',
				     text), name


def test_the_design_doc_names_every_module():
	doc = DESIGN.read_text()
	table = [l for l in doc.splitlines() if l.startswith('| `')]
	named = ' '.join(table)
	missing = []
	for name, p in _modules().items():
		if name == '':
			continue
		if p.parent != PKG:
			ok = f'`{p.parent.name}/`' in named and f'`{p.name}`' in named
		else:
			ok = f'`{p.name}`' in named
		if not ok and not (p.name == '__init__.py' and f'`{p.parent.name}/`' in named):
			missing.append(name)
	assert not missing, f'docs/design.md does not name: {missing}'
