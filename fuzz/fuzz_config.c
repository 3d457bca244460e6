/* fuzz_config.c - libFuzzer target for the configuration parser
 * (core/config.c) and the small parsers it uses: prefixes, addresses and
 * Fano line names (core/fano.c).
 *
 * Properties:
 *  1. fg_config_parse either accepts, or refuses with -EINVAL, a non-empty
 *     reason and a line number within the text (0 only for whole-file
 *     problems), and leaves the output untouched when it refuses;
 *  2. an accepted configuration satisfies the cross-field rules: layers fit
 *     a band, every layer's rule holds 1..7 distinct lines with a matching
 *     mask, the largest seed frame fits a frame, 255 fragments, a WebSocket
 *     message and a send queue; the slot view splits capacity over shards;
 *  3. a prefix that parses matches its own address and has no host bits;
 *     an address that parses has a non-zero port;
 *  4. a Fano line name that parses names 0..6 and its canonical name parses
 *     back to the same index. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fg/config.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_lines(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void check_config(const struct fg_config *c)
{
	FUZZ_CHECK(c->layers >= 1 && c->layers <= FG_MAX_LAYERS);
	FUZZ_CHECK((uint32_t)c->layers <= (1u << c->bands.layer_bits));
	FUZZ_CHECK(c->bands.n_layers == c->layers);
	for (unsigned l = 0; l < FG_MAX_LAYERS; l++) {
		const struct fg_rule *r = &c->rules[l];
		uint8_t m = 0;
		FUZZ_CHECK(r->n >= 1 && r->n <= FG_LINES);
		for (unsigned i = 0; i < r->n; i++) {
			FUZZ_CHECK(r->order[i] < FG_LINES);
			FUZZ_CHECK(!(m & (1u << r->order[i])));
			m |= (uint8_t)(1u << r->order[i]);
		}
		FUZZ_CHECK(m == r->mask);
	}
	uint64_t frame = fg_config_max_frame(c);
	FUZZ_CHECK(frame - FG_HDR_LEN <= FG_LEN_MAX);
	FUZZ_CHECK(frame <= (uint64_t)FG_FRAG_MAX * (c->mtu - FG_FRAG_HDR_LEN));
	FUZZ_CHECK(frame <= c->ws_max_message && frame <= c->send_queue_max);
	FUZZ_CHECK(c->udp_port != 0 && c->udp_port != c->udp_raw_port);
	FUZZ_CHECK(c->slot_capacity >= c->lcores && c->lcores >= 1);
	FUZZ_CHECK(c->shadow_sample >= 0.0 && c->shadow_sample <= 1.0);
	FUZZ_CHECK(c->n_allow <= FG_ALLOW_MAX);
	FUZZ_CHECK(memchr(c->op_socket, '\0', sizeof(c->op_socket)) != NULL && c->op_socket[0]);
	struct fg_slots_cfg sc;
	fg_config_slots(c, c->lcores, &sc);
	FUZZ_CHECK(sc.capacity >= 1 && sc.capacity * c->lcores <= c->slot_capacity);
	FUZZ_CHECK(sc.n_layers == c->layers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0'; /* an embedded NUL ends the text, as a C string does */

	struct fg_config *c = malloc(sizeof(*c));
	struct fg_config_error err;
	if (c) {
		memset(c, 0xA5, sizeof(*c));
		int rc = fg_config_parse(c, s, "fuzz", &err);
		if (rc == 0) {
			check_config(c);
		} else {
			FUZZ_CHECK(rc == -EINVAL);
			FUZZ_CHECK(err.reason[0] != '\0');
			FUZZ_CHECK(err.line >= 0 && err.line <= count_lines(s));
			FUZZ_CHECK(c->hidden == 0xA5A5A5A5u);
		}
		free(c);
	}

	struct fg_prefix p;
	if (fg_prefix_parse(s, &p) == 0) {
		FUZZ_CHECK(p.family == AF_INET || p.family == AF_INET6);
		FUZZ_CHECK(p.len <= (p.family == AF_INET ? 32 : 128));
		FUZZ_CHECK(fg_prefix_match(&p, p.family, p.addr));
	}
	struct fg_addr a;
	if (fg_addr_parse(s, &a) == 0)
		FUZZ_CHECK(a.set && a.port != 0 && (a.family == AF_INET || a.family == AF_INET6));
	int line = fg_fano_line_parse(s);
	FUZZ_CHECK(line >= -1 && line < (int)FG_LINES);
	if (line >= 0)
		FUZZ_CHECK(fg_fano_line_parse(fg_fano_line_name((unsigned)line)) == line);
	free(s);
	return 0;
}
