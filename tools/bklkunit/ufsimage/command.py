# SPDX-License-Identifier: GPL-2.0
"""The `fixtures` verb: make (or find) the UFS images, verify and list them,
and write the form the kernel suites carry (docs/fixtures.md)."""

import argparse
import sys
from pathlib import Path
from dataclasses import dataclass
from typing import List, Optional

from . import csource, fixtures
from ..base import atomic, paths
from ..base.errors import UserError
from ..source import tree


def add_arguments(p: argparse.ArgumentParser) -> None:
	p.add_argument('--list', action='store_true', help='also print every label')
	p.add_argument('--rebuild', action='store_true',
		       help='make the images again even if the set exists')
	p.add_argument('--verify', action='store_true',
		       help='read every good, rw and relocated image back with the reader, '
			    'compare, and check its bitmaps and counters')
	p.add_argument('--prune', action='store_true',
		       help='remove the image sets of other recipes from the cache')
	p.add_argument('--recipe', default=str(fixtures.RECIPE),
		       help=f'the recipe (default: {fixtures.RECIPE})')
	p.add_argument('--emit-c', metavar='FILE', default=None,
		       help=f'write the carried form of the set ({csource.C_PATH} in the '
			    'kernel) to FILE; "tree" means that file in the prepared tree')
	p.add_argument('--check-c', metavar='FILE', default=None,
		       help='exit 1 unless FILE ("tree": the prepared tree\'s) turns back into '
			    'this set byte for byte')


def _c_file(cache: Path, where: str) -> Path:
	if where == 'tree':
		return tree.find_prepared(cache) / csource.C_PATH
	return Path(where)


@dataclass(frozen=True)
class FixturesOptions:
	"""The `fixtures` verb's command line, read once (from_args)."""
	cache: Path
	recipe: Path
	rebuild: bool = False
	allow_install: bool = True       # not --no-install
	verify: bool = False
	list: bool = False
	emit_c: Optional[str] = None
	check_c: Optional[str] = None
	prune: bool = False

	@classmethod
	def from_args(cls, args: argparse.Namespace) -> 'FixturesOptions':
		return cls(paths.cache_dir(args.cache_dir), Path(args.recipe), rebuild=args.rebuild,
			   allow_install=not args.no_install, verify=args.verify, list=args.list,
			   emit_c=args.emit_c, check_c=args.check_c, prune=args.prune)


def cmd(o: FixturesOptions) -> int:
	"""The `fixtures` verb (cli.py reads its command line into o)."""
	cache = o.cache
	recipe = o.recipe
	images = fixtures.build(cache, recipe, rebuild=o.rebuild,
				allow_install=o.allow_install, log=print)
	where = images[0].path.parent if images else fixtures.set_dir(cache, recipe)
	print(where)
	for img in images:
		print(f'  {img.name:<20} {img.size:>10}  expect {img.expect}'
		      + (f'  corrupt {img.corrupt}' if img.corrupt else ''))
	rc = 0
	if o.verify:
		for img in images:
			if img.corrupt:
				continue
			buf = img.path.read_bytes()
			problems = fixtures.verify(buf) + fixtures.consistency(buf)
			print(f'verify {img.name}: '
			      + (f'{len(problems)} problems' if problems else 'ok'))
			for p in problems[:20]:
				print(f'  {p}')
			rc = rc or (1 if problems else 0)
	if o.list:
		for img in images:
			print(f'\n== {img.name} ({img.path.name})')
			sys.stdout.write(img.label)
	if o.emit_c:
		out = _c_file(cache, o.emit_c)
		text = csource.emit_c(csource.derive_set(images, recipe),
				      fixtures.makefs_version() or 'unknown')
		atomic.write_text(out, text)
		print(f'Wrote {out}: {text.count(chr(10))} lines, {len(text)} bytes')
		for name, lines, size in csource.costs(text):
			print(f'  {name:<20} {lines:>5} lines {size:>7} bytes')
	if o.check_c:
		src = _c_file(cache, o.check_c)
		problems = csource.check(src, images)
		for problem in problems:
			print(f'{src}: {problem}')
		print(f'{src}: ' + ('differs from the images' if problems else
				    f'turns back into all {len(images)} images byte for byte'))
		rc = rc or (1 if problems else 0)
	if o.prune:
		for gone in fixtures.prune(cache, where):
			print(f'Removed {gone}')
	return rc


def main(argv: Optional[List[str]] = None) -> int:
	"""`kunit.py fixtures [--list] [--rebuild] ...` on its own."""
	p = argparse.ArgumentParser(prog='kunit.py fixtures', description=__doc__.split('\n')[0])
	p.add_argument('--cache-dir', default=None)
	p.add_argument('--no-install', action='store_true')
	add_arguments(p)
	args = p.parse_args(argv)
	try:
		return cmd(FixturesOptions.from_args(args))
	except UserError as e:
		print(f'kunit.py fixtures: error: {e}', file=sys.stderr)
		return e.exit_code
