# SPDX-License-Identifier: GPL-2.0
"""The work tree: Debian's pristine source as a git repository plus our series.

Layout in the cache:
  src/linux-<debian version>/        the work tree (a git repository)
    .git/bkl-kunit.json               what prepare did last (see State)
The pristine commit is tagged with the upstream version (e.g. 6.12.118) and
kept under refs/bkl-kunit/pristine; the series sits on top as commits.
"""

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from . import commitmsg
from ..base import atomic, deps, paths
from ..base.errors import UserError

PRISTINE_REF = 'refs/bkl-kunit/pristine'
IDENT = {'GIT_COMMITTER_NAME': 'bkl-kunit', 'GIT_COMMITTER_EMAIL': 'bkl-kunit@localhost'}


def git_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
	"""A git environment that ignores the user's configuration, so that what
	prepare and export write does not depend on who runs them."""
	env = dict(os.environ)
	env.update({'GIT_CONFIG_NOSYSTEM': '1', 'GIT_CONFIG_GLOBAL': os.devnull,
		    'LC_ALL': 'C', 'GIT_TERMINAL_PROMPT': '0'})
	env.update(IDENT)
	if extra:
		env.update(extra)
	return env


# git never starts an automatic gc in the trees the tool manages: a kernel
# tree's `git gc --auto` after prepare's commits repacked the whole tree in
# the background minutes later, and killing it left gc.pid and
# gc.log.lock behind.  Every git the tool runs gets these; prepare also
# writes them into the repository's own config, for the user's git.
NO_AUTO_GC = (('gc.auto', '0'), ('maintenance.auto', 'false'))


def git(repo: Path, *args: str, check: bool = True, env: Optional[Dict[str, str]] = None,
	input: Optional[str] = None) -> subprocess.CompletedProcess[str]:
	opts = [a for k, v in NO_AUTO_GC for a in ('-c', f'{k}={v}')]
	proc = subprocess.run(['git'] + opts + ['-C', str(repo)] + list(args), capture_output=True,
			      text=True, env=git_env(env), input=input)
	if check and proc.returncode != 0:
		raise UserError(f'git {shlex.join(args)} failed in {repo}:\n'
				+ (proc.stderr or proc.stdout).strip())
	return proc


# ---------------------------------------------------------- scratch worktrees


def is_worktree_of(wt: Path, main: Path) -> bool:
	"""Whether wt is a working worktree of the repository of main."""
	if not (wt / '.git').is_file():
		return False
	proc = git(wt, 'rev-parse', '--path-format=absolute', '--git-common-dir', check=False)
	if proc.returncode != 0:
		return False
	return Path(proc.stdout.strip()).resolve() == (Path(main) / '.git').resolve()


def scratch_worktree(main: Path, wt: Path, commit: str, clean: bool = False,
		     making: str = '', checking_out: str = '') -> str:
	"""wt as a detached worktree of main's repository at commit, with its
	tracked files as committed (`ab`'s A side, `bench`'s source, the
	series checks).  Made with `git worktree add --detach` when wt is not a
	worktree of main (missing, or prepare unpacked main anew: whatever is
	at wt then goes); checked out again when the commit moved or a tracked
	file changed; clean: untracked and ignored files go too (git clean
	-fdx).  Files that did not change keep their mtimes (builds stay warm).
	making / checking_out: printed before each.  Only main's
	.git/worktrees/ is written in main.  Returns what was done: created,
	moved, restored or up to date."""
	main, wt = Path(main), Path(wt)
	if is_worktree_of(wt, main):
		head = git(wt, 'rev-parse', 'HEAD', check=False).stdout.strip()
		dirty = git(wt, 'status', '--porcelain', '--untracked-files=no').stdout.strip()
		if head == commit and not dirty:
			done = 'up to date'
		else:
			if checking_out:
				print(checking_out, flush=True)
			git(wt, 'checkout', '-q', '-f', '--detach', commit)
			done = 'moved' if head != commit else 'restored'
	else:
		if wt.is_symlink() or wt.is_file():
			wt.unlink()
		elif wt.exists():
			shutil.rmtree(wt)
		wt.parent.mkdir(parents=True, exist_ok=True)
		git(main, 'worktree', 'prune')
		if making:
			print(making, flush=True)
		git(main, 'worktree', 'add', '-q', '--detach', str(wt), commit)
		done = 'created'
	if clean:
		git(wt, 'clean', '-q', '-f', '-d', '-x')
	return done


# ---------------------------------------------------------------- the series

def read_series(patch_dir: Path) -> List[Path]:
	"""The patches named by patch_dir/series, in order (quilt format)."""
	series = patch_dir / 'series'
	if not series.exists():
		return []
	out = []
	for lineno, raw in enumerate(series.read_text().splitlines(), 1):
		line = raw.split('#', 1)[0].strip()
		if not line:
			continue
		name = line.split()[0]
		p = patch_dir / name
		if not p.is_file():
			raise UserError(f'{series}:{lineno}: patch {name} does not exist')
		out.append(p)
	return out


def series_hash(patches: Sequence[Path]) -> str:
	"""A hash of the series: names and contents, in order."""
	h = hashlib.sha256()
	for p in patches:
		h.update(p.name.encode() + b'\0')
		h.update(p.read_bytes() + b'\0')
	return h.hexdigest()


def patch_subject(patch: Path) -> str:
	"""A format-patch file's subject (commitmsg.split), else its name."""
	msg = commitmsg.split(patch.read_text(errors='replace'))
	return msg.subject if msg.mail and msg.subject else patch.name


def find_hunk(patch: Path, path: str, line: int) -> str:
	"""The hunk of `patch` for `path` whose old range starts at `line`."""
	text = patch.read_text(errors='replace').splitlines()
	cur = None
	hunk: List[str] = []
	found = False
	for l in text:
		if l.startswith('diff --git '):
			if found:
				break
			cur = l.split(' b/', 1)[-1]
			continue
		m = re.match(r'^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@', l)
		if m:
			if found:
				break
			found = cur == path and int(m.group(1)) == line
			if found:
				hunk = [l]
			continue
		if found:
			if l.startswith(('-', '+', ' ', '\\')) or l == '':
				hunk.append(l)
			else:
				break
	return '\n'.join(hunk)


# ---------------------------------------------------------------- the tree

@dataclass
class State:
	debian_version: str = ''
	pristine: str = ''            # the pristine commit
	series_hash: Optional[str] = None   # the series applied, None if none
	applied_head: str = ''        # HEAD right after prepare/export
	patches: List[str] = field(default_factory=list)


def debian_version() -> str:
	proc = deps.dpkg_query(['-W', '-f=${Version}', paths.SOURCE_PACKAGE])
	if proc.returncode != 0 or not proc.stdout.strip():
		return ''
	return proc.stdout.strip()


def upstream_version(debver: str) -> str:
	"""6.12.118-1~deb12u1 -> 6.12.118"""
	return re.split(r'[-+~]', debver, 1)[0]


def tree_path(cache: Path, debver: str) -> Path:
	return cache / 'src' / ('linux-' + re.sub(r'[^A-Za-z0-9.+-]', '_', debver))


def state_file(tree: Path) -> Path:
	return tree / '.git' / 'bkl-kunit.json'


def read_state(tree: Path) -> Tuple[Optional[State], str]:
	"""(the state prepare recorded, '') or (None, what is wrong with it):
	missing, unreadable, not JSON, a key this tool does not know, a value
	of the wrong type, no pristine commit."""
	f = state_file(tree)
	try:
		data = json.loads(f.read_text())
	except FileNotFoundError:
		return None, f'{f} is missing'
	except OSError as e:
		return None, f'{f} cannot be read ({e.strerror})'
	except ValueError:          # and UnicodeDecodeError
		return None, f'{f} is not JSON'
	if not isinstance(data, dict):
		return None, f'{f} is not a JSON object'
	known = {x.name for x in fields(State)}
	unknown = sorted(set(data) - known)
	if unknown:
		return None, f'{f} has key(s) this tool does not know: {", ".join(unknown)}'
	for k in ('debian_version', 'pristine', 'applied_head'):
		if not isinstance(data.get(k, ''), str):
			return None, f'{f}: "{k}" is not text'
	if data.get('series_hash') is not None and not isinstance(data['series_hash'], str):
		return None, f'{f}: "series_hash" is not text'
	if not isinstance(data.get('patches', []), list) or not all(
			isinstance(x, str) for x in data.get('patches', [])):
		return None, f'{f}: "patches" is not a list of names'
	st = State(**data)
	if not st.pristine:
		return None, f'{f} names no pristine commit'
	return st, ''


def load_state(tree: Path) -> State:
	"""The recorded state, or an empty State() when there is none usable
	(prepare itself never deletes on that: see unproven())."""
	return read_state(tree)[0] or State()


def unproven(tree: Path, problem: str) -> str:
	"""The refusal for a tree prepare cannot prove is its own unmodified
	output: what is wrong, and everything rebuilding it would delete."""
	lines = [f'the work tree {tree} is not provably what prepare made ({problem}); '
		 'unpacking it anew would delete:']
	ref = ''
	if (tree / '.git').exists():
		proc = git(tree, 'rev-parse', '--verify', '-q', PRISTINE_REF, check=False)
		ref = PRISTINE_REF if proc.returncode == 0 else ''
		span = [f'{ref}..HEAD'] if ref else ['-20', 'HEAD']
		log = git(tree, 'log', '--format=%h %s', *span, check=False)
		commits = log.stdout.splitlines() if log.returncode == 0 else []
		if commits:
			lines.append(f'  {len(commits)} commit(s) '
				     + ('above the pristine commit (the series and any of yours):' if ref
					else '(no pristine ref; the last ones):'))
			lines += [f'    {c}' for c in commits[:30]]
			if len(commits) > 30:
				lines.append(f'    ... and {len(commits) - 30} more')
		try:
			dirty = dirty_files(tree)
		except UserError as e:
			dirty = [f'(git status failed: {str(e).splitlines()[-1]})']
		if dirty:
			lines.append(f'  {len(dirty)} uncommitted change(s):')
			lines += [f'    {d}' for d in dirty[:20]]
			if len(dirty) > 20:
				lines.append(f'    ... and {len(dirty) - 20} more')
		if not commits and not dirty:
			lines.append('  the git repository as it is')
	else:
		try:
			names = sorted(p.name for p in tree.iterdir())
		except OSError:
			names = []
		lines.append(f'  {len(names)} file(s) and directories (not a git repository): '
			     + ', '.join(names[:20]) + (' ...' if len(names) > 20 else ''))
	keep = (f'`git -C {tree} format-patch -o <dir> {ref}..HEAD` and copy what is not '
		'committed' if ref else 'copy what you need')
	lines.append(f'keep what you need first ({keep}), then run `./tools/kunit.py prepare '
		     '--force` to unpack it anew')
	return '\n'.join(lines)


def mutate_journal(tree: Path) -> Path:
	"""Where `kunit.py mutate` journals the file it has mutated (its
	original content), from before it is changed until it is put back."""
	return tree / '.git' / 'bkl-kunit-mutate.json'


def refuse_mutated(tree: Path) -> None:
	"""A UserError when an interrupted `kunit.py mutate` left a file of the
	work tree mutated (its journal is there): never build or boot that."""
	j = mutate_journal(tree)
	if j.exists():
		raise UserError(f'the work tree {tree} holds a lock-removal mutant that an '
				f'interrupted `kunit.py mutate` left ({j}); `./tools/kunit.py mutate '
				'--list` puts the file back first')


def save_state(tree: Path, st: State) -> None:
	atomic.write_text(state_file(tree), json.dumps(asdict(st), indent=1) + '\n')


def patches_record(tree: Path) -> Path:
	"""What kernel-patches/ held when prepare applied it or export wrote it:
	{file name: sha256} of `series` and the patches it names (kept apart
	from the state file, whose keys older tools check)."""
	return tree / '.git' / 'bkl-kunit-patches.json'


def patch_files(patch_dir: Path) -> Dict[str, str]:
	"""{name: sha256} of `series` and of every patch it names that exists
	(a *.patch it does not name is no part of the series: export removes it)."""
	names = ['series']
	try:
		text = (patch_dir / 'series').read_text(errors='replace')
	except OSError:
		text = ''
	for raw in text.splitlines():
		line = raw.split('#', 1)[0].strip()
		if line and '/' not in line.split()[0]:
			names.append(line.split()[0])
	out = {}
	for name in names:
		p = patch_dir / name
		if p.is_file():
			out[name] = hashlib.sha256(p.read_bytes()).hexdigest()
	return out


def record_patch_files(tree: Path, patch_dir: Path) -> None:
	atomic.write_text(patches_record(tree),
			  json.dumps(patch_files(patch_dir), indent=1, sort_keys=True) + '\n')


def changed_patch_files(tree: Path, patch_dir: Path, st: State) -> List[str]:
	"""The files of patch_dir changed (or added) since prepare applied it or
	export wrote it.  Without a record (a tree prepared by an older tool)
	only the series hash can tell: then every file, if it differs."""
	now = patch_files(patch_dir)
	try:
		rec = json.loads(patches_record(tree).read_text())
	except (OSError, ValueError):
		rec = None
	if isinstance(rec, dict):
		return sorted(n for n, h in now.items() if rec.get(n) != h)
	try:
		same = series_hash(read_series(patch_dir)) == st.series_hash
	except UserError:
		same = False
	return [] if same else sorted(now)


def dirty_files(tree: Path) -> List[str]:
	"""Modified tracked files and every untracked file (ignored or not: the
	Debian tarball's .gitignore ignores everything at the top level)."""
	out = git(tree, 'status', '--porcelain', '--ignored', '--untracked-files=all').stdout
	files = []
	for line in out.splitlines():
		name = line[3:]
		if '__pycache__/' in name or name.endswith('.pyc'):
			continue
		files.append(line)
	return files


def _auto_gc_settings(tree: Path) -> List[Tuple[str, str]]:
	"""The NO_AUTO_GC settings the repository's config does not have yet."""
	return [(key, value) for key, value in NO_AUTO_GC
		if git(tree, 'config', '--local', '--get', key, check=False).stdout.strip() != value]


def no_auto_gc(tree: Path) -> None:
	"""Write NO_AUTO_GC into the repository's config where it is not so."""
	for key, value in _auto_gc_settings(tree):
		git(tree, 'config', '--local', key, value)


def head(tree: Path) -> str:
	return git(tree, 'rev-parse', 'HEAD').stdout.strip()


def version_from_makefile(tree: Path) -> str:
	vals = {}
	try:
		for line in (tree / 'Makefile').read_text().splitlines()[:10]:
			m = re.match(r'^(VERSION|PATCHLEVEL|SUBLEVEL)\s*=\s*(\d+)', line)
			if m:
				vals[m.group(1)] = m.group(2)
	except OSError:
		return ''
	if len(vals) != 3:
		return ''
	return f"{vals['VERSION']}.{vals['PATCHLEVEL']}.{vals['SUBLEVEL']}"


def _unpack(tarball: Path, cache: Path, debver: str) -> Path:
	dest = tree_path(cache, debver)
	tmp = dest.with_name(dest.name + '.unpacking')
	if tmp.exists():
		shutil.rmtree(tmp)
	tmp.mkdir(parents=True)
	print(f'Unpacking {tarball} into {dest} ...', flush=True)
	proc = subprocess.run(['tar', '-xf', str(tarball), '-C', str(tmp)],
			      capture_output=True, text=True)
	if proc.returncode != 0:
		raise UserError(f'could not unpack {tarball}: {proc.stderr.strip()}')
	tops = [p for p in tmp.iterdir()]
	if len(tops) != 1 or not tops[0].is_dir():
		raise UserError(f'{tarball}: expected one top-level directory, found {len(tops)}')
	src = tops[0]
	upstream = upstream_version(debver)
	found = version_from_makefile(src)
	if found != upstream:
		raise UserError(f'{tarball} holds Linux {found or "?"}, but the package '
				f'version is {debver}')
	git(src, 'init', '-q', '-b', 'work')
	no_auto_gc(src)
	# -f: the Debian tarball's .gitignore ignores /* (every top-level entry).
	git(src, 'add', '-f', '-A', '.')
	date = f'@{int(tarball.stat().st_mtime)} +0000'
	git(src, 'commit', '-q', '--no-verify', '-m',
	    f'Debian {paths.SOURCE_PACKAGE} {debver} (pristine)\n\n'
	    f'Unpacked from {tarball.name} by tools/kunit.py prepare.',
	    env={'GIT_AUTHOR_NAME': 'Debian linux-source', 'GIT_AUTHOR_EMAIL': 'debian-kernel@lists.debian.org',
		 'GIT_AUTHOR_DATE': date, 'GIT_COMMITTER_DATE': date,
		 'GIT_COMMITTER_NAME': 'Debian linux-source',
		 'GIT_COMMITTER_EMAIL': 'debian-kernel@lists.debian.org'})
	pristine = head(src)
	git(src, 'update-ref', PRISTINE_REF, pristine)
	git(src, 'tag', '-f', upstream, pristine)
	save_state(src, State(debian_version=debver, pristine=pristine, applied_head=pristine))
	if dest.exists():
		shutil.rmtree(dest)
	src.rename(dest)
	tmp.rmdir()
	return dest


def _reset_to_pristine(tree: Path, st: State) -> None:
	git(tree, 'am', '--abort', check=False)
	git(tree, 'checkout', '-q', '-f', '-B', 'work', st.pristine)
	git(tree, 'reset', '-q', '--hard', st.pristine)
	git(tree, 'clean', '-q', '-f', '-d', '-x')
	st.series_hash = None
	st.patches = []
	st.applied_head = st.pristine
	save_state(tree, st)


def apply_series(tree: Path, patches: Sequence[Path]) -> None:
	"""git am the patches onto HEAD; on failure say which patch and which
	hunk, and raise (the caller restores the tree)."""
	if not patches:
		return
	before = git(tree, 'rev-parse', '--verify', '-q', 'HEAD', check=False).stdout.strip()
	# --keep-non-patch: strip only [PATCH ...] from subjects, so that a
	# "[media] go7007: ..." subject survives the prepare/export round trip.
	proc = git(tree, 'am', '-q', '--committer-date-is-author-date', '--keep-non-patch',
		   *[str(p) for p in patches], check=False)
	if proc.returncode == 0:
		return
	output = (proc.stdout + '\n' + proc.stderr).strip()
	said = ['git am said:'] + ['  ' + l for l in output.splitlines()
				   if not l.startswith(('hint:', 'When you have resolved', 'If you prefer',
							'To restore the original'))]
	m = re.search(r'Patch failed at (\d+)', output)
	if not m:
		# Killed, interrupted, or refused to start: git names no patch.
		# The commits it made say how far it got; the next one is where
		# it stopped (it may apply perfectly well).
		count = git(tree, 'rev-list', '--count', f'{before}..HEAD', check=False) if before \
			else None
		n = int(count.stdout.strip()) if count is not None and count.returncode == 0 \
			and count.stdout.strip().isdigit() else 0
		why = (f'killed by signal {-proc.returncode}' if proc.returncode < 0
		       else f'exit {proc.returncode}')
		where = (f'at patch {patches[n].name} ("{patch_subject(patches[n])}") after applying '
			 f'{n} of {len(patches)}' if n < len(patches)
			 else f'after applying all {len(patches)} patches')
		raise UserError('\n'.join(
			[f'git am stopped {where}, without saying a patch failed ({why})']
			+ (said if output else ['git am printed nothing'])))
	idx = min(max(int(m.group(1)) - 1, 0), len(patches) - 1)
	bad = patches[idx]
	msg = [f'patch {bad.name} does not apply ("{patch_subject(bad)}")']
	for em in re.finditer(r'error: patch failed: (.+):(\d+)', output):
		hunk = find_hunk(bad, em.group(1), int(em.group(2)))
		msg.append(f'failing hunk in {em.group(1)} at line {em.group(2)}:')
		msg.append(hunk or '  (hunk not found in the patch text)')
	msg.extend(said)
	raise UserError('\n'.join(msg))


@dataclass
class Prepared:
	path: Path
	debian_version: str
	upstream: str
	pristine: str
	head: str
	patches: List[str]
	changed: bool
	local: bool = False    # the tree carries work not exported


def ensure_source(allow_install: bool) -> str:
	debver = debian_version()
	if not debver or not paths.SOURCE_TARBALL.exists():
		deps.ensure([paths.SOURCE_PACKAGE], allow_install)
		debver = debian_version()
	if not paths.SOURCE_TARBALL.exists():
		raise UserError(f'{paths.SOURCE_PACKAGE} is installed but {paths.SOURCE_TARBALL} '
				'is missing; reinstall it with: apt-get install --reinstall '
				+ paths.SOURCE_PACKAGE)
	return debver


def prepare(cache: Path, patch_dir: Path = paths.PATCH_DIR, allow_install: bool = True,
	    force: bool = False, quiet: bool = False,
	    tarball: Path = paths.SOURCE_TARBALL, debver: Optional[str] = None,
	    keep_local: bool = False) -> Prepared:
	"""Make the work tree pristine + series.

	keep_local (what `run` uses): a work tree with local commits or edits on
	top of the *current* series is used as it is - that is the edit, commit,
	run, export loop.  If the series files changed underneath such work, it
	is still refused: neither side can be picked without losing the other.

	A tree that is used as it stands is only read, with no lock: a no-op
	prepare never waits.  One that has to be written (unpacked, rebuilt)
	is written under the exclusive lock of <tree>.lock, which every run
	and ab holds shared while it builds from the tree (reading()): a
	rebuild waits for their builds, and theirs for it; the state is read
	again once the lock is held."""
	if debver is None:
		debver = ensure_source(allow_install)
	patches = read_series(patch_dir)
	tree = tree_path(cache, debver)
	ver: str = debver

	def work(writing: bool) -> Optional[Prepared]:
		return _prepare(cache, tree, ver, patches, patch_dir, writing, force, quiet, tarball,
				keep_local)
	if not force:
		done = work(writing=False)
		if done is not None:
			return done
	with paths.locked(lock_path(tree), f'the work tree {tree}'):
		done = work(writing=True)
	assert done is not None
	return done


def lock_path(tree: Path) -> Path:
	"""The flock of the work tree: exclusive while prepare writes it, shared
	while a run or ab builds from it."""
	return tree.parent / f'{tree.name}.lock'


@contextlib.contextmanager
def reading(tree: Path, expected_head: str) -> Iterator[None]:
	"""Hold the work tree (a shared flock on lock_path) while a run or ab
	configures, builds and boots from it: a prepare of another kunit.py
	(another clone's series, CI) waits to rebuild it until this ends.  The
	tree must still be at expected_head, the HEAD prepare returned: another
	process may have rebuilt it between that and the lock."""
	with paths.locked(lock_path(tree), f'the work tree {tree}', shared=True):
		now = head(tree)
		if now != expected_head:
			raise UserError(f'the work tree {tree} changed after this command prepared it '
					f'(HEAD {expected_head[:12]}, now {now[:12]}): another kunit.py '
					'prepared it from another series; run again')
		yield


def _prepare(cache: Path, tree: Path, debver: str, patches: List[Path], patch_dir: Path,
	     writing: bool, force: bool, quiet: bool, tarball: Path,
	     keep_local: bool) -> Optional[Prepared]:
	"""prepare's work; without writing, None where the tree would have to
	be written (prepare then takes the lock and calls it again)."""
	want = series_hash(patches)
	if tree.exists() or tree.is_symlink():
		found, problem = read_state(tree)
		if found is None and not force:
			# Nothing proves this is prepare's own unmodified output: it
			# may hold work, so it is refused like local work is.
			raise UserError(unproven(tree, problem))
		if not writing and found is None:
			return None
		if found is None:
			print(f'--force: unpacking {tree} anew ({problem})', flush=True)
			tree = _unpack(tarball, cache, debver)
			found = load_state(tree)
		st = found
	elif not writing:
		return None
	else:
		tree = _unpack(tarball, cache, debver)
		st = load_state(tree)
	if writing:
		no_auto_gc(tree)
	elif _auto_gc_settings(tree):
		return None
	changed = False
	cur = head(tree)
	dirty = dirty_files(tree)
	if st.series_hash == want and cur == st.applied_head and not dirty:
		if not writing and not patches_record(tree).exists():
			return None
		if not quiet:
			print(f'Work tree {tree} is up to date ({len(patches)} patches on {debver}).')
		if not patches_record(tree).exists():
			record_patch_files(tree, patch_dir)
	else:
		local = cur != st.applied_head or bool(dirty)
		if local and keep_local and not force and st.series_hash == want:
			ahead = git(tree, 'rev-list', '--count', f'{st.applied_head}..HEAD',
				    check=False).stdout.strip() or '?'
			print(f'Work tree {tree} carries local work ({ahead} commit(s) not exported, '
			      f'{len(dirty)} uncommitted change(s)); running it as it is.', flush=True)
			return Prepared(tree, debver, upstream_version(debver), st.pristine, cur,
					[p.name for p in patches], False, local=True)
		if local and not force:
			ahead = git(tree, 'rev-list', '--count', f'{st.applied_head}..HEAD',
				    check=False).stdout.strip() or '?'
			detail = [f'  {ahead} commit(s) not yet exported'] if cur != st.applied_head else []
			detail += ['  ' + d for d in dirty[:20]]
			edited = changed_patch_files(tree, patch_dir, st)
			if edited:
				# Both sides changed: export would overwrite the edits in
				# kernel-patches/, prepare would drop the tree's work.
				how = ('\nkernel-patches/ changed too since the tree was prepared from it: '
				       + ', '.join(edited) + '\n`./tools/kunit.py export` would overwrite '
				       'those and prepare would drop the work above; save the tree\'s '
				       f'commits first (`git -C {tree} format-patch -o <dir> '
				       f'{PRISTINE_REF}..HEAD`, and commit what is not committed), '
				       'then merge by hand, or `./tools/kunit.py prepare --force` to '
				       'throw the tree\'s work away')
			else:
				how = ('\nrun `./tools/kunit.py export` to keep it, or '
				       '`./tools/kunit.py prepare --force` to throw it away')
			raise UserError(f'the work tree {tree} has work that is not in kernel-patches/:\n'
					+ '\n'.join(detail) + how)
		if not writing:
			return None
		print(f'Rebuilding {tree}: pristine {upstream_version(debver)} + '
		      f'{len(patches)} patches ...', flush=True)
		_reset_to_pristine(tree, st)
		try:
			apply_series(tree, patches)
		except UserError:
			_reset_to_pristine(tree, st)
			raise
		st.series_hash = want
		st.patches = [p.name for p in patches]
		st.applied_head = head(tree)
		save_state(tree, st)
		record_patch_files(tree, patch_dir)
		changed = True
	return Prepared(tree, debver, upstream_version(debver), st.pristine, head(tree),
			[p.name for p in patches], changed)


def find_prepared(cache: Path) -> Path:
	debver = debian_version()
	tree = tree_path(cache, debver) if debver else None
	if not tree or not tree.exists():
		raise UserError('no prepared work tree; run `./tools/kunit.py prepare` first')
	st, problem = read_state(tree)
	if st is None:
		raise UserError(f'the work tree {tree} has no usable prepare state ({problem}); '
				'`./tools/kunit.py prepare` will say what it holds')
	return tree


SERIES_HEADER = ('# Applied in this order with `git am` to Debian\'s pristine {src}.\n'
		 '# Written by `./tools/kunit.py export`; edit the work tree, not these files.\n')


def export(cache: Path, patch_dir: Path = paths.PATCH_DIR, force: bool = False) -> List[Path]:
	"""format-patch the commits above the pristine base into patch_dir.

	Refused when a file there changed since prepare applied it (or export
	wrote it) and export would overwrite or delete it: the edit would be
	lost.  force: overwrite anyway."""
	tree = find_prepared(cache)
	st = load_state(tree)
	dirty = dirty_files(tree)
	if dirty:
		raise UserError(f'the work tree {tree} has uncommitted changes, which export '
				'would not carry:\n' + '\n'.join('  ' + d for d in dirty[:20]) +
				'\ncommit them (new files need `git add -f`: the Debian .gitignore '
				'ignores /*) and export again')
	tmp = patch_dir.parent / (patch_dir.name + '.export-tmp')
	if tmp.exists():
		shutil.rmtree(tmp)
	tmp.mkdir(parents=True)
	try:
		git(tree, 'format-patch', '-q', '--zero-commit', '--no-signature', '--numbered',
		    '--abbrev=12', '--diff-algorithm=myers', '-o', str(tmp),
		    f'{st.pristine}..HEAD')
		new = sorted(tmp.glob('*.patch'))
		series_text = (SERIES_HEADER.format(src=paths.SOURCE_PACKAGE) +
			       ''.join(p.name + '\n' for p in new))
		if not force:
			out = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in new}
			out['series'] = hashlib.sha256(series_text.encode()).hexdigest()
			now = patch_files(patch_dir)
			lost = [n for n in changed_patch_files(tree, patch_dir, st)
				if out.get(n) != now.get(n)]
			if lost:
				raise UserError(
					f'{patch_dir} changed since the work tree was prepared from it, '
					'and export would ' + ('overwrite or delete' if len(lost) > 1 else
							     'delete' if lost[0] not in out else 'overwrite')
					+ ' these edits:\n' + '\n'.join(
						f'  {n}' + ('' if n in out else ' (export would delete it)')
						for n in lost)
					+ '\nrun `./tools/kunit.py prepare` to rebuild the tree from them '
					'(if they are what to keep), or `./tools/kunit.py export --force` '
					'to overwrite them with the tree\'s commits')
		patch_dir.mkdir(parents=True, exist_ok=True)
		for old in patch_dir.glob('*.patch'):
			old.unlink()
		for p in new:
			shutil.copyfile(p, patch_dir / p.name)
		atomic.write_text(patch_dir / 'series', series_text)
	finally:
		shutil.rmtree(tmp, ignore_errors=True)
	patches = read_series(patch_dir)
	st.series_hash = series_hash(patches)
	st.patches = [p.name for p in patches]
	st.applied_head = head(tree)
	save_state(tree, st)
	record_patch_files(tree, patch_dir)
	return patches


# ---------------------------------------------------------------- a user's tree

def series_status(tree: Path, patches: Sequence[Path]) -> List[str]:
	"""For each patch: 'applied', 'not applied' or 'conflicts'.

	The series is first checked as one stream (later patches build on
	earlier ones); only when that fails is each patch tried on its own."""
	if patches:
		stream = b''.join(p.read_bytes() for p in patches)

		def check(*opts: str) -> bool:
			return subprocess.run(['git', 'apply', '--check', *opts], cwd=tree,
					      input=stream, capture_output=True,
					      env=git_env()).returncode == 0
		if check():
			return ['not applied'] * len(patches)
		if check('-R'):
			return ['applied'] * len(patches)
	out = []
	for p in patches:
		fwd = subprocess.run(['git', 'apply', '--check', str(p)], cwd=tree,
				     capture_output=True, env=git_env())
		if fwd.returncode == 0:
			out.append('not applied')
			continue
		rev = subprocess.run(['git', 'apply', '--check', '-R', str(p)], cwd=tree,
				     capture_output=True, env=git_env())
		out.append('applied' if rev.returncode == 0 else 'conflicts')
	return out
