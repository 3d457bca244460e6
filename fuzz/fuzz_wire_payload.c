/* fuzz_wire_payload.c - libFuzzer target for the payload decoders of
 * core/wire.c: band classification, residual seed (whole and prefix-only),
 * canonical report, resolved seed and status frame.
 *
 * Input: byte 0 = hidden - 1 (low 4 bits) and max_seq_len selector (high 4
 * bits), byte 1 = configured layers, rest = one frame (message transport).
 * Every decoder runs on every frame whatever its band (they must refuse
 * cleanly); on success the frame must re-encode to its own bytes, and the
 * prefix-only seed decode must give the same verdict as the whole one. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[FG_HDR_LEN + FG_LEN_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	struct fg_seed_limits lim = { .hidden = (uint32_t)(data[0] & 15) + 1, .max_seq_len = 1u << (data[0] >> 4), .orientation = FG_ORIENT_BIT }; /* the round trip below encodes with the bit reading */
	if ((data[0] >> 4) == 15)
		lim.max_seq_len = UINT32_MAX;
	struct fg_bands b;
	fg_bands_default(&b);
	b.n_layers = (uint16_t)(data[1] % 33);
	data += 2;
	size -= 2;

	struct fg_frame f;
	ssize_t fl = fg_frame_decode(data, size, FG_TRANSPORT_MESSAGE, &f);
	if (fl < 0)
		return 0;

	enum fg_band band = FG_BAND_ACK;
	uint16_t layer = 0;
	int cr = fg_stream_classify(&b, f.hdr.stream_id, &band, &layer);
	FUZZ_CHECK(cr == 0 || cr == -FG_R_UNKNOWN_STREAM || cr == -FG_R_UNKNOWN_LAYER);
	bool known = cr == 0;

	/* seed: whole vs prefix-only verdicts agree */
	struct fg_seed s, sp;
	ssize_t rs = fg_seed_decode(&f, layer, &lim, &s);
	size_t have = f.hdr.length < FG_SEED_PREFIX_LEN ? f.hdr.length : FG_SEED_PREFIX_LEN;
	ssize_t rp = fg_seed_decode_prefix(&f.hdr, f.payload, have, layer, &lim, &sp);
	FUZZ_CHECK((rs < 0) == (rp < 0));
	if (rs < 0) {
		FUZZ_CHECK(rs == rp);
	} else {
		FUZZ_CHECK(rs == (ssize_t)f.hdr.length && rp == FG_HDR_LEN + FG_SEED_PREFIX_LEN);
		FUZZ_CHECK(s.body_len == sp.body_len && s.seq_len == sp.seq_len && s.line == sp.line);
		FUZZ_CHECK((uint64_t)s.body_len == (uint64_t)s.seq_len * lim.hidden * 4);
		FUZZ_CHECK(s.line < 7 && s.orientation < 2 && s.seq_len <= lim.max_seq_len);
		if (known && band == FG_BAND_SEED) {
			ssize_t e = fg_seed_encode(&b, &s, out, sizeof(out));
			FUZZ_CHECK(e == fl && !memcmp(out, data, (size_t)fl));
		}
	}

	struct fg_canon c;
	ssize_t rc = fg_canon_decode(&f, layer, &lim, &c);
	if (rc >= 0) {
		FUZZ_CHECK(rc == (ssize_t)f.hdr.length);
		if (known && band == FG_BAND_CANONICAL && f.hdr.flags < 2) {
			ssize_t e = fg_canon_encode(&b, &c, out, sizeof(out));
			FUZZ_CHECK(e == fl && !memcmp(out, data, (size_t)fl));
		}
	}

	struct fg_resolved r;
	ssize_t rr = fg_resolved_decode(&f, layer, &lim, &r);
	if (rr >= 0) {
		FUZZ_CHECK(f.hdr.flags == FG_FLAG_FIN && r.body_len + 8u == f.hdr.length);
		if (known && band == FG_BAND_RESOLVED) {
			ssize_t e = fg_resolved_encode(&b, &r, out, sizeof(out));
			FUZZ_CHECK(e == fl && !memcmp(out, data, (size_t)fl));
			/* the head a gathering sender encodes is the frame's first 18 bytes */
			uint8_t head[FG_RESOLVED_HEAD_LEN];
			FUZZ_CHECK(fg_resolved_head_encode(&b, &r, head, sizeof(head)) == FG_RESOLVED_HEAD_LEN);
			FUZZ_CHECK(!memcmp(head, data, FG_RESOLVED_HEAD_LEN));
		}
	}

	struct fg_status st;
	ssize_t rt = fg_status_decode(&f, &st);
	if (rt >= 0) {
		FUZZ_CHECK(rt == FG_STATUS_PAYLOAD_LEN);
		ssize_t e = fg_status_encode(&st, out, sizeof(out));
		FUZZ_CHECK(e == fl && !memcmp(out, data, (size_t)fl));
		FUZZ_CHECK(!(out[6] & FG_FLAG_ACK));
	}
	(void)fg_fingerprint(f.payload, f.hdr.length);
	if (rs < 0)
		FUZZ_CHECK(strcmp(fg_reason_name((int)rs), "unknown") != 0);
	return 0;
}
