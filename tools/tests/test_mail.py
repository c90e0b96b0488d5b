# SPDX-License-Identifier: GPL-2.0
"""`kunit.py export --mail`: subsystems, sets, cover letters, stable requests
(tools/bklkunit/mail.py).  Synthetic patches in tmp_path; one test uses the
prepared kernel tree and skips without it."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from bklkunit import cli
from bklkunit.base import paths
from bklkunit.base.errors import UserError
from bklkunit.series import checkplan, mail
from bklkunit.source import tree

from conftest import _REAL_CACHE, _REAL_DEBIAN_VERSION

SENDER = 'Seed 077d343d maintainers <maintainers@users.noreply.a-seed-077d343d.example>'


def patch_text(n: int, subject: str, files, body: str = 'Does a thing.\n', tags: str = '',
	       added=(), extra_diff: str = '') -> str:
	"""A git format-patch file touching files (each with a one-line hunk)."""
	diffs = []
	for f in files:
		if f in added:
			diffs.append(f'diff --git a/{f} b/{f}\nnew file mode 100644\nindex 000000000000..'
				     f'111111111111\n--- /dev/null\n+++ b/{f}\n@@ -0,0 +1 @@\n+x\n')
		else:
			diffs.append(f'diff --git a/{f} b/{f}\nindex 111111111111..222222222222 100644\n'
				     f'--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-a\n+b\n')
	return (f'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
		f'From: {SENDER}\nDate: Thu, 3 Dec 2026 10:48:03 +0000\n'
		f'Subject: [PATCH {n:02d}/47] {subject}\n\n{body}\n{tags}'
		f'Signed-off-by: {SENDER}\n---\n' + ''.join(diffs) + extra_diff + '--\n2.39.5\n')


def write(tmp_path: Path, name: str, text: str) -> Path:
	p = tmp_path / name
	p.write_text(text)
	return p


@pytest.fixture
def series(tmp_path):
	"""A small series like ours: an appletalk fix, two ufs fixes (one of them
	already in mainline), the KUnit helpers, and tests that include them."""
	d = tmp_path / 'kernel-patches'
	d.mkdir()
	ps = [
		write(d, '0001-appletalk-fix.patch', patch_text(
			1, 'appletalk: fix a race', ['net/appletalk/ddp.c'],
			tags='Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")\nCc: stable@vger.kernel.org\n')),
		write(d, '0002-ufs-fix.patch', patch_text(
			2, 'ufs: fix a leak', ['fs/ufs/super.c'],
			tags='Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")\n')),
		write(d, '0003-ufs-mainline.patch', patch_text(
			3, 'ufs: refuse a bad range', ['fs/ufs/balloc.c'],
			body='Mainline fixed it with commit 426f07ad3e2c\n("ufs_free_fragments(): '
			     'fix the braino in sanity check").\n',
			tags='Fixes: 1da177e4c3f4 ("Linux-2.6.12-rc2")\n')),
		write(d, '0004-kunit-helpers.patch', patch_text(
			4, 'kunit: add helpers', ['include/kunit/fault.h', 'lib/kunit/Makefile',
						  'lib/kunit/fault.c'],
			added=('include/kunit/fault.h', 'lib/kunit/fault.c'))),
		write(d, '0005-ufs-tests.patch', patch_text(
			5, 'ufs: add KUnit tests', ['MAINTAINERS', 'fs/ufs/Kconfig',
						    'fs/ufs/tests/faults_kunit.c', 'fs/ufs/.kunitconfig'],
			added=('fs/ufs/tests/faults_kunit.c',),
			extra_diff='diff --git a/fs/ufs/tests/x.c b/fs/ufs/tests/x.c\n'
				   '+#include <kunit/fault.h>\n+config UFS_FAULTS_KUNIT_TEST\n')),
		write(d, '0006-autofs-tests.patch', patch_text(
			6, 'autofs: add KUnit tests', ['fs/autofs/tests/autofs_kunit.c'])),
	]
	return ps


KNOWN = {'1da177e4c3f4': 'Linux-2.6.12-rc2',
	 '426f07ad3e2c': 'ufs_free_fragments(): fix the braino in sanity check',
	 'db57044217d6': 'ufs: get rid of ubh_{ubhcpymem,memcpyubh}()'}

REQUESTS = '''
# a comment
[426f07ad3e2c]
replaces: ufs: refuse a bad range
mainline: 6.13
for: 6.12.y
test: ufs_rw.ufs_rw_free_fragments_cross_block
command: tools/testing/kunit/kunit.py run --kunitconfig=fs/ufs
	'ufs_rw'
why: The check compares with the wrong limit,
	and frees anyway.
'''


# ------------------------------------------------------------ subsystems

@pytest.mark.parametrize('files,sub', [
	(['fs/ufs/super.c'], 'ufs'),
	(['fs/ufs/Kconfig', 'fs/ufs/tests/x.c', 'MAINTAINERS'], 'ufs'),
	(['net/appletalk/ddp.c', 'net/appletalk/tests/ddp_kunit.c'], 'appletalk'),
	(['net/appletalk/aarp.c', 'include/linux/atalk.h'], 'appletalk'),
	(['fs/autofs/dev-ioctl.c'], 'autofs'),
	(['include/kunit/fault.h', 'lib/kunit/fault.c'], 'kunit'),
	(['include/linux/fault-inject.h', 'mm/failslab.c', 'mm/fail_alloc_kunit.c',
	  'lib/Kconfig.debug', 'Documentation/fault-injection/fault-injection.rst'], 'mm'),
	(['include/linux/kmemleak.h', 'mm/kmemleak.c', 'mm/Kconfig.debug',
	  'Documentation/dev-tools/kmemleak.rst'], 'mm'),
])
def test_subsystem_from_the_files(files, sub):
	assert mail.subsystem_of('p.patch', patch_text(1, 's', files)) == sub


def test_a_patch_of_two_subsystems_is_refused_in_one_line():
	with pytest.raises(UserError) as e:
		mail.subsystem_of('0009-x.patch', patch_text(9, 's', ['fs/ufs/super.c',
								     'fs/autofs/inode.c']))
	msg = str(e.value)
	assert '\n' not in msg
	assert msg.startswith('0009-x.patch: touches ufs and autofs;') and 'split' in msg


def test_a_patch_outside_the_subsystems_is_refused_in_one_line():
	with pytest.raises(UserError) as e:
		mail.subsystem_of('0009-x.patch', patch_text(9, 's', ['fs/ufs/super.c', 'kernel/fork.c']))
	assert 'kernel/fork.c, in no subsystem' in str(e.value) and '\n' not in str(e.value)
	with pytest.raises(UserError) as e:
		mail.subsystem_of('0010-y.patch', patch_text(10, 's', ['MAINTAINERS']))
	assert 'touches no file of a subsystem' in str(e.value)
	assert 'lib/kunit/' in str(e.value) and '\n' not in str(e.value)


def test_a_mixed_patch_stops_export_mail_before_the_tree_is_needed(tmp_path, monkeypatch,
								   capsys):
	d = tmp_path / 'kernel-patches'
	d.mkdir()
	write(d, '0001-mixed.patch', patch_text(1, 'mixed', ['fs/ufs/super.c',
							   'net/appletalk/ddp.c']))
	(d / 'series').write_text('0001-mixed.patch\n')
	monkeypatch.setattr(paths, 'PATCH_DIR', d)
	rc = cli.main(['export', '--mail', str(tmp_path / 'out')])
	err = capsys.readouterr().err
	assert rc == 2
	assert err.strip() == ('kunit.py export: error: 0001-mixed.patch: touches ufs and '
			       'appletalk; a mail set is one subsystem: split the patch')
	assert not (tmp_path / 'out').exists()


# ------------------------------------------------------------ sets

def test_sets_in_order_without_the_patches_mainline_has(series):
	sets = mail.split_series(series, ['ufs: refuse a bad range'])
	assert list(sets) == ['kunit', 'ufs', 'appletalk', 'autofs']
	assert [p.name for p in sets['ufs']] == ['0002-ufs-fix.patch', '0005-ufs-tests.patch']
	assert [p.name for p in sets['kunit']] == ['0004-kunit-helpers.patch']
	assert sum(len(v) for v in sets.values()) == len(series) - 1


def test_a_patch_that_names_a_left_out_patch_is_noted(series, tmp_path):
	p = write(tmp_path, '0007-ufs-more.patch', patch_text(
		7, 'ufs: more tests', ['fs/ufs/tests/x.c'],
		body='It passes with the fix earlier in this series ("ufs: refuse a\nbad '
		     'range").\n'))
	sets = mail.split_series(series + [p], ['ufs: refuse a bad range'])
	assert mail.stale_mentions(sets, ['ufs: refuse a bad range']) == [
		'0007-ufs-more.patch names "ufs: refuse a bad range", which is not in its mail set']
	assert mail.stale_mentions(sets, []) == []


def test_a_set_depends_on_the_helpers_where_it_includes_their_header(series):
	sets = mail.split_series(series)
	headers = mail.added_headers(sets['kunit'])
	assert headers == ['kunit/fault.h']
	assert [p.name for p in mail.users_of(sets['ufs'], headers)] == ['0005-ufs-tests.patch']
	assert mail.users_of(sets['autofs'], headers) == []
	assert mail.users_of(sets['autofs'], []) == []
	assert mail.included(sets['ufs'], headers) == ['kunit/fault.h']
	assert mail.included(sets['autofs'], headers) == []


def test_the_headers_a_set_includes_are_named_in_their_order(tmp_path):
	p = tmp_path / '0001-x.patch'
	p.write_text('+#include <kunit/watch.h>\n+#include <kunit/fault.h>\n'
		     ' #include <kunit/thread.h>\n')
	headers = ['kunit/fault.h', 'kunit/thread.h', 'kunit/watch.h']
	# Only added lines count: thread.h is context here.
	assert mail.included([p], headers) == ['kunit/fault.h', 'kunit/watch.h']
	assert mail.and_list(['<a>']) == '<a>'


def test_each_header_is_named_with_the_first_patch_that_includes_it(tmp_path):
	a, b, c = (tmp_path / f'000{i}-x.patch' for i in (1, 2, 3))
	a.write_text('+#include <kunit/watch.h>\n')
	b.write_text('+#include <kunit/thread.h>\n+#include <kunit/watch.h>\n'
		     '+#include <kunit/fault.h>\n')
	c.write_text('+#include <kunit/fault.h>\n')
	headers = ['kunit/fault.h', 'kunit/watch.h', 'kunit/thread.h']
	assert mail.first_includes([a, b, c], headers) == [
		(a, ['kunit/watch.h']), (b, ['kunit/fault.h', 'kunit/thread.h'])]
	assert mail.first_includes([c], headers) == [(c, ['kunit/fault.h'])]
	assert mail.first_includes([a, b], []) == []
	assert mail.and_list(['<a>', '<b>', '<c>']) == '<a>, <b> and <c>'


def test_fault_options_keep_only_the_sets_own_suite(series, tmp_path):
	cfg = write(tmp_path, 'faults.config', '# c\nCONFIG_FAULT_INJECTION=y\nCONFIG_DEBUG_FS=y\n'
		    'CONFIG_AUTOFS_FAULTS_KUNIT_TEST=y\nCONFIG_UFS_FAULTS_KUNIT_TEST=y\n')
	assert mail.fault_options([series[4]], cfg) == [
		'CONFIG_FAULT_INJECTION=y', 'CONFIG_DEBUG_FS=y', 'CONFIG_UFS_FAULTS_KUNIT_TEST=y']
	# A set without a fault-injection suite needs none of it.
	assert mail.fault_options([series[5]], cfg) == []


def test_tags_and_test_patches(series):
	texts = [p.read_text() for p in series]
	assert [mail.cc_stable(t) for t in texts] == [True] + [False] * 5
	assert [mail.is_test(t) for t in texts] == [False, False, False, False, True, True]
	# A Cc: stable quoted in the diff is not the patch's tag.
	assert not mail.cc_stable(patch_text(1, 's', ['fs/ufs/a.c'],
					     extra_diff='+Cc: stable@vger.kernel.org\n'))


@pytest.mark.parametrize('name,needs,present,under', [
	('kunit', False, ['mm', 'kunit', 'ufs'], ['mm']),
	('kunit', False, ['kunit', 'ufs'], []),           # no mm set: on the pristine tree
	('ufs', True, ['mm', 'kunit', 'ufs'], ['mm', 'kunit']),
	('ufs', True, ['kunit', 'ufs'], ['kunit']),
	('ufs', False, ['mm', 'kunit', 'ufs'], []),       # no helper included
	('mm', False, ['mm', 'kunit'], []),
])
def test_what_a_set_is_made_on(name, needs, present, under):
	assert mail.sets_under(name, needs, present) == under


def test_the_helpers_cover_names_the_set_under_it(series):
	sets = mail.split_series(series)
	ms = mail.MailSet('kunit', mail.SETS['kunit'], sets['kunit'], under=['mm'])
	numbers = {p: i + 1 for i, p in enumerate(ms.patches)}
	subjects = {'mm': '[PATCH 0/2] mm: filters', 'kunit': '[PATCH 0/1] kunit: helpers'}
	body = mail.cover_body(ms, numbers, [], '6.12.118-1~deb12u1', subjects, [])
	flat = ' '.join(body.split())
	assert 'Depends on "[PATCH 0/2] mm: filters" (the mm set, sent separately)' in flat
	# A set on the helpers says what the helpers stand on.
	ufs = mail.MailSet('ufs', mail.SETS['ufs'], sets['ufs'], needs_helpers=[series[4]],
			   helper_headers=['kunit/fault.h'], under=['mm', 'kunit'])
	body = mail.cover_body(ufs, {p: i + 1 for i, p in enumerate(ufs.patches)}, [],
			       '6.12.118-1~deb12u1', subjects, [])
	flat = ' '.join(body.split())
	assert 'Depends on "[PATCH 0/1] kunit: helpers"' in flat
	assert 'The helpers set itself applies on "[PATCH 0/2] mm: filters"' in flat
	assert all(len(l) <= 72 for l in body.splitlines())


def test_cover_letter_text(series):
	sets = mail.split_series(series, ['ufs: refuse a bad range'])
	ms = mail.MailSet('ufs', mail.SETS['ufs'], sets['ufs'],
			  needs_helpers=[series[4]], helper_headers=['kunit/fault.h'])
	reqs = mail.read_requests(REQUESTS, KNOWN)
	numbers = {p: i + 1 for i, p in enumerate(ms.patches)}
	body = mail.cover_body(ms, numbers, reqs, '6.12.118-1~deb12u1',
			       {'kunit': '[PATCH 0/1] kunit: helpers'}, ['CONFIG_FAULT_INJECTION=y'])
	assert '  1/2 ufs: fix a leak\n' in body
	assert '\nThe tests:\n\n  2/2 ufs: add KUnit tests\n' in body
	assert ('426f07ad3e2c ("ufs_free_fragments(): fix the braino in sanity check"):\n'
		'    ufs_rw.ufs_rw_free_fragments_cross_block') in body
	assert 'Depends on "[PATCH 0/1] kunit: helpers"' in body
	assert 'the suites include <kunit/fault.h> from patch 2/2 on.' in ' '.join(body.split())
	assert '  tools/testing/kunit/kunit.py run --kunitconfig=fs/ufs\n' in body
	assert '--kconfig_add CONFIG_FAULT_INJECTION=y' in body
	assert 'v6.12.118 with Debian\'s patches' in ' '.join(body.split())
	assert all(len(l) <= 72 for l in body.splitlines())


def test_the_appletalk_set_says_why_it_is_for_stable_only():
	info = mail.SETS['appletalk']
	assert info.prefix == 'RFC PATCH 6.12.y' and info.to_stable
	assert 'removed from mainline' in info.intro
	assert all(mail.SETS[s].prefix == 'PATCH' for s in ('kunit', 'ufs', 'autofs'))


# ------------------------------------------------------------ stable requests

def test_requests_are_read_with_the_subject_from_upstream_commits():
	(r,) = mail.read_requests(REQUESTS, KNOWN)
	assert (r.id, r.subject, r.replaces, r.for_series) == (
		'426f07ad3e2c', KNOWN['426f07ad3e2c'], 'ufs: refuse a bad range', '6.12.y')
	assert r.command == "tools/testing/kunit/kunit.py run --kunitconfig=fs/ufs 'ufs_rw'"
	assert r.why == 'The check compares with the wrong limit, and frees anyway.'


@pytest.mark.parametrize('edit,error', [
	(lambda t: t.replace('[426f07ad3e2c]', '[0123456789ab]'),
	 '[0123456789ab] is not listed in upstream-commits.txt'),
	(lambda t: t.replace('[426f07ad3e2c]', '[426f07ad]'), 'is not a 12-digit mainline id'),
	(lambda t: t.replace('test: ufs_rw.ufs_rw_free_fragments_cross_block\n', ''),
	 'missing test'),
	(lambda t: t + 'colour: blue\n', 'unknown key(s) colour'),
	(lambda t: t + 'with: db57044217d6\n', 'with db57044217d6, which has no section'),
])
def test_bad_requests_are_refused(edit, error):
	with pytest.raises(UserError) as e:
		mail.read_requests(edit(REQUESTS), KNOWN)
	assert error in str(e.value)


def test_the_project_requests_name_listed_commits_and_patches_that_cite_them():
	known = mail.known_upstream()
	reqs = mail.read_requests(mail.REQUESTS_FILE.read_text(), known)
	assert {r.id for r in reqs} == {'426f07ad3e2c', 'db57044217d6', '0bfd3e1078c5',
					'6a1c4c468835'}
	assert mail.request_problems(reqs, tree.read_series(paths.PATCH_DIR)) == []


def test_request_problems(series):
	(r,) = mail.read_requests(REQUESTS, KNOWN)
	assert mail.request_problems([r], series) == []
	r.replaces = 'ufs: fix a leak'        # does not cite 426f07ad3e2c
	assert mail.request_problems([r], series) == [
		'426f07ad3e2c: 0002-ufs-fix.patch does not cite it in its message']
	r.replaces = 'appletalk: fix a race'  # and asks stable for itself
	assert len(mail.request_problems([r], series)) == 2
	r.replaces = 'nothing like it'
	assert 'not a patch of the series' in mail.request_problems([r], series)[0]


def test_request_text_is_an_option_2_mail():
	(r,) = mail.read_requests(REQUESTS, KNOWN)
	text = mail.request_text(r, SENDER, ['linux-fsdevel@vger.kernel.org'],
				 '[PATCH 0/2] ufs: KUnit suites', {r.id: r})
	head, _, body = text.partition('\n\n')
	assert head.splitlines()[0].startswith('From 0000000000000000000000000000000000000000 ')
	assert 'To: stable@vger.kernel.org' in head.splitlines()
	assert 'Cc: linux-fsdevel@vger.kernel.org' in head.splitlines()
	assert ('Subject: 6.12.y: please apply 426f07ad3e2c ("ufs_free_fragments(): fix the '
		'braino in sanity check")') in head.splitlines()
	flat = ' '.join(body.split())
	assert ('Please apply mainline commit 426f07ad3e2c ("ufs_free_fragments(): fix the '
		'braino in sanity check"), in mainline since 6.13, to 6.12.y.') in flat
	assert 'Why: The check compares with the wrong limit, and frees anyway.' in flat
	assert 'the KUnit case ufs_rw.ufs_rw_free_fragments_cross_block' in flat
	assert '"[PATCH 0/2] ufs: KUnit suites"' in flat
	assert "  tools/testing/kunit/kunit.py run --kunitconfig=fs/ufs 'ufs_rw'" in body
	assert '("ufs: refuse a bad range")' in flat
	assert all(len(l) <= 80 for l in body.splitlines())


# ------------------------------------------------------------ recipients

GM_OUT = '''\
Brendan Higgins <brendan.higgins@linux.dev> (maintainer:KERNEL UNIT TESTING FRAMEWORK (KUnit))
"David S. Miller" <davem@davemloft.net> (maintainer:NETWORKING [GENERAL])
Rae Moar <rmoar@google.com> (reviewer:KERNEL UNIT TESTING FRAMEWORK (KUnit))
linux-kernel@vger.kernel.org (open list)
kunit-dev@googlegroups.com (open list:KERNEL UNIT TESTING FRAMEWORK (KUnit))
'''


def test_recipients_maintainers_to_the_rest_cc():
	to, cc = mail.recipients(GM_OUT)
	assert to == ['Brendan Higgins <brendan.higgins@linux.dev>',
		      '"David S. Miller" <davem@davemloft.net>']
	assert cc == ['Rae Moar <rmoar@google.com>', 'linux-kernel@vger.kernel.org',
		      'kunit-dev@googlegroups.com']


def test_recipients_without_a_maintainer_go_to_the_sections_own_list():
	out = (f'{SENDER} (maintainer:UFS FILESYSTEM KUNIT TESTS)\n'
	       'Steven Rostedt <rostedt@goodmis.org> (supporter:Real-time Linux (PREEMPT_RT):'
	       'Keyword:PREEMPT_RT)\n'
	       'linux-kernel@vger.kernel.org (open list)\n'
	       'linux-fsdevel@vger.kernel.org (open list:UFS FILESYSTEM KUNIT TESTS)\n'
	       'linux-rt-devel@lists.linux.dev (open list:Real-time Linux (PREEMPT_RT):'
	       'Keyword:PREEMPT_RT)\n')
	to, cc = mail.recipients(out, [SENDER])
	assert to == ['linux-fsdevel@vger.kernel.org']
	assert cc == ['Steven Rostedt <rostedt@goodmis.org>', 'linux-kernel@vger.kernel.org',
		      'linux-rt-devel@lists.linux.dev']


def test_set_headers_replaces_to_and_cc():
	text = ('From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH 1/2] x\n'
		' y\nCc: old@x,\n    older@x\nMIME-Version: 1.0\n\nbody\nCc: kept@x\n')
	out = mail.set_headers(text, ['t@x'], ['c1@x', 'c2@x'])
	assert out == ('From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH 1/2] x\n'
		       ' y\nTo: t@x\nCc: c1@x,\n    c2@x\nMIME-Version: 1.0\n\nbody\nCc: kept@x\n')


def test_without_drops_by_address_and_duplicates():
	assert mail.without(['A <a@x>', 'a@x', 'B <B@x>', 'b@x'], ['Someone <A@X>']) == ['B <B@x>']


# ------------------------------------------------------------ the real tree

@pytest.fixture
def real_cache(monkeypatch):
	monkeypatch.setattr(tree, 'debian_version', _REAL_DEBIAN_VERSION)
	try:
		tree.find_prepared(_REAL_CACHE)
	except Exception as e:
		pytest.skip(f'no prepared kernel tree in {_REAL_CACHE} ({e})')
	if shutil.which('perl') is None:
		pytest.skip('no perl for get_maintainer.pl')
	return _REAL_CACHE


def test_the_real_series_as_mail(real_cache, tmp_path):
	"""~30 s: a sparse clone of the prepared tree, every set applied twice."""
	res = mail.make_mail(real_cache, tmp_path / 'mail')
	sizes = {ms.name: len(ms.patches) for ms in res.sets}
	patches = tree.read_series(paths.PATCH_DIR)
	assert list(sizes) == ['mm', 'kunit', 'ufs', 'appletalk', 'autofs']
	assert sum(sizes.values()) == len(patches) - 3    # 0011, 0013, 0019: mainline (stable requests)
	# The failslab/fail_page_alloc filters and kmemleak_scan_now(), each with its suite,
	# and the fix of kmemleak's verbose report that comes before the second.
	assert sizes['mm'] == 3
	# fault.h, watch.h and thread.h, which every set's suites use from their first
	# patch on, and watch.h's lock-waiter helpers the exclusion suites use.
	assert sizes['kunit'] == 4
	by = {ms.name: ms for ms in res.sets}
	assert by['mm'].under == [] and by['kunit'].under == ['mm']
	for ms in res.sets[2:]:
		assert ms.under == ['mm', 'kunit'], ms.name
		assert ms.helper_headers == ['kunit/fault.h', 'kunit/watch.h', 'kunit/thread.h'], ms.name
		cover = ' '.join(ms.files[0].read_text().split())
		# Each header once, with the first patch that includes it.
		named = re.search(r'the suites include (.*?) on\.', cover)
		assert named, cover
		for h in ms.helper_headers:
			assert named.group(1).count(f'<{h}>') == 1, (ms.name, named.group(1))
	# The helpers set is one list of patches, not fixes and tests.
	cover = by['kunit'].files[0].read_text()
	assert 'The tests:' not in cover and '  3/4 kunit: run a test' in cover
	for ms in res.sets:
		assert len(ms.files) == len(ms.patches) + 1 and ms.to
		cover = ms.files[0].read_text()
		assert '*** SUBJECT HERE ***' not in cover and '*** BLURB HERE ***' not in cover
		assert f'From: {SENDER}' in cover and 'base-commit: ' in cover
		assert ('prerequisite-patch-id: ' in cover) == bool(ms.under)
	assert by['appletalk'].to[0] == 'stable@vger.kernel.org'
	for ms in res.sets:
		subject = re.search(r'^Subject: (.*)$', ms.files[0].read_text(), re.M).group(1)
		assert subject == mail.cover_subject(ms)
	assert all(f.read_text().startswith('From ') and '[RFC PATCH 6.12.y ' in f.read_text()
		   for f in by['appletalk'].files)
	assert sorted(p.name for p in res.requests) == [
		'0bfd3e1078c5-6.12.y.mbox', '426f07ad3e2c-6.12.y.mbox',
		'6a1c4c468835-6.12.y.mbox', 'db57044217d6-6.12.y.mbox']
	if shutil.which('git') and subprocess.run(['git', 'send-email', '-h'],
						  capture_output=True).returncode in (0, 129):
		ok, out, rcpt = mail.send_email_dry_run(by['kunit'].files, SENDER, tmp_path)
		if 'Mail::Address' not in out:
			assert ok, out[-2000:]
			assert all('brendan.higgins@linux.dev' in r for r in rcpt.values())


def test_check_series_runs_the_mail_check(monkeypatch, capsys):
	"""The hook in checkseries.main: `--checks=mail` runs mail.check on the
	Checker and counts what it adds, whether or not the series applied."""
	import argparse
	from bklkunit.base import deps
	from bklkunit.series import checkseries
	calls = []

	class FakeChecker(checkseries.Checker):
		def __init__(self, cache, opts):
			self.results, self.patches = [], []
			self.main = Path('/nonexistent')
			self.cache, self.opts, self.boots = cache, opts, []
			self._pool = self._booting = self._kunit_tool_patched = None

		def check_apply(self):
			return False

	def fake_check(ch):
		calls.append(ch)
		ch.add('mail kunit', True, '2 mails, dry run OK')
		ch.add('mail stable', False, 'bad')
	monkeypatch.setattr(deps, 'ensure', lambda *a, **k: None)
	monkeypatch.setattr(tree, 'prepare', lambda *a, **k: None)
	monkeypatch.setattr(checkseries, 'Checker', FakeChecker)
	monkeypatch.setattr(mail, 'check', fake_check)
	args = argparse.Namespace(checks='mail', cache_dir=None, no_install=True,
				  go7007_arch='all', verbose=False)
	assert cli.cmd_check_series(args) == 1
	assert len(calls) == 1
	assert capsys.readouterr().out.splitlines()[-1] == '1 passed, 1 failed'
	assert 'mail' in checkplan.ALL_CHECKS
	assert {'git-email', 'libmailtools-perl'} <= set(deps.CHECK_PACKAGES)
