// SPDX-License-Identifier: GPL-2.0
/*
 * Linked into the UML kernel of a coverage run (tools/bklkunit/coverage/umlgcov.py,
 * docs/coverage.md#uml-under-gcc-12), never part of the kernel tree.
 *
 * gcc >= 7 writes the .gcda files from a destructor of priority 100 in each
 * profiled object, in the section .fini_array.00100; UML's linker script
 * (arch/um/kernel/dyn.lds.S) keeps only .fini_array, so those destructors
 * are never run and no .gcda file is written.  This destructor, in
 * .fini_array itself, has libgcov write them all when the UML process exits.
 */
extern void __gcov_dump(void);

__attribute__((destructor)) static void bkl_gcov_dump_at_exit(void)
{
	__gcov_dump();
}
