# SPDX-License-Identifier: GPL-2.0
"""No local work is ever lost (issue #17, items 2, 3, 8 and 9): prepare
never deletes a tree it cannot prove is its own unmodified output, export
never overwrites edits made in kernel-patches/, a `git am` that stops is
blamed on the patch it stopped at, and git never repacks the trees the tool
manages behind the user's back."""

import json
import subprocess

import pytest

from bklkunit import cli
from bklkunit.base.errors import UserError
from bklkunit.source import tree
from conftest import commit, git
from test_tree import env, exported  # noqa: F401  (fixtures)


def local_work(t):
	"""A local commit and an uncommitted edit in the work tree."""
	c = commit(t, 'autofs: my local work\n', {'fs/autofs/symlink.c': 'precious\n'})
	(t / 'fs/autofs/inode.c').write_text('unsaved edit\n')
	return c


def assert_work_kept(t, c):
	assert tree.head(t) == c
	assert (t / 'fs/autofs/symlink.c').read_text() == 'precious\n'
	assert (t / 'fs/autofs/inode.c').read_text() == 'unsaved edit\n'


# ------------------------------------------- 2: prepare without a usable state


BROKEN_STATE = {
	'missing': None,
	'not JSON': 'garbage{',
	'not an object': '[]',
	'unknown key': None,            # the real state plus a key this tool does not know
	'wrong type': None,             # "patches": 3
	'binary': b'\xff\xfe\x00\x01',
}


def break_state(t, how):
	f = tree.state_file(t)
	if how == 'missing':
		f.unlink()
	elif how == 'unknown key':
		f.write_text(json.dumps(dict(json.loads(f.read_text()), colour='blue')))
	elif how == 'wrong type':
		f.write_text(json.dumps(dict(json.loads(f.read_text()), patches=3)))
	elif isinstance(BROKEN_STATE[how], bytes):
		f.write_bytes(BROKEN_STATE[how])
	else:
		f.write_text(BROKEN_STATE[how])


@pytest.mark.parametrize('how', sorted(BROKEN_STATE))
@pytest.mark.parametrize('keep_local', [False, True], ids=['prepare', 'run'])
def test_prepare_refuses_a_tree_without_a_usable_state(exported, how, keep_local):
	t = exported.prep.path
	c = local_work(t)
	break_state(t, how)
	with pytest.raises(UserError) as ei:
		exported.prepare(keep_local=keep_local)
	msg = str(ei.value)
	assert str(t) in msg and '--force' in msg
	assert 'bkl-kunit.json' in msg
	assert 'autofs: my local work' in msg          # the commit that would be lost
	assert 'fs/autofs/inode.c' in msg              # the edit that would be lost
	assert_work_kept(t, c)


def test_prepare_refuses_a_tree_without_state_even_when_clean(exported):
	t = exported.prep.path
	head = tree.head(t)
	tree.state_file(t).unlink()
	with pytest.raises(UserError, match='--force'):
		exported.prepare()
	assert tree.head(t) == head


def test_prepare_refuses_a_directory_that_is_not_a_git_tree(env):
	t = tree.tree_path(env.cache, '6.12.118-1~deb12u1')
	t.mkdir(parents=True)
	(t / 'notes.txt').write_text('mine\n')
	with pytest.raises(UserError) as ei:
		env.prepare()
	assert 'notes.txt' in str(ei.value) and '--force' in str(ei.value)
	assert (t / 'notes.txt').read_text() == 'mine\n'


def test_force_unpacks_anew_without_a_state(exported):
	t = exported.prep.path
	local_work(t)
	break_state(t, 'not JSON')
	prep = exported.prepare(force=True)
	assert prep.changed and prep.path == t
	assert tree.dirty_files(t) == []
	assert git(t, 'rev-list', '--count', f'{prep.pristine}..HEAD').strip() == '2'
	assert tree.load_state(t).series_hash == tree.series_hash(tree.read_series(exported.patch_dir))


def test_export_refuses_a_tree_without_a_usable_state(exported):
	t = exported.prep.path
	before = {p.name: p.read_bytes() for p in exported.patch_dir.iterdir()}
	break_state(t, 'unknown key')
	with pytest.raises(UserError, match='bkl-kunit.json'):
		exported.export()
	assert {p.name: p.read_bytes() for p in exported.patch_dir.iterdir()} == before


def test_cli_prepare_refusal_is_exit_2(exported, monkeypatch, capsys):
	t = exported.prep.path
	c = local_work(t)
	break_state(t, 'missing')
	real = tree.prepare
	monkeypatch.setattr(tree, 'prepare', lambda cache, **kw: real(
		cache, patch_dir=exported.patch_dir, tarball=exported.tarball,
		debver='6.12.118-1~deb12u1', **kw))
	assert cli.main(['prepare', '--cache-dir', str(exported.cache), '--no-install']) == 2
	err = capsys.readouterr().err
	assert 'Traceback' not in err and 'autofs: my local work' in err
	assert_work_kept(t, c)


# ------------------------------------- 3: export over edits in kernel-patches/


def snapshot(d):
	return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


def second_patch(env):
	return sorted(env.patch_dir.glob('0002-*.patch'))[0]


def edit_patch(p):
	p.write_text(p.read_text().replace('Signed-off-by: Ada',
					   'Reworded by hand in kernel-patches/.\n\nSigned-off-by: Ada', 1))


def test_export_refuses_to_overwrite_an_edited_patch(exported):
	p = second_patch(exported)
	edit_patch(p)
	before = snapshot(exported.patch_dir)
	with pytest.raises(UserError) as ei:
		exported.export()
	msg = str(ei.value)
	assert p.name in msg and '--force' in msg and 'prepare' in msg
	assert '0001-' not in msg
	assert snapshot(exported.patch_dir) == before


def test_export_refuses_to_delete_a_new_patch_of_the_series(exported):
	new = exported.patch_dir / '0003-my-new-idea.patch'
	new.write_text('From: me\nSubject: [PATCH] idea\n\n---\n')
	series = exported.patch_dir / 'series'
	series.write_text(series.read_text() + new.name + '\n')
	with pytest.raises(UserError) as ei:
		exported.export()
	assert '0003-my-new-idea.patch (export would delete it)' in str(ei.value)
	assert new.exists() and new.name in series.read_text()


def test_export_refuses_to_overwrite_an_edited_series_file(exported):
	series = exported.patch_dir / 'series'
	series.write_text(series.read_text() + '# a note of mine\n')
	with pytest.raises(UserError, match='series'):
		exported.export()
	assert series.read_text().endswith('# a note of mine\n')


def test_export_force_overwrites(exported):
	edit_patch(second_patch(exported))
	patches = tree.export(exported.cache, exported.patch_dir, force=True)
	assert len(patches) == 2
	assert 'Reworded by hand' not in second_patch(exported).read_text()


def test_export_after_new_commits_is_not_refused(exported):
	t = exported.prep.path
	commit(t, 'autofs: third\n', {'fs/autofs/symlink.c': 'third\n'})
	assert len(exported.export()) == 3
	# ... and again after a prepare that took an edited patch in.
	edit_patch(second_patch(exported))
	assert exported.prepare().changed
	commit(t, 'autofs: fourth\n', {'fs/autofs/symlink.c': 'fourth\n'})
	assert len(exported.export()) == 4
	assert 'Reworded by hand' in second_patch(exported).read_text()


def test_export_without_a_record_of_the_patch_files(exported):
	"""A tree prepared by an older tool: only the series hash can tell."""
	t = exported.prep.path
	tree.patches_record(t).unlink()
	commit(t, 'autofs: third\n', {'fs/autofs/symlink.c': 'third\n'})
	assert len(exported.export()) == 3                  # the series is what was prepared
	tree.patches_record(t).unlink()
	edit_patch(second_patch(exported))
	with pytest.raises(UserError, match=second_patch(exported).name):
		exported.export()


def test_prepare_refusal_does_not_recommend_an_export_that_would_overwrite(exported):
	t = exported.prep.path
	c = commit(t, 'autofs: my local work\n', {'fs/autofs/symlink.c': 'precious\n'})
	p = second_patch(exported)
	edit_patch(p)
	with pytest.raises(UserError) as ei:
		exported.prepare()
	msg = str(ei.value)
	assert p.name in msg
	assert 'run `./tools/kunit.py export` to keep it' not in msg
	assert 'format-patch' in msg and '--force' in msg
	assert tree.head(t) == c and 'Reworded by hand' in p.read_text()


def test_cli_export_force_option():
	args = cli.build_parser().parse_args(['export', '--force'])
	assert args.force is True
	assert cli.build_parser().parse_args(['export']).force is False


# ------------------------------------------- 8: a git am that stops elsewhere


def interrupt_am_after(monkeypatch, n, rc=-2, stderr=''):
	"""git am applies the first n patches for real, then stops (as when it
	is killed) without printing "Patch failed at"."""
	real = tree.git

	def fake(repo, *args, **kw):
		patches = [a for a in args if a.endswith('.patch')]
		if args and args[0] == 'am' and patches:
			opts = [a for a in args if not a.endswith('.patch')]
			if n:
				real(repo, *opts, *patches[:n], **kw)
			return subprocess.CompletedProcess(['git', *args], rc, '', stderr)
		return real(repo, *args, **kw)
	monkeypatch.setattr(tree, 'git', fake)


def three_patch_series(exported):
	t = exported.prep.path
	commit(t, 'autofs: a third change\n', {'fs/autofs/symlink.c': 'third\n'})
	exported.export()
	names = [p.name for p in tree.read_series(exported.patch_dir)]
	assert len(names) == 3
	# A changed series makes prepare rebuild: every patch is applied again.
	(exported.patch_dir / names[2]).write_text(
		(exported.patch_dir / names[2]).read_text().replace('a third change',
								       'a third change, reworded'))
	return names


def test_an_interrupted_am_is_blamed_on_the_patch_it_stopped_at(exported, monkeypatch):
	names = three_patch_series(exported)
	interrupt_am_after(monkeypatch, 2)
	with pytest.raises(UserError) as ei:
		exported.prepare()
	msg = str(ei.value)
	first = msg.splitlines()[0]
	assert names[2] in first and names[0] not in first and names[1] not in first
	assert '2 of 3' in first and 'signal 2' in first
	assert 'does not apply' not in first
	t = exported.prep.path
	assert tree.head(t) == exported.prep.pristine and tree.dirty_files(t) == []


def test_an_am_that_stops_before_any_patch_blames_none_by_mistake(exported, monkeypatch):
	three_patch_series(exported)
	interrupt_am_after(monkeypatch, 0, rc=128, stderr='fatal: previous rebase directory '
			   '.git/rebase-apply still exists but mbox given.')
	with pytest.raises(UserError) as ei:
		exported.prepare()
	msg = str(ei.value)
	assert 'does not apply' not in msg and '0 of 3' in msg
	assert 'previous rebase directory' in msg


def test_a_patch_that_fails_is_still_named_by_git(exported):
	# "Patch failed at 0002" keeps its hunk analysis (test_tree.py has the rest).
	names = three_patch_series(exported)
	bad = exported.patch_dir / names[1]
	bad.write_text(bad.read_text().replace('kernel does not match daemon version',
					       'kernel and daemon disagree'))
	with pytest.raises(UserError) as ei:
		exported.prepare()
	assert str(ei.value).startswith(f'patch {names[1]} does not apply')


# ---------------------------------------------------- 9: no automatic git gc


def packs(repo):
	return sorted(p.name for p in (repo / '.git' / 'objects' / 'pack').glob('*.pack'))


def two_packs_and_an_eager_gc(repo, n=0):
	"""Two packs and a configuration under which `git gc --auto` repacks them
	at once, in the foreground: any automatic gc shows as one pack."""
	git(repo, 'repack', '-q')
	commit(repo, f'scratch {n}\n', {f'scratch-{n}.txt': f'{n}\n'})
	git(repo, 'repack', '-q')
	git(repo, 'config', 'gc.autoPackLimit', '1')
	git(repo, 'config', 'gc.autoDetach', 'false')
	assert len(packs(repo)) == 2


def test_the_setup_would_show_an_automatic_gc(tmp_path):
	"""Control: plain git, as configured above, does repack on commit."""
	repo = tmp_path / 'plain'
	repo.mkdir()
	git(repo, 'init', '-q')
	commit(repo, 'first\n', {'a.txt': 'a\n'})
	two_packs_and_an_eager_gc(repo)
	commit(repo, 'more\n', {'b.txt': 'b\n'})
	assert len(packs(repo)) == 1


def test_prepare_turns_automatic_gc_off_in_its_tree(env):
	t = env.prepare().path
	assert git(t, 'config', '--get', 'gc.auto').strip() == '0'
	assert git(t, 'config', '--get', 'maintenance.auto').strip() == 'false'
	# A tree prepared before this: the next prepare sets it.
	git(t, 'config', '--unset', 'gc.auto')
	git(t, 'config', '--unset', 'maintenance.auto')
	env.prepare()
	assert git(t, 'config', '--get', 'gc.auto').strip() == '0'
	assert git(t, 'config', '--get', 'maintenance.auto').strip() == 'false'


def test_the_tools_git_never_starts_an_automatic_gc(exported):
	t = exported.prep.path
	git(t, 'config', 'gc.auto', '6700')             # as if a user had set it back
	two_packs_and_an_eager_gc(t)
	before = packs(t)
	# A rebuild: reset, clean, git am of every patch, each a commit.
	p = sorted(exported.patch_dir.glob('0002-*.patch'))[0]
	p.write_text(p.read_text().replace('Signed-off-by: Ada', 'Reworded.\n\nSigned-off-by: Ada', 1))
	assert exported.prepare(force=True).changed
	assert packs(t) == before
	assert not (t / '.git' / 'gc.pid').exists() and not (t / '.git' / 'gc.log.lock').exists()


# ------------------------------------ the work tree's lock: prepare vs builds

def _holder(path, mode):
	"""Another process's flock on path (an fd of our own: flock locks of
	two open files conflict even within one process)."""
	import fcntl
	f = open(path, 'a+')
	fcntl.flock(f, mode)
	return f


def _in_thread(fn):
	import threading
	box = {}

	def go():
		try:
			box['value'] = fn()
		except BaseException as e:  # noqa: B902 - handed to the test
			box['error'] = e
	t = threading.Thread(target=go, daemon=True)
	t.start()
	return t, box


def test_a_prepare_with_nothing_to_write_takes_no_lock(exported):
	"""Up to date, or local work on the current series: read only, so it
	never waits for a run building from the tree."""
	import fcntl
	t = exported.prep.path
	held = _holder(tree.lock_path(t), fcntl.LOCK_EX)
	try:
		th, box = _in_thread(lambda: exported.prepare(keep_local=True))
		th.join(20)
		assert not th.is_alive(), 'a no-op prepare waited for the lock'
		assert box['value'].changed is False and 'error' not in box
		(t / 'fs/autofs/inode.c').write_text('local edit\n')
		th, box = _in_thread(lambda: exported.prepare(keep_local=True))
		th.join(20)
		assert not th.is_alive() and box['value'].local
	finally:
		held.close()


def test_a_rebuild_waits_for_the_builds_that_read_the_tree(exported, capsys):
	"""A run holds the tree shared (tree.reading); a prepare that must
	rebuild (the series changed) waits for it, says so, then rebuilds."""
	import fcntl
	t = exported.prep.path
	reader = _holder(tree.lock_path(t), fcntl.LOCK_SH)
	p = sorted(exported.patch_dir.glob('0002-*.patch'))[0]
	p.write_text(p.read_text().replace('Signed-off-by: Ada', 'Reworded.\n\nSigned-off-by: Ada', 1))
	before = tree.head(t)
	th, box = _in_thread(lambda: exported.prepare())
	th.join(3)
	assert th.is_alive(), 'the rebuild did not wait for the reader'
	assert tree.head(t) == before
	reader.close()
	th.join(60)
	assert not th.is_alive() and box['value'].changed and tree.head(t) != before
	assert 'Waiting for the work tree' in capsys.readouterr().out


def test_reading_refuses_a_tree_rebuilt_since_it_was_prepared(exported):
	"""Another kunit.py rebuilt the tree between this one's prepare and its
	lock: a one-line error, nothing built from the wrong tree."""
	t = exported.prep.path
	with tree.reading(t, tree.head(t)):
		pass
	with pytest.raises(UserError, match='changed after this command prepared it .*run again'):
		with tree.reading(t, 'f' * 40):
			pass


def test_run_and_ab_hold_the_prepared_tree_not_a_user_tree(tmp_path, monkeypatch):
	import dataclasses
	import contextlib
	from bklkunit.run import plan, profiles, runner
	entered = []
	monkeypatch.setattr(tree, 'reading', lambda t, h: contextlib.nullcontext(
		entered.append((t, h))))
	with contextlib.ExitStack() as held:
		prepared = plan.RunRequest((), profiles.get('default'), tmp_path, plan.RunOptions())
		runner.hold_tree(held, prepared, tmp_path, {'head': 'abc'})
		runner.hold_tree(held, dataclasses.replace(prepared, tree=tmp_path), tmp_path,
				 {'head': 'abc'})
	assert entered == [(tmp_path, 'abc')]
