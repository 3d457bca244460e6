/* dp_test_util.h - helpers shared by the dataplane integration tests:
 * conformance vectors, pcap files, building Ethernet/IP/UDP packets,
 * running fanogate-dp with a timeout, reading its JSON report.
 * Header-only (static functions); test programs only. */
#ifndef DP_TEST_UTIL_H
#define DP_TEST_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "dp_pkt.h"

static inline int tu_hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* Bytes of vector `id` (the hex column) into out; returns the length, or
 * -1 when absent. An empty hex column gives 0. */
static inline int tu_vector(const char *id, uint8_t *out, size_t cap)
{
	const char *dir = getenv("FG_TEST_DATA");
	char path[512];
	static char line[32768];
	snprintf(path, sizeof(path), "%s/vectors.txt", dir ? dir : "tests/data");
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int n = -1;
	while (fgets(line, sizeof(line), f)) {
		size_t il = strlen(id);
		if (strncmp(line, id, il) || line[il] != ' ')
			continue;
		char *h = strchr(line, '|');
		h = h ? strchr(h + 1, '|') : NULL;
		if (!h)
			break;
		h++;
		while (*h == ' ')
			h++;
		n = 0;
		while (h[0] && h[0] != ' ' && h[0] != '|' && h[1] && (size_t)n < cap) {
			out[n++] = (uint8_t)(tu_hexval(h[0]) << 4 | tu_hexval(h[1]));
			h += 2;
		}
		break;
	}
	fclose(f);
	return n;
}

/* ---- pcap (classic format, Ethernet) ---- */
struct tu_pcap {
	FILE *f;
	uint32_t ts;
};

static inline bool tu_pcap_open(struct tu_pcap *p, const char *path)
{
	p->f = fopen(path, "wb");
	p->ts = 0;
	if (!p->f)
		return false;
	uint32_t gh[6] = {0xa1b2c3d4u, 0x00040002u, 0, 0, 65535, 1};
	return fwrite(gh, sizeof(gh), 1, p->f) == 1;
}

static inline void tu_pcap_add(struct tu_pcap *p, const uint8_t *pkt, uint32_t len)
{
	uint32_t rh[4] = {1700000000u + p->ts / 1000000u, p->ts % 1000000u, len, len};
	p->ts += 10;
	fwrite(rh, sizeof(rh), 1, p->f);
	fwrite(pkt, 1, len, p->f);
}

static inline void tu_pcap_close(struct tu_pcap *p) { fclose(p->f); }

/* Call fn(pkt, len, arg) for every record of a pcap file. Returns records or -1. */
static inline int tu_pcap_each(const char *path, void (*fn)(const uint8_t *, uint32_t, void *), void *arg)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint32_t gh[6];
	if (fread(gh, sizeof(gh), 1, f) != 1 || (gh[0] != 0xa1b2c3d4u && gh[0] != 0xa1b23c4du)) {
		fclose(f);
		return -1;
	}
	static uint8_t buf[65536];
	uint32_t rh[4];
	int n = 0;
	while (fread(rh, sizeof(rh), 1, f) == 1) {
		if (rh[2] > sizeof(buf) || fread(buf, 1, rh[2], f) != rh[2])
			break;
		fn(buf, rh[2], arg);
		n++;
	}
	fclose(f);
	return n;
}

/* ---- packets ---- */
static const uint8_t tu_dp_mac[6] = {0x02, 0xfd, 0, 0, 0, 1};
static const uint8_t tu_peer_mac[6] = {0x02, 0xfd, 0, 0, 0, 2};

/* An Ethernet/IPvN/UDP packet carrying payload; returns its length. */
static inline uint32_t tu_udp_pkt(uint8_t *out, int family, const uint8_t *src, uint16_t sport, const uint8_t *dst,
			   uint16_t dport, const uint8_t *payload, uint32_t plen, int vlan)
{
	struct dp_route rt;
	memset(&rt, 0, sizeof(rt));
	memcpy(rt.mac, tu_dp_mac, 6);     /* destination: the dataplane */
	memcpy(rt.our_mac, tu_peer_mac, 6);
	rt.has_vlan = vlan >= 0;
	rt.vlan_tci = (uint16_t)(vlan >= 0 ? vlan : 0);
	uint32_t hl = dp_pkt_hdr_len(&rt, family);
	memcpy(out + hl, payload, plen);
	return dp_pkt_build_udp(out, &rt, family, src, sport, dst, dport, plen, 1);
}

/* An Ethernet broadcast ARP request (60 bytes, padded) from sha / spa
 * asking for tpa (IPv4); returns its length. */
static inline uint32_t tu_arp_request(uint8_t out[60], const uint8_t sha[6], const uint8_t spa[4], const uint8_t tpa[4])
{
	memset(out, 0, 60);
	memset(out, 0xff, 6);
	memcpy(out + 6, sha, 6);
	out[12] = 0x08, out[13] = 0x06, out[15] = 1, out[16] = 8, out[18] = 6, out[19] = 4, out[21] = 1;
	memcpy(out + 22, sha, 6);
	memcpy(out + 28, spa, 4);
	memcpy(out + 38, tpa, 4);
	return 60;
}

/* ---- fanogate-dp ---- */

/* Run argv with a timeout; returns the exit status (0..255), or -1. */
static inline int tu_run(char *const argv[], int timeout_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < timeout_s * 10; i++) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(100000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static inline uint64_t tu_json_u64(json_t *root, const char *obj, const char *key)
{
	json_t *o = obj ? json_object_get(root, obj) : root;
	json_t *v = o ? json_object_get(o, key) : NULL;
	return v ? (uint64_t)json_integer_value(v) : 0;
}

#endif
