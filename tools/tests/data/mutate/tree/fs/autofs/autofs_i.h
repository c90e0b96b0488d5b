/* SPDX-License-Identifier: GPL-2.0-or-later */
struct autofs_sb_info;

void autofs_catatonic_mode(struct autofs_sb_info *);

static inline void autofs_add_expiring(struct dentry *dentry)
{
	struct autofs_sb_info *sbi = autofs_sbi(dentry->d_sb);

	spin_lock(&sbi->lookup_lock);
	list_add(&ino->expiring, &sbi->expiring_list);
	spin_unlock(&sbi->lookup_lock);
}

static inline int autofs_oz_mode(struct autofs_sb_info *sbi) { return sbi->oz; }
