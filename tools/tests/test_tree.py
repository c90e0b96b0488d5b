# SPDX-License-Identifier: GPL-2.0
"""tree: prepare / export over a tiny fake Debian linux-source tarball."""

import json
import re
import shutil
from pathlib import Path
from typing import Dict

import pytest

from bklkunit.base.errors import UserError
from bklkunit.source import tree
from conftest import DEBVER, FAKE_SOURCE, KCONFIG_A, KCONFIG_B, UPSTREAM, commit, git

# ------------------------------------------------------------------ helpers


def prepare(cache: Path, patch_dir: Path, tarball: Path, **kw) -> tree.Prepared:
	return tree.prepare(cache, patch_dir=patch_dir, tarball=tarball, debver=DEBVER,
			    allow_install=False, **kw)


def snapshot(patch_dir: Path) -> Dict[str, bytes]:
	return {p.name: p.read_bytes() for p in sorted(patch_dir.iterdir())}


def tracked(repo: Path):
	return set(git(repo, 'ls-files', '-z').split('\0')) - {''}


INODE = FAKE_SOURCE['fs/autofs/inode.c']

COMMIT1_FILES = {
	# Near the top of inode.c (first hunk) ...
	'fs/autofs/inode.c': INODE.replace('#include <linux/pagemap.h>\n',
					   '#include <linux/pagemap.h>\n#include <kunit/visibility.h>\n'),
	# ... a new file, which needs `git add -f` because of the /* .gitignore
	'fs/autofs/autofs_kunit.c': ('// SPDX-License-Identifier: GPL-2.0\n'
				     '#include <kunit/test.h>\n\n'
				     'static struct kunit_suite autofs_protocol_suite = {\n'
				     '\t.name = "autofs_protocol",\n};\n'
				     'kunit_test_suite(autofs_protocol_suite);\n'),
	'fs/autofs/Makefile': FAKE_SOURCE['fs/autofs/Makefile'] +
		'obj-$(CONFIG_AUTOFS_PROTOCOL_KUNIT_TEST) += autofs_kunit.o\n',
}
COMMIT1_MSG = ('autofs: add KUnit tests for protocol negotiation\n\n'
	       'Mount through fs_context with a pipe handed over as a struct file.\n\n'
	       'Signed-off-by: Ada Tester <ada@example.org>\n')


def commit2_files(repo: Path) -> Dict[str, str]:
	inode = (repo / 'fs/autofs/inode.c').read_text()
	return {'fs/autofs/inode.c': inode.replace(
		'\t\terrorf(fc, "kernel does not match daemon version");\n',
		'\t\terrorf(fc, "kernel does not match daemon version "\n'
		'\t\t       "(daemon %u-%u, kernel %u-%u)", sbi->min_proto,\n'
		'\t\t       sbi->max_proto, AUTOFS_MIN_PROTO_VERSION,\n'
		'\t\t       AUTOFS_MAX_PROTO_VERSION);\n')}


COMMIT2_MSG = ('autofs: say which versions did not match\n\n'
	       'Signed-off-by: Ada Tester <ada@example.org>\n')


def make_two_commits(repo: Path):
	c1 = commit(repo, COMMIT1_MSG, COMMIT1_FILES)
	c2 = commit(repo, COMMIT2_MSG, commit2_files(repo), delete=['fs/autofs/symlink.c'],
		    date='2026-01-03T10:00:00-05:00',
		    author={'GIT_AUTHOR_NAME': 'Jörg Müller', 'GIT_AUTHOR_EMAIL': 'joerg@example.org'})
	return c1, c2


@pytest.fixture
def env(tmp_path, source_tarball):
	"""A cache and an empty kernel-patches/ in tmp_path."""
	class Env:
		cache = tmp_path / 'cache'
		patch_dir = tmp_path / 'kernel-patches'
		tarball = source_tarball

		def prepare(self, cache=None, **kw):
			return prepare(cache or self.cache, self.patch_dir, self.tarball, **kw)

		def export(self, cache=None):
			return tree.export(cache or self.cache, self.patch_dir)
	e = Env()
	e.patch_dir.mkdir()
	return e


@pytest.fixture
def exported(env):
	"""A work tree with two commits exported as a two-patch series."""
	prep = env.prepare()
	make_two_commits(prep.path)
	patches = env.export()
	assert [p.name for p in patches] == [
		'0001-autofs-add-KUnit-tests-for-protocol-negotiation.patch',
		'0002-autofs-say-which-versions-did-not-match.patch']
	env.prep = prep
	return env


# ------------------------------------------------------------ pure helpers


def test_upstream_version_and_tree_path(tmp_path):
	assert tree.upstream_version('6.12.118-1~deb12u1') == '6.12.118'
	assert tree.upstream_version('6.12.118+1') == '6.12.118'
	assert tree.upstream_version('6.12.118') == '6.12.118'
	p = tree.tree_path(tmp_path, '6.12.118-1~deb12u1')
	assert p == tmp_path / 'src' / 'linux-6.12.118-1_deb12u1'


def test_version_from_makefile(tmp_path):
	(tmp_path / 'Makefile').write_text('# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 7\n')
	assert tree.version_from_makefile(tmp_path) == '6.12.7'
	(tmp_path / 'Makefile').write_text('VERSION = 6\nPATCHLEVEL = 12\n')
	assert tree.version_from_makefile(tmp_path) == ''
	assert tree.version_from_makefile(tmp_path / 'nowhere') == ''


def test_read_series_ignores_comments_and_blank_lines(tmp_path):
	for n in ('0001-a.patch', '0002-b.patch', '0003-c.patch'):
		(tmp_path / n).write_text(n)
	(tmp_path / 'series').write_text(
		'# Applied in this order\n'
		'\n'
		'0001-a.patch\n'
		'   \n'
		'0002-b.patch -p1   # quilt options and a trailing comment\n'
		'#0003-c.patch\n'
		'  # indented comment\n')
	assert tree.read_series(tmp_path) == [tmp_path / '0001-a.patch', tmp_path / '0002-b.patch']


def test_read_series_without_series_file_is_empty(tmp_path):
	(tmp_path / '0001-a.patch').write_text('x')
	assert tree.read_series(tmp_path) == []
	assert tree.read_series(tmp_path / 'missing-dir') == []


def test_read_series_names_the_line_of_a_missing_patch(tmp_path):
	(tmp_path / '0001-a.patch').write_text('x')
	(tmp_path / 'series').write_text('# header\n0001-a.patch\n\n0002-gone.patch\n')
	with pytest.raises(UserError) as ei:
		tree.read_series(tmp_path)
	msg = str(ei.value)
	assert f'{tmp_path / "series"}:4' in msg
	assert '0002-gone.patch' in msg


def test_series_hash_covers_names_contents_and_order(tmp_path):
	a, b = tmp_path / 'a.patch', tmp_path / 'b.patch'
	a.write_text('A')
	b.write_text('B')
	h = tree.series_hash([a, b])
	assert h == tree.series_hash([a, b])
	assert h != tree.series_hash([b, a])
	assert h != tree.series_hash([a])
	b.write_text('B2')
	assert h != tree.series_hash([a, b])


def test_patch_subject(tmp_path):
	p = tmp_path / '0002-x.patch'
	p.write_text('From 000 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\n'
		     'Subject: [PATCH 2/3] autofs: fix the thing\n\nbody\n')
	assert tree.patch_subject(p) == 'autofs: fix the thing'
	p.write_text('no headers at all\n')
	assert tree.patch_subject(p) == '0002-x.patch'


def test_patch_subject_unfolds_long_subjects_and_keeps_other_brackets(tmp_path):
	p = tmp_path / '0002-x.patch'
	p.write_text('From 000 Mon Sep 17 00:00:00 2001\nFrom: A <a@b>\n'
		     'Subject: [PATCH 2/3] [media] go7007: a subject long enough to be\n'
		     ' folded by git format-patch\nDate: today\n\nbody\n')
	assert tree.patch_subject(p) == ('[media] go7007: a subject long enough to be '
					 'folded by git format-patch')


FIND_HUNK_PATCH = '''\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Ada Tester <ada@example.org>
Subject: [PATCH 1/1] two files

---
 fs/a.c | 2 +-
 fs/b.c | 4 ++--
 2 files changed, 3 insertions(+), 3 deletions(-)

diff --git a/fs/a.c b/fs/a.c
index 111111111111..222222222222 100644
--- a/fs/a.c
+++ b/fs/a.c
@@ -10,3 +10,3 @@ int a(void)
 	one;
-	two;
+	TWO;
 	three;
diff --git a/fs/b.c b/fs/b.c
index 333333333333..444444444444 100644
--- a/fs/b.c
+++ b/fs/b.c
@@ -10,3 +10,3 @@ int b(void)
 	four;
-	five;
+	FIVE;
 	six;
@@ -40,4 +40,4 @@ int c(void)
 	seven;
-	eight;
+	EIGHT;

\\ No newline at end of file
@@ -90 +90 @@
-	nine;
+	NINE;
--
2.39.5
'''


def test_find_hunk(tmp_path):
	p = tmp_path / 'p.patch'
	p.write_text(FIND_HUNK_PATCH)
	assert tree.find_hunk(p, 'fs/a.c', 10) == '\n'.join([
		'@@ -10,3 +10,3 @@ int a(void)', ' \tone;', '-\ttwo;', '+\tTWO;', ' \tthree;'])
	# Same line number, other file: the hunk of that file.
	assert tree.find_hunk(p, 'fs/b.c', 10).splitlines() == [
		'@@ -10,3 +10,3 @@ int b(void)', ' \tfour;', '-\tfive;', '+\tFIVE;', ' \tsix;']
	# The second hunk of a file; blank and "\ No newline" lines belong to it.
	assert tree.find_hunk(p, 'fs/b.c', 40).splitlines() == [
		'@@ -40,4 +40,4 @@ int c(void)', ' \tseven;', '-\teight;', '+\tEIGHT;', '',
		'\\ No newline at end of file']
	# A range without a count.
	assert tree.find_hunk(p, 'fs/b.c', 90).splitlines()[:3] == [
		'@@ -90 +90 @@', '-\tnine;', '+\tNINE;']
	assert tree.find_hunk(p, 'fs/a.c', 40) == ''
	assert tree.find_hunk(p, 'fs/c.c', 10) == ''


# -------------------------------------------------------------- series_status


def _patch_for(tmp_path: Path) -> Path:
	"""A patch against a plain directory holding hello.txt."""
	p = tmp_path / '0001-hello.patch'
	p.write_text('From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
		     'From: Ada Tester <ada@example.org>\n'
		     'Subject: [PATCH] hello: shout\n\n---\n'
		     'diff --git a/hello.txt b/hello.txt\n'
		     '--- a/hello.txt\n+++ b/hello.txt\n'
		     '@@ -1,3 +1,3 @@\n one\n-hello\n+HELLO\n three\n')
	return p


def test_series_status_on_a_plain_directory(tmp_path):
	d = tmp_path / 'tree'
	d.mkdir()
	patch = _patch_for(tmp_path)
	(d / 'hello.txt').write_text('one\nhello\nthree\n')
	assert tree.series_status(d, [patch]) == ['not applied']
	(d / 'hello.txt').write_text('one\nHELLO\nthree\n')
	assert tree.series_status(d, [patch]) == ['applied']
	(d / 'hello.txt').write_text('one\nhowdy\nthree\n')
	assert tree.series_status(d, [patch]) == ['conflicts']
	assert tree.series_status(d, []) == []
	# Nothing was changed by asking.
	assert (d / 'hello.txt').read_text() == 'one\nhowdy\nthree\n'


def test_series_status_of_our_series_on_a_prepared_tree(exported):
	patches = tree.read_series(exported.patch_dir)
	t = exported.prep.path
	assert tree.series_status(t, patches) == ['applied', 'applied']
	git(t, 'checkout', '-q', tree.PRISTINE_REF)
	assert tree.series_status(t, patches) == ['not applied', 'not applied']


def make_dependent_series(env):
	"""Two patches where the second extends what the first added (like
	kernel-patches/: both append a config block to fs/autofs/Kconfig)."""
	prep = env.prepare()
	commit(prep.path, 'autofs: add KUnit tests\n', {'fs/autofs/Kconfig': KCONFIG_A})
	commit(prep.path, 'autofs: add end-state checks\n', {'fs/autofs/Kconfig': KCONFIG_B})
	env.export()
	return prep


def test_series_status_of_a_dependent_series(env):
	prep = make_dependent_series(env)
	patches = tree.read_series(env.patch_dir)
	t = prep.path
	assert tree.series_status(t, patches) == ['applied', 'applied']
	git(t, 'checkout', '-q', tree.PRISTINE_REF)
	assert tree.series_status(t, patches) == ['not applied', 'not applied']


# ------------------------------------------------------------------ prepare


def test_prepare_makes_a_git_tree_with_a_tagged_pristine_commit(env, capsys):
	prep = env.prepare()
	t = tree.tree_path(env.cache, DEBVER)
	assert prep.path == t
	assert (t / '.git').is_dir()
	assert not t.with_name(t.name + '.unpacking').exists()
	assert prep.debian_version == DEBVER
	assert prep.upstream == UPSTREAM
	assert prep.patches == []
	# The pristine commit: tagged with the upstream version and under our ref.
	assert git(t, 'rev-parse', f'{UPSTREAM}^{{commit}}').strip() == prep.pristine
	assert git(t, 'rev-parse', tree.PRISTINE_REF).strip() == prep.pristine
	assert git(t, 'rev-list', '--count', 'HEAD').strip() == '1'
	assert git(t, 'symbolic-ref', '--short', 'HEAD').strip() == 'work'
	subject = git(t, 'log', '-1', '--format=%s%n%an <%ae>', prep.pristine)
	assert DEBVER in subject and 'pristine' in subject
	assert 'debian-kernel@lists.debian.org' in subject
	# The commit date is the tarball's, so the pristine commit is reproducible.
	assert git(t, 'log', '-1', '--format=%ct', prep.pristine).strip() == \
		str(int(env.tarball.stat().st_mtime))
	# An empty series: HEAD is the pristine commit, nothing dirty.
	assert prep.head == prep.pristine == tree.head(t)
	assert tree.dirty_files(t) == []
	st = tree.load_state(t)
	assert st.pristine == prep.pristine and st.applied_head == prep.pristine
	assert st.debian_version == DEBVER
	assert st.series_hash == tree.series_hash([])
	assert tree.find_prepared(env.cache) == t


def test_prepare_tracks_every_file_despite_the_debian_gitignore(env):
	prep = env.prepare()
	files = tracked(prep.path)
	assert files == set(FAKE_SOURCE)
	assert '.gitignore' in files and 'fs/autofs/inode.c' in files
	# The content is the tarball's, file modes included.
	assert (prep.path / 'Makefile').read_text().startswith('VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n')
	assert git(prep.path, 'ls-files', '-s', 'scripts/checkpatch.pl').startswith('100755 ')
	# /* really ignores everything, so only --ignored would show new files.
	assert git(prep.path, 'check-ignore', '-q', '--no-index', 'fs') == ''


def test_prepare_without_a_series_file(env):
	shutil.rmtree(env.patch_dir)
	prep = env.prepare()
	assert prep.head == prep.pristine
	assert prep.patches == []


def test_prepare_refuses_a_tarball_of_another_version(env, make_source_tarball):
	bad = make_source_tarball(sublevel=117)
	with pytest.raises(UserError) as ei:
		prepare(env.cache, env.patch_dir, bad)
	msg = str(ei.value)
	assert '6.12.117' in msg and DEBVER in msg
	assert not tree.tree_path(env.cache, DEBVER).exists()


def test_prepare_refuses_a_tarball_with_several_top_directories(env, tmp_path):
	import tarfile
	stage = tmp_path / 'stage'
	for d in ('a', 'b'):
		(stage / d).mkdir(parents=True)
		(stage / d / 'Makefile').write_text('VERSION = 6\n')
	bad = tmp_path / 'two.tar.xz'
	with tarfile.open(bad, 'w:xz') as tf:
		tf.add(stage / 'a', arcname='a')
		tf.add(stage / 'b', arcname='b')
	with pytest.raises(UserError, match='one top-level directory'):
		prepare(env.cache, env.patch_dir, bad)


def test_find_prepared_without_a_tree(tmp_path):
	with pytest.raises(UserError, match='prepare'):
		tree.find_prepared(tmp_path / 'empty-cache')


def test_dirty_files_sees_ignored_new_files(env):
	t = env.prepare().path
	(t / 'fs/autofs/inode.c').write_text('changed\n')
	(t / 'brand-new.c').write_text('ignored by /* but still work\n')
	(t / 'fs/autofs/new.c').write_text('new\n')
	# Byte code from loading the tree's kunit_parser does not count.
	(t / 'tools/testing/kunit/__pycache__').mkdir(parents=True)
	(t / 'tools/testing/kunit/__pycache__/kunit_parser.cpython-311.pyc').write_bytes(b'x')
	names = sorted(line[3:] for line in tree.dirty_files(t))
	assert names == ['brand-new.c', 'fs/autofs/inode.c', 'fs/autofs/new.c']


# ------------------------------------------------------------ export + round trip


def test_export_writes_numbered_patches_and_series(exported):
	d = exported.patch_dir
	names = sorted(p.name for p in d.glob('*.patch'))
	assert all(re.match(r'^\d{4}-[A-Za-z0-9-]+\.patch$', n) for n in names)
	series = (d / 'series').read_text()
	entries = [l for l in series.splitlines() if l and not l.startswith('#')]
	assert entries == names
	assert series.startswith('#')
	assert tree.read_series(d) == [d / n for n in names]
	p1 = (d / names[0]).read_text()
	# Hash-free, signature-free, numbered, 12-digit abbreviations.
	assert p1.startswith('From 0000000000000000000000000000000000000000 ')
	assert 'Subject: [PATCH 1/2] autofs: add KUnit tests for protocol negotiation' in p1
	assert 'From: Ada Tester <ada@example.org>' in p1
	assert 'Signed-off-by: Ada Tester <ada@example.org>' in p1
	assert 'new file mode 100644' in p1 and 'fs/autofs/autofs_kunit.c' in p1
	assert re.search(r'^index [0-9a-f]{12}\.\.[0-9a-f]{12}', p1, re.M)
	assert not re.search(r'^-- $', p1, re.M)
	p2 = (d / names[1]).read_text()
	assert 'Subject: [PATCH 2/2] autofs: say which versions did not match' in p2
	assert 'deleted file mode 100644' in p2
	assert 'Date: Sat, 3 Jan 2026 10:00:00 -0500' in p2
	# The state now matches: prepare has nothing to do.
	st = tree.load_state(exported.prep.path)
	assert st.patches == names
	assert st.applied_head == tree.head(exported.prep.path)
	assert st.series_hash == tree.series_hash(tree.read_series(d))


def test_export_replaces_old_patches(exported):
	d = exported.patch_dir
	(d / '0009-stale.patch').write_text('stale\n')
	t = exported.prep.path
	git(t, 'reset', '-q', '--hard', 'HEAD~1')
	patches = exported.export()
	assert [p.name for p in patches] == ['0001-autofs-add-KUnit-tests-for-protocol-negotiation.patch']
	assert sorted(p.name for p in d.glob('*.patch')) == [p.name for p in patches]
	assert not (d.parent / 'kernel-patches.export-tmp').exists()


def test_export_refuses_uncommitted_changes(exported):
	t = exported.prep.path
	before = snapshot(exported.patch_dir)
	(t / 'new-top-level-file.c').write_text('int x;\n')
	with pytest.raises(UserError) as ei:
		exported.export()
	msg = str(ei.value)
	assert 'new-top-level-file.c' in msg and 'git add -f' in msg
	assert snapshot(exported.patch_dir) == before


def test_round_trip_in_a_new_cache_is_byte_identical(exported, tmp_path):
	first = snapshot(exported.patch_dir)
	old_head_tree = git(exported.prep.path, 'rev-parse', 'HEAD^{tree}')
	cache2 = tmp_path / 'cache2'
	prep2 = exported.prepare(cache=cache2)
	assert prep2.changed
	assert prep2.patches == [n for n in first if n.endswith('.patch')]
	assert prep2.pristine == exported.prep.pristine     # reproducible pristine commit
	assert git(prep2.path, 'rev-parse', 'HEAD^{tree}') == old_head_tree
	assert git(prep2.path, 'rev-list', '--count', f'{prep2.pristine}..HEAD').strip() == '2'
	exported.export(cache=cache2)
	assert snapshot(exported.patch_dir) == first


def test_round_trip_after_force_rebuild_is_byte_identical(exported):
	first = snapshot(exported.patch_dir)
	# --force only matters when there is work to throw away.
	assert not exported.prepare(force=True).changed
	commit(exported.prep.path, 'scratch\n', {'scratch.c': 'int scratch;\n'})
	prep = exported.prepare(force=True)
	assert prep.changed
	assert tracked(prep.path) == (set(FAKE_SOURCE) | {'fs/autofs/autofs_kunit.c'}) - {'fs/autofs/symlink.c'}
	exported.export()
	assert snapshot(exported.patch_dir) == first


def test_round_trip_keeps_a_bracketed_subject_prefix(env, tmp_path):
	"""Old kernel subjects look like "[media] foo: ..." or "[RFC] ..."."""
	prep = env.prepare()
	commit(prep.path, '[media] go7007: drop the BKL\n\nSigned-off-by: Ada Tester <ada@example.org>\n',
	       {'fs/autofs/symlink.c': FAKE_SOURCE['fs/autofs/symlink.c'] + '/* media */\n'})
	env.export()
	first = snapshot(env.patch_dir)
	prep2 = env.prepare(cache=tmp_path / 'cache2')
	assert git(prep2.path, 'log', '-1', '--format=%s').strip() == '[media] go7007: drop the BKL'
	env.export(cache=tmp_path / 'cache2')
	assert snapshot(env.patch_dir) == first


# ------------------------------------------------------------- idempotence


def test_second_prepare_is_a_no_op(exported, capsys):
	p1 = exported.prepare(cache=exported.cache)
	assert not p1.changed                    # export recorded the state
	p2 = exported.prepare()
	assert not p2.changed
	assert p2.head == p1.head == tree.head(exported.prep.path)
	assert 'up to date' in capsys.readouterr().out
	p3 = exported.prepare(quiet=True)
	assert not p3.changed
	assert capsys.readouterr().out == ''


def test_fresh_prepare_applies_the_series_once(exported, tmp_path):
	cache2 = tmp_path / 'cache2'
	p1 = exported.prepare(cache=cache2)
	assert p1.changed
	st1 = (tree.state_file(p1.path)).read_text()
	p2 = exported.prepare(cache=cache2)
	assert not p2.changed
	assert p2.head == p1.head
	assert tree.state_file(p2.path).read_text() == st1
	assert tree.dirty_files(p2.path) == []


def test_a_changed_patch_rebuilds(exported):
	d = exported.patch_dir
	p2 = sorted(d.glob('0002-*.patch'))[0]
	text = p2.read_text()
	p2.write_text(text.replace('Signed-off-by: Ada', 'It also names both ranges.\n\nSigned-off-by: Ada', 1))
	old_head = tree.head(exported.prep.path)
	prep = exported.prepare()
	assert prep.changed
	assert prep.head != old_head
	assert 'It also names both ranges.' in git(prep.path, 'log', '-1', '--format=%B')
	assert tree.dirty_files(prep.path) == []
	assert not exported.prepare().changed


def test_a_new_series_file_order_rebuilds(exported):
	d = exported.patch_dir
	names = [p.name for p in tree.read_series(d)]
	(d / 'series').write_text(names[0] + '\n')
	prep = exported.prepare()
	assert prep.changed and prep.patches == names[:1]
	assert git(prep.path, 'rev-list', '--count', f'{prep.pristine}..HEAD').strip() == '1'


# --------------------------------------------------------------- refusal


def _assert_refused(env, what):
	with pytest.raises(UserError) as ei:
		env.prepare()
	msg = str(ei.value)
	assert 'export' in msg and '--force' in msg
	assert str(env.prep.path) in msg
	assert what in msg
	return msg


def test_refuses_to_drop_uncommitted_changes(exported):
	t = exported.prep.path
	head = tree.head(t)
	(t / 'fs/autofs/inode.c').write_text('my unsaved work\n')
	(exported.patch_dir / 'series').write_text((exported.patch_dir / 'series').read_text() + '\n')
	_assert_refused(exported, 'fs/autofs/inode.c')
	# Nothing lost.
	assert (t / 'fs/autofs/inode.c').read_text() == 'my unsaved work\n'
	assert tree.head(t) == head


def test_refuses_to_drop_an_untracked_file(exported):
	t = exported.prep.path
	(t / 'fs/autofs/expire.c').write_text('new work, ignored by /*\n')
	_assert_refused(exported, 'fs/autofs/expire.c')
	assert (t / 'fs/autofs/expire.c').exists()


def test_refuses_to_drop_an_unexported_commit(exported):
	t = exported.prep.path
	c = commit(t, 'autofs: more work\n', {'fs/autofs/symlink.c': 'new symlink.c\n'})
	_assert_refused(exported, '1 commit(s) not yet exported')
	assert tree.head(t) == c
	assert (t / 'fs/autofs/symlink.c').read_text() == 'new symlink.c\n'
	# export keeps it; after that prepare is happy again.
	exported.export()
	assert len(tree.read_series(exported.patch_dir)) == 3
	assert not exported.prepare().changed
	assert tree.head(t) == c


def test_force_throws_local_work_away(exported):
	t = exported.prep.path
	applied = tree.head(t)
	commit(t, 'autofs: throwaway\n', {'fs/autofs/symlink.c': 'x\n'})
	(t / 'fs/autofs/inode.c').write_text('scratch\n')
	(t / 'scratch.txt').write_text('scratch\n')
	prep = exported.prepare(force=True)
	assert prep.changed
	assert tree.dirty_files(t) == []
	assert not (t / 'scratch.txt').exists()
	# The same series on the same pristine commit: the same trees.
	assert git(t, 'rev-parse', 'HEAD^{tree}') == git(t, 'rev-parse', f'{applied}^{{tree}}')
	assert git(t, 'rev-list', '--count', f'{prep.pristine}..HEAD').strip() == '2'


def test_run_keeps_local_work_on_the_current_series(exported, capsys):
	"""The edit, commit, run loop: run uses the work tree as it is."""
	t = exported.prep.path
	c = commit(t, 'autofs: work in progress\n', {'fs/autofs/symlink.c': 'wip\n'})
	(t / 'fs/autofs/inode.c').write_text('unsaved\n')
	prep = exported.prepare(keep_local=True)
	assert prep.local and not prep.changed
	assert prep.head == c
	assert (t / 'fs/autofs/inode.c').read_text() == 'unsaved\n'
	assert 'running it as it is' in capsys.readouterr().out


def test_run_refuses_local_work_when_the_series_changed(exported):
	"""Local work on top of a series that changed underneath: refuse, lose nothing."""
	t = exported.prep.path
	c = commit(t, 'autofs: work in progress\n', {'fs/autofs/symlink.c': 'wip\n'})
	series = exported.patch_dir / 'series'
	series.write_text(series.read_text() + '# touched\n')
	(exported.patch_dir / tree.read_series(exported.patch_dir)[0].name).write_bytes(
		tree.read_series(exported.patch_dir)[0].read_bytes() + b'\n')
	with pytest.raises(UserError, match='not yet exported'):
		exported.prepare(keep_local=True)
	assert tree.head(t) == c


# ------------------------------------------------------------ broken patch


def _break_context_line(patch: Path) -> str:
	"""Change the first context line of the first hunk; return the hunk header."""
	lines = patch.read_text().split('\n')
	header = None
	for i, l in enumerate(lines):
		if l.startswith('@@ '):
			header = l
		elif header and l.startswith(' ') and l.strip():
			lines[i] = ' /* not in the tree */ ' + l[1:]
			break
	patch.write_text('\n'.join(lines))
	return header


def test_a_patch_that_does_not_apply_is_named_and_the_tree_left_clean(exported):
	d = exported.patch_dir
	bad = sorted(d.glob('0002-*.patch'))[0]
	header = _break_context_line(bad)
	assert header and header.startswith('@@ -')
	with pytest.raises(UserError) as ei:
		exported.prepare()
	msg = str(ei.value)
	assert bad.name in msg
	assert '0001-' not in msg.splitlines()[0]
	assert 'autofs: say which versions did not match' in msg
	assert 'fs/autofs/inode.c' in msg
	assert header in msg                                 # the failing hunk, quoted
	assert '/* not in the tree */' in msg
	t = exported.prep.path
	assert tree.head(t) == exported.prep.pristine
	assert tree.dirty_files(t) == []
	assert not (t / '.git' / 'rebase-apply').exists()
	st = tree.load_state(t)
	assert st.applied_head == exported.prep.pristine and st.series_hash is None


def test_fixing_a_broken_patch_needs_no_force(exported):
	d = exported.patch_dir
	bad = sorted(d.glob('0002-*.patch'))[0]
	good = bad.read_text()
	_break_context_line(bad)
	with pytest.raises(UserError):
		exported.prepare()
	bad.write_text(good)
	prep = exported.prepare()
	assert prep.changed
	assert git(prep.path, 'rev-list', '--count', f'{prep.pristine}..HEAD').strip() == '2'


def test_a_first_patch_that_does_not_apply(exported):
	bad = sorted(exported.patch_dir.glob('0001-*.patch'))[0]
	_break_context_line(bad)
	with pytest.raises(UserError) as ei:
		exported.prepare()
	assert ei.value.args[0].startswith(f'patch {bad.name} does not apply')
	assert tree.head(exported.prep.path) == exported.prep.pristine


def test_state_file_is_json(exported):
	raw = json.loads(tree.state_file(exported.prep.path).read_text())
	assert set(raw) == {'debian_version', 'pristine', 'series_hash', 'applied_head', 'patches'}
