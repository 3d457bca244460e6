/* fuzz_wire_frame.c - libFuzzer target for the aeon-flow header, frame and
 * batch decoders (core/wire.c), on stream and message transports.
 *
 * Properties checked beyond "no crash, no out-of-bounds read":
 *  1. stream and message transports agree on every whole frame, and a
 *     stream "incomplete" is exactly a message short_header/truncated_frame;
 *  2. a batch that decodes covers the input exactly, frame by frame as the
 *     stream reader sees it, and every frame re-encodes to its own bytes;
 *  3. a batch that fails is a stream that ends in "incomplete". */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_frame fs, fm, fr[64];
	struct fg_hdr h;
	static uint8_t out[FG_HDR_LEN + FG_LEN_MAX];

	ssize_t rs = fg_frame_decode(data, size, FG_TRANSPORT_STREAM, &fs);
	ssize_t rm = fg_frame_decode(data, size, FG_TRANSPORT_MESSAGE, &fm);
	if (rs > 0) {
		FUZZ_CHECK(rm == rs && fs.hdr.length == fm.hdr.length && fs.payload == fm.payload);
		FUZZ_CHECK((size_t)rs == FG_HDR_LEN + fs.hdr.length && (size_t)rs <= size);
	} else {
		FUZZ_CHECK(rs == -FG_R_INCOMPLETE);
		FUZZ_CHECK(rm == (size < FG_HDR_LEN ? -FG_R_SHORT_HEADER : -FG_R_TRUNCATED_FRAME));
	}
	ssize_t rh = fg_hdr_decode(data, size, FG_TRANSPORT_MESSAGE, &h);
	FUZZ_CHECK(rh == (size < FG_HDR_LEN ? -FG_R_SHORT_HEADER : (ssize_t)FG_HDR_LEN));

	int n = fg_batch_decode(data, size, fr, FG_ARRAY_LEN(fr));
	size_t off = 0;
	int frames = 0;
	for (;;) {
		struct fg_frame f;
		ssize_t r = fg_frame_decode(data + off, size - off, FG_TRANSPORT_STREAM, &f);
		if (r < 0) {
			FUZZ_CHECK(r == -FG_R_INCOMPLETE);
			break;
		}
		if (frames < (int)FG_ARRAY_LEN(fr) && n > 0) {
			FUZZ_CHECK(fr[frames].payload == f.payload && fr[frames].hdr.length == f.hdr.length);
			ssize_t e = fg_frame_encode(&f.hdr, f.payload, out, sizeof(out));
			FUZZ_CHECK(e == r && !memcmp(out, data + off, (size_t)r));
		}
		off += (size_t)r;
		frames++;
		if (off == size)
			break;
	}
	if (n >= 0) {
		FUZZ_CHECK(off == size && n == frames);
	} else {
		FUZZ_CHECK(off < size);
		FUZZ_CHECK(n == -FG_R_TRUNCATED_FRAME || (n == -FG_R_SHORT_HEADER && frames == 0));
	}
	return 0;
}
