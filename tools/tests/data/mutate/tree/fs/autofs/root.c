// SPDX-License-Identifier: GPL-2.0-or-later
/* A small stand-in for fs/autofs/root.c: spin_lock(&sbi->fs_lock); in a comment */
#include "autofs_i.h"

static int autofs_lookup(struct inode *dir, struct dentry *dentry);

#define LOCKED_HELPER(s) { spin_lock(&(s)->lookup_lock); }

static const char *msg = "spin_lock(&sbi->lookup_lock);";

static int autofs_lookup(struct inode *dir, struct dentry *dentry)
{
	struct autofs_sb_info *sbi = autofs_sbi(dir->i_sb);

	spin_lock(&sbi->lookup_lock);
	if (dentry) {
		spin_lock(&dentry->d_lock);
		if (!list_empty(&dentry->d_child)) {
			spin_unlock(&dentry->d_lock);
			spin_unlock(&sbi->lookup_lock);
			return 1;
		}
		spin_unlock(&dentry->d_lock);
	}
	spin_unlock(&sbi->lookup_lock);
	return 0;
}

static int autofs_lookup_active(struct dentry *dentry)
{
	struct autofs_sb_info *sbi = autofs_sbi(dentry->d_sb);

	spin_lock( & sbi->lookup_lock );
	autofs_lookup(NULL, dentry);	/* a call, not a definition */
	spin_unlock(&sbi->lookup_lock);
	return 0;
}

static void autofs_notify(struct autofs_sb_info *sbi)
	__releases(&sbi->wq_mutex)
{
	mutex_unlock(&sbi->wq_mutex);
}

static int autofs_wait(struct autofs_sb_info *sbi)
{
	if (mutex_lock_interruptible(&sbi->wq_mutex))
		return -EINTR;
	while (sbi->busy) {
		mutex_unlock(&sbi->wq_mutex);
		if (mutex_lock_interruptible(&sbi->wq_mutex))
			return -EINTR;
	}
	spin_lock(&sbi->fs_lock);
	sbi->flags = 0;
	spin_unlock(&sbi->fs_lock);
	autofs_notify(sbi);
	return 0;
}

static int autofs_ioctl(struct file *filp, unsigned int cmd)
{
	if (cmd == 1 && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (cmd == 2 &&
	    !ns_capable(current_user_ns(),
			CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

static void walk(struct dentry *root)
{
	struct dentry *p = root, *parent;

	spin_lock(&p->d_lock);
	parent = p->d_parent;
	spin_unlock(&parent->d_lock);
	spin_unlock(&p->d_lock);
}

/* What the VFS calls: the functions above are used through it. */
static const struct autofs_ops autofs_root_ops = {
	.lookup	= autofs_lookup_active,
	.wait	= autofs_wait,
	.ioctl	= autofs_ioctl,
	.walk	= walk,
};
