# SPDX-License-Identifier: GPL-2.0
"""A commit message split into its subject, body and trailers.

The one reader of commit messages: check-series' Fixes: and citation check
(checkseries.py), `export --mail`'s Cc: stable and the ids a stable request
must cite (mail.py), the subject a patch is known by (tree.patch_subject)
and the `Fixes:` tag that keeps a commit off `ab`'s A side (ab.py).

It reads both shapes a message comes in:
  - a `git format-patch` file: mail headers (folded lines start with white
    space), a blank line, the message, `---`, the diff.  The subject is the
    Subject: header, unfolded, without its `[PATCH ...]` prefix;
  - git's own (`git log --format=%B`): the subject is the first paragraph,
    joined into one line as git does.
The trailers are the last paragraph of the message when it is a trailer
block as git interpret-trailers sees one: every line a `Token: value`
trailer (or the continuation of one, starting with white space), or at
least a quarter of them trailers with a Signed-off-by: among them.
"""

import re
from dataclasses import dataclass
from typing import List, Sequence, Tuple

# "Fixes: 1da177e4c3f4 (...)", "Cc: stable@...", "Signed-off-by: ..."
TRAILER = re.compile(r'^([A-Za-z0-9][A-Za-z0-9-]*):[ \t]*(.*)$')
HEADER = re.compile(r'^[A-Za-z0-9][A-Za-z0-9-]*:')
# What git format-patch puts before the subject: [PATCH], [PATCH 01/51], [RFC PATCH v2 3/4].
PATCH_PREFIX = re.compile(r'^(\[[^]]*PATCH[^]]*\]\s*)')
CUT = '\n---\n'


@dataclass(frozen=True)
class Message:
	subject: str
	body: Tuple[str, ...] = ()        # the lines between the subject and the trailers
	trailers: Tuple[str, ...] = ()    # the trailer block's lines, as written
	mail: bool = False                # read from a format-patch file (its Subject: header)

	@property
	def text(self) -> str:
		"""Everything after the subject: the body, then the trailers."""
		parts = ['\n'.join(self.body).strip('\n'), '\n'.join(self.trailers)]
		return '\n\n'.join(p for p in parts if p)

	def tags(self, token: str) -> List[str]:
		"""The trailer lines of a token (any case), as written: tags('Fixes')
		gives ['Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")', ...]."""
		out = []
		for line in self.trailers:
			m = TRAILER.match(line)
			if m and m.group(1).lower() == token.lower():
				out.append(line)
		return out


def _paragraphs(lines: Sequence[str]) -> List[List[str]]:
	out: List[List[str]] = [[]]
	for line in lines:
		if line.strip():
			out[-1].append(line)
		elif out[-1]:
			out.append([])
	return [p for p in out if p]


def _is_trailer_block(par: Sequence[str]) -> bool:
	trailers = sum(bool(TRAILER.match(l)) for l in par)
	if not trailers or par[0][:1].isspace():
		return False
	other = [l for l in par if not TRAILER.match(l) and not l[:1].isspace()]
	if not other:
		return True
	signed = any(l.lower().startswith('signed-off-by:') for l in par)
	return signed and trailers * 4 >= len(par)


def _mail_headers(head: str) -> bool:
	"""Whether the text before the first blank line is mail headers with a
	Subject: (a format-patch file), not the first paragraph of a message."""
	lines = head.split('\n')
	if lines and lines[0].startswith('From ') and not HEADER.match(lines[0]):
		lines = lines[1:]            # the mbox "From <sha> <date>" line
	return (any(l.startswith('Subject:') for l in lines)
		and all(HEADER.match(l) or l[:1] in (' ', '\t') for l in lines))


def _subject_header(head: str) -> str:
	lines = head.split('\n')
	for i, line in enumerate(lines):
		if line.startswith('Subject:'):
			# RFC 2822 folding: continuation lines start with white space.
			for cont in lines[i + 1:]:
				if not cont[:1].isspace():
					break
				line += ' ' + cont.strip()
			return PATCH_PREFIX.sub('', line[len('Subject:'):].strip())
	return ''


def split(text: str) -> Message:
	"""A commit message, from a format-patch file or from git's %B."""
	text = text.replace('\r\n', '\n')
	head, _, rest = text.partition('\n\n')
	mail = _mail_headers(head)
	if mail:
		subject = _subject_header(head)
		message = rest.split(CUT, 1)[0]
		pars = _paragraphs(message.split('\n'))
	else:
		pars = _paragraphs(text.split('\n'))
		subject = ' '.join(l.strip() for l in pars[0]) if pars else ''
		pars = pars[1:]
	trailers: List[str] = []
	if pars and _is_trailer_block(pars[-1]):
		trailers = pars.pop()
	body: List[str] = []
	for p in pars:
		body += ([''] if body else []) + p
	return Message(subject, tuple(body), tuple(trailers), mail)
