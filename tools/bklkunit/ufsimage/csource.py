# SPDX-License-Identifier: GPL-2.0
"""The UFS fixture images in the form the kernel suites carry them.

makefs stays the oracle: fixtures.py makes the images; this module derives
from them what fs/ufs/tests/fixture_images.c holds, and turns that back into
the images byte for byte (the tests prove it on every image).

An image is a list of runs of 512-byte sectors, sorted and disjoint:

- a *file* run holds sectors of one fixture file, whose bytes are the
  content formula (fixtures.content) and zeros past the file's end;
- a *data* run holds sectors stored as they are: superblocks, cylinder
  groups, inodes, directories, indirect blocks, the label.  All data sectors
  of an image are concatenated and xz-compressed (CRC32 check, which the
  kernel's xz decoder supports);
- a sector no run covers is zero, or, on an image with a *base* (the
  corrupted copies), the base image's sector.

Nothing else is stored: an image of 68 MiB whose files are formula content
is carried in a few kilobytes.
"""

import lzma
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import fixtures

SECTOR = 512
C_PATH = 'fs/ufs/tests/fixture_images.c'


@dataclass(frozen=True)
class Run:
	sector: int             # first sector of the image
	count: int              # sectors
	file: str = ''          # '' for a data run
	start: int = 0          # data: first sector in the data; file: first sector of the file
	size: int = 0           # file: the file's size in bytes


@dataclass
class Carried:
	name: str
	size: int                       # bytes
	base: str = ''                  # corrupted copies: the image they differ from
	runs: List[Run] = field(default_factory=list)
	data: bytes = b''               # the data sectors, concatenated


def _ident(name: str) -> str:
	return 'ufs_img_' + re.sub(r'[^a-z0-9]', '_', name)


def _file_sectors(buf: bytes, label: Any) -> Dict[int, Tuple[str, int, int]]:
	"""disk sector -> (path, file sector, file size) for the label's files."""
	fs = fixtures.Ufs(buf)
	out: Dict[int, Tuple[str, int, int]] = {}
	for path, size in label['files']:
		ino = fs.lookup(path)
		for lbn, addr, alloc in fs.extents(ino):
			if not addr:
				continue
			for k in range(alloc // SECTOR):
				off = lbn * fs.bsize + k * SECTOR
				if off >= size:
					break
				out[addr * fs.fsize // SECTOR + k] = (path, off // SECTOR, size)
	return out


def file_sector(path: str, fsec: int, size: int) -> bytes:
	"""Sector fsec of fixture file path (size bytes): formula, then zeros."""
	off = fsec * SECTOR
	n = max(0, min(SECTOR, size - off))
	return fixtures.content(path, off, n) + bytes(SECTOR - n)


def derive(name: str, buf: bytes, base: Optional[Tuple[str, bytes]] = None) -> Carried:
	"""The carried form of image `name` (bytes buf); base: (name, bytes) of the
	image it is a corrupted copy of."""
	if len(buf) % SECTOR:
		raise ValueError(f'{name}: {len(buf)} bytes is not a whole number of sectors')
	src = base[1] if base else buf
	files = _file_sectors(src, fixtures.parse_label(src[:fixtures.LABEL_SIZE]))
	zero = bytes(SECTOR)
	kinds: List[Tuple[int, str, int, int]] = []       # (sector, file, file sector, size)
	data = bytearray()
	for s in range(len(buf) // SECTOR):
		sec = bytes(buf[s * SECTOR:(s + 1) * SECTOR])
		if base:
			if (s + 1) * SECTOR <= len(base[1]) and \
					sec == base[1][s * SECTOR:(s + 1) * SECTOR]:
				continue
		elif sec == zero:
			continue
		f = files.get(s)
		if f and not base and sec == file_sector(*f):
			kinds.append((s, f[0], f[1], f[2]))
		else:
			kinds.append((s, '', len(data) // SECTOR, 0))
			data += sec
	runs: List[Run] = []
	for s, path, start, size in kinds:
		if runs:
			r = runs[-1]
			if r.sector + r.count == s and r.file == path and r.start + r.count == start:
				runs[-1] = Run(r.sector, r.count + 1, r.file, r.start, r.size)
				continue
		runs.append(Run(s, 1, path, start, size))
	return Carried(name, len(buf), base[0] if base else '', runs, bytes(data))


def expand(c: Carried, images: Dict[str, 'Carried']) -> bytes:
	"""The image back from its carried form (images: every carried image by name)."""
	out = bytearray(expand(images[c.base], images)[:c.size]) if c.base else bytearray()
	out += bytes(c.size - len(out))
	for r in c.runs:
		for k in range(r.count):
			s = r.sector + k
			if r.file:
				sec = file_sector(r.file, r.start + k, r.size)
			else:
				sec = c.data[(r.start + k) * SECTOR:(r.start + k + 1) * SECTOR]
			out[s * SECTOR:(s + 1) * SECTOR] = sec
	return bytes(out)


def compress(data: bytes) -> bytes:
	return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32,
			     preset=9 | lzma.PRESET_EXTREME)


def _hex_lines(blob: bytes, per: int = 12) -> List[str]:
	return ['\t' + ' '.join(f'0x{b:02x},' for b in blob[i:i + per])
		for i in range(0, len(blob), per)]


def emit_c(images: Sequence[Carried], makefs_version: str) -> str:
	"""fs/ufs/tests/fixture_images.c for these images, in this order."""
	out = ['// SPDX-License-Identifier: GPL-2.0',
	       '/*',
	       ' * The UFS images of the KUnit suites.  Made by NetBSD makefs(8) (Debian',
	       f' * package makefs {makefs_version}), some UFS2 ones then moved by the generator',
	       ' * to the superblock at 65536 that their label says, and reduced to what is',
	       ' * not the content formula; generated, do not edit: see fixture.h for the',
	       ' * format.',
	       ' */',
	       '',
	       '#include "fixture.h"',
	       '']
	by_name = {c.name: c for c in images}
	for c in images:
		ident = _ident(c.name)
		xz = compress(c.data) if c.data else b''
		out.append(f'/* {c.name}: {c.size} bytes, {len(c.runs)} runs, '
			   f'{len(c.data) // SECTOR} data sectors ({len(xz)} bytes of xz) */')
		out.append(f'static const struct ufs_fixture_run {ident}_runs[] = {{')
		for r in c.runs:
			if r.file:
				out.append(f'\t{{ {r.sector}, {r.count}, "{r.file}", {r.start}, {r.size} }},')
			else:
				out.append(f'\t{{ {r.sector}, {r.count}, NULL, {r.start}, 0 }},')
		out.append('};')
		if xz:
			out.append('')
			out.append(f'static const u8 {ident}_xz[] = {{')
			out += _hex_lines(xz)
			out.append('};')
		out.append('')
	out.append('const struct ufs_fixture_image ufs_fixture_images[] = {')
	for c in images:
		ident = _ident(c.name)
		if c.base and c.base not in by_name:
			raise ValueError(f'{c.name}: base {c.base} is not carried')
		base = f'&ufs_fixture_images[{[i.name for i in images].index(c.base)}]' \
			if c.base else 'NULL'
		xz_ref = f'{ident}_xz, sizeof({ident}_xz)' if c.data else 'NULL, 0'
		out += ['\t{',
			f'\t\t.name = "{c.name}",',
			f'\t\t.size = {c.size},',
			f'\t\t.base = {base},',
			f'\t\t.runs = {ident}_runs,',
			f'\t\t.nr_runs = ARRAY_SIZE({ident}_runs),',
			f'\t\t.xz = {xz_ref},',
			f'\t\t.data_sectors = {len(c.data) // SECTOR},',
			'\t},']
	out += ['};', '',
		'const unsigned int ufs_fixture_nr_images = ARRAY_SIZE(ufs_fixture_images);', '']
	return '\n'.join(out)


_RUN_RE = re.compile(r'^\t\{ (\d+), (\d+), (?:"([^"]+)"|NULL), (\d+), (\d+) \},$')


def parse_c(text: str) -> List[Carried]:
	"""The images of a fixture_images.c that emit_c() wrote (strictly)."""
	runs: Dict[str, List[Run]] = {}
	blobs: Dict[str, bytearray] = {}
	cur: Optional[Tuple[str, str]] = None
	entries: List[Dict[str, str]] = []
	entry: Optional[Dict[str, str]] = None
	for n, line in enumerate(text.splitlines(), 1):
		m = re.match(r'^static const struct ufs_fixture_run (\w+)_runs\[\] = \{$', line)
		if m:
			cur = ('runs', m.group(1))
			runs[m.group(1)] = []
			continue
		m = re.match(r'^static const u8 (\w+)_xz\[\] = \{$', line)
		if m:
			cur = ('xz', m.group(1))
			blobs[m.group(1)] = bytearray()
			continue
		if line == 'const struct ufs_fixture_image ufs_fixture_images[] = {':
			cur = ('table', '')
			continue
		if line == '};':
			cur = None
			continue
		if cur is None:
			continue
		if cur[0] == 'runs':
			m = _RUN_RE.match(line)
			if not m:
				raise ValueError(f'line {n}: not a run: {line!r}')
			runs[cur[1]].append(Run(int(m.group(1)), int(m.group(2)), m.group(3) or '',
						int(m.group(4)), int(m.group(5))))
		elif cur[0] == 'xz':
			if not re.match(r'^\t(0x[0-9a-f]{2},)( 0x[0-9a-f]{2},)*$', line):
				raise ValueError(f'line {n}: not xz bytes: {line!r}')
			blobs[cur[1]] += bytes(int(x.rstrip(','), 16) for x in line.split())
		else:
			if line == '\t{':
				entry = {}
			elif line == '\t},':
				if entry is None:
					raise ValueError(f'line {n}: unbalanced table entry')
				entries.append(entry)
				entry = None
			else:
				m = re.match(r'^\t\t\.(\w+) = (.*),$', line)
				if not m or entry is None:
					raise ValueError(f'line {n}: not a table field: {line!r}')
				entry[m.group(1)] = m.group(2)
	out: List[Carried] = []
	names = [e['name'].strip('"') for e in entries]
	for e in entries:
		name = e['name'].strip('"')
		ident = _ident(name)
		m = re.match(r'^&ufs_fixture_images\[(\d+)\]$', e['base'])
		base = names[int(m.group(1))] if m else ''
		data = lzma.decompress(bytes(blobs[ident])) if ident in blobs else b''
		if len(data) != int(e['data_sectors']) * SECTOR:
			raise ValueError(f'{name}: {len(data)} bytes of data, the table says '
					 f'{e["data_sectors"]} sectors')
		out.append(Carried(name, int(e['size']), base, runs[ident], data))
	return out


def derive_set(images: Sequence['fixtures.Image'],
	       recipe: Any = fixtures.RECIPE) -> List[Carried]:
	"""The carried form of a fixture set, in its order; a corrupted copy is
	carried as its differences from the image the recipe made it from."""
	source = {s.name: s.source for s in fixtures.load_recipe(recipe)[0]}
	bufs = {im.name: im.path.read_bytes() for im in images}
	out = []
	for im in images:
		base = (source[im.name], bufs[source[im.name]]) if im.corrupt else None
		out.append(derive(im.name, bufs[im.name], base))
	return out


def check(c_file: Path, images: Sequence['fixtures.Image']) -> List[str]:
	"""What keeps c_file from turning back into images byte for byte (empty:
	nothing): an image missing, extra, or differing, named with where."""
	try:
		text = c_file.read_text()
	except OSError as e:
		return [f'cannot read it: {e.strerror}']
	try:
		parsed = parse_c(text)
	except (ValueError, KeyError, lzma.LZMAError) as e:
		return [f'not a carried image set: {e}']
	by_name = {c.name: c for c in parsed}
	problems = []
	for name in sorted(set(by_name) - {im.name for im in images}):
		problems.append(f'{name}: carried, but not in the recipe')
	for im in images:
		c = by_name.get(im.name)
		if c is None:
			problems.append(f'{im.name}: not carried')
			continue
		if c.base and c.base not in by_name:
			problems.append(f'{im.name}: base {c.base} is not carried')
			continue
		want = im.path.read_bytes()
		got = expand(c, by_name)
		if got != want:
			if len(got) != len(want):
				problems.append(f'{im.name}: {len(got)} bytes, the image has {len(want)}')
			else:
				first = next(i for i in range(len(want)) if got[i] != want[i])
				problems.append(f'{im.name}: differs first at byte {first} '
						f'(sector {first // SECTOR})')
	return problems


def costs(text: str) -> List[Tuple[str, int, int]]:
	"""(image, lines, bytes) of each image's runs and data in an emitted file:
	from its comment to the next image's (or the shared table, which is one
	entry of 9 lines per image), without the blank line that closes it."""
	out: List[Tuple[str, int, int]] = []
	cur: List[str] = []
	name = ''

	def close() -> None:
		while cur and cur[-1] == '':
			cur.pop()
		if name:
			out.append((name, len(cur), sum(len(x) + 1 for x in cur)))

	for line in text.splitlines():
		m = re.match(r'^/\* ([a-z0-9-]+): \d+ bytes, ', line)
		if m or line.startswith('const struct ufs_fixture_image '):
			close()
			cur, name = [line], (m.group(1) if m else '')
			if not m:
				break
		elif name:
			cur.append(line)
	return out
