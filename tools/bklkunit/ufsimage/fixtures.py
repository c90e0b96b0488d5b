# SPDX-License-Identifier: GPL-2.0
"""UFS fixture images for the ufs KUnit suite (docs/fixtures.md).

kunit/fixtures/ufs.json names the images; build() makes them with Debian's
makefs into <cache>/fixtures/<key>/, writes the label into bytes 0..8191 of
each (the UFS boot-block area), derives the corrupted copies with the small
UFS reader below, and the relocated ones (relocate(): a UFS2 image's
superblock moved to 65536, the layout newfs gives it), and reuses the set
while the recipe, GENERATOR_VERSION and makefs's package version stay the
same.  normalize() fixes what makefs leaves
random, so a set is the same on every build.  The kernel suites do not read
these files: they carry the images (csource.py derives that form, and proves
it turns back into these images byte for byte).

The reader is independent of Linux: struct-based, both byte orders, UFS1
(128-byte inodes, 32-bit pointers) and UFS2 (256-byte inodes, 64-bit
pointers), with the layouts of fs/ufs/ufs_fs.h (FreeBSD's fs.h and dinode.h).
verify() reads an image's files back by its label; consistency() checks its
allocation state (bitmaps, counters, layout) as fsck_ffs does.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union, cast

from ..base import deps, paths
from ..base.errors import UserError

RECIPE = paths.KUNIT_DIR / 'fixtures' / 'ufs.json'
# Bump when anything that shapes the images changes (content, label, corruptions).
GENERATOR_VERSION = 3
# An image, or a part of one, in memory.
Buf = Union[bytes, bytearray]
PACKAGE = 'makefs'
MANIFEST = 'manifest.json'

LABEL_MAGIC = 'BKLUFS-FIXTURE 1'
LABEL_SIZE = 8192
SECTOR = 512
NDADDR = 12
NIADDR = 3
MANY = 300                      # empty files in the directory `many`
RW_SEED = 4096                  # size of `seed` on the rw images
# makefs -T: every timestamp in the images is clamped to this (2025-01-01 UTC).
EPOCH = 1735689600
NAME_RE = re.compile(r'^[a-z0-9-]{1,20}$')       # also the virtio-blk serial (20 bytes)
SIZE_RE = re.compile(r'^[0-9]+[kmg]?$')

TYPES = ('ufs1', 'ufs2')
ENDIANS = ('le', 'be')
MOUNT = {'ufs1': '44bsd', 'ufs2': 'ufs2'}        # the ufstype= Linux mounts each with
# Where pristine Linux 6.12 reads the superblock for that ufstype (fs/ufs/super.c:
# UFS_SBLOCK for 44bsd, SBLOCK_UFS2 for ufs2); it searches nowhere else.  This
# makefs puts UFS2 at 8192: the series' patch "ufs: find the UFS2 superblock
# that makefs writes at 8192" lets ufstype=ufs2 find it there.  The label says
# what a correct kernel does ("expect ok" for every good and rw image), so the
# ufs_image cases are red on the pristine tree and green with the series.
LINUX_SBLOCK = {'ufs1': 8192, 'ufs2': 65536}
# Where FreeBSD's newfs puts a UFS2 superblock (SBLOCK_UFS2); the recipe's
# "relocated" images move makefs's there (relocate()).
SBLOCK_UFS2 = 65536
# rw-mount-fails: a read-only mount works and reads everything intact; a
# read-write mount (which reads the cylinder groups) is refused.
EXPECTS = ('ok', 'mount-fails', 'io-error', 'rw-mount-fails')
# What Linux is expected to do with each corrupted copy (docs/fixtures.md says why).
CORRUPT_EXPECT = {
	'magic': 'mount-fails',
	'fsize-gt-bsize': 'mount-fails',
	'ptr-beyond': 'io-error',
	'ind-self': 'io-error',
	'cg-magic': 'rw-mount-fails',
	'truncated': 'io-error',
}

# --------------------------------------------------------------- the content


def content(path: str, offset: int, length: int) -> bytes:
	"""Bytes [offset, offset + length) of the fixture file `path`.

	Sector s (bytes s*512 .. s*512+511) is the string f'{path}:{s*512}\\n'
	repeated from its first byte: byte i of the sector is S[i % len(S)].
	A file of size N is bytes [0, N) of that endless stream."""
	first = offset // SECTOR
	last = (offset + length + SECTOR - 1) // SECTOR
	parts = []
	for s in range(first, last):
		pat = f'{path}:{s * SECTOR}\n'.encode('ascii')
		parts.append((pat * (SECTOR // len(pat) + 1))[:SECTOR])
	skip = offset - first * SECTOR
	return b''.join(parts)[skip:skip + length]


def file_sizes(bsize: int, fsize: int, ufs_type: str) -> List[Tuple[str, int]]:
	"""The regular files of a good image and their sizes, in label order."""
	fpb = bsize // fsize
	nindir = bsize // (4 if ufs_type == 'ufs1' else 8)
	files = [('empty', 0), ('frags', 3 * fsize - 7)]
	files += [(f'tail{k}', bsize + k * fsize - 5) for k in range(1, fpb)]
	files += [('direct', 10 * bsize + 3 * fsize - 11),
		  ('single', (NDADDR + 3) * bsize + 2 * fsize - 13),
		  ('double', (NDADDR + nindir + 2) * bsize + fsize - 17)]
	return files


# ---------------------------------------------------------------- the recipe


@dataclass(frozen=True)
class Spec:
	"""One image of the recipe."""
	name: str
	role: str               # good, rw, relocated or corrupt
	type: str
	endian: str
	bsize: int
	fsize: int
	size: str = ''          # makefs -s (rw images)
	free_files: int = 0     # makefs -f (rw images)
	kind: str = ''          # corrupt: the corruption
	source: str = ''        # corrupt, relocated: the image it is a copy of
	sblock: int = 0         # relocated: where its superblock is moved to

	def entries(self) -> Tuple[List[Tuple[str, int]], List[Tuple[str, int]]]:
		"""(files, dirs) of the tree: [(path, size)], [(path, entries)]."""
		if self.size:           # an rw image (makefs -s), or a relocated copy of one
			return [('seed', RW_SEED)], []
		return file_sizes(self.bsize, self.fsize, self.type), [('many', MANY)]


def image_name(ufs_type: str, endian: str, bsize: int, fsize: int) -> str:
	"""ufs1-le-4096; the fsize is added only when it is not bsize/8."""
	name = f'{ufs_type}-{endian}-{bsize}'
	return name if bsize == 8 * fsize else f'{name}-{fsize}'


def _geometry(b: Any, f: Any, where: str) -> Tuple[int, int]:
	if not (isinstance(b, int) and isinstance(f, int)) or b <= 0 or f <= 0 \
	   or b & (b - 1) or f & (f - 1):
		raise UserError(f'{where}: bsize and fsize must be powers of two, not {b!r}, {f!r}')
	# Linux (ufs_fill_super) refuses fsize < 512 or > 4096, bsize < 4096, more
	# than 8 fragments a block; `frags` (3 fragments) must be less than a block.
	if not (512 <= f <= 4096 and b >= 4096 and 4 <= b // f <= 8):
		raise UserError(f'{where}: geometry ({b}, {f}) unusable: Linux needs 512 <= fsize '
				'<= 4096, bsize >= 4096, and the files need 4 or 8 fragments a block')
	return b, f


def load_recipe(recipe: Path) -> Tuple[List[Spec], str]:
	"""The images of the recipe in disk order (good, rw, relocated, corrupt) and
	its key text."""
	try:
		data = json.loads(Path(recipe).read_text())
	except (OSError, ValueError) as err:
		raise UserError(f'cannot read the fixture recipe {recipe}: {err}')
	where = str(recipe)
	try:
		geometries = [_geometry(g[0], g[1], where) for g in data['geometries']]
		types = list(data['types'])
		endians = list(data['endians'])
	except (KeyError, TypeError, IndexError) as err:
		raise UserError(f'{where}: needs "geometries" ([[bsize, fsize], ...]), "types" '
				f'and "endians" ({type(err).__name__}: {err})')
	for t in types:
		if t not in TYPES:
			raise UserError(f'{where}: unknown type {t!r}; choose from {", ".join(TYPES)}')
	for e in endians:
		if e not in ENDIANS:
			raise UserError(f'{where}: unknown endian {e!r}; '
					f'choose from {", ".join(ENDIANS)}')
	specs: List[Spec] = []
	for b, f in geometries:
		for t in types:
			for e in endians:
				specs.append(Spec(image_name(t, e, b, f), 'good', t, e, b, f))
	for i, rw in enumerate(data.get('rw', [])):
		try:
			b, f = _geometry(rw['bsize'], rw['fsize'], f'{where}: rw[{i}]')
			t, e, size = rw['type'], rw['endian'], str(rw['size'])
		except (KeyError, TypeError) as ex:
			raise UserError(f'{where}: rw[{i}] needs type, endian, bsize, fsize, '
					f'size ({ex})')
		if t not in TYPES or e not in ENDIANS or not SIZE_RE.match(size):
			raise UserError(f'{where}: rw[{i}]: bad type, endian or size '
					f'({t!r}, {e!r}, {size!r})')
		free = rw.get('free_files', 0)
		if not isinstance(free, int) or free < 0:
			raise UserError(f'{where}: rw[{i}]: free_files must be a count, not {free!r}')
		specs.append(Spec(rw.get('name', 'rw-' + image_name(t, e, b, f)), 'rw', t, e, b, f,
				  size=size, free_files=free))
	made = {s.name: s for s in specs}
	for i, m in enumerate(data.get('relocated', [])):
		at = f'{where}: relocated[{i}]'
		src, sblock = m.get('from'), m.get('sblock')
		if src not in made:
			raise UserError(f'{at}: "from" must name a good or rw image, not {src!r}')
		g = made[src]
		if g.type != 'ufs2':
			raise UserError(f'{at}: {src} is {g.type}; only a UFS2 superblock moves '
					'(UFS1 keeps it at 8192)')
		if sblock != SBLOCK_UFS2:
			raise UserError(f'{at}: "sblock" must be {SBLOCK_UFS2} (where newfs puts a '
					f'UFS2 superblock), not {sblock!r}')
		name = m.get('name', f'{src}-sb{sblock}')
		if str(name).startswith('rw-') != src.startswith('rw-'):
			raise UserError(f'{at}: {name!r} must start with "rw-" exactly when {src} '
					'does (that is how the kernel suites tell scratch images)')
		specs.append(Spec(name, 'relocated', g.type, g.endian, g.bsize, g.fsize,
				  size=g.size, free_files=g.free_files, source=src, sblock=sblock))
	good = {s.name: s for s in specs if s.role == 'good'}
	for i, c in enumerate(data.get('corrupt', [])):
		kind, src = c.get('kind'), c.get('from')
		if kind not in CORRUPT_EXPECT:
			raise UserError(f'{where}: corrupt[{i}]: unknown kind {kind!r}; choose from '
					f'{", ".join(CORRUPT_EXPECT)}')
		if src not in good:
			raise UserError(f'{where}: corrupt[{i}]: "from" must name a good image, '
					f'not {src!r}')
		g = good[src]
		specs.append(Spec(c.get('name', f'bad-{kind}'), 'corrupt', g.type, g.endian,
				  g.bsize, g.fsize, kind=kind, source=src))
	seen = set()
	for s in specs:
		if not NAME_RE.match(s.name):
			raise UserError(f'{where}: image name {s.name!r} is not 1-20 of [a-z0-9-]')
		if s.name in seen:
			raise UserError(f'{where}: two images named {s.name}')
		seen.add(s.name)
	return specs, json.dumps(data, sort_keys=True)


# ----------------------------------------------------------------- the label


def make_label(name: str, ufs_type: str, endian: str, bsize: int, fsize: int, sblock: int,
	       expect: str, files: Sequence[Tuple[str, int]], dirs: Sequence[Tuple[str, int]],
	       corrupt: str = '') -> str:
	"""The label text; the C parser is strict about every byte of it."""
	if expect not in EXPECTS:
		raise ValueError(f'expect {expect!r}')
	lines = [LABEL_MAGIC, f'image {name}', f'type {ufs_type}', f'endian {endian}',
		 f'bsize {bsize}', f'fsize {fsize}', f'sblock {sblock}',
		 f'mount {MOUNT[ufs_type]}', f'expect {expect}']
	if corrupt:
		lines.append(f'corrupt {corrupt}')
	lines += [f'file {p} {n}' for p, n in files]
	lines += [f'dir {p} {n}' for p, n in dirs]
	lines.append('end')
	text = '\n'.join(lines) + '\n'
	if len(text.encode('ascii')) > LABEL_SIZE:
		raise UserError(f'the label of {name} is {len(text)} bytes; only {LABEL_SIZE} fit '
				'before the superblock')
	return text


def label_block(text: str) -> bytes:
	return text.encode('ascii').ljust(LABEL_SIZE, b'\0')


def parse_label(raw: bytes) -> Dict[str, Any]:
	"""The label of an image (its first 8192 bytes), as strictly as the C side."""
	raw = bytes(raw[:LABEL_SIZE])
	text = raw.split(b'\0', 1)[0].decode('ascii')
	if raw[len(text):].strip(b'\0'):
		raise ValueError('bytes after the NUL padding')
	lines = text.split('\n')
	if lines[-1] != '' or lines[-2] != 'end':
		raise ValueError('the label does not end in "end\\n"')
	lines = lines[:-2]
	keys = ['image', 'type', 'endian', 'bsize', 'fsize', 'sblock', 'mount', 'expect']
	if lines[0] != LABEL_MAGIC:
		raise ValueError(f'first line {lines[0]!r}')
	out: Dict[str, Any] = {'files': [], 'dirs': [], 'corrupt': ''}
	i = 1
	for k in keys:
		key, _, val = lines[i].partition(' ')
		if key != k or not val or ' ' in val:
			raise ValueError(f'line {i + 1}: {lines[i]!r}, wanted "{k} <value>"')
		out[k] = int(val) if k in ('bsize', 'fsize', 'sblock') else val
		i += 1
	if i < len(lines) and lines[i].startswith('corrupt '):
		out['corrupt'] = lines[i].split(' ', 1)[1]
		i += 1
	for line in lines[i:]:
		parts = line.split(' ')
		if len(parts) != 3 or parts[0] not in ('file', 'dir') or not parts[2].isdigit():
			raise ValueError(f'bad line {line!r}')
		out['files' if parts[0] == 'file' else 'dirs'].append((parts[1], int(parts[2])))
	return out


# ---------------------------------------------------------------- the reader

UFS1_MAGIC = 0x00011954
UFS2_MAGIC = 0x19540119
CG_MAGIC = 0x090255
SBLOCK_SEARCH = (65536, 8192, 0, 262144)     # FreeBSD's SBLOCKSEARCH order

# Superblock byte offsets (struct fs; fs/ufs/ufs_fs.h struct ufs_super_block).
SB = {'sblkno': 8, 'cblkno': 12, 'iblkno': 16, 'dblkno': 20, 'cgoffset': 24,
      'cgmask': 28, 'size1': 36, 'ncg': 44, 'bsize': 48, 'fsize': 52, 'frag': 56,
      'sbsize': 104, 'nindir': 116, 'inopb': 120, 'csaddr1': 152, 'ipg': 184, 'fpg': 188,
      'clean': 209, 'nbfree1': 196, 'nbfree2': 1016,
      'sblockloc': 1000, 'size2': 1080, 'csaddr2': 1096, 'magic': 1372,
      'dsize1': 40, 'cssize': 156, 'cgsize': 160, 'cstotal1': 192, 'cstotal2': 1008,
      'dsize2': 1088, 'contigsumsize': 1316, 'maxsymlinklen': 1320}
SBLOCKSIZE = 8192                            # the room a superblock location reserves
CG_MAGIC_OFF = 4                             # struct ufs_cylinder_group.cg_magic
# Cylinder group header offsets (struct ufs_cylinder_group; FreeBSD's struct cg).
CG = {'magic': 4, 'cgx': 12, 'old_niblk': 18, 'ndblk': 20, 'cs': 24, 'rotor': 40,
      'frotor': 44, 'irotor': 48, 'frsum': 52, 'iusedoff': 92, 'freeoff': 96,
      'nextfreeoff': 100, 'clustersumoff': 104, 'clusteroff': 108, 'nclusterblks': 112,
      'niblk': 116, 'initediblk': 120}
CG_BASESIZE = 168                            # the UFS2 header: cg_iusedoff
MAXFRAG = 8                                  # cg_frsum entries
CSUM = 16                                    # struct csum: ndir, nbfree, nifree, nffree
UFS_ROOTINO = 2
# Inode field offsets: UFS1 struct ufs_inode (128 bytes), UFS2 struct ufs2_inode (256).
INODE: Dict[str, Dict[str, Any]] = {
	'ufs1': {'size': 128, 'mode': 0, 'nlink': 2, 'isize': ('Q', 8), 'blocks': ('I', 104),
		 'db': 40, 'ib': 88, 'ptr': 'I'},
	'ufs2': {'size': 256, 'mode': 0, 'nlink': 2, 'isize': ('Q', 16), 'blocks': ('Q', 24),
		 'db': 112, 'ib': 208, 'ptr': 'Q'},
}
S_IFMT, S_IFDIR, S_IFREG, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000
DT_DIR, DT_REG = 4, 8                        # 44BSD d_type
DIRBLKSIZ = 512


class UfsError(Exception):
	"""The image is not what the reader can follow."""


@dataclass
class Inode:
	ino: int
	mode: int
	nlink: int
	size: int
	blocks: int             # di_blocks, in 512-byte units
	db: List[int]
	ib: List[int]
	offset: int             # byte offset of the on-disk inode


class Ufs:
	"""A read-only view of a UFS1/UFS2 image held in a bytes-like buffer."""

	# Read from the superblock by _load (SB names the offsets).
	sblkno: int
	cblkno: int
	iblkno: int
	dblkno: int
	cgoffset: int
	cgmask: int
	ncg: int
	bsize: int
	fsize: int
	frag: int
	sbsize: int
	nindir: int
	inopb: int
	ipg: int
	fpg: int

	def __init__(self, buf: Buf, sblock: Optional[int] = None, check: bool = True) -> None:
		self.buf = buf
		for off in ([sblock] if sblock is not None else SBLOCK_SEARCH):
			if off + SB['magic'] + 4 > len(buf):
				continue
			for e in '<>':
				magic = struct.unpack_from(e + 'I', buf, off + SB['magic'])[0]
				if magic == UFS2_MAGIC and struct.unpack_from(
						e + 'q', buf, off + SB['sblockloc'])[0] != off:
					continue        # a UFS2 superblock says where it belongs
				if magic == UFS1_MAGIC and off == 65536:
					continue        # FreeBSD: never a UFS1 primary there
				if magic in (UFS1_MAGIC, UFS2_MAGIC):
					self._load(off, e, magic)
					if check:
						self._check()
					return
		raise UfsError('no UFS superblock' + (f' at {sblock}' if sblock is not None else ''))

	def _load(self, off: int, e: str, magic: int) -> None:
		self.sblock, self.e = off, e
		self.endian = 'le' if e == '<' else 'be'
		self.type = 'ufs1' if magic == UFS1_MAGIC else 'ufs2'
		for k in ('sblkno', 'cblkno', 'iblkno', 'dblkno', 'cgoffset', 'cgmask', 'ncg',
			  'bsize', 'fsize', 'frag', 'sbsize', 'nindir', 'inopb', 'ipg', 'fpg'):
			setattr(self, k, self.sb_int(k))
		self.clean = self.buf[off + SB['clean']]
		if self.type == 'ufs2':
			self.size = self.sb_int('size2', 'q')
			self.csaddr = self.sb_int('csaddr2', 'q')
			self.sblockloc = self.sb_int('sblockloc', 'q')
		else:
			self.size = self.sb_int('size1')
			self.csaddr = self.sb_int('csaddr1')
			self.sblockloc = off
		self.ilay = INODE[self.type]
		self.isize = int(self.ilay['size'])
		self.psize = struct.calcsize(self.ilay['ptr'])

	def _check(self) -> None:
		b, f = self.bsize, self.fsize
		if b <= 0 or f <= 0 or b & (b - 1) or f & (f - 1) or f > b or self.frag != b // f:
			raise UfsError(f'bad geometry bsize {b} fsize {f} frag {self.frag}')
		if self.nindir != b // self.psize or self.inopb != b // self.isize:
			raise UfsError(f'nindir {self.nindir} / inopb {self.inopb} '
				       f'do not fit bsize {b}')
		if self.ipg <= 0 or self.fpg <= 0 or self.ncg <= 0:
			raise UfsError('bad cylinder group sizes')

	def sb_int(self, name: str, fmt: str = 'i') -> int:
		return int(struct.unpack_from(self.e + fmt, self.buf, self.sblock + SB[name])[0])

	def free_blocks(self) -> int:
		"""fs_cstotal.cs_nbfree: whole free blocks."""
		return self.sb_int('nbfree2', 'q') if self.type == 'ufs2' else self.sb_int('nbfree1')

	def sb_offset(self, name: str) -> int:
		return self.sblock + SB[name]

	def pack(self, fmt: str, offset: int, value: int) -> None:
		struct.pack_into(self.e + fmt, cast(bytearray, self.buf), offset, value)

	# -- layout (fs/ufs/ufs_fs.h: ufs_cgstart, ufs_cgcmin, ufs_inotofsba)

	def cgstart(self, c: int) -> int:
		base = self.fpg * c
		if self.type == 'ufs1':
			base += self.cgoffset * (c & ~self.cgmask)
		return base

	def cg_offset(self, c: int) -> int:
		"""Byte offset of cylinder group c's header."""
		return (self.cgstart(c) + self.cblkno) * self.fsize

	def cg_magic(self, c: int) -> int:
		return int(struct.unpack_from(self.e + 'I', self.buf, self.cg_offset(c) + CG_MAGIC_OFF)[0])

	def inode_offset(self, ino: int) -> int:
		c, i = divmod(ino, self.ipg)
		return (self.cgstart(c) + self.iblkno) * self.fsize + i * self.isize

	def inode(self, ino: int) -> Inode:
		off = self.inode_offset(ino)
		if off + self.isize > len(self.buf):
			raise UfsError(f'inode {ino} lies beyond the image')
		lay, e, b = self.ilay, self.e, self.buf
		p = lay['ptr']
		return Inode(
			ino=ino,
			mode=struct.unpack_from(e + 'H', b, off + lay['mode'])[0],
			nlink=struct.unpack_from(e + 'H', b, off + lay['nlink'])[0],
			size=struct.unpack_from(e + lay['isize'][0], b, off + lay['isize'][1])[0],
			blocks=struct.unpack_from(e + lay['blocks'][0], b, off + lay['blocks'][1])[0],
			db=list(struct.unpack_from(f'{e}{NDADDR}{p}', b, off + lay['db'])),
			ib=list(struct.unpack_from(f'{e}{NIADDR}{p}', b, off + lay['ib'])),
			offset=off)

	def db_offset(self, ino: int, i: int) -> int:
		return self.inode_offset(ino) + int(self.ilay['db']) + i * self.psize

	def ib_offset(self, ino: int, i: int) -> int:
		return self.inode_offset(ino) + int(self.ilay['ib']) + i * self.psize

	def frag_bytes(self, addr: int, length: int) -> bytes:
		off = addr * self.fsize
		if addr < 0 or off + length > len(self.buf):
			raise UfsError(f'fragment {addr} (+{length} bytes) lies beyond the image '
				       f'({len(self.buf)} bytes)')
		return bytes(self.buf[off:off + length])

	def entry(self, block: int, index: int) -> int:
		"""Pointer `index` of the indirect block at fragment `block`."""
		raw = self.frag_bytes(block, self.bsize)
		return int(struct.unpack_from(self.e + self.ilay['ptr'], raw, index * self.psize)[0])

	# -- files

	def bmap(self, ino: Inode, lbn: int, meta: Optional[Set[int]] = None) -> int:
		"""Fragment address of logical block lbn (0: a hole); indirect blocks
		passed on the way are added to meta."""
		if lbn < NDADDR:
			return ino.db[lbn]
		lbn -= NDADDR
		n = self.nindir
		for level in range(NIADDR):
			span = n ** (level + 1)
			if lbn < span:
				addr = ino.ib[level]
				for shift in range(level, -1, -1):
					if addr == 0:
						return 0
					if meta is not None:
						meta.add(addr)
					addr = self.entry(addr, (lbn // n ** shift) % n)
				return addr
			lbn -= span
		raise UfsError('block beyond the triple indirect range')

	def extents(self, ino: Inode, meta: Optional[Set[int]] = None) -> List[Tuple[int, int, int]]:
		"""(lbn, fragment address, bytes allocated) of every block of the file."""
		out = []
		nblk = (ino.size + self.bsize - 1) // self.bsize
		for lbn in range(nblk):
			alloc = self.bsize
			if lbn < NDADDR and lbn == nblk - 1:
				rest = ino.size - lbn * self.bsize
				alloc = (rest + self.fsize - 1) // self.fsize * self.fsize
			out.append((lbn, self.bmap(ino, lbn, meta), alloc))
		return out

	def read(self, ino: Inode) -> bytes:
		parts = []
		for lbn, addr, alloc in self.extents(ino):
			parts.append(self.frag_bytes(addr, alloc) if addr else bytes(alloc))
		return b''.join(parts)[:ino.size]

	def readdir(self, ino: Inode) -> List[Tuple[str, int, int]]:
		"""(name, inode, d_type) of every entry, . and .. included (44BSD format)."""
		data = self.read(ino)
		out = []
		for base in range(0, len(data), DIRBLKSIZ):
			pos = base
			while pos < base + DIRBLKSIZ and pos < len(data):
				d_ino, reclen, d_type, namlen = struct.unpack_from(self.e + 'IHBB',
										   data, pos)
				if reclen < 8 or pos + reclen > base + DIRBLKSIZ:
					raise UfsError(f'bad directory entry at {pos} '
						       f'of inode {ino.ino}')
				if d_ino:
					name = data[pos + 8:pos + 8 + namlen].decode('ascii')
					out.append((name, d_ino, d_type))
				pos += reclen
		return out

	def lookup(self, path: str) -> Inode:
		ino = self.inode(2)
		for part in path.split('/'):
			found = [i for n, i, _ in self.readdir(ino) if n == part]
			if not found:
				raise UfsError(f'{path}: no entry {part!r}')
			ino = self.inode(found[0])
		return ino


def verify(buf: Buf) -> List[str]:
	"""What is wrong with a good or rw image by its own label (empty: nothing).

	Follows every file's on-disk pointers and compares with content() byte for
	byte; checks the directories, di_blocks and that no two blocks overlap."""
	problems: List[str] = []
	try:
		label = parse_label(buf[:LABEL_SIZE])
	except (ValueError, UnicodeDecodeError) as e:
		return [f'label: {e}']
	try:
		fs = Ufs(buf)
	except UfsError as e:
		return [f'superblock: {e}']
	want = {'type': fs.type, 'endian': fs.endian, 'bsize': fs.bsize, 'fsize': fs.fsize,
		'sblock': fs.sblock}
	for k, v in want.items():
		if label[k] != v:
			problems.append(f'label says {k} {label[k]}, the image has {v}')
	if fs.clean != 1:
		problems.append(f'fs_clean is {fs.clean}, not 1 (Linux would mount read-only)')
	if fs.size * fs.fsize > len(buf):
		problems.append(f'fs_size {fs.size} fragments is more than the image')
	used: Dict[int, str] = {}

	def claim(addr: int, nfrags: int, what: str) -> None:
		for a in range(addr, addr + nfrags):
			if a in used:
				problems.append(f'fragment {a} is in {used[a]} and {what}')
			used[a] = what
		if addr + nfrags > fs.size:
			problems.append(f'{what}: fragment {addr} beyond fs_size {fs.size}')

	def check_file(path: str, ino: Inode, size: int, d_type: int = DT_REG) -> None:
		if d_type != DT_REG:
			problems.append(f'{path}: directory entry type {d_type}, not DT_REG')
		if ino.mode & S_IFMT != S_IFREG:
			problems.append(f'{path}: mode {ino.mode:o} is not a regular file')
		if ino.size != size:
			problems.append(f'{path}: size {ino.size}, label says {size}')
			return
		meta: Set[int] = set()
		try:
			ext = fs.extents(ino, meta)
			data = fs.read(ino)
		except UfsError as e:
			problems.append(f'{path}: {e}')
			return
		want = content(path, 0, size)
		if data != want:
			bad = next(i for i, (x, y) in enumerate(zip(data, want)) if x != y)
			problems.append(f'{path}: content differs from byte {bad}')
		total = 0
		for lbn, addr, alloc in ext:
			if not addr:
				problems.append(f'{path}: block {lbn} is a hole')
				continue
			if alloc == fs.bsize and addr % fs.frag:
				problems.append(f'{path}: block {lbn} at fragment {addr} '
						'is not block aligned')
			claim(addr, alloc // fs.fsize, f'{path} block {lbn}')
			total += alloc
		for m in sorted(meta):
			claim(m, fs.frag, f'{path} indirect block {m}')
			total += fs.bsize
		if ino.blocks * 512 != total:
			problems.append(f'{path}: di_blocks {ino.blocks} but {total} bytes are mapped')

	try:
		root = fs.inode(2)
		names = sorted(n for n, _, _ in fs.readdir(root) if n not in ('.', '..'))
		want_names = sorted([p for p, _ in label['files']] + [p for p, _ in label['dirs']])
		if names != want_names:
			problems.append(f'root directory has {names}, label says {want_names}')
		types = {n: t for n, _, t in fs.readdir(root)}
		for path, size in label['files']:
			check_file(path, fs.lookup(path), size, types.get(path, DT_REG))
		for path, count in label['dirs']:
			d = fs.lookup(path)
			if d.mode & S_IFMT != S_IFDIR or types.get(path) != DT_DIR:
				problems.append(f'{path}: not a directory')
				continue
			ents = [(n, i, t) for n, i, t in fs.readdir(d) if n not in ('.', '..')]
			if sorted(n for n, _, _ in ents) != [f'e{k:04d}' for k in range(count)]:
				problems.append(f'{path}: {len(ents)} entries, '
						f'not e0000..e{count - 1:04d}')
			for n, i, t in ents:
				check_file(f'{path}/{n}', fs.inode(i), 0, t)
	except UfsError as e:
		problems.append(str(e))
	return problems


# ------------------------------------------------------ the consistency check


def howmany(x: int, y: int) -> int:
	return (x + y - 1) // y


def roundup(x: int, y: int) -> int:
	return howmany(x, y) * y


def newfs_layout(sblockloc: int, fsize: int, frag: int, ipg: int,
		 isize: int) -> Tuple[int, int, int, int]:
	"""(sblkno, cblkno, iblkno, dblkno) that FreeBSD's newfs (and makefs) derive
	from the superblock's location: after its SBLOCKSIZE bytes, from a block
	boundary, each cylinder group's superblock copy, then its header block,
	then its inodes, then its data."""
	sblkno = roundup(howmany(sblockloc + SBLOCKSIZE, fsize), frag)
	cblkno = sblkno + roundup(howmany(SBLOCKSIZE, fsize), frag)
	iblkno = cblkno + frag
	return sblkno, cblkno, iblkno, iblkno + ipg * isize // fsize


@dataclass
class CgSummary:
	nbfree: int             # whole free blocks
	nffree: int             # free fragments outside them
	frsum: List[int]        # [k]: free runs of k fragments in partly used blocks
	clusters: bytes         # a bit per whole free block
	clustersum: List[int]   # [k]: runs of k free blocks, the last entry k or more


_RUNS: Dict[Tuple[int, int], List[int]] = {}


def _runs(blk: int, frag: int) -> List[int]:
	"""The lengths of the runs of set bits in the frag-bit value blk."""
	key = (blk, frag)
	if key not in _RUNS:
		out, k = [], 0
		for i in range(frag + 1):
			if i < frag and blk >> i & 1:
				k += 1
			elif k:
				out.append(k)
				k = 0
		_RUNS[key] = out
	return _RUNS[key]


def cg_summary(free: Buf, ndblk: int, frag: int, contigsumsize: int) -> CgSummary:
	"""What a cylinder group header says about its free-fragment bitmap `free`
	(bit set: free; bits from ndblk on count as used), derived the way
	FreeBSD's fsck_ffs (pass 5) derives it."""
	nbfree = nffree = 0
	frsum = [0] * MAXFRAG
	nblks = ndblk // frag                  # cg_nclusterblks
	clusters = bytearray(howmany(nblks, 8))
	sums = [0] * (contigsumsize + 1)
	run = 0
	full = (1 << frag) - 1
	for b in range(howmany(ndblk, frag)):
		first = b * frag
		blk = free[first >> 3] >> (first & 7) & full
		if first + frag > ndblk:
			blk &= (1 << (ndblk - first)) - 1
		if blk == full:
			nbfree += 1
			clusters[b >> 3] |= 1 << (b & 7)
			run += 1
			continue
		if run and contigsumsize > 0:
			sums[min(run, contigsumsize)] += 1
		run = 0
		for k in _runs(blk, frag):
			nffree += k
			frsum[k] += 1
	if run and contigsumsize > 0:
		sums[min(run, contigsumsize)] += 1
	return CgSummary(nbfree, nffree, frsum, bytes(clusters), sums)


def _has_blocks(node: Inode) -> bool:
	"""Whether di_db/di_ib hold block addresses: not on device nodes (di_db[0]
	is the device number) nor on fast symlinks (the target is kept there)."""
	fmt = node.mode & S_IFMT
	return fmt in (S_IFREG, S_IFDIR) or (fmt == S_IFLNK and node.blocks != 0)


def consistency(buf: Buf) -> List[str]:
	"""What FreeBSD's fsck_ffs would find wrong with the allocation state of a
	UFS1/UFS2 image (empty: nothing), checked from scratch and independently of
	how the image was made (docs/fixtures.md, "The consistency check").

	The layout is the one newfs derives from fs_sblockloc, every superblock
	copy is the same, every fragment belongs to exactly one thing (the
	reserved area and metadata of a cylinder group, the summary at
	fs_csaddr, a block or an indirect block of an inode) or is free in its
	group's bitmap, and the counters say what the bitmaps say: cg_cs,
	cg_frsum, the cluster map and sums, the summary array, fs_cstotal,
	fs_dsize; the inode bitmap is the inodes in use, di_blocks what each
	inode holds, di_nlink the directory entries naming it."""
	try:
		fs = Ufs(buf)
	except UfsError as err:
		return [f'superblock: {err}']
	problems: List[str] = []
	e, F, frag, ufs2 = fs.e, fs.fsize, fs.frag, fs.type == 'ufs2'
	want = newfs_layout(fs.sblockloc, F, frag, fs.ipg, fs.isize)
	got = (fs.sblkno, fs.cblkno, fs.iblkno, fs.dblkno)
	if got != want:
		problems.append(f'sblkno, cblkno, iblkno, dblkno are {got}; a superblock at '
				f'{fs.sblockloc} gives {want}')
	if fs.ncg != howmany(fs.size, fs.fpg):
		problems.append(f'fs_ncg {fs.ncg} for fs_size {fs.size} and fs_fpg {fs.fpg}')
	cssize = fs.sb_int('cssize')
	if cssize != roundup(fs.ncg * CSUM, F):
		problems.append(f'fs_cssize {cssize} for {fs.ncg} cylinder groups')
	csfrags = howmany(cssize, F)
	dsize = fs.sb_int('dsize2', 'q') if ufs2 else fs.sb_int('dsize1')
	want_dsize = fs.size - fs.sblkno - fs.ncg * (fs.dblkno - fs.sblkno) - csfrags
	if dsize != want_dsize:
		problems.append(f'fs_dsize {dsize}, the layout gives {want_dsize}')
	if fs.size * F > len(buf) or problems:
		return problems + ([f'fs_size {fs.size} fragments is more than the image']
				   if fs.size * F > len(buf) else [])
	primary = bytes(buf[fs.sblock:fs.sblock + fs.sbsize])
	for c in range(fs.ncg):
		off = (fs.cgstart(c) + fs.sblkno) * F
		if bytes(buf[off:off + fs.sbsize]) != primary:
			problems.append(f'the superblock copy of cylinder group {c} (byte {off}) '
					f'differs from the superblock at {fs.sblock}')

	owner: Dict[int, str] = {}

	def claim(addr: int, n: int, what: str) -> bool:
		if addr < 0 or addr + n > fs.size:
			problems.append(f'{what}: fragments {addr}..{addr + n - 1} are not all '
					f'below fs_size {fs.size}')
			return False
		for a in range(addr, addr + n):
			if a in owner:
				problems.append(f'fragment {a} is in {owner[a]} and in {what}')
			else:
				owner[a] = what
		return True

	for c in range(fs.ncg):
		start = 0 if c == 0 else fs.cgstart(c) + fs.sblkno
		claim(start, fs.cgstart(c) + fs.dblkno - start, f'cylinder group {c}\'s metadata')
	claim(fs.csaddr, csfrags, 'the cylinder group summary')

	def walk(node: Inode) -> None:
		"""Claim the blocks of an inode, and check di_blocks against them."""
		what = f'inode {node.ino}'
		nblk = howmany(node.size, fs.bsize)
		held = 0

		def take(addr: int, n: int, desc: str) -> bool:
			nonlocal held
			if addr % frag + n > frag or (n == frag and addr % frag):
				problems.append(f'{what} {desc}: {n} fragments at {addr} are not '
						'within one block')
			held += n
			return claim(addr, n, f'{what} {desc}')

		for lbn, addr in enumerate(node.db):
			if not addr:
				continue
			if lbn >= nblk:
				problems.append(f'{what}: block {lbn} lies past the end of the file')
			tail = node.size - lbn * fs.bsize
			take(addr, frag if tail >= fs.bsize or lbn >= nblk else howmany(tail, F),
			     f'block {lbn}')

		def tree(addr: int, level: int, first: int) -> None:
			if not take(addr, frag, f'indirect block (level {level + 1}) of '
				    f'block {first}'):
				return
			span = fs.nindir ** level
			ptrs = struct.unpack_from(f'{e}{fs.nindir}{fs.ilay["ptr"]}', buf, addr * F)
			for i, p in enumerate(ptrs):
				if not p:
					continue
				lbn = first + i * span
				if lbn >= nblk:
					problems.append(f'{what}: block {lbn} lies past the end of '
							'the file')
				if level:
					tree(p, level - 1, lbn)
				else:
					take(p, frag, f'block {lbn}')

		first = NDADDR
		for level, addr in enumerate(node.ib):
			if addr:
				if first >= nblk:
					problems.append(f'{what}: indirect block {level + 1} lies past '
							'the end of the file')
				tree(addr, level, first)
			first += fs.nindir ** (level + 1)
		if held * F != node.blocks * 512:
			problems.append(f'{what}: di_blocks {node.blocks}, it holds '
					f'{held * F // 512} sectors')

	used: Dict[int, Inode] = {}
	ndir = [0] * fs.ncg
	for c in range(fs.ncg):
		inited = fs.ipg
		if ufs2:
			inited = min(fs.ipg, struct.unpack_from(e + 'I', buf, fs.cg_offset(c)
								 + CG['initediblk'])[0])
		for i in range(inited):
			node = fs.inode(c * fs.ipg + i)
			if node.mode == 0:
				continue
			if node.ino < UFS_ROOTINO:
				problems.append(f'inode {node.ino} is in use (mode {node.mode:o})')
				continue
			used[node.ino] = node
			if node.mode & S_IFMT == S_IFDIR:
				ndir[c] += 1
			if ufs2 and (struct.unpack_from(e + 'I', buf, node.offset + 92)[0] or
				     any(struct.unpack_from(e + '2Q', buf, node.offset + 96))):
				problems.append(f'inode {node.ino}: extended attribute blocks, which '
						'this check does not follow')
			if _has_blocks(node):
				walk(node)

	refs: Dict[int, int] = {}
	root = used.get(UFS_ROOTINO)
	if root is None or root.mode & S_IFMT != S_IFDIR:
		problems.append(f'inode {UFS_ROOTINO} is not a directory')
	for node in used.values():
		if node.mode & S_IFMT != S_IFDIR:
			continue
		try:
			entries = fs.readdir(node)
		except UfsError as err:
			problems.append(f'directory {node.ino}: {err}')
			continue
		for name, ino, _ in entries:
			refs[ino] = refs.get(ino, 0) + 1
			if ino not in used:
				problems.append(f'directory {node.ino}: {name!r} names inode {ino}, '
						'which is not in use')
	for ino, node in used.items():
		if node.nlink != refs.get(ino, 0):
			problems.append(f'inode {ino}: di_nlink {node.nlink}, named by '
					f'{refs.get(ino, 0)} directory entries')

	contig = fs.sb_int('contigsumsize')
	totals = [0, 0, 0, 0]                  # struct csum: ndir, nbfree, nifree, nffree
	for c in range(fs.ncg):
		off = fs.cg_offset(c)
		where = f'cylinder group {c}'

		def cg(name: str, fmt: str = 'I') -> int:
			return int(struct.unpack_from(e + fmt, buf, off + CG[name])[0])

		def differ(what: str, have: Any, should: Any) -> None:
			if have != should:
				problems.append(f'{where}: {what} {have}, should be {should}')

		base = c * fs.fpg
		ndblk = min(fs.fpg, fs.size - base)
		differ('cg_magic', f'{cg("magic"):#x}', f'{CG_MAGIC:#x}')
		differ('cg_cgx', cg('cgx'), c)
		differ('cg_ndblk', cg('ndblk'), ndblk)
		differ('cg_niblk', cg('niblk') if ufs2 else cg('old_niblk', 'H'), fs.ipg)
		iused = cg('iusedoff')
		if ufs2:
			differ('cg_iusedoff', iused, CG_BASESIZE)
		freeoff = iused + howmany(fs.ipg, 8)
		differ('cg_freeoff', cg('freeoff'), freeoff)
		mapend = freeoff + howmany(fs.fpg, 8)
		nextfree = mapend
		if contig > 0:
			sumoff = roundup(mapend - 4, 4)
			differ('cg_clustersumoff', cg('clustersumoff'), sumoff)
			differ('cg_clusteroff', cg('clusteroff'), sumoff + (contig + 1) * 4)
			nextfree = sumoff + (contig + 1) * 4 + howmany(fs.fpg // frag, 8)
			differ('cg_nclusterblks', cg('nclusterblks'), ndblk // frag)
		differ('cg_nextfreeoff', cg('nextfreeoff'), nextfree)
		if nextfree > fs.sb_int('cgsize'):
			problems.append(f'{where}: its maps end at {nextfree}, past fs_cgsize')
			continue
		for name, limit in (('rotor', ndblk), ('frotor', ndblk), ('irotor', fs.ipg)):
			if cg(name) >= limit:
				problems.append(f'{where}: cg_{name} {cg(name)} is not below {limit}')
		if ufs2 and cg('initediblk') > fs.ipg:
			problems.append(f'{where}: cg_initediblk {cg("initediblk")} > {fs.ipg}')

		imap = bytearray(howmany(fs.ipg, 8))
		for i in range(fs.ipg):
			ino = c * fs.ipg + i
			if ino in used or ino < UFS_ROOTINO:
				imap[i >> 3] |= 1 << (i & 7)
		have = bytes(buf[off + iused:off + freeoff])
		if have != imap:
			bad = [c * fs.ipg + i for i in range(fs.ipg)
			       if (have[i >> 3] ^ imap[i >> 3]) >> (i & 7) & 1]
			problems.append(f'{where}: the inode bitmap is wrong for {len(bad)} inodes '
					f'(first {bad[0]})')
		nifree = fs.ipg - sum(bin(x).count('1') for x in imap)

		fmap = bytearray(howmany(fs.fpg, 8))
		for rel in range(ndblk):
			if base + rel not in owner:
				fmap[rel >> 3] |= 1 << (rel & 7)
		have = bytes(buf[off + freeoff:off + mapend])
		if have != fmap:
			diff = [r for r in range(fs.fpg) if (have[r >> 3] ^ fmap[r >> 3]) >> (r & 7) & 1]
			lost = [base + r for r in diff if have[r >> 3] >> (r & 7) & 1]
			leak = [base + r for r in diff if not have[r >> 3] >> (r & 7) & 1]
			problems.append(f'{where}: the free-fragment bitmap is wrong: ' + '; '.join(
				([f'{len(lost)} marked free are in use or past the group (first '
				  f'{lost[0]}, {owner.get(lost[0], "past the group")})'] if lost else [])
				+ ([f'{len(leak)} marked in use belong to nothing (first {leak[0]})']
				   if leak else [])))
		s = cg_summary(fmap, ndblk, frag, contig)
		cs = [ndir[c], s.nbfree, nifree, s.nffree]
		differ('cg_cs (ndir, nbfree, nifree, nffree)',
		       list(struct.unpack_from(e + '4i', buf, off + CG['cs'])), cs)
		differ('cg_frsum', list(struct.unpack_from(f'{e}{MAXFRAG}i', buf, off + CG['frsum'])),
		       s.frsum)
		if contig > 0:
			sumoff = cg('clustersumoff')
			differ('the cluster sums', list(struct.unpack_from(
				f'{e}{contig}i', buf, off + sumoff + 4)), s.clustersum[1:])
			cmap = s.clusters.ljust(howmany(fs.fpg // frag, 8), b'\0')
			clo = cg('clusteroff')
			if bytes(buf[off + clo:off + clo + len(cmap)]) != cmap:
				problems.append(f'{where}: the cluster map is not the free blocks')
		differ('its fs_cs entry', list(struct.unpack_from(
			e + '4i', buf, fs.csaddr * F + c * CSUM)), cs)
		totals = [t + x for t, x in zip(totals, cs)]
	if ufs2:
		differ_sb = list(struct.unpack_from(e + '4q', buf, fs.sb_offset('cstotal2')))
		if differ_sb != totals:
			problems.append(f'fs_cstotal {differ_sb}, the groups add up to {totals}')
	old = list(struct.unpack_from(e + '4i', buf, fs.sb_offset('cstotal1')))
	if old != totals:
		problems.append(f'fs_old_cstotal {old}, the groups add up to {totals}')
	return problems


# ------------------------------------------------------------ the corruption


# What makefs 20190105 leaves varying from one run to the next (measured by
# making the same image twice): two in-core pointers it writes into every
# superblock copy (struct fs fs_csp, fs_maxcluster: bytes 832..847, heap
# addresses), di_gen of some inodes, and on UFS2 the low bits of the inode
# times despite -T.  normalize() makes them fixed, so the images, and the
# form the kernel carries (csource.py), are the same on every build.
SB_INCORE = (832, 848)
UFS1_GEN, UFS2_GEN = 108, 80
UFS2_TIMES = (32, 40, 48, 56)                # atime, mtime, ctime, birthtime
UFS2_NSECS = (64, 68, 72, 76)


def normalize(buf: bytearray) -> None:
	"""Fix what makefs leaves random (see SB_INCORE), in place."""
	fs = Ufs(buf)
	sbs = [fs.sblock] + [(fs.cgstart(c) + fs.sblkno) * fs.fsize for c in range(fs.ncg)]
	for off in sbs:
		if off + SB_INCORE[1] <= len(buf) and SB_INCORE[1] <= fs.sbsize:
			buf[off + SB_INCORE[0]:off + SB_INCORE[1]] = bytes(SB_INCORE[1] - SB_INCORE[0])
	gen = UFS2_GEN if fs.type == 'ufs2' else UFS1_GEN
	for c in range(fs.ncg):
		for i in range(fs.ipg):
			ino = c * fs.ipg + i
			off = fs.inode_offset(ino)
			if off + fs.isize > len(buf):
				break
			used = struct.unpack_from(fs.e + 'H', buf, off)[0] != 0
			fs.pack('I', off + gen, ino if used else 0)
			if fs.type == 'ufs2' and used:
				for t in UFS2_TIMES:
					fs.pack('q', off + t, EPOCH)
				for t in UFS2_NSECS:
					fs.pack('i', off + t, 0)


def corrupt(buf: bytearray, kind: str) -> bytearray:
	"""A corrupted copy of a good image (its label is rewritten afterwards)."""
	fs = Ufs(buf)
	if kind == 'magic':
		fs.pack('I', fs.sb_offset('magic'), 0)
	elif kind == 'fsize-gt-bsize':
		fs.pack('i', fs.sb_offset('fsize'), 2 * fs.bsize)
	elif kind == 'ptr-beyond':
		# Past fs_size and past the end of the disk, block aligned.
		end = max(fs.size, (len(buf) + fs.fsize - 1) // fs.fsize)
		beyond = (end + fs.frag - 1) // fs.frag * fs.frag + 64 * fs.frag
		fs.pack(fs.ilay['ptr'], fs.db_offset(fs.lookup('direct').ino, 0), beyond)
	elif kind == 'ind-self':
		ind = fs.lookup('single').ib[0]
		if not ind:
			raise UfsError('`single` has no single-indirect block')
		fs.pack(fs.ilay['ptr'], ind * fs.fsize, ind)
	elif kind == 'cg-magic':
		fs.pack('I', fs.cg_offset(0) + CG_MAGIC_OFF, 0)
	elif kind == 'truncated':
		return buf[:len(buf) // 2 // SECTOR * SECTOR]
	else:
		raise ValueError(f'unknown corruption {kind!r}')
	return buf


# ------------------------------------------------------- moving the superblock


def relocate(buf: Buf, sblockloc: int, what: str = 'the image') -> bytearray:
	"""A copy of the UFS2 image buf whose superblock is at sblockloc, laid
	out as newfs lays out a file system with its superblock there
	(docs/fixtures.md, "The superblock at 65536").

	Moving the superblock from fs_sblockloc to sblockloc moves sblkno,
	cblkno, iblkno and dblkno by the same delta (newfs_layout).  In every
	cylinder group, everything from the old sblkno on (superblock copy,
	header, inodes, data) moves up by delta fragments, and the group's last
	delta fragments, which must be free, fall off its end; fragments below
	the old sblkno stay where they are.  Every block address (di_db, di_ib,
	indirect blocks, fs_csaddr) moves with what it points at, the bitmaps
	move too and the counters are derived again; inode numbers, directories,
	sizes and the image's length stay the same.  Raises UserError (one line)
	when the image cannot be moved."""
	fs = Ufs(buf)
	F, frag, fpg, e = fs.fsize, fs.frag, fs.fpg, fs.e
	why = f'cannot move the superblock of {what} to {sblockloc}'
	if fs.type != 'ufs2':
		raise UserError(f'{why}: it is {fs.type}, whose superblock is always at 8192')
	if sblockloc not in SBLOCK_SEARCH or sblockloc < fs.sblockloc:
		raise UserError(f'{why}: the superblock can only move up, to one of the places '
				f'FreeBSD searches ({", ".join(map(str, SBLOCK_SEARCH))})')
	layout = (fs.sblkno, fs.cblkno, fs.iblkno, fs.dblkno)
	if layout != newfs_layout(fs.sblockloc, F, frag, fs.ipg, fs.isize):
		raise UserError(f'{why}: its layout {layout} is not the one newfs gives a '
				f'superblock at {fs.sblockloc}')
	old = fs.sblkno
	new = newfs_layout(sblockloc, F, frag, fs.ipg, fs.isize)
	delta = new[0] - old
	ndblk = [min(fpg, fs.size - c * fpg) for c in range(fs.ncg)]
	cgs = [fs.cg_offset(c) for c in range(fs.ncg)]

	def cg(c: int, name: str) -> int:
		return int(struct.unpack_from(e + 'I', buf, cgs[c] + CG[name])[0])

	def bit(bm: Buf, i: int) -> int:
		return int(bm[i >> 3] >> (i & 7) & 1)

	freemaps = []
	for c in range(fs.ncg):
		freeoff = cg(c, 'freeoff')
		fmap = bytes(buf[cgs[c] + freeoff:cgs[c] + freeoff + howmany(fpg, 8)])
		busy = [r for r in range(max(0, ndblk[c] - delta), ndblk[c]) if not bit(fmap, r)]
		if busy or ndblk[c] < new[3]:
			first = c * fpg + (busy[0] if busy else 0)
			raise UserError(f'{why}: cylinder group {c} ' + (
				f'uses fragment {first}, in its last {delta} fragments, which the '
				'move pushes off its end' if busy else
				f'is too small ({ndblk[c]} fragments) for the moved layout'))
		freemaps.append(fmap)

	def move(p: int) -> int:
		c, rel = divmod(p, fpg)
		if c >= fs.ncg or rel >= ndblk[c] - delta or (c == 0 and rel < old):
			raise UserError(f'{why}: it has a block address {p} that no group can hold '
					'after the move')
		return p if rel < old else p + delta

	out = bytearray(len(buf))
	out[:LABEL_SIZE] = buf[:LABEL_SIZE]
	end = fs.size * F
	out[end:] = buf[end:]
	for c in range(fs.ncg):
		base = c * fpg * F
		if c:
			out[base:base + old * F] = buf[base:base + old * F]
		lo, hi = base + old * F, base + (ndblk[c] - delta) * F
		out[lo + delta * F:hi + delta * F] = buf[lo:hi]

	# The superblock, with the new layout.
	sb = bytearray(buf[fs.sblock:fs.sblock + fs.sbsize])
	for name, value in zip(('sblkno', 'cblkno', 'iblkno', 'dblkno'), new):
		struct.pack_into(e + 'i', sb, SB[name], value)
	struct.pack_into(e + 'q', sb, SB['sblockloc'], sblockloc)
	struct.pack_into(e + 'q', sb, SB['csaddr2'], move(fs.csaddr))
	struct.pack_into(e + 'q', sb, SB['dsize2'], fs.sb_int('dsize2', 'q') - delta)
	out[sblockloc:sblockloc + len(sb)] = sb       # written again once the totals are known
	moved = Ufs(out, sblock=sblockloc, check=False)

	# Block addresses: in every inode that has them, and in its indirect blocks.
	seen = set()

	def remap(at: int, level: int) -> None:
		"""Move the addresses in the (moved) indirect block at fragment `at`."""
		if at in seen:
			raise UserError(f'{why}: indirect block {at} is reached twice')
		seen.add(at)
		for i in range(fs.nindir):
			off = at * F + i * fs.psize
			p = struct.unpack_from(e + fs.ilay['ptr'], out, off)[0]
			if p:
				q = move(p)
				struct.pack_into(e + fs.ilay['ptr'], out, off, q)
				if level:
					remap(q, level - 1)

	for c in range(fs.ncg):
		for i in range(min(fs.ipg, cg(c, 'initediblk'))):
			node = moved.inode(c * fs.ipg + i)
			if node.mode == 0 or not _has_blocks(node):
				continue
			if struct.unpack_from(e + 'I', out, node.offset + 92)[0]:
				raise UserError(f'{why}: inode {node.ino} has extended attribute blocks')
			for k, p in enumerate(node.db):
				if p:
					moved.pack('Q', moved.db_offset(node.ino, k), move(p))
			for level, p in enumerate(node.ib):
				if p:
					moved.pack('Q', moved.ib_offset(node.ino, level), move(p))
					remap(move(p), level)

	# The bitmaps move with the fragments; the counters are derived again.
	contig = fs.sb_int('contigsumsize')
	totals = [0, 0, 0, 0]
	for c in range(fs.ncg):
		src, off = freemaps[c], moved.cg_offset(c)
		fmap = bytearray(len(src))
		for rel in range(ndblk[c]):
			if rel < old:
				free = bit(src, rel) if c else 0
			elif rel < new[0]:
				free = 1 if c else 0
			else:
				free = bit(src, rel - delta)
			fmap[rel >> 3] |= free << (rel & 7)
		s = cg_summary(fmap, ndblk[c], frag, contig)
		out[off + cg(c, 'freeoff'):off + cg(c, 'freeoff') + len(fmap)] = fmap
		cs = list(struct.unpack_from(e + '4i', out, off + CG['cs']))
		cs[1], cs[3] = s.nbfree, s.nffree
		struct.pack_into(e + '4i', out, off + CG['cs'], *cs)
		struct.pack_into(f'{e}{MAXFRAG}i', out, off + CG['frsum'], *s.frsum)
		if contig > 0:
			struct.pack_into(f'{e}{contig}i', out, off + cg(c, 'clustersumoff') + 4,
					 *s.clustersum[1:])
			clo = cg(c, 'clusteroff')
			cmap = s.clusters.ljust(howmany(fpg // frag, 8), b'\0')
			out[off + clo:off + clo + len(cmap)] = cmap
		for name in ('rotor', 'frotor'):   # moved like the fragment they name, or 0
			r = cg(c, name)
			r = r + delta if old <= r < ndblk[c] - delta else r if c and r < old else 0
			struct.pack_into(e + 'I', out, off + CG[name], r)
		struct.pack_into(e + '4i', out, moved.csaddr * F + c * CSUM, *cs)
		totals = [t + x for t, x in zip(totals, cs)]
	struct.pack_into(e + '4q', sb, SB['cstotal2'], *totals)
	struct.pack_into(e + '4i', sb, SB['cstotal1'], *totals)
	# The superblock, and its copy at every group's sblkno, as makefs writes them.
	for at in [sblockloc] + [(moved.cgstart(c) + moved.sblkno) * F for c in range(fs.ncg)]:
		out[at:at + len(sb)] = sb
	return out


# ------------------------------------------------------------------ building


@dataclass(frozen=True)
class Image:
	name: str
	path: Path
	label: str
	expect: str
	corrupt: str            # the corruption, '' on good and rw images
	size: int               # bytes


def makefs_binary() -> Optional[str]:
	return shutil.which('makefs', path=os.pathsep.join(
		[os.environ.get('PATH', ''), '/usr/sbin', '/sbin']))


def makefs_version() -> Optional[str]:
	"""makefs's Debian package version, None when it is not installed."""
	try:
		proc = subprocess.run(['dpkg-query', '-W', '-f=${db:Status-Status} ${Version}',
				       PACKAGE], capture_output=True, text=True)
	except OSError:
		return None
	parts = proc.stdout.split()
	if proc.returncode != 0 or len(parts) != 2 or parts[0] != 'installed':
		return None
	return parts[1]


def _need_makefs(allow_install: bool) -> Tuple[str, str]:
	binary, version = makefs_binary(), makefs_version()
	if binary and version:
		return binary, version
	if allow_install:
		deps.ensure([PACKAGE], allow_install=True)
		binary, version = makefs_binary(), makefs_version()
		if binary and version:
			return binary, version
	raise UserError(f'the UFS fixtures need makefs (Debian package {PACKAGE}), which is '
			'not installed\n  install it with:  sudo '
			+ shlex.join(deps.install_command([PACKAGE])))


def makefs_command(makefs: str, spec: Spec, image: Path, tree: Path) -> List[str]:
	opts = f'version={1 if spec.type == "ufs1" else 2},bsize={spec.bsize},fsize={spec.fsize}'
	cmd = [makefs, '-t', 'ffs', '-B', spec.endian, '-T', str(EPOCH), '-o', opts]
	if spec.size:
		cmd += ['-s', spec.size]
	if spec.free_files:
		cmd += ['-f', str(spec.free_files)]
	return cmd + [str(image), str(tree)]


def _run_makefs(cmd: List[str]) -> None:
	proc = subprocess.run(cmd, capture_output=True, text=True)
	if proc.returncode != 0:
		tail = '\n'.join((proc.stdout + proc.stderr).splitlines()[-10:])
		raise UserError(f'makefs failed (exit {proc.returncode}): {shlex.join(cmd)}\n{tail}')


def set_key(recipe_text: str, makefs_ver: str) -> str:
	"""The image set's directory name: recipe, generator and makefs versions."""
	h = hashlib.sha256()
	h.update(f'generator {GENERATOR_VERSION}\nmakefs {makefs_ver}\n'.encode())
	h.update(recipe_text.encode())
	return h.hexdigest()[:16]


def _write_tree(root: Path, files: Sequence[Tuple[str, int]],
		dirs: Sequence[Tuple[str, int]]) -> None:
	root.mkdir(parents=True)
	chunk = 1 << 20
	for path, size in files:
		with open(root / path, 'wb') as fh:
			for off in range(0, size, chunk):
				fh.write(content(path, off, min(chunk, size - off)))
	for path, count in dirs:
		(root / path).mkdir()
		for k in range(count):
			(root / path / f'e{k:04d}').touch()


def _sparse_write(path: Path, buf: Buf) -> None:
	"""Write buf to path, leaving all-zero 64 KiB runs as holes."""
	step = 1 << 16
	zero = bytes(step)
	view = memoryview(buf)
	with open(path, 'wb') as fh:
		for off in range(0, len(buf), step):
			piece = view[off:off + step]
			if piece == zero[:len(piece)]:
				fh.seek(len(piece), os.SEEK_CUR)
			else:
				fh.write(piece)
		fh.truncate()


def _finish(spec: Spec, buf: bytearray, files: Sequence[Tuple[str, int]],
	    dirs: Sequence[Tuple[str, int]]) -> str:
	"""Check what makefs made, then write the label into bytes 0..8191."""
	if any(buf[:LABEL_SIZE]):
		raise UserError(f'makefs wrote into bytes 0..{LABEL_SIZE - 1} of {spec.name}; '
				'there is no room for the label')
	try:
		fs = Ufs(buf)
	except UfsError as e:
		raise UserError(f'{spec.name}: makefs made no readable UFS: {e}')
	got = (fs.type, fs.endian, fs.bsize, fs.fsize)
	if got != (spec.type, spec.endian, spec.bsize, spec.fsize):
		raise UserError(f'{spec.name}: makefs made {got}, not what was asked')
	if fs.clean != 1:
		raise UserError(f'{spec.name}: fs_clean is {fs.clean}; Linux would mount it read-only')
	if fs.size * fs.fsize > len(buf):
		raise UserError(f'{spec.name}: fs_size {fs.size} fragments does not fit the image')
	normalize(buf)
	# What a correct kernel does with a good image: mount it (see LINUX_SBLOCK).
	expect = 'ok'
	label = make_label(spec.name, spec.type, spec.endian, spec.bsize, spec.fsize,
			   fs.sblock, expect, files, dirs)
	buf[:LABEL_SIZE] = label_block(label)
	return label


def _finish_relocated(spec: Spec, buf: bytearray, source: Dict[str, Any]) -> str:
	"""Label a relocated copy (the files of its source), after proving it with
	the reader: consistent, its superblock where the recipe said, and every file
	of the label read back through its pointers."""
	problems = consistency(buf)
	if not problems and Ufs(buf).sblock != spec.sblock:
		problems = [f'the superblock is at {Ufs(buf).sblock}, not {spec.sblock}']
	if not problems:
		label = make_label(spec.name, spec.type, spec.endian, spec.bsize, spec.fsize,
				   spec.sblock, 'ok', source['files'], source['dirs'])
		buf[:LABEL_SIZE] = label_block(label)
		problems = verify(buf)
	if problems:
		raise UserError(f'{spec.name}: the copy of {spec.source} with its superblock at '
				f'{spec.sblock} is wrong ({len(problems)} problems): {problems[0]}')
	return label


def _generate(specs: List[Spec], out: Path, makefs: str, log: Callable[[str], None]) -> None:
	sources = {s.source for s in specs if s.role in ('corrupt', 'relocated')}
	made: Dict[str, bytearray] = {}         # the images copies are made of
	entries = []
	for spec in specs:
		t0 = time.monotonic()
		path = out / f'{spec.name}.img'
		if spec.role == 'corrupt':
			src = made[spec.source]
			parsed = parse_label(src[:LABEL_SIZE])
			buf = corrupt(bytearray(src), spec.kind)
			label = make_label(spec.name, spec.type, spec.endian, spec.bsize, spec.fsize,
					   int(parsed['sblock']), CORRUPT_EXPECT[spec.kind],
					   parsed['files'], parsed['dirs'], corrupt=spec.kind)
			buf[:LABEL_SIZE] = label_block(label)
			_sparse_write(path, buf)
		elif spec.role == 'relocated':
			buf = relocate(made[spec.source], spec.sblock, spec.source)
			label = _finish_relocated(spec, buf, parse_label(made[spec.source]))
			_sparse_write(path, buf)
		else:
			files, dirs = spec.entries()
			tree = out / f'tree-{spec.name}'
			_write_tree(tree, files, dirs)
			_run_makefs(makefs_command(makefs, spec, path, tree))
			shutil.rmtree(tree)
			buf = bytearray(path.read_bytes())
			label = _finish(spec, buf, files, dirs)
			_sparse_write(path, buf)        # free space stays a hole
			if spec.name in sources:
				made[spec.name] = buf
		path.chmod(0o444)
		entries.append({'name': spec.name, 'file': path.name, 'label': label,
				'expect': parse_label(label_block(label))['expect'],
				'corrupt': spec.kind, 'size': len(buf)})
		log(f'  {spec.name:<20} {len(buf):>10} bytes  {time.monotonic() - t0:5.1f}s')
	(out / MANIFEST).write_text(json.dumps({'generator': GENERATOR_VERSION,
						'images': entries}, indent=1) + '\n')


def _load(d: Path) -> Optional[List[Image]]:
	"""The image set in d, or None when it is missing or incomplete."""
	try:
		man = json.loads((d / MANIFEST).read_text())
		images = [Image(e['name'], d / e['file'], e['label'], e['expect'], e['corrupt'],
				e['size']) for e in man['images']]
	except (OSError, ValueError, KeyError, TypeError):
		return None
	for img in images:
		try:
			if img.path.stat().st_size != img.size:
				return None
		except OSError:
			return None
	return images


def _alive(pid: int) -> bool:
	try:
		os.kill(pid, 0)
	except ProcessLookupError:
		return False
	except PermissionError:
		return True
	return True


def _clean_stale(root: Path) -> None:
	"""Remove what an interrupted build left: .tmp-<key>-<pid>-* of dead pids."""
	for p in root.glob('.[to][ml][pd]-*'):
		parts = p.name.split('-')
		if len(parts) >= 3 and parts[2].isdigit() and _alive(int(parts[2])):
			continue
		shutil.rmtree(p, ignore_errors=True)


def set_dir(cache: Path, recipe: Path = RECIPE) -> Path:
	"""Where build() puts (or finds) the image set of this recipe."""
	_, text = load_recipe(recipe)
	version = makefs_version()
	if version is None:
		_need_makefs(False)
	return Path(cache) / 'fixtures' / set_key(text, version or '')


def build(cache: Path, recipe: Path = RECIPE, rebuild: bool = False,
	  allow_install: bool = False, log: Optional[Callable[[str], None]] = None) -> List[Image]:
	"""The recipe's images, made now or found from an earlier build.

	Disk order: good images in recipe order, then rw, then corrupt.  Made in a
	temporary directory renamed into place, so a set is there whole or not at all."""
	log = log or (lambda s: None)
	specs, text = load_recipe(recipe)
	makefs, version = _need_makefs(allow_install)
	root = Path(cache) / 'fixtures'
	final = root / set_key(text, version)
	if not rebuild:
		images = _load(final)
		if images is not None:
			return images
	root.mkdir(parents=True, exist_ok=True)
	_clean_stale(root)
	tmp = Path(tempfile.mkdtemp(prefix=f'.tmp-{final.name}-{os.getpid()}-', dir=root))
	try:
		log(f'Making the UFS fixture images in {final} (makefs {version})')
		t0 = time.monotonic()
		_generate(specs, tmp, makefs, log)
		log(f'  {len(specs)} images in {time.monotonic() - t0:.1f}s')
		if final.exists() and not rebuild and _load(final) is not None:
			shutil.rmtree(tmp)  # another build finished first: keep its images
		elif final.exists():    # --rebuild, or a broken set
			old = root / f'.old-{final.name}-{os.getpid()}'
			final.rename(old)
			tmp.rename(final)
			shutil.rmtree(old, ignore_errors=True)
		else:
			try:
				tmp.rename(final)
			except OSError:     # another build finished first: keep that one
				if _load(final) is None:
					raise
				shutil.rmtree(tmp, ignore_errors=True)
	except BaseException:
		shutil.rmtree(tmp, ignore_errors=True)
		raise
	images = _load(final)
	if images is None:
		raise UserError(f'the fixture set in {final} is incomplete')
	return images


def prune(cache: Path, keep: Path) -> List[Path]:
	"""Remove every other image set under <cache>/fixtures; the removed dirs."""
	gone = []
	root = Path(cache) / 'fixtures'
	for p in sorted(root.iterdir()) if root.is_dir() else []:
		if p.is_dir() and p != keep and not p.name.startswith('.'):
			shutil.rmtree(p)
			gone.append(p)
	return gone
