# SPDX-License-Identifier: GPL-2.0
"""The lock sites of the three subsystems, found from their source, and
the text of a tree with one of them taken out (`kunit.py mutate`).

A site is one lock in one function: every call that takes or lets go of
the same lock expression in that function's body (a mutex, a spinlock, an
rwlock, a seqlock, a rw_semaphore, the socket lock, the RTNL), or one
capability checked there (capable(), ns_capable(), ...).  A lock site
needs at least one call that takes the lock and one that lets it go; the
others (a helper that only takes, or only releases, a lock its caller
holds) are listed as unpaired and never mutated.

Functions are found by their braces, on the text with comments, string
and character literals and preprocessor lines blanked out (mask()): a `{`
at file level whose text since the last `;`, `}` or `{` at file level
ends in `)` (optionally followed by attributes such as `__releases(x)`)
and holds no `=` is a function body, named by the identifier before the
first `(` of that text; a prototype ends in `;` and has no body.

The mutant (mutate_text) replaces each call of the site, and nothing
else, so the line numbers stay:

  lock/unlock            (void)(&L)           the lock expression still
                                              evaluated: no unused variable
  _bh, _irq, _irqsave    the same plus local_bh_disable()/local_irq_save(f)
                         ... in a do { } while (0): only the exclusion goes
  _interruptible/_killable  ((void)(&L), 0)   "got it"
  trylock                ((void)(&L), 1)      "got it"
  lock_sock(sk)          (void)(sk)
  rtnl_lock()            (void)0
  capable(C)             (1); ns_capable(ns, C): ((void)(ns), 1)
"""

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..base.errors import UserError


@dataclass(frozen=True)
class Subsystem:
	name: str
	dirs: Tuple[str, ...]          # source directories, relative to the tree (not recursive)
	glob: str                      # the kunit filter of its suites


SUBSYSTEMS: Dict[str, Subsystem] = {
	'ufs': Subsystem('ufs', ('fs/ufs',), 'ufs_*'),
	'appletalk': Subsystem('appletalk', ('net/appletalk',), 'appletalk_*'),
	'autofs': Subsystem('autofs', ('fs/autofs',), 'autofs_*'),
}


class Kind:
	"""What a site takes out (str constants: JSON and the page show them)."""
	SPINLOCK = 'spinlock'
	RWLOCK = 'rwlock'
	MUTEX = 'mutex'
	SEQLOCK = 'seqlock'
	RWSEM = 'rwsem'
	SOCK = 'sock'
	RTNL = 'rtnl'
	UFS = 'lock_ufs'
	CAPABILITY = 'capability'


ACQUIRE, RELEASE, CHECK = 'acquire', 'release', 'check'


@dataclass(frozen=True)
class Call:
	"""How one function is taken out: its kind, whether it takes, lets go
	or checks, and the replacement's form (see the module docstring)."""
	kind: str
	role: str
	form: str          # 'plain', 'value0', 'value1', 'bh_off', 'bh_on', 'irq_off', 'irq_on',
			   # 'irqsave', 'irqrestore', 'arg', 'none', 'cap', 'nscap'


def _table() -> Dict[str, Call]:
	t: Dict[str, Call] = {}
	for kind, prefixes in ((Kind.SPINLOCK, ('spin', 'raw_spin')),
			       (Kind.RWLOCK, ('read', 'write'))):
		for p in prefixes:
			t[f'{p}_lock'] = Call(kind, ACQUIRE, 'plain')
			t[f'{p}_lock_nested'] = Call(kind, ACQUIRE, 'plain')
			t[f'{p}_unlock'] = Call(kind, RELEASE, 'plain')
			t[f'{p}_lock_bh'] = Call(kind, ACQUIRE, 'bh_off')
			t[f'{p}_unlock_bh'] = Call(kind, RELEASE, 'bh_on')
			t[f'{p}_lock_irq'] = Call(kind, ACQUIRE, 'irq_off')
			t[f'{p}_unlock_irq'] = Call(kind, RELEASE, 'irq_on')
			t[f'{p}_lock_irqsave'] = Call(kind, ACQUIRE, 'irqsave')
			t[f'{p}_lock_irqsave_nested'] = Call(kind, ACQUIRE, 'irqsave')
			t[f'{p}_unlock_irqrestore'] = Call(kind, RELEASE, 'irqrestore')
			t[f'{p}_trylock'] = Call(kind, ACQUIRE, 'value1')
	for n in ('mutex_lock', 'mutex_lock_nested', 'mutex_lock_io'):
		t[n] = Call(Kind.MUTEX, ACQUIRE, 'plain')
	for n in ('mutex_lock_interruptible', 'mutex_lock_killable',
		  'mutex_lock_interruptible_nested', 'mutex_lock_killable_nested'):
		t[n] = Call(Kind.MUTEX, ACQUIRE, 'value0')
	t['mutex_trylock'] = Call(Kind.MUTEX, ACQUIRE, 'value1')
	t['mutex_unlock'] = Call(Kind.MUTEX, RELEASE, 'plain')
	for acq, rel, form_a, form_r in (('write_seqlock', 'write_sequnlock', 'plain', 'plain'),
					 ('write_seqlock_bh', 'write_sequnlock_bh', 'bh_off', 'bh_on'),
					 ('write_seqlock_irq', 'write_sequnlock_irq', 'irq_off', 'irq_on'),
					 ('write_seqlock_irqsave', 'write_sequnlock_irqrestore',
					  'irqsave', 'irqrestore'),
					 ('read_seqlock_excl', 'read_sequnlock_excl', 'plain', 'plain'),
					 ('read_seqlock_excl_bh', 'read_sequnlock_excl_bh', 'bh_off', 'bh_on'),
					 ('read_seqlock_excl_irq', 'read_sequnlock_excl_irq', 'irq_off',
					  'irq_on'),
					 ('read_seqlock_excl_irqsave', 'read_sequnlock_excl_irqrestore',
					  'irqsave', 'irqrestore')):
		t[acq] = Call(Kind.SEQLOCK, ACQUIRE, form_a)
		t[rel] = Call(Kind.SEQLOCK, RELEASE, form_r)
	for n in ('down_read', 'down_write', 'down_read_nested', 'down_write_nested'):
		t[n] = Call(Kind.RWSEM, ACQUIRE, 'plain')
	for n in ('down_read_killable', 'down_write_killable', 'down_read_interruptible'):
		t[n] = Call(Kind.RWSEM, ACQUIRE, 'value0')
	for n in ('down_read_trylock', 'down_write_trylock'):
		t[n] = Call(Kind.RWSEM, ACQUIRE, 'value1')
	for n in ('up_read', 'up_write'):
		t[n] = Call(Kind.RWSEM, RELEASE, 'plain')
	t['lock_sock'] = Call(Kind.SOCK, ACQUIRE, 'arg')
	t['lock_sock_nested'] = Call(Kind.SOCK, ACQUIRE, 'arg')
	t['release_sock'] = Call(Kind.SOCK, RELEASE, 'arg')
	t['rtnl_lock'] = Call(Kind.RTNL, ACQUIRE, 'none')
	t['rtnl_lock_killable'] = Call(Kind.RTNL, ACQUIRE, 'value0')
	t['rtnl_trylock'] = Call(Kind.RTNL, ACQUIRE, 'value1')
	t['rtnl_unlock'] = Call(Kind.RTNL, RELEASE, 'none')
	# UFS's own superblock lock helpers, where a tree still has them.
	t['lock_ufs'] = Call(Kind.UFS, ACQUIRE, 'arg')
	t['unlock_ufs'] = Call(Kind.UFS, RELEASE, 'arg')
	for n in ('capable', 'capable_noaudit'):
		t[n] = Call(Kind.CAPABILITY, CHECK, 'cap')
	for n in ('ns_capable', 'ns_capable_noaudit', 'ns_capable_setid', 'sk_capable',
		  'sk_net_capable', 'netlink_capable', 'file_ns_capable', 'sk_ns_capable',
		  'has_capability', 'has_ns_capability'):
		t[n] = Call(Kind.CAPABILITY, CHECK, 'nscap')
	return t


CALLS: Dict[str, Call] = _table()
_CALL_RE = re.compile(r'(?<![\w.>$])(' + '|'.join(sorted(CALLS, key=len, reverse=True))
		      + r')\s*\(')
_IDENT_CALL_RE = re.compile(r'([A-Za-z_]\w*)\s*\(')


# ------------------------------------------------------------------ the text

def mask(text: str) -> str:
	"""text with comments, string and character literals and preprocessor
	lines (with their continuations) replaced by spaces, newlines kept:
	every offset and line number is the same as in text."""
	out = list(text)
	i, n = 0, len(text)
	at_line_start = True

	def blank(a: int, b: int) -> None:
		for k in range(a, b):
			if out[k] != '\n':
				out[k] = ' '

	while i < n:
		c = text[i]
		if at_line_start:
			j = i
			while j < n and text[j] in ' \t':
				j += 1
			if j < n and text[j] == '#':
				# a directive, to the end of its last continued line
				k = j
				while k < n:
					if text[k] == '\n' and text[k - 1] != '\\':
						break
					if text.startswith('/*', k):
						e = text.find('*/', k + 2)
						k = n if e < 0 else e + 2
						continue
					k += 1
				blank(j, k)
				i = k
				continue
			at_line_start = False
		if c == '\n':
			at_line_start = True
			i += 1
		elif text.startswith('//', i):
			e = text.find('\n', i)
			e = n if e < 0 else e
			blank(i, e)
			i = e
		elif text.startswith('/*', i):
			e = text.find('*/', i + 2)
			e = n if e < 0 else e + 2
			blank(i, e)
			i = e
		elif c in '"\'':
			k = i + 1
			while k < n and text[k] != c and text[k] != '\n':
				k += 2 if text[k] == '\\' else 1
			blank(i + 1, min(k, n))
			i = k + 1
		else:
			i += 1
	return ''.join(out)


def line_of(text: str, offset: int) -> int:
	return text.count('\n', 0, offset) + 1


@dataclass(frozen=True)
class Function:
	name: str
	line: int          # of its name
	body: Tuple[int, int]   # offsets of its `{` and of the `}` that closes it
	static: bool = False    # `static` (or `static inline`): only its own file can call it


def functions(masked: str) -> List[Function]:
	"""The function definitions of a masked file, in order."""
	out: List[Function] = []
	depth = 0
	head_start = 0      # where the text before the next file-level `{` starts
	open_at = -1
	for i, c in enumerate(masked):
		if c == '{':
			if depth == 0:
				open_at = i
			depth += 1
		elif c == '}':
			depth -= 1
			if depth < 0:
				raise ValueError(f'unbalanced "}}" at line {line_of(masked, i)}')
			if depth == 0:
				f = _definition(masked, head_start, open_at, i)
				if f:
					out.append(f)
				head_start = i + 1
		elif c == ';' and depth == 0:
			head_start = i + 1
	if depth != 0:
		raise ValueError('unbalanced braces: the file ends inside a block')
	return out


def _definition(masked: str, start: int, brace: int, close: int) -> Optional[Function]:
	head = masked[start:brace]
	if '=' in head or not head.rstrip().endswith(')'):
		return None
	m = _IDENT_CALL_RE.search(head)
	if not m or m.group(1) in ('if', 'while', 'for', 'switch', 'sizeof', 'return'):
		return None
	return Function(m.group(1), line_of(masked, start + m.start(1)), (brace, close),
			re.search(r'\bstatic\b', head[:m.start()]) is not None)


def _close_paren(masked: str, open_at: int) -> int:
	"""The offset of the `)` matching the `(` at open_at."""
	depth = 0
	for k in range(open_at, len(masked)):
		if masked[k] == '(':
			depth += 1
		elif masked[k] == ')':
			depth -= 1
			if depth == 0:
				return k
	raise ValueError(f'unclosed "(" at line {line_of(masked, open_at)}')


def split_args(s: str) -> List[str]:
	"""The top-level comma-separated arguments of a call's text."""
	out, depth, cur = [], 0, ''
	for c in s:
		if c in '([{':
			depth += 1
		elif c in ')]}':
			depth -= 1
		if c == ',' and depth == 0:
			out.append(cur.strip())
			cur = ''
		else:
			cur += c
	if cur.strip() or out:
		out.append(cur.strip())
	return out


def normal(expr: str) -> str:
	"""A lock expression as sites group it: no blanks, no leading `&`."""
	e = re.sub(r'\s+', '', expr)
	while e.startswith('&'):
		e = e[1:]
	while e.startswith('(') and e.endswith(')') and _close_paren(e, 0) == len(e) - 1:
		e = e[1:-1]
	return e


# ------------------------------------------------------------------ the sites

@dataclass(frozen=True)
class CallSite:
	"""One call of a site: where it is in the file, what it is."""
	start: int
	end: int           # offset after its `)`
	line: int
	name: str
	args: Tuple[str, ...]


@dataclass
class Site:
	subsystem: str
	file: str          # relative to the tree
	function: str
	line: int          # of the function's name
	lock: str          # the lock expression (normal()), 'rtnl', or the capability
	kind: str
	calls: List[CallSite] = field(default_factory=list)
	callees: Tuple[str, ...] = ()     # every function its function calls
	# Functions it calls that only let go of a lock of the same kind and
	# member (autofs_notify_daemon() for autofs_wait()'s wq_mutex): without
	# the lock here, their unlock is unbalanced and lockdep says so.
	released_by: List[str] = field(default_factory=list)
	# A static function that nothing in the subsystem's sources calls or
	# takes the address of (autofs_add_expiring() in 6.12): no case can run
	# the site, so it is reported, not built.
	uncalled: bool = False
	static: bool = False
	body: Tuple[int, int] = (0, 0)

	@property
	def id(self) -> str:
		return f'{self.file}:{self.function}:{self.lock}'

	@property
	def paired(self) -> bool:
		"""A capability check, or a lock both taken and let go here."""
		roles = {CALLS[c.name].role for c in self.calls}
		return self.kind == Kind.CAPABILITY or {ACQUIRE, RELEASE} <= roles

	@property
	def lines(self) -> List[int]:
		return sorted({c.line for c in self.calls})

	def label(self) -> str:
		"""'lookup_lock in autofs_lookup()' for the page and the log."""
		what = ('capable(' + self.lock + ')' if self.kind == Kind.CAPABILITY else
			'RTNL' if self.kind == Kind.RTNL else
			'lock_sock(' + self.lock + ')' if self.kind == Kind.SOCK else self.lock)
		return f'{what} in {self.function}()'


def _lock_key(name: str, args: Sequence[str]) -> str:
	call = CALLS[name]
	if call.kind == Kind.RTNL:
		return 'rtnl'
	if call.kind == Kind.CAPABILITY:
		# the capability (the last argument: ns_capable(ns, CAP_X))
		return normal(args[-1]) if args else name
	return normal(args[0]) if args else name


def sites_of_text(text: str, subsystem: str, file: str) -> List[Site]:
	"""Every site (paired or not) of one file's text, in the order of the
	functions and, within one, of the first call."""
	masked = mask(text)
	out: List[Site] = []
	for f in functions(masked):
		by_key: Dict[Tuple[str, str], Site] = {}
		lo, hi = f.body
		callees = tuple(dict.fromkeys(m.group(1) for m in _IDENT_CALL_RE.finditer(masked, lo, hi)))
		for m in _CALL_RE.finditer(masked, lo, hi):
			name = m.group(1)
			open_at = m.end() - 1
			close = _close_paren(masked, open_at)
			args = tuple(split_args(text[open_at + 1:close]))
			call = CALLS[name]
			key = (call.kind, _lock_key(name, args))
			site = by_key.get(key)
			if site is None:
				site = by_key[key] = Site(subsystem, file, f.name, f.line, key[1], call.kind,
							  callees=callees, static=f.static, body=f.body)
			site.calls.append(CallSite(m.start(), close + 1, line_of(text, m.start()), name,
						   args))
		out.extend(_hand_overs(list(by_key.values())))
	return out


def _member(lock: str) -> str:
	return re.split(r'->|\.', lock)[-1]


def _hand_overs(sites: List[Site]) -> List[Site]:
	"""A lock handed over from one expression to another within a function
	(get_next_positive_dentry(): `spin_lock(&p->d_lock)` ...
	`spin_unlock(&parent->d_lock)`): a group that only takes or only lets
	go joins a paired group of the same kind and member name, and the site
	is both (`p->d_lock+parent->d_lock`), so that taking it out leaves
	nothing unbalanced."""
	paired = [s for s in sites if s.paired and s.kind != Kind.CAPABILITY]
	out = []
	for s in sites:
		if s.paired:
			out.append(s)
			continue
		into = next((p for p in paired if p.kind == s.kind
			     and _member(p.lock) == _member(s.lock)), None)
		if into is None:
			out.append(s)
			continue
		into.calls.extend(s.calls)
		into.calls.sort(key=lambda c: c.start)
		into.lock = f'{into.lock}+{s.lock}'
	return out


def source_files(ktree: Path, sub: Subsystem) -> List[Path]:
	"""The subsystem's .c and .h files (its tests/ directory left out)."""
	files: List[Path] = []
	for d in sub.dirs:
		base = Path(ktree) / d
		if not base.is_dir():
			raise UserError(f'{base} is not a directory: is {ktree} a kernel tree?')
		files += sorted(p for p in base.iterdir() if p.suffix in ('.c', '.h') and p.is_file())
	return files


_BLOCK_TOKEN_RE = re.compile(r'[{}]|[A-Za-z_]\w*')


def uses(masked: str) -> Dict[str, List[int]]:
	"""Where each identifier of a masked file occurs inside braces -
	function bodies and initializers (an ops table's `.open = f`) - which
	is where a function is called or its address taken; a prototype or a
	definition's own head is at file level and not a use."""
	out: Dict[str, List[int]] = {}
	depth = 0
	for m in _BLOCK_TOKEN_RE.finditer(masked):
		t = m.group()
		if t == '{':
			depth += 1
		elif t == '}':
			depth = max(depth - 1, 0)
		elif depth:
			out.setdefault(t, []).append(m.start())
	return out


def _mark_uncalled(sites: Sequence[Site], used: Dict[str, Dict[str, List[int]]]) -> None:
	"""Mark the sites of static functions that nothing else in their
	subsystem's sources uses (calls from the function's own body do not
	count); `used` is uses() of each source file, by its path."""
	for s in sites:
		if not s.static:
			continue
		lo, hi = s.body
		n = 0
		for file, per in used.items():
			for at in per.get(s.function, ()):
				if not (file == s.file and lo <= at <= hi):
					n += 1
		s.uncalled = n == 0


def discover(ktree: Path, subsystems: Sequence[str]) -> Tuple[List[Site], List[Site], List[str]]:
	"""(the sites, the unpaired lock uses, the files that could not be
	read as C) of the named subsystems of a tree."""
	sites: List[Site] = []
	unpaired: List[Site] = []
	problems: List[str] = []
	for name in subsystems:
		sub = SUBSYSTEMS[name]
		used: Dict[str, Dict[str, List[int]]] = {}
		mine: List[Site] = []
		unread = False
		for p in source_files(ktree, sub):
			rel = p.relative_to(ktree).as_posix()
			try:
				text = p.read_text(errors='surrogateescape')
				found = sites_of_text(text, name, rel)
			except ValueError as e:
				problems.append(f'{rel}: {e}')
				unread = True
				continue
			used[rel] = uses(mask(text))
			mine += found
		if not unread:		# a file not read may hold the caller
			_mark_uncalled(mine, used)
		for s in mine:
			(sites if s.paired else unpaired).append(s)
	releasers = [u for u in unpaired if {CALLS[c.name].role for c in u.calls} == {RELEASE}]
	for s in sites:
		s.released_by = [u.function for u in releasers
				 if u.kind == s.kind and _member(u.lock) == _member(s.lock)
				 and u.function in s.callees and u.subsystem == s.subsystem]
	return sites, unpaired, problems


def select(sites: Sequence[Site], filters: Sequence[str]) -> List[Site]:
	"""The sites whose id (file:function:lock) one of filters matches: a
	glob when it has *, ? or [, else a substring."""
	if not filters:
		return list(sites)
	out = []
	for s in sites:
		for f in filters:
			if (fnmatch.fnmatchcase(s.id, f) if any(c in f for c in '*?[')
			    else f in s.id):
				out.append(s)
				break
	return out


# ------------------------------------------------------------------ the mutant

def replacement(call: CallSite) -> str:
	"""The text that stands for one call in the mutant."""
	form = CALLS[call.name].form
	a = call.args
	lock = f'(void)({a[0]})' if a else '(void)0'
	if form == 'plain':
		return lock
	if form == 'none':
		return '(void)0'
	if form == 'arg':
		return lock
	if form == 'value0':
		return f'({lock}, 0)' if a else '0'
	if form == 'value1':
		return f'({lock}, 1)' if a else '1'
	if form == 'cap':
		return '(1)'
	if form == 'nscap':
		return '(' + ''.join(f'(void)({x}), ' for x in a[:-1]) + '1)'
	stmt = {'bh_off': 'local_bh_disable()', 'bh_on': 'local_bh_enable()',
		'irq_off': 'local_irq_disable()', 'irq_on': 'local_irq_enable()',
		'irqsave': f'local_irq_save({a[-1]})' if len(a) > 1 else '',
		'irqrestore': f'local_irq_restore({a[-1]})' if len(a) > 1 else ''}[form]
	if not stmt:
		raise ValueError(f'{call.name}() at line {call.line} without its flags argument')
	return f'do {{ {lock}; {stmt}; }} while (0)'


def mutate_text(text: str, site: Site) -> str:
	"""text (the file the site was found in, unchanged since) with every
	call of the site replaced; nothing else changes, line numbers stay."""
	out = text
	for c in sorted(site.calls, key=lambda c: c.start, reverse=True):
		if not re.match(re.escape(c.name) + r'\s*\(', text[c.start:c.end]):
			raise ValueError(f'{site.file}:{c.line}: {c.name}() is not where it was found')
		new = replacement(c)
		if '\n' in text[c.start:c.end]:
			# a call over several lines: keep the line count
			new += '\n' * text[c.start:c.end].count('\n')
		out = out[:c.start] + new + out[c.end:]
	return out


def find_site(ktree: Path, site_id: str, subsystems: Sequence[str]) -> Optional[Site]:
	sites, _, _ = discover(ktree, subsystems)
	return next((s for s in sites if s.id == site_id), None)
