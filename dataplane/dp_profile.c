/* dp_profile.c - drivers-config profile parsing (see dp_profile.h).
 * Any thread before the lcores start; no logging. */
#include "dp_profile.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#ifndef FG_DRIVERS_SRC_DIR
#define FG_DRIVERS_SRC_DIR "drivers-config"
#endif
#ifndef FG_DRIVERS_ETC_DIR
#define FG_DRIVERS_ETC_DIR "/etc/fanogate/drivers-config"
#endif
#ifndef FG_DRIVERS_DATA_DIR
#define FG_DRIVERS_DATA_DIR "/usr/share/fanogate/drivers-config"
#endif
#ifndef FG_BUILD_ROOT
#define FG_BUILD_ROOT ""
#endif

void dp_profile_default(struct dp_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->hugepages = DP_HUGE_AUTO;
	snprintf(p->file_prefix, sizeof(p->file_prefix), "fanogate");
	snprintf(p->log_level, sizeof(p->log_level), "*:notice");
	p->rx_desc = 1024;
	p->tx_desc = 1024;
	p->rss = true;
	p->tx_hold_ms = 50;
	p->arp_reply = true;
	p->handoff_ring = 1024;
	p->idle_polls = 64;
	p->idle_wake_after_us = 1000;
	p->lane_ring = 4096;
	p->lane_bufs = 1024;
	p->ack_peers = 1024;
}

int dp_profile_expand(const char *in, const char *port, char *out, size_t outlen, bool *port_used)
{
	size_t o = 0;
	while (*in) {
		const char *add = in;
		size_t n = 1;
		char tmp[256];
		if (in[0] == '$' && in[1] == '{') {
			const char *end = strchr(in + 2, '}');
			if (!end)
				return -EINVAL;
			size_t len = (size_t)(end - (in + 2));
			if (len >= sizeof(tmp))
				return -ENAMETOOLONG;
			memcpy(tmp, in + 2, len);
			tmp[len] = 0;
			char *def = strstr(tmp, ":-");
			if (def) {
				*def = 0;
				def += 2;
			}
			const char *v;
			if (!strcmp(tmp, "port")) {
				v = port;
				if (port_used)
					*port_used = true;
			} else {
				v = getenv(tmp);
			}
			if (!v || !*v)
				v = def;
			if (!v)
				return -EINVAL;
			add = v;
			n = strlen(v);
			in = end + 1;
		} else {
			in++;
		}
		if (o + n >= outlen)
			return -ENAMETOOLONG;
		memcpy(out + o, add, n);
		o += n;
	}
	out[o] = 0;
	return 0;
}

bool dp_port_is_pci(const char *s)
{
	/* [dddd:]bb:dd.f, hex digits, function 0..7 */
	size_t n = strlen(s);
	if (n != 7 && n != 12)
		return false;
	const char *form = n == 12 ? "xxxx:xx:xx.o" : "xx:xx.o";
	for (size_t i = 0; i < n; i++) {
		char c = s[i], f = form[i];
		if ((f == 'x' && !isxdigit((unsigned char)c)) || (f == 'o' && (c < '0' || c > '7')) ||
		    (f != 'x' && f != 'o' && c != f))
			return false;
	}
	return true;
}

struct parse_state {
	struct dp_profile *p;
	const char *port;
	FILE *f;
	char *err;
	size_t errlen;
	int line;
	int failed_line;
	bool failed;
};

static bool parse_bool(const char *v, bool *out)
{
	if (!strcasecmp(v, "on") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1"))
		*out = true;
	else if (!strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0"))
		*out = false;
	else
		return false;
	return true;
}

static bool parse_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 0);
	if (errno || end == v || *end || x < lo || x > hi)
		return false;
	*out = (uint32_t)x;
	return true;
}

static bool parse_mac(const char *v, uint8_t mac[6])
{
	unsigned b[6];
	char tail;
	if (sscanf(v, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return false;
		mac[i] = (uint8_t)b[i];
	}
	return true;
}

static bool is_pow2(uint32_t x) { return x >= 2 && !(x & (x - 1)); }

static int set_str(char *dst, size_t cap, const char *v)
{
	if (strlen(v) >= cap)
		return -1;
	snprintf(dst, cap, "%s", v);
	return 0;
}

static int handler(void *user, const char *section, const char *name, const char *raw)
{
	struct parse_state *st = user;
	int lineno = st->line;
	struct dp_profile *p = st->p;
	char v[DP_PROFILE_STR];
	const char *why = NULL;
	uint32_t u = 0;
	bool b;

	if (!name) /* a section header: nothing to check */
		return 1;
	bool named_port = false;
	int rc = dp_profile_expand(raw, st->port, v, sizeof(v), &named_port);
	if (rc == -EINVAL && strstr(raw, "${port}") && !(st->port && *st->port)) {
		why = "${port} needs [dataplane] port (the NIC: an interface name or a PCI address)";
		goto bad;
	}
	if (rc < 0) {
		why = rc == -EINVAL ? "unset ${VAR} without a default, or an unterminated ${" : "value too long";
		goto bad;
	}
	if (named_port && !p->port_used) {
		/* what ${port} stood for: the expansion of "${port...}" alone */
		const char *at = strstr(raw, "${port");
		const char *end = at ? strchr(at, '}') : NULL;
		char one[128];
		if (end && (size_t)(end - at + 1) < sizeof(one)) {
			memcpy(one, at, (size_t)(end - at + 1));
			one[end - at + 1] = 0;
			if (dp_profile_expand(one, st->port, p->port, sizeof(p->port), NULL) < 0)
				p->port[0] = 0;
		}
		p->port_used = true;
	}
#define IS(s, k) (!strcmp(section, s) && !strcmp(name, k))
	if (IS("eal", "args")) {
		if (set_str(p->eal_args, sizeof(p->eal_args), v))
			why = "too long";
	} else if (IS("eal", "hugepages")) {
		if (!strcmp(v, "auto"))
			p->hugepages = DP_HUGE_AUTO;
		else if (parse_bool(v, &b))
			p->hugepages = b ? DP_HUGE_ON : DP_HUGE_OFF;
		else
			why = "expected auto, on or off";
	} else if (IS("eal", "huge_dir")) {
		if (set_str(p->huge_dir, sizeof(p->huge_dir), v))
			why = "too long";
	} else if (IS("eal", "memory_mb")) {
		if (!parse_u32(v, 0, 1u << 20, &p->memory_mb))
			why = "expected 0..1048576";
	} else if (IS("eal", "lcores")) {
		if (set_str(p->lcores, sizeof(p->lcores), v))
			why = "too long";
	} else if (IS("eal", "multiprocess")) {
		if (!parse_bool(v, &p->multiprocess))
			why = "expected on or off";
	} else if (IS("eal", "file_prefix")) {
		if (!*v || set_str(p->file_prefix, sizeof(p->file_prefix), v))
			why = "expected a short non-empty name";
	} else if (IS("eal", "log_level")) {
		if (!*v || set_str(p->log_level, sizeof(p->log_level), v))
			why = "expected a DPDK log level like *:notice";
	} else if (IS("port", "vdev")) {
		if (p->n_vdev == DP_PROFILE_DEVS)
			why = "too many vdev lines";
		else if (!*v || set_str(p->vdev[p->n_vdev++], DP_PROFILE_STR, v))
			why = "expected driver<id>[,key=value...]";
	} else if (IS("port", "pci")) {
		if (p->n_pci == DP_PROFILE_DEVS)
			why = "too many pci lines";
		else if (!*v || set_str(p->pci[p->n_pci++], DP_PROFILE_STR, v))
			why = "expected domain:bus:dev.fn[,devargs]";
	} else if (IS("port", "rx_desc") || IS("port", "tx_desc")) {
		if (!parse_u32(v, 64, 16384, &u) || (u & (u - 1)))
			why = "expected a power of two 64..16384";
		else if (!strcmp(name, "rx_desc"))
			p->rx_desc = (uint16_t)u;
		else
			p->tx_desc = (uint16_t)u;
	} else if (IS("port", "rss")) {
		if (!parse_bool(v, &p->rss))
			why = "expected on or off";
	} else if (IS("port", "mtu")) {
		if (!parse_u32(v, 0, 9702, &p->mtu) || (p->mtu && p->mtu < 576))
			why = "expected 0 (device default) or 576..9702";
	} else if (IS("port", "promiscuous")) {
		if (!parse_bool(v, &p->promiscuous))
			why = "expected on or off";
	} else if (IS("port", "mbufs")) {
		if (!parse_u32(v, 0, 1u << 24, &p->mbufs) || (p->mbufs && p->mbufs < 1024))
			why = "expected 0 (computed) or 1024..16777216";
	} else if (IS("port", "delivery_by_ref")) {
		if (!strcmp(v, "auto"))
			p->delivery_by_ref = DP_BY_REF_AUTO;
		else if (parse_bool(v, &b))
			p->delivery_by_ref = b ? DP_BY_REF_ON : DP_BY_REF_OFF;
		else
			why = "expected auto, on or off";
	} else if (IS("port", "tx_hold_ms")) {
		if (!parse_u32(v, 0, 1000, &p->tx_hold_ms))
			why = "expected 0..1000";
	} else if (IS("net", "ip4")) {
		p->has_ip4 = *v != 0;
		if (*v && inet_pton(AF_INET, v, p->ip4) != 1)
			why = "expected an IPv4 address";
	} else if (IS("net", "ip6")) {
		p->has_ip6 = *v != 0;
		if (*v && inet_pton(AF_INET6, v, p->ip6) != 1)
			why = "expected an IPv6 address";
	} else if (IS("net", "gateway_mac")) {
		p->has_gateway = *v != 0;
		if (*v && !parse_mac(v, p->gateway_mac))
			why = "expected aa:bb:cc:dd:ee:ff";
	} else if (IS("net", "arp_reply")) {
		if (!parse_bool(v, &p->arp_reply))
			why = "expected on or off";
	} else if (IS("poll", "idle_sleep_us")) {
		if (!parse_u32(v, 0, 100000, &p->idle_sleep_us))
			why = "expected 0..100000";
	} else if (IS("poll", "idle_polls")) {
		if (!parse_u32(v, 1, 1000000, &p->idle_polls))
			why = "expected 1..1000000";
	} else if (IS("poll", "idle_backoff")) {
		if (!parse_bool(v, &p->idle_backoff))
			why = "expected on or off";
	} else if (IS("poll", "idle_wake")) {
		if (!parse_bool(v, &p->idle_wake))
			why = "expected on or off";
	} else if (IS("poll", "idle_wake_after_us")) {
		if (!parse_u32(v, 0, 1000000, &p->idle_wake_after_us))
			why = "expected 0..1000000";
	} else if (IS("poll", "handoff_ring")) {
		if (!parse_u32(v, 2, 1u << 20, &p->handoff_ring) || !is_pow2(p->handoff_ring))
			why = "expected a power of two 2..1048576";
	} else if (IS("poll", "lane_ring")) {
		if (!parse_u32(v, 2, 1u << 20, &p->lane_ring) || !is_pow2(p->lane_ring))
			why = "expected a power of two 2..1048576";
	} else if (IS("poll", "lane_bufs")) {
		if (!parse_u32(v, 2, 1u << 20, &p->lane_bufs) || !is_pow2(p->lane_bufs))
			why = "expected a power of two 2..1048576";
	} else if (IS("poll", "ack_peers")) {
		if (!parse_u32(v, 8, 1u << 20, &p->ack_peers))
			why = "expected 8..1048576";
	} else if (!strcmp(section, "profile")) {
		/* [profile] name/description/prerequisites: documentation only */
	} else {
		why = "unknown key";
	}
#undef IS
	if (!why)
		return 1;
bad:
	if (!st->failed) {
		snprintf(st->err, st->errlen, "%s:%d: [%s] %s = %s: %s", p->path, lineno, section, name, raw, why);
		st->failed_line = lineno;
	}
	st->failed = true;
	return 0;
}

/* inih reader that counts lines, so errors name them (the system libinih is
 * built without INI_HANDLER_LINENO). */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	char *r = fgets(str, num, st->f);
	if (r)
		st->line++;
	return r;
}

int dp_profile_load(struct dp_profile *p, const char *path, const char *port, char *err, size_t errlen)
{
	dp_profile_default(p);
	snprintf(p->path, sizeof(p->path), "%s", path);
	struct parse_state st = {.p = p, .port = port, .err = err, .errlen = errlen};
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	st.f = f;
	int rc = ini_parse_stream(read_line, &st, handler, &st);
	fclose(f);
	if (rc != 0) {
		/* inih reports the first line it could not parse; an earlier bad value wins */
		if (rc > 0 && (!st.failed || rc < st.failed_line))
			snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key = value)", path, rc);
		else if (!st.failed)
			snprintf(err, errlen, "%s: cannot be read", path);
		return -EINVAL;
	}
	if (p->n_vdev + p->n_pci == 0) {
		snprintf(err, errlen, "%s: [port] needs a vdev or pci line", path);
		return -EINVAL;
	}
	if (p->multiprocess && p->hugepages == DP_HUGE_OFF) {
		snprintf(err, errlen, "%s: [eal] multiprocess needs hugepages (dpdk-dumpcap attaches through them)", path);
		return -EINVAL;
	}
	return 0;
}

static bool readable(const char *path) { return access(path, R_OK) == 0; }

/* This program lies under the build tree (meson's build root): run from
 * the build, not installed. */
static bool in_build_tree(void)
{
	char exe[PATH_MAX], root[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || !FG_BUILD_ROOT[0] || !realpath(FG_BUILD_ROOT, root))
		return false;
	exe[n] = 0;
	size_t l = strlen(root);
	return !strncmp(exe, root, l) && exe[l] == '/';
}

unsigned dp_profile_dirs(const char *dirs[DP_PROFILE_DIRS])
{
	const char *env = getenv("FG_DRIVERS_CONFIG");
	unsigned n = 0;
	if (env && *env)
		dirs[n++] = env;
	dirs[n++] = FG_DRIVERS_ETC_DIR;
	dirs[n++] = in_build_tree() ? FG_DRIVERS_SRC_DIR : FG_DRIVERS_DATA_DIR;
	return n;
}

int dp_profile_find(const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name);
	if (strchr(name, '/') || (n > 4 && !strcmp(name + n - 4, ".ini"))) {
		if (!readable(name))
			return -ENOENT;
		snprintf(out, outlen, "%s", name);
		return 0;
	}
	const char *dirs[DP_PROFILE_DIRS];
	unsigned nd = dp_profile_dirs(dirs);
	for (unsigned i = 0; i < nd; i++) {
		snprintf(out, outlen, "%s/%s.ini", dirs[i], name);
		if (readable(out))
			return 0;
	}
	return -ENOENT;
}

int dp_lcores_default(char *buf, size_t cap, long ncpu, unsigned n)
{
	if (ncpu < 1)
		ncpu = 1;
	long free_hi = ncpu - 1 - (long)n; /* CPUs 0..free_hi are no poll lcore's */
	long hi = free_hi >= 0 ? free_hi : ncpu - 1;
	int o = hi == 0 ? snprintf(buf, cap, "0@0") : snprintf(buf, cap, "0@(0-%ld)", hi);
	for (unsigned k = 1; k <= n && o >= 0 && (size_t)o < cap; k++)
		o += snprintf(buf + o, cap - (size_t)o, ",%u@%ld", k, (ncpu - (long)k % ncpu + ncpu) % ncpu);
	return o >= 0 && (size_t)o < cap ? o : -1;
}

/* The value of key= in a devargs list "driver,k=v,k=v" into out; false when absent. */
static bool devarg(const char *args, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);
	for (const char *c = strchr(args, ','); c; c = strchr(c + 1, ',')) {
		if (strncmp(c + 1, key, kl) || c[1 + kl] != '=')
			continue;
		const char *v = c + 2 + kl;
		size_t n = strcspn(v, ",");
		if (n >= cap)
			n = cap - 1;
		memcpy(out, v, n);
		out[n] = 0;
		return true;
	}
	return false;
}

int dp_vdev_tune(const char *vdev, bool (*iface_virtual)(const char *iface), char *out, size_t cap)
{
	char iface[64], budget[16];
	bool add = !strncmp(vdev, "net_af_xdp", 10) && !devarg(vdev, "busy_budget", budget, sizeof(budget)) &&
		   devarg(vdev, "iface", iface, sizeof(iface)) && iface[0] && iface_virtual(iface);
	int n = snprintf(out, cap, "%s%s", vdev, add ? ",busy_budget=0" : "");
	return n < 0 || (size_t)n >= cap ? -1 : add;
}
