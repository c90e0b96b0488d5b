# SPDX-License-Identifier: GPL-2.0
# The verbs of the project.  Everything heavy happens in the cache
# ($BKL_KUNIT_CACHE, default ~/.cache/bkl-kunit), never in this checkout.

# Debian's interpreter: the one that sees python3-pytest and friends.
PYTHON ?= /usr/bin/python3
KUNIT  := $(PYTHON) tools/kunit.py
# `make run ARCH=arm64 FILTER='autofs_*'`; no ARCH: run's and ab's own default
# (x86_64 and s390x, one arch of each byte order), ARCH=all: all eight.
ARCH   ?=
FILTER ?=
# The arches `make test`'s `run` boots the series head on: x86_64 and one
# 32-bit arch (docs/series-checks.md#make-test).
TEST_ARCHES ?= x86_64,arm
# `make baseline` / `make compare`: a results directory (default: the latest run).
RESULTS ?=
# `make run PROFILE=kasan`: a debug profile (kunit/profiles/, docs/profiles.md).
PROFILE ?= default
# `make test-profiles`: the profiles other than default, each on every arch
# of PROFILE_ARCHES that supports it (the others are SKIPPED_PROFILE).
PROFILES ?= kasan kcsan faults
PROFILE_ARCHES ?= all
# `make bench`: one arch unless ARCH=... is given on the command line.
BENCH_ARCH ?= x86_64
# `make merge MERGED=dir RESULTS='dir1 dir2 ...'`: jobs' results as one (docs/ci.md).
MERGED ?=
# `make ci-config CI_OPTS='--arches=x86_64,arm --shards=2'`: write .gitlab-ci.yml
# (CI_OUT=file for a smaller pipeline elsewhere; docs/ci.md).
CI_OPTS ?=
CI_OUT ?= .gitlab-ci.yml
# `make mutate [MUTATE_ARCH=x86_64] [PROFILE=default|kcsan] [SUBSYSTEM=autofs] [SITE=filter]`:
# each lock site taken out in turn (docs/mutate.md); long, never part of `make test`.
MUTATE_ARCH ?= x86_64
SUBSYSTEM ?=
SITE ?=
# `make coverage [COVERAGE_ARCH=x86_64,arm,um]`: gcov of the subsystems from the
# suites alone (docs/coverage.md); a build of its own per arch, never in `make test`.
COVERAGE_ARCH ?= x86_64,arm,um
# `make check-series SERIES_OPTS='--all-arches --from-patch 50'`: more of
# check-series' options (docs/series-checks.md).
SERIES_OPTS ?=

.PHONY: all run ab test test-profiles pytest mypy prepare export check-series deps clean distclean help bench merge ci-config mutate coverage

all: help

help:
	@echo 'make run [ARCH=x86_64|i386|arm|arm64|s390x|powerpc64|riscv64|m68k|um|all|A,B] [FILTER=glob]'
	@echo '                         [PROFILE=default|kasan|kcsan|faults]'
	@echo '                         build and boot the suites (no ARCH: x86_64 and s390x; README: what each costs)'
	@echo 'make ab [ARCH=...] [FILTER=glob] [PROFILE=...]'
	@echo '                         the same on the pristine tree (A) and with the series (B):'
	@echo '                         each case new / fixed / regressed by the series (docs/results.md)'
	@echo 'make test                run what CI runs (pytest, check-series with lean per-patch builds, KUnit on $(TEST_ARCHES))'
	@echo 'make test-profiles       the suites under $(PROFILES), on every arch that has each'
	@echo 'make pytest              the host tool tests only (mypy included: tools/tests/test_mypy.py)'
	@echo 'make mypy                type-check tools/bklkunit (tools/mypy.ini)'
	@echo 'make bench [ARCH=x86_64]  plain kunit.py vs our run: cold, warm, one-test edit (docs/speed.md)'
	@echo 'make mutate [SUBSYSTEM=ufs|appletalk|autofs] [SITE=filter] [PROFILE=default|kcsan] [MUTATE_ARCH=x86_64]'
	@echo '                         each lock site taken out in turn: killed, survived or did not build (docs/mutate.md)'
	@echo 'make coverage [COVERAGE_ARCH=x86_64,arm,um] [FILTER=glob]'
	@echo '                         gcov line/function/branch coverage of ufs, appletalk, autofs from the'
	@echo '                         suites alone: page table, genhtml per arch (docs/coverage.md)'
	@echo 'make prepare             unpack the distro tree into the cache and apply the series'
	@echo 'make export              write the work tree commits back to kernel-patches/'
	@echo 'make check-series [SERIES_OPTS=...]  apply, checkpatch --strict, per-patch build and boot,'
	@echo '                         scans, KUNIT=m modules build (SERIES_OPTS=--all-arches: every arch)'
	@echo 'make baseline [RESULTS=dir]  record a run (default: the latest) as kunit/baselines/<arch>.json'
	@echo 'make compare [RESULTS=dir]   that run against the baselines; fails only on a regression'
	@echo 'make merge MERGED=dir RESULTS="dir ..."  the results of many jobs (run, check-series) as one'
	@echo '                         results directory: page, JUnit, KCIDB (docs/results.md#merged-results)'
	@echo 'make ci-config [CI_OPTS=...] [CI_OUT=file]  write the GitLab pipeline (.gitlab-ci.yml) from'
	@echo '                         the arch, profile and series lists (docs/ci.md)'
	@echo 'make deps                install the Debian packages for all arches'
	@echo 'make clean               remove build directories and results from the cache'
	@echo 'make distclean           remove the whole cache'

run:
	$(KUNIT) run $(if $(ARCH),--arch=$(ARCH)) --profile=$(PROFILE) $(FILTER)

ab:
	$(KUNIT) ab $(if $(ARCH),--arch=$(ARCH)) --profile=$(PROFILE) $(FILTER)

test:
	$(KUNIT) test --arch=$(TEST_ARCHES)

# Every profile runs even when one fails; the exit status is 1 if any did.
test-profiles:
	@rc=0; for p in $(PROFILES); do \
		echo "== profile $$p"; \
		$(KUNIT) run --profile=$$p --arch=$(PROFILE_ARCHES) $(FILTER) || rc=1; \
	done; exit $$rc

# Plain kunit.py and our run side by side (docs/speed.md); long: two cold builds.
bench:
	$(KUNIT) bench --arch=$(if $(filter command line,$(origin ARCH)),$(ARCH),$(BENCH_ARCH))

# Lock removal (docs/mutate.md): one build and boot per site, so not in `make test`.
mutate:
	$(KUNIT) mutate --arch=$(MUTATE_ARCH) --profile=$(PROFILE) \
		$(if $(SUBSYSTEM),--subsystem=$(SUBSYSTEM)) $(if $(SITE),--site='$(SITE)')

# Coverage (docs/coverage.md): builds of their own and two boots per arch, so not in `make test`.
coverage:
	$(KUNIT) run --coverage --arch=$(COVERAGE_ARCH) --profile=$(PROFILE) $(FILTER)

pytest:
	$(PYTHON) -m pytest -q -p no:cacheprovider tools/tests

# Also run by pytest (tools/tests/test_mypy.py), hence by `make test` and CI.
mypy:
	$(PYTHON) -m mypy --config-file tools/mypy.ini

prepare:
	$(KUNIT) prepare

export:
	$(KUNIT) export

check-series:
	$(KUNIT) check-series $(SERIES_OPTS)

deps:
	$(KUNIT) deps --arch=all --with-test

clean:
	$(KUNIT) clean

distclean:
	$(KUNIT) clean --all

.PHONY: baseline compare

baseline:
	$(KUNIT) baseline $(RESULTS)

compare:
	$(KUNIT) compare $(RESULTS)

merge:
	@test -n "$(MERGED)" -a -n "$(RESULTS)" || { echo 'make merge: give MERGED=dir and RESULTS="dir ..."' >&2; exit 2; }
	$(KUNIT) merge $(MERGED) $(RESULTS)

ci-config:
	$(KUNIT) ci-config $(CI_OPTS) -o $(CI_OUT)
