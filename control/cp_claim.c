/* cp_claim.c - one daemon per resource: lock files, listeners, and who holds
 * them (see cp_claim.h). main.c's thread at start-up only. */
#include "cp_claim.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "audit/cp_audit_head.h"

/* "pid 1234 (fanogate)", or "" when pid is 0. */
static void holder_text(pid_t pid, char *out, size_t len)
{
	out[0] = '\0';
	if (pid <= 0)
		return;
	char path[64], comm[32] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	if (comm[0])
		snprintf(out, len, "pid %d (%s)", (int)pid, comm);
	else
		snprintf(out, len, "pid %d", (int)pid);
}

pid_t cp_claim_lock_holder(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return 0;
	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	char line[256];
	pid_t exact = 0, by_ino = 0;
	unsigned n_ino = 0;
	while (fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:10952996 0 EOF"; a waiter's
		 * line has "->" after the number. */
		char kind[16], adv[16], rw[16];
		int pid;
		unsigned maj, min;
		unsigned long long ino;
		const char *p = strchr(line, ':');
		if (!p)
			continue;
		p++;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "->", 2))
			continue;
		if (sscanf(p, "%15s %15s %15s %d %x:%x:%llu", kind, adv, rw, &pid, &maj, &min, &ino) != 7)
			continue;
		if (strcmp(kind, "FLOCK") || ino != (unsigned long long)st.st_ino || pid == (int)getpid())
			continue;
		if (maj == major(st.st_dev) && min == minor(st.st_dev))
			exact = pid;
		/* A stacked file system (overlayfs) shows the lower device here. */
		by_ino = pid;
		n_ino++;
	}
	fclose(f);
	return exact ? exact : n_ino == 1 ? by_ino : 0;
}

/* The pid the holder wrote into its lock file ("1234\n"), or 0. */
static pid_t lock_file_pid(int fd)
{
	char buf[24];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	return end != buf && (*end == '\n' || *end == '\0') && v > 0 && v != getpid() ? (pid_t)v : 0;
}

int cp_claim_lock(const char *path, const char *what, int create, int *fd_out, char *why, size_t why_len)
{
	*fd_out = -1;
	/* O_NONBLOCK: a FIFO put at the path must not hang the start. */
	int fd = open(path, (create ? O_RDWR | O_CREAT | O_NOFOLLOW : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
		      0600);
	if (fd < 0) {
		int e = errno;
		if (!create && e == ENOENT)
			return 0; /* nobody has ever held it */
		snprintf(why, why_len, "%s: lock %s: %s", what, path, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(why, why_len, "%s: lock %s: %s", what, path, strerror(e));
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "%s: lock %s %s, not a regular file", what, path, fg_file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		if (e != EWOULDBLOCK) {
			snprintf(why, why_len, "%s: lock %s: %s", what, path, strerror(e));
			close(fd);
			return -e;
		}
		pid_t pid = cp_claim_lock_holder(fd);
		if (!pid)
			pid = lock_file_pid(fd);
		char who[64];
		holder_text(pid, who, sizeof(who));
		snprintf(why, why_len, "%s is in use by %s, which holds its lock %s", what,
			 who[0] ? who : "another process", path);
		close(fd);
		return -EBUSY;
	}
	if (create) {
		char buf[24];
		int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
		if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
			int e = errno ? errno : EIO;
			snprintf(why, why_len, "%s: write %s: %s", what, path, strerror(e));
			close(fd);
			return -e;
		}
	}
	*fd_out = fd;
	return 0;
}

/* ---- listeners ------------------------------------------------------------ */

static socklen_t addr_sockaddr(const struct fg_addr *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->set && a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a->addr, 16);
		s6->sin6_port = htons(a->port);
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	s4->sin_family = AF_INET;
	if (a->set)
		memcpy(&s4->sin_addr, a->addr, 4);
	s4->sin_port = htons(a->port);
	return sizeof(*s4);
}

static void addr_text(const struct fg_addr *a, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "0.0.0.0";
	int v6 = a->set && a->family == AF_INET6;
	if (a->set)
		inet_ntop(v6 ? AF_INET6 : AF_INET, a->addr, host, sizeof(host));
	snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)a->port);
}

static int is_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* The inode of a LISTEN socket in the /proc/net table file whose address
 * conflicts with a (addr_len 4 or 16), or 0. */
static unsigned long listen_inode(const char *file, const struct fg_addr *a, size_t addr_len)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return 0;
	char line[512];
	unsigned long found = 0;
	const uint8_t *want = a->addr;
	uint8_t any[16] = {0};
	if (!a->set)
		want = any;
	int want_any = is_zero(want, a->set && a->family == AF_INET6 ? 16 : 4);
	while (!found && fgets(line, sizeof(line), f)) {
		char local[40];
		unsigned port, state;
		unsigned long inode;
		/* "  0: 0100007F:20FB 00000000:0000 0A 00000000:00000000 00:00000000
		 *  00000000  0  0 12345 ..." */
		if (sscanf(line, " %*u: %39[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*u %*d %lu", local, &port, &state,
			   &inode) != 4)
			continue;
		if (state != 0x0A || port != a->port || strlen(local) != addr_len * 2)
			continue;
		/* Each 32-bit word is printed as the number it reads as in host
		 * order: reading it back the same way restores the bytes. */
		uint8_t bytes[16];
		for (size_t w = 0; w < addr_len / 4; w++) {
			char hex[9];
			memcpy(hex, local + w * 8, 8);
			hex[8] = '\0';
			uint32_t v = (uint32_t)strtoul(hex, NULL, 16);
			memcpy(bytes + w * 4, &v, 4);
		}
		int mine_v6 = a->set && a->family == AF_INET6;
		int same = 0;
		if (addr_len == 16 && !mine_v6) /* a v4-mapped or wildcard v6 listener */
			same = is_zero(bytes, 16) ||
			       (is_zero(bytes, 10) && bytes[10] == 0xff && bytes[11] == 0xff &&
				!memcmp(bytes + 12, want, 4));
		else if (addr_len == 4 && mine_v6)
			same = want_any || is_zero(bytes, 4);
		else
			same = want_any || is_zero(bytes, addr_len) || !memcmp(bytes, want, addr_len);
		if (same)
			found = inode;
	}
	fclose(f);
	return found;
}

/* The pid (not this one) with an fd on socket:[inode], or 0. */
static pid_t socket_owner(unsigned long inode)
{
	char want[48];
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	pid_t found = 0;
	struct dirent *pe;
	while (!found && (pe = readdir(proc))) {
		char *end;
		long pid = strtol(pe->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue; /* gone, or not ours to see */
		struct dirent *fe;
		while ((fe = readdir(fds))) {
			char link[320], target[64];
			snprintf(link, sizeof(link), "%s/%s", dir, fe->d_name);
			ssize_t n = readlink(link, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (!strcmp(target, want)) {
				found = (pid_t)pid;
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

pid_t cp_claim_tcp_holder(const struct fg_addr *a)
{
	unsigned long ino = 0;
	if (!(a->set && a->family == AF_INET6))
		ino = listen_inode("/proc/net/tcp", a, 4);
	if (!ino)
		ino = listen_inode("/proc/net/tcp6", a, 16);
	if (!ino && a->set && a->family == AF_INET6)
		ino = listen_inode("/proc/net/tcp", a, 4);
	return ino ? socket_owner(ino) : 0;
}

int cp_claim_listen(const struct fg_addr *a, const char *what, int backlog, uint16_t *port, char *why,
		    size_t why_len)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_sockaddr(a, &ss);
	char at[INET6_ADDRSTRLEN + 16];
	addr_text(a, at, sizeof(at));
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(why, why_len, "%s %s: socket: %s", what, at, strerror(e));
		return -e;
	}
	/* SO_REUSEADDR lets a restart bind over connections in TIME_WAIT; it
	 * never lets two sockets listen on one address (SO_REUSEPORT would,
	 * and is not set). */
	int one = 1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, backlog) < 0) {
		int e = errno;
		close(fd);
		if (e == EADDRINUSE) {
			char who[64];
			holder_text(cp_claim_tcp_holder(a), who, sizeof(who));
			snprintf(why, why_len, "%s %s is in use by %s", what, at,
				 who[0] ? who : "another process (its pid is not visible here)");
		} else {
			snprintf(why, why_len, "%s %s: %s", what, at, strerror(e));
		}
		return -e;
	}
	sl = sizeof(ss);
	*port = a->port;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* ---- the daemon's resources ----------------------------------------------- */

int cp_claim_op_dir(const char *path, char *why, size_t why_len)
{
	char dir[FG_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(why, why_len, "[operator] socket: cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	return 0;
}

/* One daemon per operator socket: create the socket's directory and take
 * the flock on "<socket>.lock" beside it (the file holds the pid). */
static int op_lock(const struct fg_config *cfg, int *fd_out, char *why, size_t why_len)
{
	const char *path = cfg->op_socket;
	char lock[FG_PATH_MAX + 8], what[FG_PATH_MAX + 24];
	if (!path[0] || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(why, why_len, "[operator] socket: empty or too long path");
		return -EINVAL;
	}
	int r = cp_claim_op_dir(path, why, why_len);
	if (r < 0)
		return r;
	snprintf(lock, sizeof(lock), "%s.lock", path);
	snprintf(what, sizeof(what), "operator socket %s", path);
	return cp_claim_lock(lock, what, 1, fd_out, why, why_len);
}

int cp_claim_take(struct cp_claim *c, const struct fg_config *cfg, char *why, size_t why_len)
{
	c->op_lock_fd = c->tls_fd = c->metrics_fd = -1;
	c->tls_port = c->metrics_port = 0;
	int r = op_lock(cfg, &c->op_lock_fd, why, why_len);
	if (r < 0)
		goto fail;
	/* The audit log's own lock, probed: the log itself takes it when it
	 * opens, after the EAL. */
	char head[FG_PATH_MAX + 8], what[FG_PATH_MAX + 16];
	if ((r = cp_audit_head_name(cfg->audit_path, head, sizeof(head))) < 0) {
		snprintf(why, why_len, "[audit] path %s: too long", cfg->audit_path);
		goto fail;
	}
	snprintf(what, sizeof(what), "audit log %s", cfg->audit_path);
	int probe = -1;
	if ((r = cp_claim_lock(head, what, 0, &probe, why, why_len)) < 0)
		goto fail;
	if (probe >= 0)
		close(probe);
	struct fg_addr tls = cfg->tls_listen;
	if (!tls.set) /* as the key table's default */
		tls = (struct fg_addr){.family = AF_INET, .port = 8443, .set = true};
	r = cp_claim_listen(&tls, "[tls] listen", 512, &c->tls_port, why, why_len);
	if (r < 0)
		goto fail;
	c->tls_fd = r;
	if (cfg->metrics_listen.set) {
		r = cp_claim_listen(&cfg->metrics_listen, "[metrics] listen", 16, &c->metrics_port, why, why_len);
		if (r < 0)
			goto fail;
		c->metrics_fd = r;
	}
	return 0;
fail:
	cp_claim_release(c);
	if (c->op_lock_fd >= 0) {
		close(c->op_lock_fd);
		c->op_lock_fd = -1;
	}
	return r;
}

void cp_claim_release(struct cp_claim *c)
{
	if (c->tls_fd >= 0)
		close(c->tls_fd);
	if (c->metrics_fd >= 0)
		close(c->metrics_fd);
	c->tls_fd = c->metrics_fd = -1;
}
