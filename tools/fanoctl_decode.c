/* fanoctl_decode.c - `fanoctl decode`: decode aeon-flow frames, batches and
 * UDP fragmented-profile datagrams given as hex, with the core codecs
 * (core/wire.c), and print the fields of seed, canonical, resolved, status
 * and ACK streams. Malformed input prints the codec's stable reason and
 * exits 2.
 *
 * Who may call: fanoctl's main (single-threaded). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanoctl.h"
#include "fg/config.h"
#include "fg/fano.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

#define HEX_INPUT_MAX (64u << 20) /* hex characters read from stdin */
#define FLOATS_SHOWN 16u          /* human output; --json has them all */

struct dec {
	bool json;
	enum fg_transport transport;
	bool datagram;
	uint32_t hidden;      /* 0: inferred per frame from the body */
	uint32_t max_seq_len; /* UINT32_MAX unless given */
	struct fg_bands bands;
	uint8_t orientation;  /* enum fg_orientation_mode: --orientation, else the config's */
	int32_t bound_layer;  /* --layer L: the address named layer L; else FG_LAYER_UNBOUND */
	json_t *jframes;      /* --json: decoded frames */
};

void fanoctl_decode_help(FILE *out)
{
	fprintf(out,
		"usage: fanoctl decode [--json] [--transport stream|message] [--datagram]\n"
		"                      [--hidden N] [--max-seq-len N] [--layers N]\n"
		"                      [--orientation bit|signed] [--layer L]\n"
		"                      [--config FILE] HEX|-\n"
		"       fanoctl decode --datagram [OPTIONS] HEX HEX...|-\n\n"
		"Decode aeon-flow bytes given as hex (whitespace and ':' ignored; '-' reads the\n"
		"hex from stdin): one frame or a batch of frames back to back, or with\n"
		"--datagram one UDP datagram of the fragmented profile (4-byte fragment\n"
		"header + chunk). Frames on the seed, canonical, resolved, status (0xFFFE)\n"
		"and ACK (0xFFFF) streams are decoded down to their fields: line triple,\n"
		"sign, start_pos, seq_len, floats, XXH3-64 fingerprint, ACKed sequences.\n"
		"Several datagrams (arguments, or one hex line each on stdin) are\n"
		"reassembled per frame_id in any order, as fanogate does, and the frames\n"
		"decoded; a missing fragment is reported as 'incomplete'.\n\n"
		"options:\n"
		"  --json                 one JSON document on stdout\n"
		"  --transport T          message (default): a short buffer is malformed;\n"
		"                         stream: frames are read one by one and a short\n"
		"                         tail is reported as 'incomplete'\n"
		"  --datagram             the input is one UDP datagram (fragmented profile)\n"
		"  --hidden N             floats per row; default: the config's hidden with\n"
		"                         --config, else inferred as body floats / seq_len\n"
		"  --max-seq-len N        refuse seeds with more rows (default: no limit, or\n"
		"                         the config's with --config)\n"
		"  --layers N             configured layers for the bands (default 28, or\n"
		"                         the config's)\n"
		"  --orientation M        how a seed's flags low nibble gives its sign: bit\n"
		"                         (0 = +, 1 = -; default) or signed (0x1 = +, 0xF = -)\n"
		"  --layer L              the frame arrived on an address naming layer L (a\n"
		"                         /layers/L/ path, /flow?layer=L, UDP layer port): its\n"
		"                         stream's low 4 bits must equal L & 0x0F\n"
		"  --config FILE          take bands, layers, hidden, max_seq_len, orientation\n"
		"                         from FILE\n\n"
		"exit: 0 decoded, 1 bad --config file, 2 usage error or malformed input\n"
		"(the stable reason, e.g. seed_line, is printed).\n");
}

/* Hex text to bytes; whitespace and ':' ignored, an optional 0x prefix allowed. */
static int hex_parse(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strlen(s);
	uint8_t *buf = malloc(n / 2 + 1);
	size_t k = 0;
	int hi = -1;

	if (!buf)
		return -ENOMEM;
	while (isspace((unsigned char)*s))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int v;

		if (isspace((unsigned char)*s) || *s == ':')
			continue; /* "01 02", "01:02" (tshark, Wireshark "copy as hex") */
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else {
			free(buf);
			return -EINVAL;
		}
		if (hi < 0) {
			hi = v;
		} else {
			buf[k++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	if (hi >= 0) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*len = k;
	return 0;
}

static char *read_stdin(void)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		if (n + 1 == cap) {
			if (cap > HEX_INPUT_MAX) {
				free(buf);
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t got = fread(buf + n, 1, cap - 1 - n, stdin);
		n += got;
		if (got == 0)
			break;
	}
	if (buf)
		buf[n] = '\0';
	return buf;
}

static const char *band_name(enum fg_band b)
{
	switch (b) {
	case FG_BAND_SEED: return "seed";
	case FG_BAND_CANONICAL: return "canonical";
	case FG_BAND_RESOLVED: return "resolved";
	case FG_BAND_STATUS: return "status";
	case FG_BAND_ACK: return "ack";
	}
	return "unknown";
}

static void print_hex(const uint8_t *p, size_t n, size_t max)
{
	for (size_t i = 0; i < n && i < max; i++)
		printf("%02x", p[i]);
	if (n > max)
		printf("... (%zu bytes)", n);
}

static json_t *json_hex(const uint8_t *p, size_t n)
{
	char *s = malloc(n * 2 + 1);

	if (!s)
		return json_null();
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * n] = '\0';
	json_t *j = json_string(s);
	free(s);
	return j;
}

static void fp_text(uint64_t fp, char *buf, size_t cap)
{
	snprintf(buf, cap, "%016llx", (unsigned long long)fp);
}

/* f32 LE body: print (human) or add "floats" and "fingerprint" (json). */
static void body_out(const struct dec *d, json_t *jo, const uint8_t *body, uint32_t body_len)
{
	uint32_t n = body_len / 4;
	char fp[20], t[32];

	fp_text(fg_fingerprint(body, body_len), fp, sizeof(fp));
	if (d->json) {
		json_t *arr = json_array();
		for (uint32_t i = 0; i < n; i++) {
			float f;
			uint32_t bits = fg_le32(body + 4 * i);
			memcpy(&f, &bits, 4);
			fanoctl_float_text(f, t, sizeof(t));
			/* exact text, so the bits survive JSON's doubles */
			json_array_append_new(arr, json_string(t));
		}
		json_object_set_new(jo, "floats", arr);
		json_object_set_new(jo, "fingerprint", json_string(fp));
		return;
	}
	printf("  floats[%u]:", n);
	for (uint32_t i = 0; i < n && i < FLOATS_SHOWN; i++) {
		float f;
		uint32_t bits = fg_le32(body + 4 * i);
		memcpy(&f, &bits, 4);
		fanoctl_float_text(f, t, sizeof(t));
		printf(" %s", t);
	}
	if (n > FLOATS_SHOWN)
		printf(" ... (%u more)", n - FLOATS_SHOWN);
	printf("\n  fingerprint=%s (xxh3_64)\n", fp);
}

/* The limits for one seed-shaped payload: --hidden, else inferred. */
static struct fg_seed_limits limits_for(const struct dec *d, const struct fg_frame *f, bool *inferred)
{
	struct fg_seed_limits lim = {.hidden = d->hidden, .max_seq_len = d->max_seq_len, .orientation = d->orientation};

	*inferred = false;
	if (lim.hidden == 0) {
		uint32_t body = f->hdr.length >= FG_SEED_PREFIX_LEN ? f->hdr.length - FG_SEED_PREFIX_LEN : 0;
		uint32_t seq_len = f->hdr.length >= FG_SEED_PREFIX_LEN ? fg_le32(f->payload + 4) : 0;

		/* hidden = floats / seq_len when that is whole; otherwise 1 so
		 * the codec names what is wrong with the body */
		lim.hidden = 1;
		if (seq_len && body && body % 4 == 0 && (body / 4) % seq_len == 0) {
			lim.hidden = body / 4 / seq_len;
			*inferred = true;
		}
	}
	return lim;
}

/* Decode one frame's payload per its band. Returns 0 or -reason. */
static int frame_out(struct dec *d, const struct fg_frame *f, unsigned idx, json_t *jo)
{
	enum fg_band band;
	uint16_t layer = 0;
	int rc = fg_stream_classify_at(&d->bands, f->hdr.stream_id, d->bound_layer, &band, &layer);
	bool inferred;
	char t[64];

	if (d->json) {
		json_object_set_new(jo, "index", json_integer(idx));
		json_object_set_new(jo, "stream_id", json_integer(f->hdr.stream_id));
		json_object_set_new(jo, "sequence", json_integer(f->hdr.sequence));
		json_object_set_new(jo, "flags", json_integer(f->hdr.flags));
		json_object_set_new(jo, "length", json_integer(f->hdr.length));
	} else {
		printf("frame %u: stream=0x%04x seq=%u flags=0x%02x len=%u\n", idx, f->hdr.stream_id, f->hdr.sequence,
		       f->hdr.flags, f->hdr.length);
	}
	if (rc == -FG_R_UNKNOWN_STREAM) {
		/* A well-formed frame that is simply not on a fanogate stream. */
		if (d->json) {
			json_object_set_new(jo, "band", json_null());
			json_object_set_new(jo, "payload", json_hex(f->payload, f->hdr.length));
		} else {
			printf("  band: none (not a fanogate stream)\n  payload=");
			print_hex(f->payload, f->hdr.length, 64);
			printf("\n");
		}
		return 0;
	}
	if (rc < 0)
		return rc;
	if (d->json) {
		json_object_set_new(jo, "band", json_string(band_name(band)));
		if (band != FG_BAND_STATUS && band != FG_BAND_ACK)
			json_object_set_new(jo, "dst_layer", json_integer(layer));
	} else if (band == FG_BAND_STATUS || band == FG_BAND_ACK) {
		printf("  band=%s\n", band_name(band));
	} else {
		printf("  band=%s dst_layer=%u\n", band_name(band), layer);
	}

	switch (band) {
	case FG_BAND_SEED: {
		struct fg_seed s;
		struct fg_seed_limits lim = limits_for(d, f, &inferred);
		ssize_t r = fg_seed_decode(f, layer, &lim, &s);
		if (r < 0)
			return (int)r;
		if (d->json) {
			json_object_set_new(jo, "token_seq", json_integer(s.token_seq));
			json_object_set_new(jo, "line", json_integer(s.line));
			json_object_set_new(jo, "triple", json_string(fg_fano_line_name(s.line)));
			json_object_set_new(jo, "sign", json_string(s.orientation ? "-" : "+"));
			json_object_set_new(jo, "start_pos", json_integer(s.start_pos));
			json_object_set_new(jo, "seq_len", json_integer(s.seq_len));
			json_object_set_new(jo, "hidden", json_integer(lim.hidden));
			json_object_set_new(jo, "hidden_inferred", json_boolean(inferred));
		} else {
			printf("  seed: token_seq=%u line=%u %s sign=%s start_pos=%u seq_len=%u hidden=%u%s\n", s.token_seq,
			       s.line, fg_fano_line_name(s.line), s.orientation ? "-" : "+", s.start_pos, s.seq_len,
			       lim.hidden, inferred ? " (inferred)" : "");
		}
		body_out(d, jo, s.body, s.body_len);
		return 0;
	}
	case FG_BAND_CANONICAL: {
		struct fg_canon c;
		struct fg_seed_limits lim = limits_for(d, f, &inferred);
		ssize_t r = fg_canon_decode(f, layer, &lim, &c);
		if (r < 0)
			return (int)r;
		const char *kind = c.kind == FG_CANON_DIGEST ? "digest" : "full";
		if (d->json) {
			json_object_set_new(jo, "token_seq", json_integer(c.token_seq));
			json_object_set_new(jo, "kind", json_string(kind));
			json_object_set_new(jo, "start_pos", json_integer(c.start_pos));
			json_object_set_new(jo, "seq_len", json_integer(c.seq_len));
		} else {
			printf("  canonical: token_seq=%u kind=%s start_pos=%u seq_len=%u\n", c.token_seq, kind, c.start_pos,
			       c.seq_len);
		}
		if (c.kind == FG_CANON_DIGEST) {
			fp_text(c.digest, t, sizeof(t));
			if (d->json)
				json_object_set_new(jo, "fingerprint", json_string(t));
			else
				printf("  fingerprint=%s (xxh3_64, as reported)\n", t);
		} else {
			if (d->json) {
				json_object_set_new(jo, "hidden", json_integer(lim.hidden));
				json_object_set_new(jo, "hidden_inferred", json_boolean(inferred));
			} else {
				printf("  hidden=%u%s\n", lim.hidden, inferred ? " (inferred)" : "");
			}
			body_out(d, jo, c.body, c.body_len);
		}
		return 0;
	}
	case FG_BAND_RESOLVED: {
		struct fg_resolved rs;
		struct fg_seed_limits lim = limits_for(d, f, &inferred);
		ssize_t r = fg_resolved_decode(f, layer, &lim, &rs);
		if (r < 0)
			return (int)r;
		if (d->json) {
			json_object_set_new(jo, "token_seq", json_integer(rs.token_seq));
			json_object_set_new(jo, "start_pos", json_integer(rs.start_pos));
			json_object_set_new(jo, "seq_len", json_integer(rs.seq_len));
			json_object_set_new(jo, "hidden", json_integer(lim.hidden));
			json_object_set_new(jo, "hidden_inferred", json_boolean(inferred));
		} else {
			printf("  resolved: token_seq=%u start_pos=%u seq_len=%u hidden=%u%s\n", rs.token_seq, rs.start_pos,
			       rs.seq_len, lim.hidden, inferred ? " (inferred)" : "");
		}
		body_out(d, jo, rs.body, rs.body_len);
		return 0;
	}
	case FG_BAND_STATUS: {
		struct fg_status st;
		ssize_t r = fg_status_decode(f, &st);
		if (r < 0)
			return (int)r;
		fp_text(st.fingerprint, t, sizeof(t));
		bool shadow = st.facts & FG_FACT_SHADOW, resolved = st.facts & FG_FACT_RESOLVED;
		bool awaiting = st.facts & FG_FACT_AWAITING, degraded = st.facts & FG_FACT_DEGRADED;
		const char *line = st.line < FG_LINES ? fg_fano_line_name(st.line) : "(none)";
		if (d->json) {
			json_object_set_new(jo, "token_seq", json_integer(st.token_seq));
			json_object_set_new(jo, "dst_layer", json_integer(st.dst_layer));
			json_object_set_new(jo, "outcome", json_string(fg_outcome_name((enum fg_outcome)st.outcome)));
			json_object_set_new(jo, "line", st.line < FG_LINES ? json_integer(st.line) : json_null());
			json_object_set_new(jo, "triple", json_string(line));
			json_object_set_new(jo, "sign", json_string(st.sign ? "-" : "+"));
			json_object_set_new(jo, "bitset", json_integer(st.bitset));
			json_object_set_new(jo, "expected", json_integer(st.expected));
			json_object_set_new(jo, "landed", json_integer(st.landed));
			json_object_set_new(jo, "ack", json_boolean(st.facts & FG_FACT_ACK));
			json_object_set_new(jo, "shadow_mode", json_boolean(shadow));
			json_object_set_new(jo, "fully_resolved", json_boolean(resolved));
			json_object_set_new(jo, "awaiting_resolution", json_boolean(awaiting));
			json_object_set_new(jo, "degraded", json_boolean(degraded));
			json_object_set_new(jo, "audit", json_string(fg_status_audit_name(st.facts)));
			json_object_set_new(jo, "line_state", json_string(fg_line_state_name((enum fg_line_state)st.line_state)));
			json_object_set_new(jo, "reason", json_string(st.reason ? fg_reason_name(st.reason) : ""));
			json_object_set_new(jo, "bytes", json_integer(st.bytes));
			json_object_set_new(jo, "model_epoch", json_integer(st.model_epoch));
			json_object_set_new(jo, "fingerprint", json_string(t));
		} else {
			printf("  status: token_seq=%u dst_layer=%u outcome=%s line=%s sign=%s line_state=%s\n", st.token_seq,
			       st.dst_layer, fg_outcome_name((enum fg_outcome)st.outcome), line, st.sign ? "-" : "+",
			       fg_line_state_name((enum fg_line_state)st.line_state));
			printf("  bitset=0x%02x expected=0x%02x landed=0x%02x ack=%d shadow_mode=%d fully_resolved=%d "
			       "awaiting_resolution=%d degraded=%d audit=%s\n",
			       st.bitset, st.expected, st.landed, !!(st.facts & FG_FACT_ACK), shadow, resolved, awaiting, degraded,
			       fg_status_audit_name(st.facts));
			printf("  reason=%s bytes=%u model_epoch=%u fingerprint=%s\n",
			       st.reason ? fg_reason_name(st.reason) : "-", st.bytes, st.model_epoch, t);
		}
		return 0;
	}
	case FG_BAND_ACK: {
		int n = fg_ack_frame_decode(f, NULL, 0);
		if (n < 0)
			return n;
		struct fg_ack_entry *e = calloc((size_t)n + 1, sizeof(*e));
		if (!e)
			return -FG_R_NOSPACE;
		n = fg_ack_frame_decode(f, e, (size_t)n);
		json_t *arr = d->json ? json_array() : NULL;
		if (!d->json)
			printf("  ack: %d entr%s\n", n, n == 1 ? "y" : "ies");
		for (int i = 0; i < n; i++) {
			json_t *acked = json_array();
			if (!d->json)
				printf("  entry %d: stream=0x%04x base_seq=%u bitmap_hi=0x%08x bitmap_lo=0x%08x acks {", i,
				       e[i].stream_id, e[i].base_seq, e[i].bitmap_hi, e[i].bitmap_lo);
			bool first = true;
			for (uint32_t k = 0; k < 64; k++) {
				uint32_t seq = e[i].base_seq + k;
				if (!fg_ack_entry_covers(&e[i], seq))
					continue;
				json_array_append_new(acked, json_integer(seq));
				if (!d->json)
					printf(first ? "%u" : ",%u", seq);
				first = false;
			}
			if (d->json) {
				json_t *je = json_object();
				json_object_set_new(je, "stream_id", json_integer(e[i].stream_id));
				json_object_set_new(je, "base_seq", json_integer(e[i].base_seq));
				json_object_set_new(je, "bitmap_hi", json_integer(e[i].bitmap_hi));
				json_object_set_new(je, "bitmap_lo", json_integer(e[i].bitmap_lo));
				json_object_set_new(je, "acked", acked);
				json_array_append_new(arr, je);
			} else {
				json_decref(acked);
				printf("}\n");
			}
		}
		if (d->json)
			json_object_set_new(jo, "entries", arr);
		free(e);
		return 0;
	}
	}
	return 0;
}

/* Report a malformed input: the stable reason, exit 2. */
static int malformed(struct dec *d, json_t *doc, int reason, const char *where)
{
	const char *name = fg_reason_name(reason);

	if (d->json) {
		json_object_set_new(doc, "ok", json_false());
		json_object_set_new(doc, "reason", json_string(name));
		json_object_set_new(doc, "where", json_string(where));
		fanoctl_json_print(doc);
	} else {
		json_decref(doc);
		printf("malformed: %s (%s)\n", name, where);
	}
	return FANOCTL_USAGE;
}

/* Decode frames from buf: a batch (message) or one by one (stream). */
static int decode_frames(struct dec *d, json_t *doc, const uint8_t *buf, size_t len)
{
	char where[64];
	unsigned idx = 0;

	if (d->transport == FG_TRANSPORT_MESSAGE) {
		/* The whole buffer is judged first, as a receiver would. */
		int n = fg_batch_decode(buf, len, NULL, 0);
		if (n < 0)
			return malformed(d, doc, n, "batch");
	}
	size_t off = 0;

	while (off < len) {
		struct fg_frame f;
		ssize_t r = fg_frame_decode(buf + off, len - off, d->transport, &f);

		if (r < 0) {
			snprintf(where, sizeof(where), "frame %u at byte %zu", idx, off);
			return malformed(d, doc, (int)r, where);
		}
		json_t *jo = d->json ? json_object() : NULL;
		int rc = frame_out(d, &f, idx, jo);
		if (rc < 0) {
			json_decref(jo);
			snprintf(where, sizeof(where), "frame %u", idx);
			return malformed(d, doc, rc, where);
		}
		if (d->json)
			json_array_append_new(d->jframes, jo);
		off += (size_t)r;
		idx++;
	}
	if (d->json) {
		json_object_set_new(doc, "ok", json_true());
		json_object_set_new(doc, "frames", d->jframes);
		d->jframes = NULL;
		fanoctl_json_print(doc);
	} else {
		json_decref(doc);
		printf("%u frame%s, %zu bytes\n", idx, idx == 1 ? "" : "s", len);
	}
	return FANOCTL_OK;
}

static int decode_datagram(struct dec *d, json_t *doc, const uint8_t *buf, size_t len)
{
	struct fg_frag fr;
	ssize_t r = fg_frag_decode(buf, len, &fr);

	if (r < 0)
		return malformed(d, doc, (int)r, "fragment header");
	if (d->json) {
		json_t *jf = json_object();
		json_object_set_new(jf, "frame_id", json_integer(fr.frame_id));
		json_object_set_new(jf, "index", json_integer(fr.index));
		json_object_set_new(jf, "total", json_integer(fr.total));
		json_object_set_new(jf, "chunk_len", json_integer(fr.chunk_len));
		json_object_set_new(doc, "fragment", jf);
	} else {
		printf("datagram: frame_id=%u index=%u total=%u chunk=%u bytes\n", fr.frame_id, fr.index, fr.total,
		       fr.chunk_len);
	}
	if (fr.total == 1) {
		/* An unfragmented frame: the chunk is exactly one whole frame. */
		struct fg_frame f;
		ssize_t fl = fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f);
		if (fl < 0)
			return malformed(d, doc, (int)fl, "frame in datagram");
		if ((size_t)fl != fr.chunk_len)
			return malformed(d, doc, -FG_R_TRUNCATED_FRAME, "bytes after the frame in datagram");
		return decode_frames(d, doc, fr.chunk, fr.chunk_len);
	}
	if (fr.index == 0) {
		/* The first fragment carries the header (and a seed's prefix). */
		struct fg_hdr h;
		ssize_t hl = fg_hdr_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_STREAM, &h);
		if (hl < 0)
			return malformed(d, doc, (int)hl, "header in first fragment");
		if (d->json) {
			json_t *jh = json_object();
			json_object_set_new(jh, "stream_id", json_integer(h.stream_id));
			json_object_set_new(jh, "sequence", json_integer(h.sequence));
			json_object_set_new(jh, "flags", json_integer(h.flags));
			json_object_set_new(jh, "length", json_integer(h.length));
			json_object_set_new(jh, "frame_bytes", json_integer(FG_HDR_LEN + h.length));
			json_object_set_new(doc, "header", jh);
		} else {
			printf("  first fragment of a %u-byte frame: stream=0x%04x seq=%u flags=0x%02x len=%u\n",
			       FG_HDR_LEN + h.length, h.stream_id, h.sequence, h.flags, h.length);
		}
	} else if (!d->json) {
		printf("  middle/last fragment: chunk bytes [%u*C, ...) of the frame\n", fr.index);
	}
	json_decref(d->jframes);
	d->jframes = NULL;
	if (d->json) {
		json_object_set_new(doc, "ok", json_true());
		fanoctl_json_print(doc);
	} else {
		json_decref(doc);
	}
	return FANOCTL_OK;
}

/* Several datagrams: reassemble each frame_id's fragments (in any order)
 * the way fanogate does for one sender, then decode the frames as a batch.
 * Fragment rules: frag_total fixed within a group, every chunk before the
 * last of equal size C, the last 1..C bytes, no index twice with different
 * bytes. */
static int decode_reassemble(struct dec *d, json_t *doc, uint8_t **bufs, const size_t *lens, size_t n)
{
	struct fg_frag *fr = calloc(n, sizeof(*fr));
	bool *used = calloc(n, sizeof(*used));
	uint8_t *out = NULL;
	size_t out_len = 0;
	char where[96];
	int rc = FANOCTL_OK;
	json_t *jfrags = json_array(), *jgroups = json_array();

	if (!fr || !used) {
		rc = malformed(d, doc, -FG_R_NOSPACE, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		ssize_t r = fg_frag_decode(bufs[i], lens[i], &fr[i]);
		if (r < 0) {
			snprintf(where, sizeof(where), "datagram %zu: fragment header", i);
			rc = malformed(d, doc, (int)r, where);
			goto done;
		}
		if (d->json) {
			json_t *jf = json_object();
			json_object_set_new(jf, "frame_id", json_integer(fr[i].frame_id));
			json_object_set_new(jf, "index", json_integer(fr[i].index));
			json_object_set_new(jf, "total", json_integer(fr[i].total));
			json_object_set_new(jf, "chunk_len", json_integer(fr[i].chunk_len));
			json_array_append_new(jfrags, jf);
		} else {
			printf("datagram %zu: frame_id=%u index=%u total=%u chunk=%u bytes\n", i, fr[i].frame_id,
			       fr[i].index, fr[i].total, fr[i].chunk_len);
		}
	}
	for (size_t g = 0; g < n; g++) {
		if (used[g])
			continue;
		/* The group of g's frame_id: slot k holds the datagram of index k. */
		size_t slot[FG_FRAG_MAX];
		unsigned have = 0, total = fr[g].total;
		uint32_t c = 0;

		for (unsigned k = 0; k < FG_FRAG_MAX; k++)
			slot[k] = SIZE_MAX;
		for (size_t i = g; i < n; i++) {
			if (used[i] || fr[i].frame_id != fr[g].frame_id)
				continue;
			used[i] = true;
			snprintf(where, sizeof(where), "datagram %zu (frame_id %u index %u)", i, fr[i].frame_id, fr[i].index);
			if (fr[i].total != total) {
				rc = malformed(d, doc, -FG_R_FRAG_TOTAL_CHANGED, where);
				goto done;
			}
			size_t prev = slot[fr[i].index];
			if (prev != SIZE_MAX) {
				if (fr[prev].chunk_len != fr[i].chunk_len ||
				    memcmp(fr[prev].chunk, fr[i].chunk, fr[i].chunk_len) != 0) {
					rc = malformed(d, doc, -FG_R_FRAG_CHUNK_SIZE, where);
					goto done;
				}
				continue; /* an identical duplicate: ignored */
			}
			slot[fr[i].index] = i;
			have++;
		}
		if (have != total) {
			snprintf(where, sizeof(where), "frame_id %u: %u of %u fragments", fr[g].frame_id, have, total);
			rc = malformed(d, doc, -FG_R_INCOMPLETE, where);
			goto done;
		}
		c = total > 1 ? fr[slot[0]].chunk_len : 0;
		size_t frame_len = 0;
		for (unsigned k = 0; k < total; k++) {
			const struct fg_frag *f = &fr[slot[k]];
			bool last = k + 1 == total;
			if (f->chunk_len == 0 || (!last && f->chunk_len != c) || (last && total > 1 && f->chunk_len > c)) {
				snprintf(where, sizeof(where), "frame_id %u index %u", f->frame_id, k);
				rc = malformed(d, doc, -FG_R_FRAG_CHUNK_SIZE, where);
				goto done;
			}
			frame_len += f->chunk_len;
		}
		uint8_t *nb = realloc(out, out_len + frame_len + 1);
		if (!nb) {
			rc = malformed(d, doc, -FG_R_NOSPACE, "out of memory");
			goto done;
		}
		out = nb;
		size_t start = out_len;
		for (unsigned k = 0; k < total; k++) {
			memcpy(out + out_len, fr[slot[k]].chunk, fr[slot[k]].chunk_len);
			out_len += fr[slot[k]].chunk_len;
		}
		/* The reassembled bytes must be exactly one frame. */
		struct fg_frame one;
		ssize_t fl = fg_frame_decode(out + start, frame_len, FG_TRANSPORT_MESSAGE, &one);
		snprintf(where, sizeof(where), "reassembled frame_id %u", fr[g].frame_id);
		if (fl < 0 || (size_t)fl != frame_len) {
			rc = malformed(d, doc, fl < 0 ? (int)fl : -FG_R_TRUNCATED_FRAME, where);
			goto done;
		}
		if (d->json) {
			json_t *jg = json_object();
			json_object_set_new(jg, "frame_id", json_integer(fr[g].frame_id));
			json_object_set_new(jg, "fragments", json_integer(total));
			json_object_set_new(jg, "bytes", json_integer((json_int_t)frame_len));
			json_array_append_new(jgroups, jg);
		} else {
			printf("frame_id=%u: reassembled %u fragment%s, %zu bytes\n", fr[g].frame_id, total,
			       total == 1 ? "" : "s", frame_len);
		}
	}
	json_object_set_new(doc, "fragments", jfrags);
	json_object_set_new(doc, "reassembled", jgroups);
	jfrags = jgroups = NULL;
	rc = decode_frames(d, doc, out, out_len);
	doc = NULL;
done:
	json_decref(jfrags);
	json_decref(jgroups);
	free(out);
	free(fr);
	free(used);
	return rc;
}

static bool parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

int fanoctl_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},       {"transport", required_argument, NULL, 't'},
		{"datagram", no_argument, NULL, 'd'},   {"hidden", required_argument, NULL, 'H'},
		{"max-seq-len", required_argument, NULL, 'm'}, {"layers", required_argument, NULL, 'L'},
		{"config", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'},
		{"orientation", required_argument, NULL, 'o'}, {"layer", required_argument, NULL, 'l'},
		{NULL, 0, NULL, 0},
	};
	struct dec d = {.transport = FG_TRANSPORT_MESSAGE, .max_seq_len = UINT32_MAX, .bound_layer = FG_LAYER_UNBOUND};
	int orientation = -1;
	int64_t bound = -1;
	struct fg_config cfg;
	const char *config_path = NULL;
	uint64_t v, hidden = 0, max_seq = 0, layers = 0;
	int c;

	fg_config_default(&cfg);
	optind = 0;
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': d.json = true; break;
		case 'd': d.datagram = true; break;
		case 't':
			if (strcmp(optarg, "stream") == 0)
				d.transport = FG_TRANSPORT_STREAM;
			else if (strcmp(optarg, "message") == 0)
				d.transport = FG_TRANSPORT_MESSAGE;
			else {
				fprintf(stderr, "fanoctl decode: --transport is stream or message\n");
				return FANOCTL_USAGE;
			}
			break;
		case 'H':
			if (!parse_uint(optarg, 1u << 24, &v) || v == 0) {
				fprintf(stderr, "fanoctl decode: --hidden wants a number 1..16777216\n");
				return FANOCTL_USAGE;
			}
			hidden = v;
			break;
		case 'm':
			if (!parse_uint(optarg, UINT32_MAX, &v) || v == 0) {
				fprintf(stderr, "fanoctl decode: --max-seq-len wants a number >= 1\n");
				return FANOCTL_USAGE;
			}
			max_seq = v;
			break;
		case 'L':
			if (!parse_uint(optarg, FG_MAX_LAYERS, &v) || v == 0) {
				fprintf(stderr, "fanoctl decode: --layers wants a number 1..%u\n", FG_MAX_LAYERS);
				return FANOCTL_USAGE;
			}
			layers = v;
			break;
		case 'o':
			if (strcmp(optarg, "bit") == 0)
				orientation = FG_ORIENT_BIT;
			else if (strcmp(optarg, "signed") == 0)
				orientation = FG_ORIENT_SIGNED;
			else {
				fprintf(stderr, "fanoctl decode: --orientation is bit or signed\n");
				return FANOCTL_USAGE;
			}
			break;
		case 'l':
			if (!parse_uint(optarg, FG_MAX_LAYERS - 1, &v)) {
				fprintf(stderr, "fanoctl decode: --layer wants a layer 0..%u\n", FG_MAX_LAYERS - 1);
				return FANOCTL_USAGE;
			}
			bound = (int64_t)v;
			break;
		case 'c': config_path = optarg; break;
		case 'h': fanoctl_decode_help(stdout); return FANOCTL_OK;
		default: fanoctl_decode_help(stderr); return FANOCTL_USAGE;
		}
	}
	if (optind == argc || (!d.datagram && optind != argc - 1)) {
		fprintf(stderr, "fanoctl decode: want exactly one HEX argument or '-' (several only with --datagram; "
				"fanoctl decode --help)\n");
		return FANOCTL_USAGE;
	}
	if (config_path) {
		struct fg_config_error err;
		if (fg_config_load(&cfg, config_path, &err) != 0) {
			fprintf(stderr, "%s:%d: %s\n", err.file, err.line, err.reason);
			return FANOCTL_REFUSED;
		}
		d.hidden = cfg.hidden;
		d.max_seq_len = cfg.max_seq_len;
	}
	d.bands = cfg.bands;
	d.bands.n_layers = cfg.layers;
	d.orientation = orientation >= 0 ? (uint8_t)orientation : cfg.orientation;
	if (hidden)
		d.hidden = (uint32_t)hidden;
	if (max_seq)
		d.max_seq_len = (uint32_t)max_seq;
	if (layers) {
		if (layers > (1u << d.bands.layer_bits)) {
			fprintf(stderr, "fanoctl decode: --layers %llu is more than a band holds (%u)\n",
				(unsigned long long)layers, 1u << d.bands.layer_bits);
			return FANOCTL_USAGE;
		}
		d.bands.n_layers = (uint16_t)layers;
	}
	if (bound >= 0) {
		if (bound >= d.bands.n_layers) {
			fprintf(stderr, "fanoctl decode: --layer %lld: the model has %u layers\n", (long long)bound,
				d.bands.n_layers);
			return FANOCTL_USAGE;
		}
		d.bound_layer = (int32_t)bound;
	}

	/* Inputs: the HEX arguments; '-' reads stdin, where with --datagram
	 * every non-empty line is one datagram. */
	char *text = NULL;
	char **inputs = calloc((size_t)(argc - optind) + 1, sizeof(*inputs));
	size_t n_in = 0;

	if (!inputs)
		return FANOCTL_USAGE;
	for (int i = optind; i < argc; i++) {
		if (strcmp(argv[i], "-") != 0) {
			inputs[n_in++] = argv[i];
			continue;
		}
		if (text || argc - optind != 1) {
			fprintf(stderr, "fanoctl decode: '-' must be the only input\n");
			free(inputs);
			return FANOCTL_USAGE;
		}
		text = read_stdin();
		if (!text) {
			fprintf(stderr, "fanoctl decode: cannot read stdin (more than %u hex digits?)\n", HEX_INPUT_MAX);
			free(inputs);
			return FANOCTL_USAGE;
		}
		if (!d.datagram) {
			inputs[n_in++] = text;
			continue;
		}
		size_t lines = 1;
		for (const char *q = text; *q; q++)
			lines += *q == '\n';
		free(inputs);
		inputs = calloc(lines + 1, sizeof(*inputs));
		if (!inputs) {
			free(text);
			return FANOCTL_USAGE;
		}
		for (char *save = NULL, *ln = strtok_r(text, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
			char *q = ln;
			while (isspace((unsigned char)*q))
				q++;
			if (*q)
				inputs[n_in++] = ln;
		}
	}
	uint8_t **bufs = calloc(n_in + 1, sizeof(*bufs));
	size_t *lens = calloc(n_in + 1, sizeof(*lens));
	int rc = bufs && lens ? 0 : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < n_in; i++) {
		rc = hex_parse(inputs[i], &bufs[i], &lens[i]);
		if (rc != 0)
			fprintf(stderr, "fanoctl decode: input %zu is not hex (an even number of 0-9a-f digits)\n", i);
	}
	if (rc == 0 && n_in == 0) {
		fprintf(stderr, "fanoctl decode: no datagram on stdin\n");
		rc = -EINVAL;
	}
	free(inputs);
	if (rc != 0) {
		for (size_t i = 0; bufs && i < n_in; i++)
			free(bufs[i]);
		free(bufs);
		free(lens);
		free(text);
		return FANOCTL_USAGE;
	}
	uint8_t *buf = bufs[0];
	size_t len = lens[0];

	json_t *doc = json_object();
	d.jframes = json_array();
	size_t total_len = 0;
	for (size_t i = 0; i < n_in; i++)
		total_len += lens[i];
	json_object_set_new(doc, "bytes", json_integer((json_int_t)total_len));
	json_object_set_new(doc, "transport",
			    json_string(d.datagram ? "datagram"
					: d.transport == FG_TRANSPORT_STREAM ? "stream" : "message"));
	if (n_in > 1) {
		json_object_set_new(doc, "datagrams", json_integer((json_int_t)n_in));
		rc = decode_reassemble(&d, doc, bufs, lens, n_in);
	} else {
		rc = d.datagram ? decode_datagram(&d, doc, buf, len) : decode_frames(&d, doc, buf, len);
	}
	json_decref(d.jframes);
	for (size_t i = 0; i < n_in; i++)
		free(bufs[i]);
	free(bufs);
	free(lens);
	free(text);
	return rc;
}
