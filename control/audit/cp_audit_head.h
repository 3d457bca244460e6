/* cp_audit_head.h - the audit log's chain-head file (<log path>.head).
 *
 * Owns: the format of the small side file that pins the log's durable chain
 * head (seq and SHA-256 of the last durable record, and where it ends), so
 * that start-up recovery can tell a torn tail (records after the head that
 * were never acknowledged) from damage or a clean cut of records that were
 * (control/audit/cp_audit_log.c is the only writer; `fanoctl audit verify`
 * and `repair` read it).
 *
 * Layout: two 72-byte slots at offsets 0 and CP_AUDIT_HEAD_SLOT_OFF (one
 * sector each), written alternately, so a torn head write leaves the other
 * slot intact; the valid slot with the newer generation wins (serial-number
 * order: gen - other as int32 > 0; seq cannot decide, a repair may lower
 * it). Per slot, little-endian:
 *   0  4  magic "FGAH"      4  4  version (1)
 *   8  8  seq               16 8  end_off (bytes of that file up to and including record seq)
 *   24 4  file_index (the highest rotated N when written: the record lived in the current file)
 *   28 4  gen (+1 per write) 32 32 hash (SHA-256 of record seq, include/fg/audit.h)
 *   64 8  XXH3-64 of [0, 64)
 *
 * Who may call: any thread; no state. Pure encode/decode plus blocking read
 * helpers. */
#ifndef CP_AUDIT_HEAD_H
#define CP_AUDIT_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/audit.h"
#include "fg/common.h"

#define CP_AUDIT_HEAD_LEN 72u
#define CP_AUDIT_HEAD_SLOT_OFF 512u
#define CP_AUDIT_HEAD_SUFFIX ".head"

struct cp_audit_head {
	uint64_t seq;
	uint64_t end_off;
	uint32_t file_index;
	uint32_t gen;
	uint8_t hash[FG_AUDIT_HASH_LEN];
};

/* Encode h into out[CP_AUDIT_HEAD_LEN]. */
void cp_audit_head_encode(const struct cp_audit_head *h, uint8_t out[CP_AUDIT_HEAD_LEN]);
/* Decode one slot; false when its magic, version or checksum is wrong. */
bool cp_audit_head_decode(const uint8_t in[CP_AUDIT_HEAD_LEN], struct cp_audit_head *h);

/* Read the head file on fd: returns 1 with *h (the valid slot with the
 * newer gen) and *slot (0 or 1: which one), 0 when the file is empty
 * (no head yet), -EBADMSG when it has bytes but no valid slot, or -errno.
 * Blocking. */
FG_MUST_CHECK int cp_audit_head_read(int fd, struct cp_audit_head *h, unsigned *slot);

/* Write h into slot (0 or 1) and fdatasync. Returns 0 or -errno. Blocking
 * (start-up and repair only; the writer's loop goes through its io_uring). */
FG_MUST_CHECK int cp_audit_head_write_sync(int fd, unsigned slot, const struct cp_audit_head *h);

/* "<log path>.head" into out. Returns 0 or -ENAMETOOLONG. */
FG_MUST_CHECK int cp_audit_head_name(const char *log_path, char *out, size_t cap);

#endif
