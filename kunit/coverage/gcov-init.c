// SPDX-License-Identifier: GPL-2.0
/*
 * /init of the coverage initramfs (./tools/kunit.py run --coverage,
 * docs/coverage.md).  The kernel runs it after the KUnit suites: it mounts
 * debugfs, writes every .gcda file under gcov/ to the console, base64 between
 * marker lines, and restarts the machine (QEMU runs with -no-reboot, so the
 * guest ends there).
 *
 * Built when a run needs it, with the arch's compiler and the kernel tree's
 * own nolibc (tools/include/nolibc), no C library:
 *   $(CROSS_COMPILE)gcc -Os -static -nostdlib -fno-stack-protector \
 *     -fno-asynchronous-unwind-tables -include <tree>/tools/include/nolibc/nolibc.h \
 *     -o init gcov-init.c -lgcc
 *
 * What it prints, one record per file (tools/bklkunit/coverage/gcovdump.py reads it):
 *   BKL-GCOV BEGIN 1
 *   BKL-GCOV FILE <path under gcov/> <size> <fnv-1a 32 of the bytes, hex>
 *   BKL-GCOV D <base64, at most 76 characters>      (as many as needed)
 *   BKL-GCOV END
 *   ...
 *   BKL-GCOV DONE <files> <errors>
 * and "BKL-GCOV ERROR <path> <errno>" for a file or directory it cannot
 * read.  Every line starts with the marker, so a line the kernel printed in
 * between is told apart; the console log level is lowered to 1 first, so
 * the kernel does not print into the middle of a line.
 */

#define DEBUGFS		"/dbg"
#define GCOV_DIR	DEBUGFS "/gcov"
#define LINE		76

static int files, errors;

static void out(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(1, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= w;
	}
}

static void outs(const char *s)
{
	out(s, strlen(s));
}

/* Decimal without division of 64-bit numbers (no libgcc helpers needed). */
static void outu(unsigned int v)
{
	char b[12];
	int i = sizeof(b);

	do {
		b[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	out(b + i, sizeof(b) - i);
}

static void outx(unsigned int v)
{
	static const char hex[] = "0123456789abcdef";
	char b[8];
	int i;

	for (i = 7; i >= 0; i--) {
		b[i] = hex[v & 15];
		v >>= 4;
	}
	out(b, 8);
}

static void error(const char *path, int err)
{
	errors++;
	outs("BKL-GCOV ERROR ");
	outs(path);
	outs(" ");
	outu(err);
	outs("\n");
}

/* The whole file: debugfs gcov files have no size until read. */
static char *slurp(const char *path, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !buf) {
		error(path, errno);
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *more = realloc(buf, cap * 2);

			if (!more) {
				error(path, ENOMEM);
				free(buf);
				close(fd);
				return NULL;
			}
			buf = more;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			error(path, errno);
			free(buf);
			close(fd);
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	close(fd);
	*len = n;
	return buf;
}

static void dump(const char *path)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char line[16 + LINE + 2];
	unsigned int hash = 2166136261u;
	size_t len, i;
	char *buf = slurp(path, &len);
	int k = 0;

	if (!buf)
		return;
	for (i = 0; i < len; i++)
		hash = (hash ^ (unsigned char)buf[i]) * 16777619u;
	outs("BKL-GCOV FILE ");
	outs(path + strlen(GCOV_DIR));
	outs(" ");
	outu(len);
	outs(" ");
	outx(hash);
	outs("\n");
	for (i = 0; i < len; i += 3) {
		unsigned int v = (unsigned char)buf[i] << 16;

		if (i + 1 < len)
			v |= (unsigned char)buf[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)buf[i + 2];
		if (!k) {
			memcpy(line, "BKL-GCOV D ", 11);
			k = 11;
		}
		line[k++] = b64[(v >> 18) & 63];
		line[k++] = b64[(v >> 12) & 63];
		line[k++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		line[k++] = i + 2 < len ? b64[v & 63] : '=';
		if (k >= 11 + LINE || i + 3 >= len) {
			line[k++] = '\n';
			out(line, k);
			k = 0;
		}
	}
	outs("BKL-GCOV END\n");
	free(buf);
	files++;
}

static int ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

static void walk(const char *dir)
{
	char ents[4096];
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0) {
		error(dir, errno);
		return;
	}
	for (;;) {
		int n = getdents64(fd, (struct linux_dirent64 *)ents, sizeof(ents));
		int off;

		if (n < 0) {
			error(dir, errno);
			break;
		}
		if (n == 0)
			break;
		for (off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(ents + off);
			size_t dl = strlen(dir), nl = strlen(d->d_name);
			char *path;

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			path = malloc(dl + nl + 2);
			if (!path) {
				error(dir, ENOMEM);
				continue;
			}
			memcpy(path, dir, dl);
			path[dl] = '/';
			memcpy(path + dl + 1, d->d_name, nl + 1);
			if (d->d_type == DT_DIR)
				walk(path);
			else if (d->d_type == DT_REG && ends_with(path, ".gcda"))
				dump(path);
			free(path);
		}
	}
	close(fd);
}

int main(void)
{
	/* syslog(SYSLOG_ACTION_CONSOLE_LEVEL, NULL, 1): no printk mid-line. */
	my_syscall3(__NR_syslog, 8, 0, 1);
	outs("\nBKL-GCOV BEGIN 1\n");
	mkdir(DEBUGFS, 0700);
	if (mount("debugfs", DEBUGFS, "debugfs", 0, NULL) < 0)
		error(DEBUGFS, errno);
	else
		walk(GCOV_DIR);
	outs("BKL-GCOV DONE ");
	outu(files);
	outs(" ");
	outu(errors);
	outs("\n");
	/* LINUX_REBOOT_CMD_RESTART: QEMU's -no-reboot makes it the end. */
	reboot(LINUX_REBOOT_CMD_RESTART);
	for (;;)
		sleep(1000);
	return 0;
}
