// SPDX-License-Identifier: GPL-2.0-or-later
static DEFINE_RWLOCK(atalk_sockets_lock);

static const struct proto_ops atalk_dgram_ops = {
	.family = PF_APPLETALK,
};

static int atalk_bind(struct socket *sock, struct sockaddr *uaddr, int addr_len)
{
	struct sock *sk = sock->sk;
	int err = -EINVAL;

	lock_sock(sk);
	read_lock_bh(&atalk_sockets_lock);
	err = 0;
	read_unlock_bh(&atalk_sockets_lock);
	release_sock(sk);
	return err;
}

static int atalk_ioctl(struct socket *sock, unsigned int cmd, unsigned long arg)
{
	int rc = -ENOIOCTLCMD;

	switch (cmd) {
	case SIOCADDRT:
		if (!capable(CAP_NET_ADMIN))
			return -EPERM;
		rtnl_lock();
		rc = 0;
		rtnl_unlock();
		break;
	}
	return rc;
}

static void *atalk_seq_start(struct seq_file *seq, loff_t *pos)
	__acquires(atalk_sockets_lock)
{
	read_lock_bh(&atalk_sockets_lock);
	return NULL;
}
