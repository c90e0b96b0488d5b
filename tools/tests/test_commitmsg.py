# SPDX-License-Identifier: GPL-2.0
"""commitmsg: one split of a commit message (subject, body, trailers) for
check-series, export --mail, tree.patch_subject and ab."""

import re

import pytest

from bklkunit.analysis import ab
from bklkunit.base import paths
from bklkunit.series import checkseries, mail
from bklkunit.source import commitmsg, tree
from conftest import commit, git

PATCH = '''\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Seed maintainers
 <maintainers@example.org>
Date: Thu, 3 Dec 2026 07:43:36 +0000
Subject: [PATCH 01/51] appletalk: re-check SOCK_ZAPPED under the socket lock
 in atalk_bind()

atalk_bind() refuses a socket that is already bound by testing
SOCK_ZAPPED, but it does so before lock_sock().

Mainline: 0123456789ab ("appletalk: made up").

Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")
Cc: stable@vger.kernel.org
Signed-off-by: Seed maintainers <maintainers@example.org>
---
 net/appletalk/ddp.c | 9 +++++++++
+Fixes: in the diff, not a tag
--
2.39.5
'''


def test_a_format_patch_file():
	m = commitmsg.split(PATCH)
	assert m.mail
	assert m.subject == 'appletalk: re-check SOCK_ZAPPED under the socket lock in atalk_bind()'
	assert m.body == ('atalk_bind() refuses a socket that is already bound by testing',
			  'SOCK_ZAPPED, but it does so before lock_sock().', '',
			  'Mainline: 0123456789ab ("appletalk: made up").')
	assert m.trailers == ('Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")',
			      'Cc: stable@vger.kernel.org',
			      'Signed-off-by: Seed maintainers <maintainers@example.org>')
	assert m.tags('fixes') == ['Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")']
	assert m.tags('Reported-by') == []
	assert m.text.startswith('atalk_bind() refuses') and m.text.endswith('example.org>')
	assert 'in the diff' not in m.text and 'Date:' not in m.text


def test_git_s_own_message():
	m = commitmsg.split('x: fix b\nover two lines\n\nWhy.\n\nFixes: 1da177e4c3f4 ("L")\n'
			    'Signed-off-by: A <a@example.org>\n')
	assert not m.mail
	assert (m.subject, m.body) == ('x: fix b over two lines', ('Why.',))
	assert m.tags('Fixes') == ['Fixes: 1da177e4c3f4 ("L")']
	assert commitmsg.split('x: a test\n') == commitmsg.Message('x: a test')
	assert commitmsg.split('') == commitmsg.Message('')


@pytest.mark.parametrize('last,trailers', [
	# Every line a trailer, or the continuation of one.
	('Fixes: 1da177e4c3f4 ("L")\nLink: https://example.org/a\n  /continued', 3),
	# Not all trailers, but signed off and a quarter of them are.
	('Fixes: 1da177e4c3f4 ("L")\n[ backported: context ]\nSigned-off-by: A <a@b>', 3),
	# Prose that happens to start with a word and a colon.
	('Note: this is prose,\nnot a tag at all, even with a colon.', 0),
	('No trailers here.', 0),
])
def test_the_trailer_block_is_git_s(last, trailers):
	m = commitmsg.split(f'Subject line\n\nBody.\n\n{last}\n')
	assert len(m.trailers) == trailers
	assert m.body == (('Body.',) if trailers else ('Body.', '') + tuple(last.split('\n')))


def test_a_fixes_line_in_the_body_is_not_a_tag_but_its_citation_is_checked():
	text = PATCH.replace('Mainline: 0123456789ab ("appletalk: made up").',
			     'Fixes: 0123456789ab ("appletalk: made up")\nin the middle of prose.')
	assert commitmsg.split(text).tags('Fixes') == ['Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")']
	n, bad = checkseries.fixes_problems(text, {'1da177e4c3f4': 'Linux-2.6.12-rc2'})
	assert n == 2 and bad == ['cites 0123456789ab ("appletalk: made up"): not in '
				  'upstream-commits.txt with that subject']


def test_cc_stable_is_a_trailer():
	assert mail.cc_stable(PATCH)
	assert mail.cc_stable(PATCH.replace('Cc: stable@vger.kernel.org',
					    'Cc: <stable@vger.kernel.org> # 6.12'))
	assert not mail.cc_stable(PATCH.replace('Cc: stable@vger.kernel.org\n', ''))
	# In the body, the words are not the tag.
	prose = PATCH.replace('Mainline: ', 'Cc: stable@vger.kernel.org\n').replace(
		'Cc: stable@vger.kernel.org\nSigned', 'Signed')
	assert not mail.cc_stable(prose)


def test_every_reader_of_a_message_splits_it_with_commitmsg(monkeypatch, tmp_path):
	calls = []
	real = commitmsg.split

	def spy(text):
		calls.append(text)
		return real(text)
	monkeypatch.setattr(commitmsg, 'split', spy)
	p = tmp_path / '0001-x.patch'
	p.write_text(PATCH)
	mail.cc_stable(PATCH)
	mail.message_words(PATCH)
	checkseries.fixes_problems(PATCH, {})
	tree.patch_subject(p)
	assert calls == [PATCH] * 4
	main = tmp_path / 'repo'
	main.mkdir()
	git(main, 'init', '-q', '-b', 'work')
	base = commit(main, 'base\n', {'a': '1\n'})
	commit(main, 'x: fix\n\nFixes: 1da177e4c3f4 ("L")\n', {'a': '2\n'})
	commit(main, 'x: a test\n', {'t': '1\n'})
	calls.clear()
	assert [(s, f) for _, s, f in ab.series_commits(main, base)] == [
		('x: fix', True), ('x: a test', False)]
	assert len(calls) == 2


def test_the_series_messages():
	"""Every patch of kernel-patches/: a format-patch file whose trailers
	end with its Signed-off-by:, every Fixes: line of its message a tag."""
	patches = tree.read_series(paths.PATCH_DIR)
	assert patches
	for p in patches:
		text = p.read_text()
		m = commitmsg.split(text)
		assert m.mail and m.subject == tree.patch_subject(p) != p.name, p.name
		assert m.trailers[-1].startswith('Signed-off-by: '), p.name
		message = text.split('\n\n', 1)[1].split('\n---\n', 1)[0]
		assert len(m.tags('Fixes')) == len(re.findall(r'^Fixes:', message, re.M)), p.name
		assert mail.cc_stable(text) == bool(re.search(r'^Cc: stable@', message, re.M)), p.name
