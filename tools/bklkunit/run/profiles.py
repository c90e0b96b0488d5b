# SPDX-License-Identifier: GPL-2.0
"""Debug profiles: which detectors a run is built with, and where they work.

A profile is kunit/profiles/default.config plus kunit/profiles/<name>.config
(nothing more for `default`).  Its kernel is built in a directory of its own,
<cache>/build/<treekey>-<name>/<arch> (`default` keeps <treekey>/<arch>, so
existing build directories stay valid).  An arch whose kernel cannot have the
detector is not built: its result is SKIPPED_PROFILE with the reason, which
is neither a pass nor a failure and does not change the exit status.

The reasons come from the arch Kconfig of Linux 6.12 (arch/*/Kconfig,
lib/Kconfig.kasan, lib/Kconfig.kcsan); kunit.py would otherwise refuse the
fragment ("Not all Kconfig options selected") and the arch would look like a
CONFIG_FAILED.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from ..base import paths
from ..base.errors import UserError
from ..results.model import ArchStatus, DEFAULT_PROFILE

DEFAULT = DEFAULT_PROFILE
SKIPPED = ArchStatus.SKIPPED_PROFILE


@dataclass(frozen=True)
class Profile:
	name: str
	what: str                                    # one line for --help and the docs
	unsupported: Dict[str, str] = field(default_factory=dict)   # arch -> why not
	qemu_args: Tuple[str, ...] = ()              # kunit.py exec --qemu_args
	# arch -> more --qemu_args: the machine the detector needs on that arch
	arch_qemu_args: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
	kernel_args: Tuple[str, ...] = ()            # kunit.py exec --kernel_args
	timeout: int = 0                             # the guest's --timeout unless given (0: run's)

	def fragment(self) -> Path:
		return paths.KUNIT_DIR / 'profiles' / f'{self.name}.config'

	def supports(self, arch: str) -> bool:
		return arch not in self.unsupported

	def why_not(self, arch: str) -> str:
		return self.unsupported.get(arch, '')


_NO_KASAN_I386 = ('no KASAN on 32-bit x86: arch/x86/Kconfig selects HAVE_ARCH_KASAN '
		  'only "if X86_64"')
_NO_KCSAN_I386 = ('no KCSAN on 32-bit x86: arch/x86/Kconfig selects HAVE_ARCH_KCSAN '
		  'only "if X86_64"')
_NO_KCSAN_ARM = 'no KCSAN on 32-bit arm: arch/arm/Kconfig does not select HAVE_ARCH_KCSAN'
_NO_KCSAN_UM = 'no KCSAN on UML: arch/um/Kconfig does not select HAVE_ARCH_KCSAN'
# powerpc64: arch/powerpc/Kconfig selects HAVE_ARCH_KASAN on 64-bit Book3S
# "if PPC_RADIX_MMU", and arch/powerpc/mm/kasan/init_book3s_64.c turns it
# off at boot without the radix MMU ("KASAN not enabled as it requires
# radix!").  kunit_tool's pseries guest is a POWER8 (qemu_configs/powerpc.py,
# -cpu power8), which has the hash MMU only; a POWER9 has radix, and QEMU
# takes the last -cpu it is given, so the kasan profile boots powerpc64 as a
# POWER9 (the kernel, built for any 64-bit Book3S, runs on both).
_KASAN_PPC64_CPU = ('-cpu power9',)
_NO_KCSAN_RISCV = 'no KCSAN on riscv: arch/riscv/Kconfig does not select HAVE_ARCH_KCSAN'
_NO_KASAN_M68K = 'no KASAN on m68k: arch/m68k/Kconfig does not select HAVE_ARCH_KASAN'
_NO_KCSAN_M68K = 'no KCSAN on m68k: arch/m68k/Kconfig does not select HAVE_ARCH_KCSAN'
_NO_KMEMLEAK_M68K = ('no kmemleak on m68k: arch/m68k/Kconfig does not select '
		     'HAVE_DEBUG_KMEMLEAK, and the profile\'s leak checks are its point')

PROFILES: Dict[str, Profile] = {
	DEFAULT: Profile(DEFAULT, 'lockdep (PROVE_LOCKING), DEBUG_LIST, DEBUG_ATOMIC_SLEEP, '
			 'DEBUG_MUTEXES; every arch (m68k: no lockdep, no DEBUG_ATOMIC_SLEEP)'),
	# kasan_multi_shot: KASAN prints only its first report otherwise, and a
	# case that triggers one on purpose would hide every later one.
	# rcupdate.rcu_cpu_stall_timeout=300 (its maximum, as syzbot's slow
	# guests): KASAN and lockdep under TCG take minutes to probe the 18
	# fixture disks, and the 21 s default made RCU WARN that a grace period
	# had not started (rcu_check_gp_start_stall) during boot, outside any
	# case, on x86_64 (results 20261203-152237).  A hung case is still
	# caught, by kunit's case timeout and the guest --timeout.
	'kasan': Profile('kasan', 'default + generic KASAN (x86_64, arm64, arm, s390x, riscv64, '
			 'powerpc64 as a POWER9)',
			 {'i386': _NO_KASAN_I386, 'm68k': _NO_KASAN_M68K},
			 arch_qemu_args={'powerpc64': _KASAN_PPC64_CPU},
			 kernel_args=('kasan_multi_shot', 'rcupdate.rcu_cpu_stall_timeout=300'),
			 # Measured: x86_64 143 s (~90 s of it probing the virtio-pci
			 # disks), arm64 68 s, arm 59 s: half of the default 300 s on
			 # x86_64, which a busier host would exceed.
			 timeout=900),
	# Races need a second CPU to race on.
	'kcsan': Profile('kcsan', 'default + KCSAN, guest with 2 vCPUs (x86_64, arm64, s390x, '
			 'powerpc64)',
			 {'i386': _NO_KCSAN_I386, 'arm': _NO_KCSAN_ARM, 'um': _NO_KCSAN_UM,
			  'riscv64': _NO_KCSAN_RISCV, 'm68k': _NO_KCSAN_M68K},
			 qemu_args=('-smp 2',),
			 # Measured: arm64 295 s in the guest for 275 cases (results
			 # 20261205-064258), and killed at the default 300 s, still
			 # going, with 309 (20261205-093255); s390x under TCG killed at
			 # 900 s in ufs_lock with 578 cases (24-90 s a row of
			 # ufs_lock_reentrant_s_lock, 20261207-175049).  Only a hung
			 # guest waits this long.
			 timeout=2400),
	'faults': Profile('faults', 'default + fault injection (failslab, fail_page_alloc) '
			  'and kmemleak; every arch but m68k',
			  {'m68k': _NO_KMEMLEAK_M68K},
			  # A leak's record (size, backtrace) on the console, in the
			  # log of the case whose check found it.
			  kernel_args=('kmemleak.verbose=1',),
			  # Measured: 218-268 s in the guest for 291 cases
			  # (20261205-060017), close to the default 300 s; s390x
			  # under TCG 492 s for 778 (20261208-012412) and 812 s
			  # with three other builds on the two cores
			  # (20261208-020425).  Only a hung guest waits this long.
			  timeout=1800),
}


def default_fragment(arch: str) -> Path:
	"""The default profile's fragment for an arch: kunit/profiles/default.config,
	or kunit/profiles/default-<arch>.config where the arch cannot have
	every option of it (m68k: no lockdep, so no PROVE_LOCKING; the file
	says why).  Every profile builds on it."""
	own = paths.KUNIT_DIR / 'profiles' / f'{DEFAULT}-{arch}.config'
	return own if own.exists() else paths.KUNIT_DIR / 'profiles' / f'{DEFAULT}.config'


def get(name: str) -> Profile:
	p = PROFILES.get(name)
	if p is None:
		raise UserError(f'unknown profile {name!r}; choose from {", ".join(PROFILES)}')
	if not p.fragment().exists() and name != DEFAULT:
		raise UserError(f'profile {name}: {p.fragment()} does not exist')
	return p


def build_key(tree_key: str, name: str) -> str:
	"""The build directory under <cache>/build/ for a tree and a profile."""
	return tree_key if name == DEFAULT else f'{tree_key}-{name}'


def exec_options(name: str, qemu_args: Sequence[str],
		 kernel_args: Sequence[str] = (), arch: str = '') -> List[str]:
	"""kunit.py exec options of a profile (its own, then those it needs on
	arch), then the user's --qemu-args; the profile's --kernel_args, then
	kernel_args (the run's own)."""
	p = PROFILES.get(name, PROFILES[DEFAULT])
	mine = list(p.qemu_args) + list(p.arch_qemu_args.get(arch, ()))
	out = [f'--qemu_args={q}' for q in mine + list(qemu_args)]
	out += [f'--kernel_args={k}' for k in list(p.kernel_args) + list(kernel_args)]
	return out
