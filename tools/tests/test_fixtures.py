# SPDX-License-Identifier: GPL-2.0
"""tools/bklkunit/fixtures.py: the UFS fixture images.

The real image set is made once per session with the installed makefs into a
temporary cache and read back with the module's own UFS reader, which follows
the on-disk pointers independently of Linux."""

import json
import re
import shutil
import struct
from pathlib import Path
from typing import Callable, List

import pytest

from bklkunit import cli
from bklkunit.base import deps, paths
from bklkunit.base.errors import UserError
from bklkunit.ufsimage import command, csource, fixtures

SPECS, _ = fixtures.load_recipe(fixtures.RECIPE)
GOOD = [s.name for s in SPECS if s.role == 'good']
RW = [s.name for s in SPECS if s.role == 'rw']
RELOCATED = [s.name for s in SPECS if s.role == 'relocated']
MOVED_GOOD = [n for n in RELOCATED if not n.startswith('rw-')]
MOVED_RW = [n for n in RELOCATED if n.startswith('rw-')]
MOVED = {s.name: s for s in SPECS if s.role == 'relocated'}
CORRUPT = [s.name for s in SPECS if s.role == 'corrupt']

needs_makefs = pytest.mark.skipif(fixtures.makefs_binary() is None
				  or fixtures.makefs_version() is None,
				  reason='makefs is not installed (apt-get install makefs)')


@pytest.fixture(scope='session')
def image_set(tmp_path_factory):
	"""{name: (Image, bytes)} of the real recipe, made once."""
	if fixtures.makefs_binary() is None or fixtures.makefs_version() is None:
		pytest.skip('makefs is not installed')
	cache = tmp_path_factory.mktemp('fixture-cache')
	images = fixtures.build(cache)
	yield {img.name: (img, img.path.read_bytes()) for img in images}
	shutil.rmtree(cache)        # 375 MB: not for pytest's kept temporary directories


def small_recipe(where: Path, **changes) -> Path:
	"""A recipe of one or two small images, for the cache tests."""
	data = {'geometries': [[4096, 512]], 'types': ['ufs1'], 'endians': ['le'],
		'rw': [], 'corrupt': []}
	data.update(changes)
	p = where / 'small.json'
	p.write_text(json.dumps(data, indent=1))
	return p


# ---------------------------------------------------------------- content


def test_content_formula():
	assert fixtures.content('frags', 0, 16) == b'frags:0\nfrags:0\n'
	sector = fixtures.content('frags', 0, 512)
	assert sector == (b'frags:0\n' * 64)
	s = b'tail3:1024\n'
	third = fixtures.content('tail3', 1024, 512)
	assert third == bytes(s[i % len(s)] for i in range(512))
	whole = fixtures.content('many/e0001', 0, 5000)
	for off, n in [(0, 0), (1, 1), (511, 2), (700, 1000), (4999, 1)]:
		assert fixtures.content('many/e0001', off, n) == whole[off:off + n]
	assert len(fixtures.content('double', 123456, 70000)) == 70000


def test_sizes_per_geometry():
	assert fixtures.file_sizes(4096, 512, 'ufs1') == [
		('empty', 0), ('frags', 1529),
		('tail1', 4603), ('tail2', 5115), ('tail3', 5627), ('tail4', 6139),
		('tail5', 6651), ('tail6', 7163), ('tail7', 7675),
		('direct', 42485), ('single', 62451), ('double', 4252143)]
	assert fixtures.file_sizes(4096, 512, 'ufs2')[-1] == ('double', (12 + 512 + 2) * 4096 + 495)
	big = dict(fixtures.file_sizes(16384, 2048, 'ufs2'))
	assert big['frags'] == 3 * 2048 - 7
	assert big['tail7'] == 16384 + 7 * 2048 - 5
	assert big['direct'] == 10 * 16384 + 3 * 2048 - 11
	assert big['single'] == 15 * 16384 + 2 * 2048 - 13
	assert big['double'] == (12 + 2048 + 2) * 16384 + 2048 - 17
	assert dict(fixtures.file_sizes(16384, 2048, 'ufs1'))['double'] == \
		(12 + 4096 + 2) * 16384 + 2048 - 17
	# 4 fragments a block: tail1..tail3
	assert [n for n, _ in fixtures.file_sizes(8192, 2048, 'ufs1')][2:5] == \
		['tail1', 'tail2', 'tail3']


# ------------------------------------------------------------------ label

SAMPLE = ('BKLUFS-FIXTURE 1\n'
	  'image bad-ind-self\n'
	  'type ufs1\n'
	  'endian be\n'
	  'bsize 4096\n'
	  'fsize 512\n'
	  'sblock 8192\n'
	  'mount 44bsd\n'
	  'expect io-error\n'
	  'corrupt ind-self\n'
	  'file empty 0\n'
	  'file frags 1529\n'
	  'dir many 300\n'
	  'end\n')


def test_label_exact_text():
	text = fixtures.make_label('bad-ind-self', 'ufs1', 'be', 4096, 512, 8192, 'io-error',
				   [('empty', 0), ('frags', 1529)], [('many', 300)],
				   corrupt='ind-self')
	assert text == SAMPLE
	good = fixtures.make_label('ufs2-le-16384', 'ufs2', 'le', 16384, 2048, 65536, 'ok',
				   [('empty', 0)], [])
	assert good == ('BKLUFS-FIXTURE 1\nimage ufs2-le-16384\ntype ufs2\nendian le\n'
			'bsize 16384\nfsize 2048\nsblock 65536\nmount ufs2\nexpect ok\n'
			'file empty 0\nend\n')
	block = fixtures.label_block(text)
	assert len(block) == 8192 and block.startswith(SAMPLE.encode()) \
		and not any(block[len(SAMPLE):])
	parsed = fixtures.parse_label(block)
	assert parsed['image'] == 'bad-ind-self' and parsed['sblock'] == 8192
	assert parsed['corrupt'] == 'ind-self'
	assert parsed['files'] == [('empty', 0), ('frags', 1529)]
	assert parsed['dirs'] == [('many', 300)]


def test_label_that_does_not_fit():
	files = [(f'f{i:06d}', i) for i in range(800)]
	with pytest.raises(UserError, match='only 8192 fit'):
		fixtures.make_label('x', 'ufs1', 'le', 4096, 512, 8192, 'ok', files, [])


@pytest.mark.parametrize('bad', [
	SAMPLE.replace('type ufs1\nendian be\n', 'endian be\ntype ufs1\n'),
	SAMPLE.replace('end\n', ''),
	SAMPLE.replace('bsize 4096', 'bsize  4096'),
	SAMPLE.replace('BKLUFS-FIXTURE 1', 'BKLUFS-FIXTURE 2'),
])
def test_label_parser_is_strict(bad):
	with pytest.raises(ValueError):
		fixtures.parse_label(fixtures.label_block(bad))


# ----------------------------------------------------------------- recipe


def test_recipe_images_and_order():
	assert GOOD == ['ufs1-le-4096', 'ufs1-be-4096', 'ufs2-le-4096', 'ufs2-be-4096',
			'ufs1-le-16384', 'ufs1-be-16384', 'ufs2-le-16384', 'ufs2-be-16384']
	assert RW == ['rw-ufs1-le-4096', 'rw-ufs2-le-4096', 'rw-ufs1-be-16384', 'rw-ufs2-be-16384',
		      'rw-balloc']
	assert RELOCATED == ['ufs2-le-4096-sb65536', 'ufs2-be-4096-sb65536', 'rw-ufs2-sb65536']
	assert [(s.source, s.sblock) for s in SPECS if s.role == 'relocated'] == [
		('ufs2-le-4096', 65536), ('ufs2-be-4096', 65536), ('rw-ufs2-le-4096', 65536)]
	assert CORRUPT == ['bad-magic', 'bad-magic-ufs2', 'bad-fsize-gt-bsize',
			   'bad-ptr-beyond', 'bad-ind-self', 'bad-cg-magic', 'bad-truncated']
	assert [s.role for s in SPECS] == ['good'] * 8 + ['rw'] * 5 + ['relocated'] * 3 + \
		['corrupt'] * 7
	assert all(len(s.name) <= 20 for s in SPECS)
	kinds = {s.kind for s in SPECS if s.role == 'corrupt'}
	assert kinds == set(fixtures.CORRUPT_EXPECT)


def test_a_geometry_is_one_line(tmp_path):
	text = fixtures.RECIPE.read_text()
	assert '  [16384, 2048]\n' in text
	more = text.replace('  [16384, 2048]\n', '  [16384, 2048],\n  [8192, 1024]\n')
	(tmp_path / 'r.json').write_text(more)
	specs, _ = fixtures.load_recipe(tmp_path / 'r.json')
	good = [s.name for s in specs if s.role == 'good']
	assert good[:8] == GOOD
	assert good[8:] == ['ufs1-le-8192', 'ufs1-be-8192', 'ufs2-le-8192', 'ufs2-be-8192']
	# not bsize/8: the fsize is part of the name
	assert fixtures.image_name('ufs2', 'be', 16384, 4096) == 'ufs2-be-16384-4096'


@pytest.mark.parametrize('change, message', [
	({'geometries': [[4096, 256]]}, 'unusable'),
	({'geometries': [[4096, 1024], [4096, 2048]]}, 'unusable'),
	({'geometries': [[4095, 512]]}, 'powers of two'),
	({'types': ['ufs3']}, 'unknown type'),
	({'endians': ['pdp']}, 'unknown endian'),
	({'corrupt': [{'kind': 'nonsense', 'from': 'ufs1-le-4096'}]}, 'unknown kind'),
	({'corrupt': [{'kind': 'magic', 'from': 'ufs2-le-4096'}]}, 'must name a good image'),
	({'corrupt': [{'kind': 'magic', 'from': 'ufs1-le-4096'},
		      {'kind': 'magic', 'from': 'ufs1-le-4096'}]}, 'two images named bad-magic'),
	({'corrupt': [{'kind': 'magic', 'from': 'ufs1-le-4096',
		       'name': 'a-name-longer-than-twenty'}]}, 'not 1-20'),
	({'rw': [{'type': 'ufs1', 'endian': 'le', 'bsize': 4096, 'fsize': 512,
		  'size': '64 MB'}]}, 'bad type, endian or size'),
	({'relocated': [{'from': 'ufs1-le-4096', 'sblock': 65536}]},
	 'ufs1-le-4096 is ufs1; only a UFS2 superblock moves'),
	({'types': ['ufs2'], 'relocated': [{'from': 'ufs2-le-4096', 'sblock': 8192}]},
	 '"sblock" must be 65536'),
	({'relocated': [{'from': 'nonsense', 'sblock': 65536}]}, 'must name a good or rw image'),
	({'types': ['ufs2'], 'relocated': [{'from': 'ufs2-le-4096', 'sblock': 65536,
					    'name': 'rw-x'}]}, 'must start with "rw-" exactly when'),
	({'types': ['ufs2'], 'geometries': [[16384, 2048]],
	  'relocated': [{'from': 'ufs2-le-16384-2048', 'sblock': 65536}]}, 'must name a good'),
])
def test_recipe_errors(tmp_path, change, message):
	with pytest.raises(UserError, match=message):
		fixtures.load_recipe(small_recipe(tmp_path, **change))


# -------------------------------------------------------- the real images


def test_the_set_covers_every_combination(image_set):
	seen = set()
	for name in GOOD:
		img, buf = image_set[name]
		fs = fixtures.Ufs(buf)
		seen.add((fs.type, fs.endian, fs.bsize, fs.fsize))
		assert img.expect == fixtures.parse_label(buf)['expect']
	assert seen == {(t, e, b, f) for t in ('ufs1', 'ufs2') for e in ('le', 'be')
			for b, f in [(4096, 512), (16384, 2048)]}
	assert list(image_set) == GOOD + RW + RELOCATED + CORRUPT


@pytest.mark.parametrize('name', GOOD + RW + RELOCATED)
def test_good_image_reads_back_byte_for_byte(image_set, name):
	img, buf = image_set[name]
	assert fixtures.verify(buf) == []
	# and the same once more by hand, through the pointers
	fs = fixtures.Ufs(buf)
	spec = next(s for s in SPECS if s.name == name)
	files, dirs = spec.entries()
	root = {n: i for n, i, _ in fs.readdir(fs.inode(2))}
	assert set(root) == {'.', '..'} | {p for p, _ in files} | {p for p, _ in dirs}
	for path, size in files:
		ino = fs.inode(root[path])
		assert ino.size == size
		assert fs.read(ino) == fixtures.content(path, 0, size), path
	if dirs:
		many = fs.inode(root['many'])
		entries = {n: i for n, i, _ in fs.readdir(many) if n not in ('.', '..')}
		assert sorted(entries) == [f'e{k:04d}' for k in range(300)]
		assert all(fs.inode(i).size == 0 for i in entries.values())


@pytest.mark.parametrize('name', GOOD + MOVED_GOOD)
def test_block_mapping(image_set, name):
	_, buf = image_set[name]
	fs = fixtures.Ufs(buf)
	b, f = fs.bsize, fs.fsize
	frags = fs.lookup('frags')
	assert frags.db[0] and frags.db[1] == 0 and frags.blocks * 512 == 3 * f
	for k in range(1, b // f):
		tail = fs.lookup(f'tail{k}')
		assert tail.db[0] % fs.frag == 0 and tail.db[1] and tail.db[2] == 0
		assert tail.blocks * 512 == b + k * f, f'tail{k}'
	direct = fs.lookup('direct')
	assert all(direct.db[:11]) and direct.db[11] == 0 and direct.ib == [0, 0, 0]
	single = fs.lookup('single')
	assert all(single.db) and single.ib[0] and single.ib[1:] == [0, 0]
	assert fs.entry(single.ib[0], 3) and fs.entry(single.ib[0], 4) == 0
	double = fs.lookup('double')
	assert double.ib[0] and double.ib[1] and double.ib[2] == 0
	second = fs.entry(double.ib[1], 0)
	assert second and fs.entry(double.ib[1], 1) == 0
	assert fs.entry(second, 2) and fs.entry(second, 3) == 0
	assert fs.entry(double.ib[0], fs.nindir - 1)


@pytest.mark.parametrize('name', GOOD + RW + RELOCATED + CORRUPT)
def test_label_is_in_the_boot_area(image_set, name):
	img, buf = image_set[name]
	assert buf[:8192] == fixtures.label_block(img.label)
	label = fixtures.parse_label(buf)
	assert label['image'] == name and label['expect'] == img.expect
	assert label['mount'] == {'ufs1': '44bsd', 'ufs2': 'ufs2'}[label['type']]
	assert img.size == len(buf) == img.path.stat().st_size


@pytest.mark.parametrize('name', GOOD + RW + RELOCATED)
def test_superblock_location_and_expect(image_set, name):
	"""This makefs writes the UFS2 superblock at 8192 (fs_sblockloc 8192),
	where pristine Linux's ufstype=ufs2 never looks (it reads 65536 only); the
	relocated images have it at 65536, where newfs puts it."""
	img, buf = image_set[name]
	fs = fixtures.Ufs(buf)
	label = fixtures.parse_label(buf)
	assert label['sblock'] == fs.sblock == fs.sblockloc
	assert fs.sblock in (8192, 65536)
	linux = fixtures.LINUX_SBLOCK[fs.type]
	assert img.expect == 'ok'
	assert fs.sblock == (linux if name in RELOCATED else 8192)
	assert fs.clean == 1
	if fs.sblock != linux:
		# what Linux reads there is no superblock in either byte order
		for e in '<>':
			assert struct.unpack_from(e + 'I', buf, linux + 1372)[0] not in (
				fixtures.UFS1_MAGIC, fixtures.UFS2_MAGIC)


@pytest.mark.parametrize('name', RW + MOVED_RW)
def test_rw_images_have_room(image_set, name):
	img, buf = image_set[name]
	fs = fixtures.Ufs(buf)
	spec = next(s for s in SPECS if s.name == name)
	size = int(spec.size[:-1]) << {'k': 10, 'm': 20, 'g': 30}[spec.size[-1]]
	assert len(buf) == size and fs.size * fs.fsize == size
	assert fs.free_blocks() * fs.bsize > size * 3 // 4
	assert fixtures.parse_label(buf)['files'] == [('seed', 4096)]
	assert fs.read(fs.lookup('seed')) == fixtures.content('seed', 0, 4096)
	assert img.expect == 'ok' and not img.corrupt


def _differences(a: bytes, b: bytes):
	"""Byte offsets past the label where a and b differ (same length)."""
	assert len(a) == len(b)
	step = 1 << 16
	out = []
	for off in range(8192, len(a), step):
		if a[off:off + step] != b[off:off + step]:
			out += [off + i for i, (x, y) in enumerate(zip(a[off:off + step],
									b[off:off + step])) if x != y]
	return out


@pytest.mark.parametrize('name', CORRUPT)
def test_corruption_is_in_the_image(image_set, name):
	img, buf = image_set[name]
	spec = next(s for s in SPECS if s.name == name)
	src_img, src = image_set[spec.source]
	label, src_label = fixtures.parse_label(buf), fixtures.parse_label(src)
	assert label['corrupt'] == img.corrupt == spec.kind
	assert label['expect'] == img.expect == fixtures.CORRUPT_EXPECT[spec.kind]
	assert (label['files'], label['dirs'], label['sblock']) == \
		(src_label['files'], src_label['dirs'], src_label['sblock'])
	good = fixtures.Ufs(src)
	e = good.e
	kind = spec.kind
	if kind == 'truncated':
		assert len(buf) == len(src) // 2 // 512 * 512 and buf[8192:] == src[8192:len(buf)]
		fs = fixtures.Ufs(buf)          # the superblock survives...
		with pytest.raises(fixtures.UfsError, match='beyond the image'):
			fs.read(fs.lookup('double'))     # ...the end of `double` does not
		return
	diff = _differences(buf, src)
	if kind == 'magic':
		off = good.sblock + 1372
		assert struct.unpack_from(e + 'I', buf, off)[0] == 0
		assert diff and all(off <= d < off + 4 for d in diff)
		with pytest.raises(fixtures.UfsError, match='no UFS superblock'):
			fixtures.Ufs(buf)
	elif kind == 'fsize-gt-bsize':
		fs = fixtures.Ufs(buf, check=False)
		assert fs.fsize == 2 * fs.bsize == 2 * good.bsize
		assert all(good.sblock + 52 <= d < good.sblock + 56 for d in diff)
		with pytest.raises(fixtures.UfsError, match='bad geometry'):
			fixtures.Ufs(buf)
	elif kind == 'ptr-beyond':
		fs = fixtures.Ufs(buf)
		direct = fs.lookup('direct')
		assert direct.db[0] > fs.size and direct.db[0] * fs.fsize >= len(buf)
		assert direct.db[0] % fs.frag == 0
		assert direct.db[1:] == good.lookup('direct').db[1:]
		off = fs.db_offset(direct.ino, 0)
		assert diff and all(off <= d < off + fs.psize for d in diff)
		with pytest.raises(fixtures.UfsError, match='beyond the image'):
			fs.read(direct)
		assert fs.read(fs.lookup('single')) == fixtures.content('single', 0, 62451)
		assert f'inode {direct.ino} block 0: fragments {direct.db[0]}..' in \
			'\n'.join(fixtures.consistency(buf))
	elif kind == 'ind-self':
		fs = fixtures.Ufs(buf)
		ind = fs.lookup('single').ib[0]
		assert ind == good.lookup('single').ib[0]
		assert fs.entry(ind, 0) == ind != good.entry(ind, 0)
		assert diff and all(ind * fs.fsize <= d < ind * fs.fsize + fs.psize for d in diff)
		assert fs.read(fs.lookup('single')) != fixtures.content('single', 0, 62451)
		assert f'fragment {ind} is in inode {fs.lookup("single").ino} indirect block ' \
			'(level 1) of block 12 and in inode' in '\n'.join(fixtures.consistency(buf))
	elif kind == 'cg-magic':
		fs = fixtures.Ufs(buf)
		assert good.cg_magic(0) == fixtures.CG_MAGIC and fs.cg_magic(0) == 0
		off = fs.cg_offset(0) + 4
		assert diff and all(off <= d < off + 4 for d in diff)
		assert fixtures.verify(buf) == []        # every file still reads back
		assert fixtures.consistency(buf) == ['cylinder group 0: cg_magic 0x0, should be '
						     '0x90255']
	else:
		raise AssertionError(f'no check for {kind}')


def test_ufs2_magic_copy(image_set):
	_, buf = image_set['bad-magic-ufs2']
	assert fixtures.parse_label(buf)['type'] == 'ufs2'
	with pytest.raises(fixtures.UfsError):
		fixtures.Ufs(buf)


# ------------------------------------------- consistency, the superblock at 65536


@pytest.mark.parametrize('name', GOOD + RW)
def test_consistency_agrees_with_makefs(image_set, name):
	"""The consistency check accepts what makefs (another implementation, in C)
	made: its layout and dsize formulas, frsum, cluster sums, inode and
	fragment bitmaps, nlink and di_blocks rules are the ones makefs follows."""
	assert fixtures.consistency(image_set[name][1]) == []


def _cg(fs, c: int, name: str) -> int:
	return struct.unpack_from(fs.e + 'I', fs.buf, fs.cg_offset(c) + fixtures.CG[name])[0]


def _set_free(fs, addr: int, free: bool) -> None:
	c, rel = divmod(addr, fs.fpg)
	off = fs.cg_offset(c) + _cg(fs, c, 'freeoff') + (rel >> 3)
	fs.buf[off] = fs.buf[off] | (1 << (rel & 7)) if free else fs.buf[off] & ~(1 << (rel & 7))


def _unmoved_pointer(fs):
	ino = fs.lookup('direct')
	fs.pack('Q', fs.db_offset(ino.ino, 0), ino.db[0] - 112)


def _one_more(fmt: str, offset) -> Callable:
	def damage(fs):
		off = offset(fs)
		fs.pack(fmt, off, struct.unpack_from(fs.e + fmt, fs.buf, off)[0] + 1)
	return damage


def _sb_everywhere(fmt: str, field: str) -> Callable:
	"""Add one to a superblock field in every copy, so that they still agree."""
	def damage(fs):
		for at in [fs.sblock] + [(fs.cgstart(c) + fs.sblkno) * fs.fsize
					 for c in range(fs.ncg)]:
			off = at + fixtures.SB[field]
			fs.pack(fmt, off, struct.unpack_from(fs.e + fmt, fs.buf, off)[0] + 1)
	return damage


def _flip_inode_bit(fs):
	ino = fs.lookup('frags').ino
	fs.buf[fs.cg_offset(0) + _cg(fs, 0, 'iusedoff') + (ino >> 3)] ^= 1 << (ino & 7)


def _flip_cluster_bit(fs):
	fs.buf[fs.cg_offset(0) + _cg(fs, 0, 'clusteroff')] ^= 1


@pytest.mark.parametrize('damage, message', [
	(_unmoved_pointer, r'^fragment \d+ is in .* and in inode \d+ block 0$'),
	(lambda fs: _set_free(fs, fs.lookup('direct').db[0], True),
	 r'^cylinder group 0: the free-fragment bitmap is wrong: 1 marked free are in use '
	 r'or past the group \(first \d+, inode \d+ block 0\)$'),
	(lambda fs: _set_free(fs, fs.size - 1, False),
	 r'marked in use belong to nothing \(first 4943\)$'),
	(_one_more('i', lambda fs: fs.cg_offset(0) + fixtures.CG['frsum'] + 4), r'cg_frsum'),
	(_one_more('i', lambda fs: fs.cg_offset(0) + fixtures.CG['cs'] + 4),
	 r'^cylinder group 0: cg_cs \(ndir, nbfree, nifree, nffree\)'),
	(_one_more('i', lambda fs: fs.csaddr * fs.fsize + 12), r'its fs_cs entry'),
	(_one_more('q', lambda fs: fs.sb_offset('cstotal2') + 8),
	 r'^the superblock copy of cylinder group 0 \(byte 73728\) differs'),
	(_sb_everywhere('q', 'cstotal2'), r'^fs_cstotal \['),
	(_sb_everywhere('i', 'cstotal1'), r'^fs_old_cstotal \['),
	(_sb_everywhere('q', 'dsize2'), r'^fs_dsize \d+, the layout gives'),
	(_sb_everywhere('i', 'dblkno'), r'^sblkno, cblkno, iblkno, dblkno are'),
	(_one_more('Q', lambda fs: fs.lookup('frags').offset + 24), r'di_blocks 4, it holds 3'),
	(_one_more('H', lambda fs: fs.lookup('frags').offset + 2),
	 r'di_nlink 2, named by 1 directory entries'),
	(_flip_inode_bit, r'the inode bitmap is wrong for 1 inodes'),
	(_flip_cluster_bit, r'the cluster map is not the free blocks'),
	(_one_more('i', lambda fs: fs.cg_offset(0) + _cg(fs, 0, 'clustersumoff') + 4 * 16),
	 r'the cluster sums'),
])
def test_consistency_names_what_is_wrong(image_set, damage, message):
	"""Each kind of inconsistency a wrong move would leave is reported."""
	fs = fixtures.Ufs(bytearray(image_set['ufs2-le-4096-sb65536'][1]))
	damage(fs)
	problems = fixtures.consistency(fs.buf)
	assert any(re.search(message, p) for p in problems), problems


@pytest.mark.parametrize('name', RELOCATED)
def test_the_superblock_is_at_65536(image_set, name):
	"""Where newfs puts it: fs_sblockloc 65536, the layout newfs derives from
	that, and nothing at 8192 (nor anywhere between the label and 65536)."""
	img, buf = image_set[name]
	_, src = image_set[MOVED[name].source]
	fs, old = fixtures.Ufs(buf), fixtures.Ufs(src)
	assert fs.sblock == fs.sblockloc == 65536 == fixtures.parse_label(buf)['sblock']
	assert old.sblock == old.sblockloc == 8192
	assert struct.unpack_from(fs.e + 'q', buf, 65536 + 1000)[0] == 65536
	assert struct.unpack_from(fs.e + 'I', buf, 65536 + 1372)[0] == fixtures.UFS2_MAGIC
	assert not any(buf[8192:65536])
	with pytest.raises(fixtures.UfsError, match='no UFS superblock at 8192'):
		fixtures.Ufs(buf, sblock=8192)
	# FreeBSD newfs: sblkno = roundup(howmany(65536 + 8192, 512), 8), and so on
	assert (old.sblkno, old.cblkno, old.iblkno) == (32, 48, 56)
	assert (fs.sblkno, fs.cblkno, fs.iblkno) == (144, 160, 168)
	assert fs.dblkno - fs.iblkno == old.dblkno - old.iblkno == fs.ipg * 256 // 512
	for k in ('type', 'endian', 'bsize', 'fsize', 'ncg', 'fpg', 'ipg', 'size', 'sbsize'):
		assert getattr(fs, k) == getattr(old, k), k
	assert len(buf) == len(src) and fs.clean == 1
	assert fixtures.consistency(buf) == []
	assert img.expect == 'ok' and not img.corrupt


def _fragments(fs, ino) -> List[int]:
	"""The fragment addresses of an inode: its blocks, then its indirect blocks."""
	meta: set = set()
	return [a for _, a, _ in fs.extents(ino, meta)] + sorted(meta)


@pytest.mark.parametrize('name', RELOCATED)
def test_everything_moved_by_delta(image_set, name):
	"""Checked against the source, not against the rules: every block of every
	inode is the source's 112 fragments on, inode numbers and directories are
	the same, the bitmaps are the source's shifted, and cylinder group 0 lost
	exactly the 112 fragments its reserved area grew by."""
	_, buf = image_set[name]
	_, src = image_set[MOVED[name].source]
	fs, old = fixtures.Ufs(buf), fixtures.Ufs(src)
	delta = fs.sblkno - old.sblkno
	assert delta == 112 and fs.csaddr == old.csaddr + delta
	inodes = 0
	for ino in range(fs.ncg * fs.ipg):
		a, b = fs.inode(ino), old.inode(ino)
		assert (a.mode, a.nlink, a.size, a.blocks) == (b.mode, b.nlink, b.size, b.blocks)
		if a.mode:
			inodes += 1
			assert _fragments(fs, a) == [p + delta for p in _fragments(old, b)], ino
			if a.mode & fixtures.S_IFMT == fixtures.S_IFDIR:
				assert fs.readdir(a) == old.readdir(b)
	assert inodes == (2 if name.startswith('rw-') else 2 + len(fixtures.parse_label(buf)['files'])
			  + 300)
	free_total = []
	for c in range(fs.ncg):
		ndblk = _cg(fs, c, 'ndblk')
		assert ndblk == _cg(old, c, 'ndblk')

		def bits(u):
			off = u.cg_offset(c) + _cg(u, c, 'freeoff')
			return [u.buf[off + (r >> 3)] >> (r & 7) & 1 for r in range(ndblk)]
		new_bits, old_bits = bits(fs), bits(old)
		assert new_bits[fs.sblkno:] == old_bits[old.sblkno:ndblk - delta]
		assert all(old_bits[ndblk - delta:])        # what fell off the end was free
		if c == 0:
			assert not any(new_bits[:fs.sblkno]) and not any(old_bits[:old.sblkno])
		else:
			assert all(new_bits[:fs.sblkno]) and all(old_bits[:old.sblkno])
		free_total.append(sum(new_bits) - sum(old_bits))
		cs = struct.unpack_from(fs.e + '4i', buf, fs.cg_offset(c) + fixtures.CG['cs'])
		was = struct.unpack_from(old.e + '4i', src, old.cg_offset(c) + fixtures.CG['cs'])
		assert (cs[0], cs[2]) == (was[0], was[2])          # ndir, nifree
		assert cs[1] * fs.frag + cs[3] - (was[1] * old.frag + was[3]) == free_total[-1]
	assert free_total == [-delta] + [0] * (fs.ncg - 1)
	assert fs.sb_int('dsize2', 'q') == old.sb_int('dsize2', 'q') - delta


@pytest.mark.parametrize('name', [n for n in GOOD + RW if n.startswith(('ufs2', 'rw-ufs2'))])
def test_every_ufs2_image_can_move(image_set, name):
	"""Not only the recipe's: every UFS2 image of the set, both geometries and
	byte orders, one group or five, moves and passes both checks."""
	_, src = image_set[name]
	buf = fixtures.relocate(src, 65536, name)
	assert buf == fixtures.relocate(src, 65536, name)          # reproducible
	old, fs = fixtures.Ufs(src), fixtures.Ufs(buf)
	assert fs.sblock == 65536 and fs.sblkno - old.sblkno == {512: 112, 2048: 32}[fs.fsize]
	label = fixtures.parse_label(src)
	buf[:8192] = fixtures.label_block(fixtures.make_label(
		'x', fs.type, fs.endian, fs.bsize, fs.fsize, 65536, 'ok', label['files'],
		label['dirs']))
	assert fixtures.verify(buf) == [] and fixtures.consistency(buf) == []
	assert not any(buf[8192:65536])


def test_relocation_refuses_what_it_cannot_move(image_set):
	"""One line each: a UFS1 image, a move down or to where nothing searches,
	a cylinder group whose last delta fragments are not free."""
	_, src = image_set['ufs2-le-4096']
	cases = [
		(image_set['ufs1-le-4096'][1], 65536,
		 'cannot move the superblock of x to 65536: it is ufs1, whose superblock is '
		 'always at 8192'),
		(src, 0, 'cannot move the superblock of x to 0: the superblock can only move '
		 'up, to one of the places FreeBSD searches (65536, 8192, 0, 262144)'),
		(src, 32768, 'cannot move the superblock of x to 32768: the superblock can only '
		 'move up'),
	]
	fs = fixtures.Ufs(bytearray(src))
	_set_free(fs, fs.size - 112, False)          # the first of the last 112 fragments
	cases.append((fs.buf, 65536, 'cannot move the superblock of x to 65536: cylinder group '
		      '0 uses fragment 4832, in its last 112 fragments, which the move pushes '
		      'off its end'))
	for buf, where, message in cases:
		with pytest.raises(UserError) as e:
			fixtures.relocate(buf, where, 'x')
		assert str(e.value).startswith(message) and '\n' not in str(e.value)


@needs_makefs
def test_a_wrong_move_is_not_written(tmp_path, monkeypatch, capsys):
	"""The generator proves each relocated image before writing it: a move
	that left the counters wrong stops the build, which leaves nothing."""
	recipe = small_recipe(tmp_path, types=['ufs2'],
			      relocated=[{'from': 'ufs2-le-4096', 'sblock': 65536}])
	real = fixtures.relocate

	def stale_counters(buf, sblockloc, what):
		out = real(buf, sblockloc, what)
		fs = fixtures.Ufs(out)
		fs.pack('i', fs.cg_offset(0) + fixtures.CG['frsum'] + 4, 7)
		return out
	monkeypatch.setattr(fixtures, 'relocate', stale_counters)
	with pytest.raises(UserError) as e:
		fixtures.build(tmp_path / 'c', recipe)
	assert str(e.value).startswith('ufs2-le-4096-sb65536: the copy of ufs2-le-4096 with its '
				       'superblock at 65536 is wrong (1 problems): cylinder group 0: '
				       'cg_frsum [0, 7,') and '\n' not in str(e.value)
	assert list((tmp_path / 'c' / 'fixtures').iterdir()) == []
	monkeypatch.setattr(fixtures, 'relocate', real)
	assert command.main(['--cache-dir', str(tmp_path / 'c'), '--recipe', str(recipe),
				'--verify', '--list']) == 0
	out = capsys.readouterr().out
	assert 'verify ufs2-le-4096-sb65536: ok' in out
	assert 'image ufs2-le-4096-sb65536\ntype ufs2\nendian le\nbsize 4096\nfsize 512\n' \
		'sblock 65536\nmount ufs2\nexpect ok\nfile empty 0\n' in out


def test_images_are_read_only_files(image_set):
	for img, _ in image_set.values():
		assert not img.path.stat().st_mode & 0o222


# -------------------------------------------------------------- the cache


@needs_makefs
def test_an_unchanged_recipe_reuses_the_images(tmp_path, monkeypatch):
	recipe = small_recipe(tmp_path)
	cache = tmp_path / 'cache'
	first = fixtures.build(cache, recipe)
	assert [i.name for i in first] == ['ufs1-le-4096']
	stamp = first[0].path.stat().st_mtime_ns

	def no_makefs(cmd):
		raise AssertionError('makefs ran for an unchanged recipe')
	monkeypatch.setattr(fixtures, '_run_makefs', no_makefs)
	again = fixtures.build(cache, recipe)
	assert again == first and again[0].path.stat().st_mtime_ns == stamp
	# the same recipe in other whitespace is the same recipe
	recipe.write_text(json.dumps(json.loads(recipe.read_text())))
	assert fixtures.build(cache, recipe) == first


@needs_makefs
def test_what_makes_a_new_set(tmp_path, monkeypatch):
	recipe = small_recipe(tmp_path)
	cache = tmp_path / 'cache'
	first = fixtures.build(cache, recipe)
	calls = []
	real = fixtures._run_makefs
	monkeypatch.setattr(fixtures, '_run_makefs', lambda cmd: (calls.append(cmd), real(cmd)))
	small_recipe(tmp_path, endians=['le', 'be'])
	second = fixtures.build(cache, recipe)
	assert len(calls) == 2 and [i.name for i in second] == ['ufs1-le-4096', 'ufs1-be-4096']
	assert second[0].path.parent != first[0].path.parent
	monkeypatch.setattr(fixtures, 'GENERATOR_VERSION', fixtures.GENERATOR_VERSION + 1)
	third = fixtures.build(cache, recipe)
	assert len(calls) == 4 and third[0].path.parent not in (first[0].path.parent,
								 second[0].path.parent)
	monkeypatch.setattr(fixtures, 'makefs_version', lambda: '99-1')
	fourth = fixtures.build(cache, recipe)
	assert len(calls) == 6 and fourth[0].path.parent != third[0].path.parent
	# --rebuild: the same directory, made again
	fifth = fixtures.build(cache, recipe, rebuild=True)
	assert len(calls) == 8 and fifth[0].path.parent == fourth[0].path.parent
	sets = sorted(p.name for p in (cache / 'fixtures').iterdir())
	assert len(sets) == 4 and not [s for s in sets if s.startswith('.')]
	gone = fixtures.prune(cache, fifth[0].path.parent)
	assert len(gone) == 3 and [p.name for p in (cache / 'fixtures').iterdir()] == \
		[fifth[0].path.parent.name]


@needs_makefs
def test_a_failed_build_leaves_nothing(tmp_path, monkeypatch):
	recipe = small_recipe(tmp_path, endians=['le', 'be'])
	cache = tmp_path / 'cache'
	(cache / 'fixtures').mkdir(parents=True)
	# what a killed build left behind: a temporary directory of a dead pid
	stale = cache / 'fixtures' / '.tmp-0123456789abcdef-999999999-xyz'
	(stale / 'tree-x').mkdir(parents=True)
	real = fixtures._run_makefs
	calls = []

	def second_fails(cmd):
		calls.append(cmd)
		if len(calls) == 2:
			raise KeyboardInterrupt
		real(cmd)
	monkeypatch.setattr(fixtures, '_run_makefs', second_fails)
	with pytest.raises(KeyboardInterrupt):
		fixtures.build(cache, recipe)
	assert len(calls) == 2
	assert list((cache / 'fixtures').iterdir()) == []
	monkeypatch.setattr(fixtures, '_run_makefs', real)
	images = fixtures.build(cache, recipe)
	assert len(images) == 2 and all(i.path.is_file() for i in images)


@needs_makefs
def test_a_broken_set_is_made_again(tmp_path):
	recipe = small_recipe(tmp_path)
	cache = tmp_path / 'cache'
	first = fixtures.build(cache, recipe)
	first[0].path.chmod(0o644)
	with open(first[0].path, 'r+b') as fh:
		fh.truncate(8192)
	again = fixtures.build(cache, recipe)
	assert again[0].path == first[0].path and again[0].path.stat().st_size == first[0].size


def test_makefs_failure_is_a_user_error(tmp_path, monkeypatch):
	monkeypatch.setattr(fixtures, 'makefs_binary', lambda: '/bin/false')
	monkeypatch.setattr(fixtures, 'makefs_version', lambda: '1-1')
	with pytest.raises(UserError, match='makefs failed'):
		fixtures.build(tmp_path / 'cache', small_recipe(tmp_path))
	assert [p for p in (tmp_path / 'cache' / 'fixtures').iterdir()] == []


@pytest.mark.parametrize('binary, version', [(None, '20190105-3'), ('/usr/sbin/makefs', None)])
def test_missing_makefs(tmp_path, monkeypatch, binary, version):
	monkeypatch.setattr(fixtures, 'makefs_binary', lambda: binary)
	monkeypatch.setattr(fixtures, 'makefs_version', lambda: version)
	with pytest.raises(UserError) as e:
		fixtures.build(tmp_path / 'cache', small_recipe(tmp_path))
	msg = str(e.value)
	assert 'makefs' in msg
	assert 'apt-get install -y --no-install-recommends makefs' in msg
	assert not (tmp_path / 'cache' / 'fixtures').exists()


def test_makefs_is_needed_to_test_not_to_run():
	"""The kernel carries the images: runs need no makefs, pytest does."""
	assert 'makefs' not in deps.for_arches(['x86_64', 'arm64'])
	assert 'makefs' in deps.TEST_PACKAGES


# ------------------------------------------------- the form the kernel carries


@needs_makefs
def test_makefs_output_is_reproducible(image_set, tmp_path):
	"""Two builds give the same bytes: normalize() fixes what makefs leaves
	random (superblock pointers, di_gen, UFS2 inode times)."""
	again = {img.name: img.path.read_bytes() for img in fixtures.build(tmp_path / 'c')}
	try:
		assert sorted(again) == sorted(image_set)
		for name, (_, buf) in image_set.items():
			assert again[name] == buf, name
	finally:
		shutil.rmtree(tmp_path / 'c')


def test_carried_round_trip(image_set):
	"""derive -> C text -> parse -> expand gives every image back byte for byte,
	and the C text is small: formula sectors are not stored."""
	images = [img for img, _ in image_set.values()]
	text = csource.emit_c(csource.derive_set(images), '20190105-3')
	back = {c.name: c for c in csource.parse_c(text)}
	assert list(back) == [img.name for img in images]
	for name, (_, buf) in image_set.items():
		assert csource.expand(back[name], back) == buf, name
	assert len(text) < 400_000
	# a corrupted copy is its differences from the image it was made from
	assert back['bad-magic'].base == 'ufs1-le-4096'
	assert len(back['bad-magic'].data) <= 2 * csource.SECTOR
	assert back['bad-truncated'].size == len(image_set['bad-truncated'][1])


def test_carried_runs(image_set):
	"""File runs are the formula with zeros past the end; nothing else is."""
	_, buf = image_set['ufs1-le-4096']
	c = csource.derive('ufs1-le-4096', buf)
	files = {r.file for r in c.runs if r.file}
	assert files == {'frags', 'direct', 'single', 'double'} | {f'tail{k}' for k in range(1, 8)}
	prev_end = 0
	for r in c.runs:
		assert r.sector >= prev_end and r.count > 0
		prev_end = r.sector + r.count
	assert csource.file_sector('frags', 2, 1529) == \
		fixtures.content('frags', 1024, 505) + bytes(7)


def test_parse_c_is_strict():
	c = csource.Carried('x', 4096, '', [csource.Run(0, 1, '', 0, 0),
					     csource.Run(2, 2, 'f', 0, 700)], b'\1' * 512)
	text = csource.emit_c([c], 'v')
	assert csource.expand(csource.parse_c(text)[0], {}) == \
		b'\1' * 512 + bytes(512) + csource.file_sector('f', 0, 700) + \
		csource.file_sector('f', 1, 700) + bytes(2048)
	with pytest.raises(ValueError, match='not a run'):
		csource.parse_c(text.replace('{ 2, 2, "f", 0, 700 }', '{ 2, 2, f, 0, 700 }'))
	with pytest.raises(ValueError, match='not xz bytes'):
		csource.parse_c(text.replace('0x', '0y', 1))
	with pytest.raises(ValueError, match='the table says 2 sectors'):
		csource.parse_c(text.replace('.data_sectors = 1,', '.data_sectors = 2,'))


def test_emitted_c_is_kernel_style():
	"""What checkpatch --strict asks of every patch: a blank line after each
	array, no line over 100 columns (tabs are 8); and costs() counts each
	image from its comment to the next, blank lines inside included."""
	c = csource.Carried('x', 4096, '', [csource.Run(0, 1, '', 0, 0),
					     csource.Run(2, 2, 'f', 0, 700)], b'\1' * 512)
	d = csource.Carried('y', 4096, 'x', [csource.Run(0, 8, '', 0, 0)], b'')
	text = csource.emit_c([c, d], 'v')
	lines = text.splitlines()
	for i, line in enumerate(lines[:-1]):
		if line == '};':
			assert lines[i + 1] == '', f'line {i + 2}: no blank line after an array'
		assert len(line.expandtabs(8)) <= 100, f'line {i + 1} is too long'
	got = csource.costs(text)
	assert [name for name, _, _ in got] == ['x', 'y']
	x_lines = got[0][1]
	# comment, runs array (open, 2 runs, close), blank, xz array (open, data, close)
	assert x_lines == 1 + 4 + 1 + 2 + len(csource._hex_lines(csource.compress(b'\1' * 512)))
	assert got[1][1] == 1 + 3        # comment, runs array of one run: no data
	assert sum(b for _, _, b in got) < len(text)


def _series_file(path: str) -> str:
	"""The content of a new file the series adds (exactly one patch may touch it)."""
	texts = []
	for patch in sorted(paths.PATCH_DIR.glob('*.patch')):
		lines = patch.read_text().splitlines()
		for i, line in enumerate(lines):
			if line == f'+++ b/{path}':
				assert lines[i - 1] == '--- /dev/null', f'{patch.name} changes {path}'
				m = re.match(r'^@@ -0,0 \+1,(\d+) @@', lines[i + 1])
				assert m, lines[i + 1]
				body = lines[i + 2:i + 2 + int(m.group(1))]
				assert all(x.startswith('+') for x in body)
				texts.append('\n'.join(x[1:] for x in body) + '\n')
	assert len(texts) == 1, f'{len(texts)} patches touch {path}'
	return texts[0]


def test_the_series_carries_exactly_these_images(image_set, tmp_path):
	"""fs/ufs/tests/fixture_images.c, as the series adds it, turns back into
	the images makefs makes now, every one byte for byte (regenerate it with
	`kunit.py fixtures --emit-c tree` after a recipe change)."""
	c_file = tmp_path / 'fixture_images.c'
	c_file.write_text(_series_file(csource.C_PATH))
	images = [img for img, _ in image_set.values()]
	assert csource.check(c_file, images) == []


def test_check_names_what_differs(image_set, tmp_path):
	images = [img for img, _ in image_set.values()]
	c_list = csource.derive_set(images)
	c_list[0].data = bytes(len(c_list[0].data))         # every data sector zeroed
	c_file = tmp_path / 'f.c'
	text = csource.emit_c(c_list[:-1], 'v')               # and the last image left out
	c_file.write_text(text)
	problems = csource.check(c_file, images)
	assert problems[0] == f'{images[0].name}: differs first at byte 0 (sector 0)'
	assert problems[-1] == f'{images[-1].name}: not carried'
	# the copies made of it differ too, where they read through to it
	derived = csource.derive_set(images)
	copies = [im.name for im, d in zip(images[:-1], derived) if im.corrupt and
		  d.base == images[0].name]
	assert sorted(p.split(':')[0] for p in problems[1:-1]) == sorted(copies)
	c_file.write_text(text.replace(' },\n', ' }\n', 1))
	assert csource.check(c_file, images)[0].startswith('not a carried image set: line ')
	assert csource.check(tmp_path / 'none.c', images) == \
		['cannot read it: No such file or directory']


def test_linux_superblock_offsets_match_the_tree(kernel_tree):
	"""LINUX_SBLOCK is where fs/ufs/super.c reads for each ufstype."""
	hdr = (kernel_tree / 'fs' / 'ufs' / 'ufs_fs.h').read_text()
	assert '#define UFS_SBLOCK 8192' in hdr and '#define SBLOCK_UFS2      65536' in hdr
	sup = (kernel_tree / 'fs' / 'ufs' / 'super.c').read_text()
	ufs2 = sup[sup.index('case UFS_MOUNT_UFSTYPE_UFS2:'):]
	assert ufs2.index('super_block_offset=SBLOCK_UFS2;') < ufs2.index('break;')
	assert 'super_block_offset=UFS_SBLOCK;' in sup
	assert fixtures.LINUX_SBLOCK == {'ufs1': 8192, 'ufs2': 65536}
	# cg magic is checked at mount only when the cylinder groups are read (rw)
	assert 'if (!sb_rdonly(sb))\n\t\tif (!ufs_read_cylinder_structures(sb))' in sup


# ------------------------------------------------------------------- verb


@needs_makefs
def test_the_verb(tmp_path, capsys):
	recipe = small_recipe(tmp_path, corrupt=[{'kind': 'cg-magic', 'from': 'ufs1-le-4096'}])
	rc = command.main(['--cache-dir', str(tmp_path / 'c'), '--recipe', str(recipe),
			      '--list', '--verify', '--emit-c', str(tmp_path / 'f.c'),
			      '--check-c', str(tmp_path / 'f.c')])
	out = capsys.readouterr().out
	assert rc == 0
	assert 'ufs1-le-4096' in out and 'bad-cg-magic' in out and 'expect rw-mount-fails' in out
	assert 'verify ufs1-le-4096: ok' in out
	assert 'BKLUFS-FIXTURE 1\nimage bad-cg-magic\n' in out and 'corrupt cg-magic\n' in out
	assert str(tmp_path / 'c' / 'fixtures') in out
	assert f'Wrote {tmp_path / "f.c"}: ' in out
	assert 'turns back into all 2 images byte for byte' in out
	(tmp_path / 'f.c').write_text((tmp_path / 'f.c').read_text().replace('0x', '0X', 1))
	rc = command.main(['--cache-dir', str(tmp_path / 'c'), '--recipe', str(recipe),
			      '--check-c', str(tmp_path / 'f.c')])
	assert rc == 1 and 'differs from the images' in capsys.readouterr().out
	args = cli.build_parser().parse_args(['fixtures', '--rebuild', '--no-install'])
	assert args.func is cli.cmd_fixtures and args.rebuild and args.no_install


def test_verify_catches_a_changed_byte(image_set):
	_, good = image_set['ufs2-be-16384']
	fs = fixtures.Ufs(bytearray(good))
	ino = fs.lookup('tail3')
	fs.buf[ino.db[1] * fs.fsize + 100] ^= 1
	assert fixtures.verify(fs.buf) == ['tail3: content differs from byte 16484']
	fs = fixtures.Ufs(bytearray(good))
	ino = fs.lookup('direct')
	fs.pack('Q', fs.db_offset(ino.ino, 3), 0)
	problems = fixtures.verify(fs.buf)
	assert 'direct: block 3 is a hole' in problems and any('di_blocks' in p for p in problems)
