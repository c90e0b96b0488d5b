# SPDX-License-Identifier: GPL-2.0
"""`kunit.py export --mail DIR`: the series as mail for the lists.

One `git format-patch --cover-letter` set per subsystem (DIR/mm, DIR/kunit,
DIR/ufs, DIR/appletalk, DIR/autofs), To/Cc from scripts/get_maintainer.pl,
and one stable request per mainline commit that makes one of our patches
redundant (DIR/stable, from kunit/stable-requests.txt; stable-kernel-rules
option 2).  The sets are made from the patch files in kernel-patches/, in a
throwaway clone of the prepared tree under $TMPDIR (the prepared tree is
only read), and each set is checked to apply with plain `git am` on the
pristine commit, after the sets it stands on: the KUnit helpers set
after the mm set whose APIs it calls (PREREQ), any other set after both
where it includes the helpers' headers.  `check()` is check-series'
`mail` check: it also runs `git send-email --dry-run` on every set.  See
docs/mail.md.
"""

import configparser
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..base import atomic, paths
from ..base.errors import UserError
from ..source import commitmsg, subsystems, tree

STABLE = 'stable@vger.kernel.org'
REQUESTS_FILE = paths.KUNIT_DIR / 'stable-requests.txt'
UPSTREAM_FILE = paths.KUNIT_DIR / 'upstream-commits.txt'
FAULTS_CONFIG = paths.KUNIT_DIR / 'profiles' / 'faults.config'

# The order the sets are made and sent in: the helpers the others use first.
SET_ORDER = ['mm', 'kunit', 'ufs', 'appletalk', 'autofs']
HELPERS = 'kunit'
# A set that calls what an earlier set adds is made, and checked, on top of
# it: {set: the set under it}.  The sets that include the helpers' headers
# go on top of the helpers, and so of what is under them too.
PREREQ: Dict[str, str] = {'kunit': 'mm'}
# The throwaway clone's sparse checkout beside the subsystems: the top-level
# files (MAINTAINERS), scripts/, and a file in each directory whose presence
# get_maintainer.pl takes for a kernel tree (top_of_kernel_tree()).
SPARSE = ['/*', '!/*/', '/scripts/', '/Documentation/process/stable-kernel-rules.rst',
	  '/arch/Kconfig', '/drivers/Makefile', '/fs/Makefile', '/include/linux/kernel.h',
	  '/init/Makefile', '/ipc/Makefile', '/kernel/Makefile', '/lib/Makefile',
	  '/net/Makefile']


@dataclass(frozen=True)
class SetInfo:
	prefix: str         # git format-patch --subject-prefix
	cover_subject: str  # after "[PATCH 0/N] "
	kunitconfig: str    # --kunitconfig= of the tree's kunit.py ('' for none)
	intro: str          # the first paragraphs of the cover letter
	to_stable: bool = False   # the set is for a stable series: To: stable


SETS: Dict[str, SetInfo] = {
	'mm': SetInfo(
		'PATCH', 'mm: let kernel tests clear the allocation fault filters and '
		'scan for leaks', '',
		'Kernel tests that fail each allocation of an operation in turn '
		'(current->fail_nth, what /proc/<pid>/fail-nth sets) and check with '
		'kmemleak that no failure path leaks can do neither through a public '
		'interface today: failslab and fail_page_alloc skip every GFP_KERNEL '
		'allocation by default and their filters are debugfs files, and '
		'kmemleak scans when its debugfs file is written or every ten '
		'minutes.  This adds failslab_get_filter()/failslab_set_filter(), '
		'fail_page_alloc_get_filter()/fail_page_alloc_set_filter(), '
		'kmemleak_scan_now() and kmemleak_clear_leaks(), each with a KUnit '
		'suite (fail_alloc, kmemleak) and documentation.  The KUnit '
		'fault-injection helpers sent with it (include/kunit/fault.h) are '
		'their first user; each patch says how to run its suite.'),
	'kunit': SetInfo(
		'PATCH', 'kunit: helpers for fault injection, lockdep checks and test kthreads',
		'lib/kunit',
		'This adds three helpers that the KUnit suites of the ufs, appletalk '
		'and autofs sets sent with it share.  include/kunit/fault.h and '
		'lib/kunit/fault.c let a test fail each allocation of an operation in '
		'turn, scoped to the test\'s own task through current->fail_nth, and '
		'check with kmemleak that no failure path leaks, with the APIs the mm '
		'set adds; the ufs suite found '
		'leaks on the error paths of a mount, which the ufs set fixes, and an '
		'oops at unmount that mainline has fixed since 6.12.  '
		'include/kunit/watch.h fails a case for a lockdep report or a WARN '
		'made while it ran, its cleanup included.  include/kunit/thread.h runs '
		'the part of a test that may deadlock in a kthread joined with a '
		'timeout, and leaves a stuck thread behind with what it uses instead '
		'of freeing that under it.  The last two come with suites of their '
		'own (kunit_watch, kunit_thread).'),
	'ufs': SetInfo(
		'PATCH', 'ufs: KUnit suites, and the fixes they found', 'fs/ufs',
		'This adds KUnit suites for fs/ufs that mount UFS1 and UFS2 images '
		'made by BSD tools (carried in the kernel, no disk needed), map, '
		'read, write and rename on them, feed them corrupted images and fail '
		'each allocation of a mount, a read and an unmount in turn; and it '
		'fixes what they found: a UFS2 superblock the driver did not look '
		'for, leaks of cylinder group structures and buffer heads on error '
		'paths and at unmount, and a directory page read error turned into '
		'an empty directory.'),
	'appletalk': SetInfo(
		'RFC PATCH 6.12.y', 'appletalk: locking fixes and KUnit suites for 6.12.y',
		'net/appletalk',
		'AppleTalk has been removed from mainline, so these fixes cannot go '
		'the usual way: there is no net tree to send them to and no mainline '
		'commit for stable to pick.  They are posted for 6.12.y, which still '
		'builds net/appletalk, as an RFC: stable-kernel-rules asks for an '
		'equivalent fix in mainline first, which cannot exist here, so it is '
		'for the stable maintainers to say whether they take fixes for code '
		'mainline dropped.  The fixes close races between socket calls (bind, '
		'connect, sendmsg, release, TIOCINQ) and between sendmsg and route or '
		'device removal, found by the KUnit suites that follow them, which '
		'run DDP sockets over loopback with no hardware.', to_stable=True),
	'autofs': SetInfo(
		'PATCH', 'autofs: KUnit suites for protocol negotiation, ioctls and mount',
		'fs/autofs',
		'This adds KUnit suites for autofs: protocol version negotiation '
		'through the mount options, the ioctls of the root directory and of '
		'/dev/autofs, a fault-injection walk over the mount, and an end-state '
		'check that the BKL-era autofs3 and smbfs code and the BKL itself '
		'stay gone.  They found nothing to fix in 6.12; they are here so '
		'that a later change to the locking of autofs is checked.'),
}


def subsystem_of(name: str, text: str) -> str:
	"""The one subsystem a patch touches; a UserError (one line) otherwise."""
	found: List[str] = []
	for f in subsystems.touched_files(text):
		if f in subsystems.NEUTRAL:
			continue
		subs = [s for s, prefixes in subsystems.SUBSYSTEMS.items() if f.startswith(prefixes)]
		if not subs:
			subs = ['?']
		if subs[0] not in found:
			found.append(subs[0])
		if subs[0] == '?':
			found[found.index('?')] = f'? ({f})'
	known = [s for s in found if not s.startswith('?')]
	unknown = [s[3:-1] for s in found if s.startswith('?')]
	if len(known) == 1 and not unknown:
		return known[0]
	where = ', '.join(f'{s} ({" + ".join(subsystems.SUBSYSTEMS[s])})' for s in subsystems.SUBSYSTEMS)
	if not known and not unknown:
		raise UserError(f'{name}: touches no file of a subsystem ({where}); '
				'a mail set is one subsystem')
	parts = known + [f'{u}, in no subsystem' for u in unknown]
	raise UserError(f'{name}: touches {" and ".join(parts)}; a mail set is one '
			'subsystem: split the patch')


STABLE_CC = re.compile(r'^Cc:\s*(.*<)?stable@vger\.kernel\.org>?\s*(#.*)?$', re.I)


def message_words(text: str) -> str:
	"""The commit message of a format-patch file after its subject (body and
	trailers, commitmsg.split), its words one space apart."""
	return ' '.join(commitmsg.split(text).text.split())


def cc_stable(text: str) -> bool:
	"""Whether a patch asks stable for itself: a `Cc: stable@...` trailer."""
	return any(STABLE_CC.match(t) for t in commitmsg.split(text).tags('Cc'))


# ------------------------------------------------------------ stable requests

@dataclass
class Request:
	id: str
	subject: str        # mainline's, from upstream-commits.txt
	replaces: str       # our patch's subject
	mainline: str
	for_series: str
	test: str
	command: str
	why: str
	with_ids: List[str] = field(default_factory=list)


def known_upstream(path: Path = UPSTREAM_FILE) -> Dict[str, str]:
	"""kunit/upstream-commits.txt as {12-char id: subject}: what the stable
	requests and check-series' Fixes:/citation check accept."""
	known = {}
	for line in path.read_text().splitlines():
		if line.strip() and not line.startswith('#'):
			cid, _, subject = line.partition(' ')
			known[cid[:12]] = subject.strip()
	return known


REQUEST_KEYS = {'replaces', 'mainline', 'for', 'with', 'test', 'command', 'why'}


def read_requests(text: str, known: Dict[str, str], source: str = 'stable-requests.txt'
		  ) -> List[Request]:
	"""The requests of the file; a UserError for an id not in known
	(upstream-commits.txt), a missing or unknown key, a bad `with`."""
	cp = configparser.ConfigParser(interpolation=None, comment_prefixes=('#',),
				       empty_lines_in_values=False)
	try:
		cp.read_string(text, source=source)
	except configparser.Error as e:
		raise UserError(f'{source}: {" ".join(str(e).split())}')
	out = []
	for sec in cp.sections():
		if not re.fullmatch(r'[0-9a-f]{12}', sec):
			raise UserError(f'{source}: [{sec}] is not a 12-digit mainline id')
		if sec not in known:
			raise UserError(f'{source}: [{sec}] is not listed in upstream-commits.txt')
		s = cp[sec]
		extra = set(s) - REQUEST_KEYS
		if extra:
			raise UserError(f'{source}: [{sec}]: unknown key(s) {", ".join(sorted(extra))}')
		missing = sorted(REQUEST_KEYS - {'with'} - set(s))
		if missing:
			raise UserError(f'{source}: [{sec}]: missing {", ".join(missing)}')

		def flat(k: str) -> str:
			return ' '.join(s[k].split())
		out.append(Request(sec, known[sec], flat('replaces'), flat('mainline'), flat('for'),
				   flat('test'), flat('command'), flat('why'),
				   s.get('with', '').split()))
	ids = {r.id for r in out}
	for r in out:
		for w in r.with_ids:
			if w not in ids:
				raise UserError(f'{source}: [{r.id}]: with {w}, which has no section')
	return out


def request_problems(requests: Sequence[Request], patches: Sequence[Path]) -> List[str]:
	"""What is wrong between the requests and the series: a replaced patch
	that is not in it, that does not cite the mainline id in its message,
	or that asks stable for itself (Cc: stable)."""
	by_subject = {tree.patch_subject(p): p for p in patches}
	bad = []
	for r in requests:
		p = by_subject.get(r.replaces)
		if p is None:
			bad.append(f'{r.id}: replaces "{r.replaces}", which is not a patch of the series')
			continue
		text = p.read_text(errors='replace')
		if r.id not in message_words(text):
			bad.append(f'{r.id}: {p.name} does not cite it in its message')
		if cc_stable(text):
			bad.append(f'{r.id}: {p.name} carries Cc: stable; stable should take '
				   'the mainline commit instead')
	return bad


def fill(text: str, indent: str = '', hang: Optional[str] = None) -> str:
	return textwrap.fill(' '.join(text.split()), width=72, initial_indent=indent,
			     subsequent_indent=indent if hang is None else hang,
			     break_on_hyphens=False, break_long_words=False)


def is_test(text: str) -> bool:
	"""A patch that touches a KUnit test (a tests/ file or a .kunitconfig);
	the others change the code itself."""
	return any('/tests/' in f or f.endswith('.kunitconfig') for f in subsystems.touched_files(text))


def command_block(command: str) -> str:
	"""A shell command, broken before its options at 72 columns, with \\."""
	words: List[str] = []
	for w in command.split(' '):
		# An option and its value stay on one line.
		if words and words[-1].startswith('--') and '=' not in words[-1] \
		   and not w.startswith('-'):
			words[-1] += ' ' + w
		else:
			words.append(w)
	lines, cur = [], '  '
	for w in words:
		if len(cur) + len(w) + 1 > 70 and cur.strip():
			lines.append(cur.rstrip() + ' \\')
			cur = '    '
		cur += ('' if cur.endswith(' ') else ' ') + w
	lines.append(cur.rstrip())
	return '\n'.join(lines)


def request_text(r: Request, sender: str, cc: Sequence[str], set_subject: str,
		 by_id: Dict[str, Request]) -> str:
	"""The stable request for one mainline commit, as a mail file."""
	cite = f'{r.id} ("{r.subject}")'
	body = ['Hello,', '',
		fill(f'Please apply mainline commit {cite}, in mainline since '
		     f'{r.mainline}, to {r.for_series}.'), '',
		fill('Why: ' + r.why), '']
	for w in r.with_ids:
		o = by_id[w]
		body += [fill(f'It goes with {o.id} ("{o.subject}"), requested in a mail '
			      'of its own; please take both, in mainline order.'), '']
	body += [fill(f'How we found it: the KUnit case {r.test}, which we post for '
		      f'review with the set "{set_subject}", shows it on '
		      f'{r.for_series}.  In a 6.12 tree with that set applied:'), '',
		 command_block(r.command), '',
		 fill(f'We wrote our own minimal fix for 6.12 first ("{r.replaces}") '
		      'and the case passes with it; we do not post it, because '
		      'stable should carry what mainline has.  We have not applied '
		      f'{r.id} to 6.12 ourselves, so please tell us if it needs a '
		      'backport and we will send one (option 3) and run the case on '
		      'it.'), '',
		 'Thanks.', '']
	heads = ['From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001',
		 f'From: {sender}', f'To: {STABLE}']
	if cc:
		heads.append('Cc: ' + ',\n    '.join(cc))
	heads += [f'Subject: {r.for_series}: please apply {cite}',
		  'MIME-Version: 1.0', 'Content-Type: text/plain; charset=UTF-8',
		  'Content-Transfer-Encoding: 8bit']
	return '\n'.join(heads) + '\n\n' + '\n'.join(body)


# ------------------------------------------------------------ sets

def split_series(patches: Sequence[Path], left_out: Sequence[str] = ()) -> Dict[str, List[Path]]:
	"""{subsystem: its patches in series order}, in SET_ORDER, without the
	patches whose subject is in left_out.  A UserError names the first
	patch that is in no subsystem or in two."""
	sets: Dict[str, List[Path]] = {s: [] for s in SET_ORDER}
	for p in patches:
		text = p.read_text(errors='replace')
		sub = subsystem_of(p.name, text)
		if tree.patch_subject(p) in left_out:
			continue
		sets[sub].append(p)
	return {s: ps for s, ps in sets.items() if ps}


def stale_mentions(sets: Dict[str, List[Path]], left_out: Sequence[str]) -> List[str]:
	"""Patches of the sets whose message names a left-out patch by its
	subject ("the fix earlier in this series ..."): in the mail set that
	patch is not there, and the message wants a word about mainline's
	commit instead.  A note, not an error: the words are kernel-patches/'s."""
	out = []
	for ps in sets.values():
		for p in ps:
			msg = message_words(p.read_text(errors='replace'))
			for s in left_out:
				if s in msg:
					out.append(f'{p.name} names "{s}", which is not in its mail set')
	return out


def added_headers(patches: Sequence[Path]) -> List[str]:
	"""The include names (kunit/fault.h) of the headers these patches add."""
	out = []
	for p in patches:
		for m in re.finditer(r'^diff --git a/include/(\S+\.h) b/\S+\nnew file mode',
				     p.read_text(errors='replace'), re.M):
			out.append(m.group(1))
	return out


def and_list(items: Sequence[str]) -> str:
	"""'a', 'a and b', 'a, b and c'."""
	if len(items) <= 1:
		return ''.join(items)
	return ', '.join(items[:-1]) + ' and ' + items[-1]


def _include_pattern(headers: Sequence[str]) -> 're.Pattern[str]':
	return re.compile(r'^\+\s*#\s*include\s*<(' + '|'.join(re.escape(h) for h in headers)
			  + r')>', re.M)


def users_of(patches: Sequence[Path], headers: Sequence[str]) -> List[Path]:
	"""The patches that add an #include of one of the headers."""
	if not headers:
		return []
	pat = _include_pattern(headers)
	return [p for p in patches if pat.search(p.read_text(errors='replace'))]


def included(patches: Sequence[Path], headers: Sequence[str]) -> List[str]:
	"""Which of the headers these patches add an #include of, in the
	headers' order."""
	if not headers:
		return []
	pat = _include_pattern(headers)
	found = {m.group(1) for p in patches for m in pat.finditer(p.read_text(errors='replace'))}
	return [h for h in headers if h in found]


def first_includes(patches: Sequence[Path],
		   headers: Sequence[str]) -> List[Tuple[Path, List[str]]]:
	"""(patch, headers) for each patch that is the first of @patches to
	include one of @headers, in series order; a patch's headers in the
	headers' order."""
	seen: Set[str] = set()
	out: List[Tuple[Path, List[str]]] = []
	for p in patches:
		new = [h for h in included([p], headers) if h not in seen]
		if new:
			seen.update(new)
			out.append((p, new))
	return out


def fault_options(set_patches: Sequence[Path], config: Path = FAULTS_CONFIG) -> List[str]:
	"""The faults profile's options a set's fault-injection suite needs:
	the general ones, and of the suite symbols only those the set defines."""
	defined = set()
	for p in set_patches:
		defined |= set(re.findall(r'^\+config (\w+)', p.read_text(errors='replace'), re.M))
	out = []
	try:
		lines = config.read_text().splitlines()
	except OSError:
		return []
	for line in lines:
		m = re.match(r'^CONFIG_(\w+)=y', line)
		if m and (not m.group(1).endswith('_KUNIT_TEST') or m.group(1) in defined):
			out.append(f'CONFIG_{m.group(1)}=y')
	return out if any(o[7:-2] in defined for o in out) else []


def sets_under(name: str, needs_helpers: bool, present: Sequence[str]) -> List[str]:
	"""The sets a set is made and checked on, bottom first, of those
	present: the helpers (and what is under them) for a set that includes
	their headers, PREREQ's set (and what is under it) for one in PREREQ."""
	below = HELPERS if needs_helpers and name != HELPERS else PREREQ.get(name)
	if below is None or below not in present:
		return []
	return sets_under(below, False, present) + [below]


def cover_subject(ms: 'MailSet') -> str:
	"""The cover letter's subject as format-patch numbers it (00/16)."""
	n = len(ms.patches)
	return f'[{ms.info.prefix} {0:0{len(str(n))}d}/{n}] {ms.info.cover_subject}'


@dataclass
class MailSet:
	name: str
	info: SetInfo
	patches: List[Path]                  # from kernel-patches/
	needs_helpers: List[Path] = field(default_factory=list)
	under: List[str] = field(default_factory=list)   # sets_under(): made on these
	helper_headers: List[str] = field(default_factory=list)  # kunit/fault.h, ...
	files: List[Path] = field(default_factory=list)  # cover first
	to: List[str] = field(default_factory=list)
	cc: List[str] = field(default_factory=list)
	rebased: int = 0     # patches whose diff differs from kernel-patches/
	notes: List[str] = field(default_factory=list)


def cover_body(ms: MailSet, numbers: Dict[Path, int], requests: Sequence[Request],
	       debver: str, subjects: Dict[str, str], faults: Sequence[str]) -> str:
	"""The cover letter's text; subjects: {set: its cover's subject} of
	every set made with it (those it depends on are named)."""
	n = len(ms.patches)
	w = len(str(n))

	def ref(p: Path) -> str:
		return f'{numbers[p]:0{w}d}/{n}'
	out = [fill(ms.info.intro), '']
	# The helpers set is helpers with their own tests, not fixes and tests: one list.
	fixes = [] if ms.name == HELPERS else \
		[p for p in ms.patches if not is_test(p.read_text(errors='replace'))]
	tests = [p for p in ms.patches if p not in fixes]
	hang = ' ' * (len(ref(ms.patches[0])) + 3)
	if fixes and tests:
		out += [fill('The changes to the code come first, each before the test '
			     'that shows why it is needed; the messages of the fixes quote '
			     'the failure and the command that shows it.  Those marked '
			     '[stable] carry Cc: stable@vger.kernel.org:'), '']
		for p in fixes:
			mark = ' [stable]' if cc_stable(p.read_text(errors='replace')) else ''
			out.append(fill(f'{ref(p)} {tree.patch_subject(p)}{mark}', '  ', hang))
		out += ['', 'The tests:', '']
	if tests or fixes:
		out += [fill(f'{ref(p)} {tree.patch_subject(p)}', '  ', hang)
			for p in (tests if fixes and tests else ms.patches)]
		out += ['']
	mine = list(requests)
	if mine:
		out += [fill('Not in this set: our fixes for bugs that mainline has already '
			     'fixed.  For those we ask the stable team, in separate mails to '
			     'stable@vger.kernel.org, to take the mainline commits into '
			     '6.12.y; until it does, the case named fails on 6.12.y:'), '']
		for r in mine:
			out.append(fill(f'{r.id} ("{r.subject}"): {r.test}', '  ', '    '))
		out += ['']
		if ms.notes:
			out += [fill('Where a message below speaks of one of those fixes as '
				     'earlier in this series, it means our whole 6.12 series; '
				     'here, read the mainline commit.'), '']
	if ms.needs_helpers:
		# "the suites include <a> from patch 08/21, <b> and <c> from patch 10/21 on"
		what = [f'{and_list([f"<{h}>" for h in hs])} from patch {ref(p)}'
			for p, hs in first_includes(ms.needs_helpers, ms.helper_headers)]
		out += [fill(f'Depends on "{subjects.get(HELPERS, "")}" (the KUnit helpers set, sent '
			     'separately): the suites include ' + and_list(what)
			     + ' on.  The prerequisite-patch-id below names it.'), '']
	prereq = PREREQ.get(ms.name)
	if prereq and prereq in ms.under and prereq in subjects:
		out += [fill(f'Depends on "{subjects[prereq]}" (the {prereq} set, sent '
			     'separately), whose functions it calls.  The '
			     'prerequisite-patch-id lines below name its patches.'), '']
	elif ms.needs_helpers and ms.under[:-1]:
		out += [fill('The helpers set itself applies on '
			     + and_list([f'"{subjects[u]}"' for u in ms.under[:-1] if u in subjects])
			     + ', also named below.'), '']
	if ms.info.kunitconfig:
		out += ['To run the suites, in a tree with this set applied:', '',
			f'  tools/testing/kunit/kunit.py run --kunitconfig={ms.info.kunitconfig}', '']
		if faults and ms.name != HELPERS:
			out += [fill('The fault-injection suite builds only with fault injection '
				     'and kmemleak; add:'), '',
				command_block(' '.join(f'--kconfig_add {o}' for o in faults)), '']
	if ms.name == HELPERS:
		out += [fill('To see the fault-injection helpers at work, run a fault-injection '
			     'suite of the other sets, e.g. in a tree with this set and the '
			     'ufs set applied:'), '',
			command_block('tools/testing/kunit/kunit.py run --kunitconfig=fs/ufs '
				      + ' '.join(f'--kconfig_add {o}' for o in faults)
				      + " 'ufs_faults'"), '']
	out += [fill(f'Based on Debian\'s linux-source-6.12 {debver}, which is '
		     f'v{tree.upstream_version(debver)} with Debian\'s patches; base-commit '
		     'below is that source as imported into git.  '
		     + ('The set targets 6.12.y.' if ms.info.to_stable else
			'It has not been rebased onto mainline yet.')), '']
	if ms.rebased:
		out += [fill(f'{ms.rebased} of the patches differ in context from our '
			     'full series, where the fixes left out of this set sit '
			     'before them.'), '']
	return '\n'.join(out).rstrip() + '\n'


# ------------------------------------------------------------ get_maintainer

# "Name <addr> (role:SECTION (X))" or "list@host (open list:SECTION)".
GM_RE = re.compile(r'^(?P<addr>[^<(]*<[^>]+>|[^\s<(]+@[^\s<(]+)\s+\((?P<role>.*)\)\s*$')


def recipients(gm_output: str, drop: Sequence[str] = ()) -> Tuple[List[str], List[str]]:
	"""(To, Cc) from `get_maintainer.pl` (with roles), without the
	addresses of drop (the sender): maintainers To, reviewers, supporters
	and lists Cc; with no maintainer left, the lists of the subsystem's own
	sections (not the bare "open list", not a keyword match) go To."""
	to, cc, own = [], [], []
	gone = {address_of(d) for d in drop}
	for line in gm_output.splitlines():
		m = GM_RE.match(line.strip())
		if not m or address_of(m.group('addr')) in gone:
			continue
		addr, role = m.group('addr'), m.group('role')
		if role.startswith('maintainer:'):
			to.append(addr)
		else:
			cc.append(addr)
			if role.startswith(('open list:', 'moderated list:', 'list:')) \
			   and ':Keyword:' not in role:
				own.append(addr)
	if not to:
		to = own
		cc = [a for a in cc if a not in own]
	return to, cc


def address_of(addr: str) -> str:
	m = re.search(r'<([^>]+)>', addr)
	return (m.group(1) if m else addr).strip().lower()


def without(addrs: Sequence[str], drop: Sequence[str]) -> List[str]:
	gone = {address_of(d) for d in drop}
	out, seen = [], set()
	for a in addrs:
		k = address_of(a)
		if k not in gone and k not in seen:
			seen.add(k)
			out.append(a)
	return out


def set_headers(text: str, to: Sequence[str], cc: Sequence[str]) -> str:
	"""text (a mail) with its To: and Cc: headers replaced by these."""
	head, sep, body = text.partition('\n\n')
	lines = head.split('\n')
	kept: List[str] = []
	skipping = False
	for l in lines:
		if l[:1] in (' ', '\t') and skipping:
			continue
		skipping = bool(re.match(r'^(To|Cc):', l, re.I))
		if not skipping:
			kept.append(l)
	# After Subject (and its continuation lines).
	at = len(kept)
	for i, l in enumerate(kept):
		if l.startswith('Subject:'):
			at = i + 1
			while at < len(kept) and kept[at][:1] in (' ', '\t'):
				at += 1
	add = []
	if to:
		add.append('To: ' + ',\n    '.join(to))
	if cc:
		add.append('Cc: ' + ',\n    '.join(cc))
	kept[at:at] = add
	return '\n'.join(kept) + sep + body


def sender_of(patches: Sequence[Path]) -> str:
	"""The author of the first patch (its From:, unfolded)."""
	for p in patches:
		m = re.search(r'^From: (.*(?:\n[ \t].*)*)', p.read_text(errors='replace'), re.M)
		if m:
			return ' '.join(m.group(1).split())
	raise UserError('no patch names its author (From:)')


def diff_lines(text: str) -> List[str]:
	"""The diff of a patch without hunk positions and index lines, to
	compare a patch rebased by git am -3 with the original."""
	d = text.split('\n---\n', 1)[-1]
	d = d[d.find('\ndiff --git'):]
	d = re.sub(r'\n-- \n[^\n]*\n*$', '\n', d)     # the signature
	return [l for l in d.rstrip('\n').splitlines() if not l.startswith(('index ', '@@'))]


# ------------------------------------------------------------ the work

@dataclass
class Result:
	sets: List[MailSet]
	requests: List[Path]
	seconds: float


def make_mail(cache: Path, outdir: Path, patches: Optional[Sequence[Path]] = None,
	      requests_text: Optional[str] = None, verbose: bool = False) -> Result:
	"""Write the sets and the stable requests into outdir; UserError when a
	patch is in no subsystem or two, or a set does not apply."""
	t0 = time.time()
	if patches is None:
		patches = tree.read_series(paths.PATCH_DIR)
	split_series(patches)     # a patch in no subsystem or in two: said first
	known = known_upstream()
	requests = read_requests(REQUESTS_FILE.read_text() if requests_text is None
				 else requests_text, known)
	bad = request_problems(requests, patches)
	if bad:
		raise UserError(f'{REQUESTS_FILE.name}: ' + '; '.join(bad))
	left_out = [r.replaces for r in requests]
	sets = split_series(patches, left_out)
	if HELPERS not in sets:
		raise UserError('no KUnit helpers patch (lib/kunit, include/kunit) in the series')
	headers = added_headers(sets[HELPERS])
	sender = sender_of(patches)
	main = tree.find_prepared(cache)
	st = tree.load_state(main)
	debver = st.debian_version
	mail_sets = []
	for name, ps in sets.items():
		ms = MailSet(name, SETS[name], ps)
		if name != HELPERS:
			ms.needs_helpers = users_of(ps, headers)
			ms.helper_headers = included(ms.needs_helpers, headers)
		ms.notes = stale_mentions({name: ps}, left_out)
		mail_sets.append(ms)
	outdir = Path(outdir).resolve()
	paths.usable_dir(outdir, 'mail directory')
	for sub in SET_ORDER + ['stable']:
		shutil.rmtree(outdir / sub, ignore_errors=True)
	work = Path(tempfile.mkdtemp(prefix='bkl-kunit-mail-'))
	clone = work / 'linux'
	try:
		if verbose:
			print(f'Cloning {main} (shared, no checkout) into {clone} ...', flush=True)
		tree.git(work, 'clone', '-q', '--shared', '--no-checkout', str(main), str(clone))
		# Only what git am and get_maintainer.pl need: seconds, not a
		# minute, to check out and to delete.
		tree.git(clone, 'sparse-checkout', 'set', '--no-cone', *SPARSE,
			 *[f'/{d}' for prefixes in subsystems.SUBSYSTEMS.values() for d in prefixes])
		tree.git(clone, 'checkout', '-q', '--detach', st.pristine)
		present = [m.name for m in mail_sets]
		req_by_set: Dict[str, List[Request]] = {}
		by_subject = {tree.patch_subject(p): p for p in patches}
		for r in requests:
			sub = subsystem_of(by_subject[r.replaces].name,
					   by_subject[r.replaces].read_text(errors='replace'))
			req_by_set.setdefault(sub, []).append(r)
		heads: Dict[str, str] = {}
		for ms in mail_sets:
			ms.under = sets_under(ms.name, bool(ms.needs_helpers), present)
			base = heads[ms.under[-1]] if ms.under else st.pristine
			tree.git(clone, 'checkout', '-q', '-f', '--detach', base)
			# -3: a set without the left-out fixes may need its context moved.
			proc = tree.git(clone, 'am', '-q', '-3', '--keep-non-patch',
					*[str(p) for p in ms.patches], check=False)
			if proc.returncode != 0:
				tree.git(clone, 'am', '--abort', check=False)
				raise UserError(f'the {ms.name} set does not apply on the pristine tree'
						+ (f' after the {and_list(ms.under)} set(s)' if ms.under else '')
						+ ': ' + ' '.join((proc.stdout + proc.stderr).split())[:400])
			heads[ms.name] = tree.head(clone)
			d = outdir / ms.name
			tree.git(clone, 'format-patch', '-q', '--cover-letter', '--numbered',
				 f'--subject-prefix={ms.info.prefix}', '--zero-commit', '--abbrev=12',
				 f'--base={st.pristine}', '-o', str(d), f'{base}..HEAD')
			ms.files = sorted(d.glob('*.patch'))
			ms.rebased = sum(1 for orig, new in zip(ms.patches, ms.files[1:])
					 if diff_lines(orig.read_text(errors='replace'))
					 != diff_lines(new.read_text(errors='replace')))
			gm = subprocess.run(['perl', 'scripts/get_maintainer.pl', '--no-git',
					     '--no-git-fallback', '--no-fixes']
					    + [str(f) for f in ms.files[1:]],
					    cwd=clone, capture_output=True, text=True)
			if gm.returncode != 0:
				raise UserError(f'get_maintainer.pl failed on the {ms.name} set: '
						+ ' '.join(gm.stderr.split())[:300])
			to, cc = recipients(gm.stdout, [sender])
			if ms.info.to_stable:
				to = [STABLE] + to
			ms.to = without(to, [sender])
			ms.cc = without(cc, [sender] + ms.to)
		# Covers and headers, once every set (and every subject) is known.
		set_subjects = {ms.name: cover_subject(ms) for ms in mail_sets}
		for ms in mail_sets:
			numbers = {p: i + 1 for i, p in enumerate(ms.patches)}
			# The helpers' cover shows them at work in the ufs suite.
			faults = fault_options(sets.get('ufs', []) if ms.name == HELPERS
					       else ms.patches)
			body = cover_body(ms, numbers, req_by_set.get(ms.name, []), debver,
					  set_subjects, faults)
			cover = ms.files[0].read_text()
			# format-patch signs the cover with the committer (the tool).
			cover = re.sub(r'^From: .*$', lambda m: f'From: {sender}', cover, count=1,
				       flags=re.M)
			cover = cover.replace('*** SUBJECT HERE ***', ms.info.cover_subject)
			cover = cover.replace('*** BLURB HERE ***\n', body)
			stable_cc = [STABLE] if not ms.info.to_stable else []
			any_stable = False
			for i, f in enumerate(ms.files):
				text = cover if i == 0 else f.read_text()
				extra = []
				if i and cc_stable(text):
					extra = stable_cc
					any_stable = True
				atomic.write_text(f, set_headers(text, ms.to, without(ms.cc + extra, ms.to)))
			if any_stable and stable_cc:
				atomic.write_text(ms.files[0], set_headers(ms.files[0].read_text(), ms.to,
									   without(ms.cc + stable_cc, ms.to)))
		# Applies as written: plain git am on the pristine tree, the sets
		# under it first.
		by_name = {m.name: m for m in mail_sets}
		for ms in mail_sets:
			tree.git(clone, 'checkout', '-q', '-f', '--detach', st.pristine)
			files = [f for u in ms.under for f in by_name[u].files[1:]] + ms.files[1:]
			proc = tree.git(clone, 'am', '-q', *[str(f) for f in files], check=False)
			if proc.returncode != 0:
				tree.git(clone, 'am', '--abort', check=False)
				raise UserError(f'the written {ms.name} set does not apply with git am on '
						'the pristine tree: '
						+ ' '.join((proc.stdout + proc.stderr).split())[:400])
		# The stable requests: To stable, Cc the subsystem's people.
		written = []
		if requests:
			sd = outdir / 'stable'
			sd.mkdir(parents=True, exist_ok=True)
			by_id = {r.id: r for r in requests}
			for r in requests:
				sub = subsystem_of(by_subject[r.replaces].name,
						   by_subject[r.replaces].read_text(errors='replace'))
				ms = next(m for m in mail_sets if m.name == sub)
				f = sd / f'{r.id}-{r.for_series}.mbox'
				atomic.write_text(f, request_text(r, sender, without(ms.to, [STABLE]),
								  set_subjects[sub], by_id))
				written.append(f)
	finally:
		shutil.rmtree(work, ignore_errors=True)
	return Result(mail_sets, written, time.time() - t0)


def send_email_dry_run(files: Sequence[Path], sender: str, cwd: Path
		       ) -> Tuple[bool, str, Dict[str, List[str]]]:
	"""`git send-email --dry-run` on the files: (ok, output, {subject: recipients}).
	No SMTP server is needed or contacted: --dry-run sends nothing, and
	--smtp-server=/bin/true would be the "sendmail" if it did."""
	cmd = ['git', 'send-email', '--dry-run', '--confirm=never', f'--from={sender}',
	       '--smtp-server=/bin/true', '--suppress-cc=self', '--no-format-patch',
	       '--8bit-encoding=UTF-8'] + [str(f) for f in files]
	name, _, mail = sender.rpartition('<')
	who = {'GIT_AUTHOR_NAME': name.strip().strip('"') or 'bkl-kunit',
	       'GIT_AUTHOR_EMAIL': mail.rstrip('>') or 'bkl-kunit@localhost'}
	who.update(GIT_COMMITTER_NAME=who['GIT_AUTHOR_NAME'],
		   GIT_COMMITTER_EMAIL=who['GIT_AUTHOR_EMAIL'])
	try:
		proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
				      stdin=subprocess.DEVNULL, env=tree.git_env(who), timeout=300)
	except (OSError, subprocess.TimeoutExpired) as e:
		return False, f'git send-email could not run: {e}', {}
	out = proc.stdout + proc.stderr
	rcpt: Dict[str, List[str]] = {}
	for block in out.split('Dry-OK. Log says:')[1:]:
		subj = re.search(r'^Subject: (.*)$', block, re.M)
		to = re.search(r'^Sendmail: \S+ -i (.*)$', block, re.M)
		rcpt[subj.group(1) if subj else '?'] = to.group(1).split() if to else []
	ok = proc.returncode == 0 and out.count('Dry-OK. Log says:') == len(files)
	return ok, out, rcpt


def summary_lines(res: Result) -> List[str]:
	out = []
	for ms in res.sets:
		dep = f' (after the {" and ".join(ms.under)} set(s))' if ms.under else ''
		out.append(f'{ms.name}: {len(ms.patches)} patch(es) + cover, '
			   f'[{ms.info.prefix}]{dep}'
			   + (f', {ms.rebased} rebased by git am -3' if ms.rebased else ''))
		out.append('  To: ' + ', '.join(ms.to))
		if ms.cc:
			out.append('  Cc: ' + ', '.join(ms.cc))
		st = [f.name[:4] for f in ms.files[1:] if cc_stable(f.read_text())]
		if st and not ms.info.to_stable:
			out.append(f'  Cc: {STABLE} on the cover and {len(st)} patch(es): {" ".join(st)}')
		out += [f'  note: {n}' for n in ms.notes]
	if res.requests:
		out.append(f'stable: {len(res.requests)} request(s): '
			   + ', '.join(p.stem for p in res.requests))
	return out


def cmd(cache: Path, outdir: Path, verbose: bool = False) -> int:
	"""`kunit.py export --mail DIR` (outdir: DIR)."""
	res = make_mail(cache, outdir, verbose=verbose)
	print(f'Wrote {len(res.sets)} mail sets and {len(res.requests)} stable request(s) '
	      f'to {outdir.resolve()} in {res.seconds:.0f} s')
	for line in summary_lines(res):
		print('  ' + line)
	print('Look with (sends nothing): git send-email --dry-run --confirm=never '
	      f'--smtp-server=/bin/true --suppress-cc=self {outdir.resolve()}/<set>/')
	return 0


def check(ch: Any) -> None:
	"""check-series' `mail` check, on a checkseries.Checker: the sets and
	the requests are written to a temporary directory, every set must
	apply (make_mail) and pass `git send-email --dry-run`, and every
	request must name a commit of upstream-commits.txt."""
	t0 = time.time()
	out = Path(tempfile.mkdtemp(prefix='bkl-kunit-mail-check-'))
	try:
		try:
			res = make_mail(ch.cache, out, patches=ch.patches)
		except UserError as e:
			ch.add('mail sets', False, str(e), time.time() - t0)
			return
		ch.add('mail sets', True, '\n'.join(summary_lines(res)), time.time() - t0)
		sender = sender_of(ch.patches)
		for ms in res.sets:
			t1 = time.time()
			ok, output, rcpt = send_email_dry_run(ms.files, sender, out)
			detail = (f'{len(ms.files)} mails, dry run OK' if ok
				  else '\n'.join(output.strip().splitlines()[-20:]))
			if ok and not all(rcpt.values()):
				ok, detail = False, 'a mail without recipients: ' + ', '.join(
					s for s, r in rcpt.items() if not r)
			ch.add(f'mail {ms.name}', ok, detail, time.time() - t1)
		t1 = time.time()
		known = known_upstream()
		ids = [p.name.split('-', 1)[0] for p in res.requests]
		bad = [i for i in ids if i not in known]
		ok, output, rcpt = send_email_dry_run(res.requests, sender, out) if res.requests \
			else (True, '', {})
		if not ok:
			bad.append('git send-email --dry-run: '
				   + ' '.join(output.strip().splitlines()[-5:]))
		ch.add('mail stable', not bad, '\n'.join(bad) or
		       f'{len(ids)} request(s), each for a commit in {UPSTREAM_FILE.name}: '
		       + ', '.join(ids), time.time() - t1)
	finally:
		shutil.rmtree(out, ignore_errors=True)
