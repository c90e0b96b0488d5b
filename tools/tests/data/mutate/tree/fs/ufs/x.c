// SPDX-License-Identifier: GPL-2.0
int ufs_statfs(struct dentry *dentry, struct kstatfs *buf);

int ufs_statfs(struct dentry *dentry,
	       struct kstatfs *buf)
{
	struct super_block *sb = dentry->d_sb;
	unsigned long flags;

	mutex_lock(&UFS_SB(sb)->s_lock);
	if (buf) {
		struct { int a; } x = { 0 };
		write_seqlock(&UFS_I(inode)->meta_lock);
		buf->f_type = x.a;
		write_sequnlock(&UFS_I(inode)->meta_lock);
	}
	spin_lock_irqsave(&sb->s_inode_list_lock, flags);
	spin_unlock_irqrestore(&sb->s_inode_list_lock, flags);
	read_seqlock_excl(&UFS_I(inode)->meta_lock);
	read_sequnlock_excl(&UFS_I(inode)->meta_lock);
	mutex_unlock(&UFS_SB(sb)->s_lock);
	return 0;
}
