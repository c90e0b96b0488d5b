// SPDX-License-Identifier: GPL-2.0
static void excl_case(struct kunit *test)
{
	spin_lock(&sbi->lookup_lock);
	spin_unlock(&sbi->lookup_lock);
}
