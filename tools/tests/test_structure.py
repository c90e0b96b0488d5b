# SPDX-License-Identifier: GPL-2.0
"""The shape of tools/bklkunit: the parts are folders in one layer order
(LAYERS: no module imports a module above it, within a part or across
parts), no import cycle, imports at the top of each module, no module
reaching into another's _private names, kunit_parser touched only through
results/kunit_tool.py, below the CLI typed options only (cli.py reads
the argparse Namespace into each verb's typed options, by its from_args),
and docs/design.md naming every module."""

import ast
import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

PKG = Path(__file__).resolve().parents[1] / 'bklkunit'
DESIGN = Path(__file__).resolve().parents[2] / 'docs' / 'design.md'

# The layer order, lowest first: each part (a folder of tools/bklkunit) with
# its modules, lowest first.  A module may import only modules before it:
# those of a lower part, or those listed before it in its own part.  '' is
# the top: the CLI.  A module that is not listed here fails the test, so a
# new one is given its place in the order.
LAYERS: List[Tuple[str, List[str]]] = [
	('base', ['errors', 'atomic', 'paths', 'deps', 'digest', 'argtypes']),
	('source', ['commitmsg', 'kconfig', 'subsystems', 'tree']),
	('ufsimage', ['fixtures', 'csource', 'command']),
	('results', ['model', 'kunit_tool', 'kernel_reports', 'cases', 'verdicts', 'rundir',
		     'seriesjob', 'export.junit', 'export.kcidb', 'export.html', 'export']),
	('coverage', ['scope', 'lcovinfo', 'gcovdump', 'gcovinit', 'umlgcov', 'measure', 'table']),
	('compare', ['covbaseline', 'baseline']),
	('run', ['profiles', 'progress', 'plan', 'buildinputs', 'covboots', 'laterboots',
		 'runner', 'clean']),
	('series', ['mail', 'checkplan', 'modulescheck', 'bootcheck', 'checkseries']),
	('analysis', ['ab', 'bench', 'mutsites', 'mutate']),
	('ci', ['pipeline', 'merge', 'gate']),
	('', ['jsonout', 'cli']),
]
TOP = {m for part, ms in LAYERS if part == '' for m in ms}
PARTS = [part for part, _ in LAYERS if part]


def _modules() -> Dict[str, Path]:
	"""{'run.runner': path, 'results.export.junit': path, 'results.export':
	results/export/__init__.py, 'run': run/__init__.py, ...}"""
	out = {}
	for p in sorted(PKG.rglob('*.py')):
		parts = list(p.relative_to(PKG).with_suffix('').parts)
		if parts[-1] == '__init__':
			parts = parts[:-1]
		if parts:
			out['.'.join(parts)] = p
	return out


def _imports(name: str, tree: ast.Module) -> Set[str]:
	"""The bklkunit modules a module imports at its top level: a package
	only when a name of its own (not a submodule) is imported from it."""
	mods = _modules()
	pkg = name.split('.') if mods[name].name == '__init__.py' else name.split('.')[:-1]
	out: Set[str] = set()
	for node in tree.body:
		if not isinstance(node, ast.ImportFrom) or not node.level:
			continue
		base = pkg[:len(pkg) - (node.level - 1)] if node.level > 1 else pkg
		target = '.'.join(base + ([node.module] if node.module else []))
		for alias in node.names:
			sub = '.'.join(filter(None, [target, alias.name]))
			if sub in mods:
				out.add(sub)
			elif target in mods:
				out.add(target)
	out.discard(name)
	return out


def _graph() -> Dict[str, Set[str]]:
	return {n: _imports(n, ast.parse(p.read_text())) for n, p in _modules().items()}


def _rank(name: str) -> Tuple[int, int]:
	"""(part, place in the part) of a module; KeyError when LAYERS does not
	list it."""
	for i, (part, ms) in enumerate(LAYERS):
		prefix = f'{part}.' if part else ''
		if part and name == part:
			return i, -1                    # the part's __init__: below its modules
		if name.startswith(prefix) and name[len(prefix):] in ms:
			return i, ms.index(name[len(prefix):])
	raise KeyError(name)


def test_the_parts_are_folders():
	"""Every module but the CLI's lives in the folder of its part, each
	part a package, and no other folder or top-level module exists (no
	module left behind under its old name)."""
	mods = _modules()
	for part in PARTS:
		assert (PKG / part / '__init__.py').is_file(), part
	stray = [n for n in mods if '.' not in n and n not in PARTS and n not in TOP]
	assert not stray, f'modules outside the parts: {stray}'
	unknown = [n for n in mods if n.split('.')[0] not in PARTS and n not in TOP]
	assert not unknown, unknown


def test_every_module_has_its_place_in_the_layer_order():
	mods = _modules()
	unlisted = []
	for n in mods:
		try:
			_rank(n)
		except KeyError:
			unlisted.append(n)
	assert not unlisted, f'not in LAYERS (give each its place): {unlisted}'
	listed = {(f'{part}.{m}' if part else m) for part, ms in LAYERS for m in ms}
	gone = sorted(listed - set(mods))
	assert not gone, f'LAYERS lists modules that do not exist: {gone}'


def test_no_module_imports_a_module_above_it():
	"""Across parts and within a part: the layer order of LAYERS."""
	upward = []
	for n, deps in _graph().items():
		for d in sorted(deps):
			if _rank(d) >= _rank(n):
				upward.append(f'{n} imports {d}')
	assert not upward, upward


def test_the_parts_init_files_import_nothing():
	"""A part's __init__.py is its docstring: nothing re-exported under an
	old or a short name."""
	for part in PARTS:
		tree = ast.parse((PKG / part / '__init__.py').read_text())
		assert [type(n) for n in tree.body] == [ast.Expr], part
		assert ast.get_docstring(tree), part


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
	graph = _graph()
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
		if name == 'results.kunit_tool':
			continue
		text = p.read_text()
		assert not re.search(r'import\s+kunit_(parser|printer)|kunit_printer|import_module',
				     text), name


def test_below_the_cli_typed_options_only():
	"""Below cli.py a Namespace is taken only by the from_args that reads it
	into typed options, never beside typed options (a Union with it), and
	goes nowhere but to a from_args: cli.py builds the options of every verb,
	and runner.main, run_arch, Checker and the rest take them."""
	bad = []
	for name, p in _modules().items():
		if name == 'cli':
			continue
		for f in ast.walk(ast.parse(p.read_text())):
			if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
				continue
			params = f.args.posonlyargs + f.args.args + f.args.kwonlyargs
			ns = [a.arg for a in params
			      if a.annotation is not None and 'Namespace' in ast.unparse(a.annotation)]
			for a in params:
				text = ast.unparse(a.annotation) if a.annotation is not None else ''
				if 'Namespace' in text and text.strip("'") not in ('argparse.Namespace',
										   'Namespace'):
					bad.append(f'{name}.{f.name}({a.arg}: {text}): a Namespace beside '
						   'typed options')
			if ns and f.name != 'from_args':
				bad.append(f'{name}.{f.name} takes a Namespace ({", ".join(ns)})')
			for c in ast.walk(f):
				if not isinstance(c, ast.Call):
					continue
				callee = ast.unparse(c.func)
				passed = [v for v in list(c.args) + [k.value for k in c.keywords]
					  if isinstance(v, ast.Name) and v.id in ns]
				if passed and not (callee.endswith('from_args') or callee in ('vars', 'getattr')):
					bad.append(f'{name}.{f.name} passes its Namespace to {callee}')
	assert not bad, bad


def test_the_design_doc_names_every_module():
	"""Each module by its path under tools/bklkunit (`run/runner.py`), each
	part by its folder (`run/`), in the tables of docs/design.md; and no
	path there that does not exist."""
	doc = DESIGN.read_text()
	table = [l for l in doc.splitlines() if l.startswith('| `')]
	named = ' '.join(table)
	missing = []
	for name, p in _modules().items():
		rel = p.relative_to(PKG)
		want = f'`{rel.parent}/`' if p.name == '__init__.py' else f'`{rel}`'
		if want not in named:
			missing.append(name)
	assert not missing, f'docs/design.md does not name: {missing}'
	stale = [m for m in re.findall(r'`([a-z_]+/(?:[a-z_]+/)*[a-z_]+\.py)`', named)
		 if not (PKG / m).is_file()]
	assert not stale, f'docs/design.md names modules that do not exist: {stale}'
	for part in PARTS:
		assert f'`{part}/`' in doc, part


def test_the_design_drawing_shows_the_layer_order():
	"""The drawing of the parts in docs/design.md: one line per part, the
	highest first, each with its modules in their order (LAYERS)."""
	doc = DESIGN.read_text()
	drawing = next(b for b in doc.split('```')[1::2] if '  base/' in b)
	shown = []
	for line in drawing.splitlines():
		m = re.match(r'^\s*([a-z_]+)/\s+(.*)$', line)
		if not m or m.group(1) not in PARTS:
			continue
		part = m.group(1)
		want = [x for x in dict(LAYERS)[part] if '.' not in x and x != 'export']
		words = m.group(2).split()
		assert words[:len(want)] == want, f'{part}/ is drawn with {words[:len(want)]}, not {want}'
		shown.append(part)
	assert shown == PARTS[::-1], f'the parts are drawn as {shown}, not {PARTS[::-1]}'
