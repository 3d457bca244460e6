/* audit.h - the audit log's record format (pure core: no I/O, no logging).
 *
 * Owns: encoding, decoding and verification of audit records, the hash
 * chain that links them, and the scan that finds the first bad record of a
 * buffer with a stable reason. The writer (control/audit/cp_audit_log.c),
 * the recovery at start-up and `fanoctl audit verify|tail` all use it.
 *
 * Who may call: any thread; nothing here keeps state beyond the caller's
 * struct fg_audit_chain.
 *
 * Record layout (all integers little-endian):
 *
 *   off  size  field
 *   0    4     len        whole record, header + payload + trailer, bytes
 *   4    2     type       enum fg_audit_type
 *   6    2     version    the payload's version for this type (fg_audit_type_version)
 *   8    8     seq        0 for the genesis record, +1 per record, across files
 *   16   8     time_ns    CLOCK_REALTIME of the writer when encoded
 *   24   32    prev       SHA-256 of the previous record (zeros for genesis)
 *   56   n     payload    per type, see fg_audit_encode
 *   56+n 8     check      XXH3-64 of bytes [0, 56+n)
 *
 * Two hashes, two jobs:
 *  - check (XXH3-64, non-cryptographic, ~30 GB/s) makes every record
 *    self-validating, including the last one of a file: a torn write shows
 *    up as a bad check on the record itself, found by a cheap scan, without
 *    needing the next record. A CRC32C would do as well; XXH3 is already a
 *    dependency (fingerprints) and has no weak-polynomial corner cases.
 *  - prev (SHA-256) is the tamper evidence: record n's hash is SHA-256 over
 *    its bytes [0, 56+n) (which include its own prev), so editing, dropping,
 *    inserting or reordering a record breaks the chain at the next record
 *    even when the editor recomputes the XXH3 check. XXH3 is not
 *    collision-resistant against an adversary, so it cannot be the chain.
 *    The head hash (the hash of the last record) is what an operator
 *    publishes or copies elsewhere to pin the log.
 *
 * Versions: the header's version numbers the PAYLOAD layout of its type.
 * A type's layout changes only by a new version; a reader decodes every
 * version from 1 up to fg_audit_type_version(type) and refuses a higher
 * one (bad_version). The writer always writes the highest. The framing
 * (header and trailer) is FG_AUDIT_VERSION, written in GENESIS.
 *
 * Files: the chain runs across rotated files. The very first record of a log
 * is GENESIS (seq 0, prev zero); every later file starts with a ROTATION
 * record whose prev is the hash of the previous file's last record. */
#ifndef FG_AUDIT_H
#define FG_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"

#define FG_AUDIT_VERSION 1u
#define FG_AUDIT_HASH_LEN 32u
#define FG_AUDIT_HDR_LEN 56u
#define FG_AUDIT_TRAILER_LEN 8u
/* Largest record; every payload fits well below it. */
#define FG_AUDIT_REC_MAX 1024u
/* The writer never has more than this many bytes written but not yet made
 * durable (one group-commit batch). Recovery treats a bad region that starts
 * within this distance of the end of the file as a torn tail; further in,
 * it is corruption and recovery refuses to cut it. */
#define FG_AUDIT_TAIL_MAX (1u << 20)
#define FG_AUDIT_WHY_MAX 128u
#define FG_AUDIT_PEER_MAX 64u
/* Longest text of a RELOAD record (u8 length on the wire). */
#define FG_AUDIT_TEXT_MAX 256u
/* Config path kept in a START record (longer paths are cut). */
#define FG_AUDIT_CONFIG_MAX 192u
/* Reason kept per line in START and LINES records. */
#define FG_AUDIT_ENTRY_WHY_MAX 64u
#define FG_AUDIT_LINES 7u
/* "none" values of the line entries and of LINE v1 fields it lacks. */
#define FG_AUDIT_NO_SEQ UINT64_MAX
#define FG_AUDIT_UNKNOWN 0xFFu

enum fg_audit_type {
	FG_AREC_GENESIS = 1,  /* first record of a new log */
	FG_AREC_VERDICT,      /* shadow comparison of a resolved seed with the canonical chain */
	FG_AREC_LINE,         /* line state change: who, from where, why */
	FG_AREC_EPOCH,        /* model epoch change */
	FG_AREC_CONFLICT,     /* conflicting duplicate contribution */
	FG_AREC_PEER_AUTH,    /* peer authentication failure */
	FG_AREC_RECOVERY,     /* start-up recovery cut a torn tail */
	FG_AREC_ROTATION,     /* first record of a rotated-to file */
	FG_AREC_START,        /* a daemon started: version, config, each line's state and its source */
	FG_AREC_LINES,        /* the line table, right after a ROTATION (the file alone gives the state) */
	FG_AREC_RELOAD,       /* a configuration reload: applied, unchanged or refused, by whom */
	FG_AREC__END
};
/* Stable lower-case name ("verdict", "line", ...); "unknown" otherwise. */
const char *fg_audit_type_name(unsigned type);
/* The payload version the encoder writes for type (the highest a reader
 * accepts); 0 for an unknown type. LINE is 2 (adds the base states and the
 * auto-promote flag), VERDICT is 2 (adds the lead over the canonical chain
 * and the ingress), every other type 1. */
unsigned fg_audit_type_version(unsigned type);

enum fg_verdict_kind {
	FG_VERDICT_CLEAN = 0,  /* fingerprints (and, for full reports, every byte) equal */
	FG_VERDICT_DIVERGENT,  /* they differ */
	FG_VERDICT_UNMATCHED,  /* one side never arrived before the comparison expired */
};
const char *fg_verdict_kind_name(unsigned k);

/* Elementwise comparison of two f32 residual bodies (core/shadow.c). */
struct fg_diff {
	uint32_t n_elems;     /* floats compared */
	uint32_t count;       /* elements whose bits differ (+0 vs -0 counts) */
	uint32_t nan_count;   /* differing elements where either side is NaN */
	uint32_t first_index; /* first differing element, UINT32_MAX when none */
	double max_abs;       /* largest |a - b| over differing non-NaN elements (inf possible) */
	uint64_t max_ulp;     /* largest ULP distance over differing non-NaN elements */
};

/* The ingress of a verdict's resolving contribution (VERDICT version 2;
 * the same numbers as enum fg_ingress, fg/boundary.h). */
#define FG_AUDIT_INGRESS_UDP 0u
#define FG_AUDIT_INGRESS_TLS 1u
/* "udp", "tls", "unknown". */
const char *fg_audit_ingress_name(unsigned ingress);

struct fg_audit_verdict {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t lines;        /* mask of lines reduced into the seed */
	uint8_t kind;         /* enum fg_verdict_kind */
	uint8_t canon_kind;   /* enum fg_canon_kind, 0xFF when no canonical report */
	uint8_t sampled;      /* 1 when audited by sampling an active line */
	uint8_t has_diff;     /* 1 when diff holds elementwise figures (full report) */
	uint8_t shape_mismatch; /* 1 when start_pos/seq_len/length disagree */
	uint32_t epoch;
	uint64_t fp_jump, fp_canon;
	struct fg_diff diff;
	/* version 2: the lead over the canonical chain (fg/lead.h): the
	 * canonical report's arrival minus the seed's resolution, and minus its
	 * delivery to the next worker, ns on the daemon's monotonic clock,
	 * negative when the chain was first; FG_AUDIT_NO_LEAD when unknown (an
	 * unmatched verdict, no delivery, and every version 1 record) */
	uint8_t ingress;         /* FG_AUDIT_INGRESS_*, FG_AUDIT_UNKNOWN */
	int64_t lead_ns;
	int64_t lead_deliver_ns; /* <= lead_ns when both are known */
};
#define FG_AUDIT_NO_LEAD INT64_MIN

struct fg_audit_line {
	uint8_t line, from, to, event; /* effective states (enum fg_line_state), enum fg_line_event */
	uint32_t uid;                  /* FG_UID_AUDIT for the audit itself */
	int32_t pid;
	/* version 2: the base states (DISABLED/SHADOW/ACTIVE; DEGRADED is an
	 * overlay) and the line's auto-promote flag after the change;
	 * FG_AUDIT_UNKNOWN when decoded from version 1 */
	uint8_t base_from, base_to, auto_promote;
	char origin[FG_AUDIT_PEER_MAX]; /* "operator socket", "audit window", ... */
	char why[FG_AUDIT_WHY_MAX];
};

struct fg_audit_epoch {
	uint32_t from, to;
	uint32_t uid;
	int32_t pid;
	char why[FG_AUDIT_WHY_MAX];
};

struct fg_audit_conflict {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t line;
	uint32_t epoch;
};

struct fg_audit_peer_auth {
	char peer[FG_AUDIT_PEER_MAX];   /* address:port or certificate subject */
	char reason[FG_AUDIT_WHY_MAX];  /* "bad_token", "no_client_cert", ... */
};

struct fg_audit_recovery {
	uint64_t cut_offset;  /* file offset where the torn tail began */
	uint64_t cut_bytes;   /* bytes removed */
	uint64_t last_seq;    /* last intact record before the cut */
	uint16_t reason;      /* enum fg_audit_reason of the first bad record */
};

struct fg_audit_rotation {
	uint64_t prev_file_records; /* records in the file that was closed */
	uint64_t prev_file_bytes;
	uint32_t prev_file_index;   /* N of the name it was given (fanogate.audit.N) */
};

struct fg_audit_genesis {
	uint32_t format;  /* FG_AUDIT_VERSION */
	char who[FG_AUDIT_PEER_MAX]; /* writer name and version */
};

/* Where a line's state at start-up came from (START records). Names are
 * part of the CLI contract (fg_audit_line_source_name). */
enum fg_audit_line_source {
	FG_LSRC_LOG = 0,  /* "log": its last recorded state */
	FG_LSRC_CONFIG,   /* "config (no line history)": [lines] of the config */
	FG_LSRC_RESET,    /* "reset by operator": fanogate --reset-lines applied [lines] */
	FG_LSRC_DAMAGED,  /* "log damaged: shadow": the log could not be read; active held in shadow */
	FG_LSRC_CUT,      /* "log cut: shadow": records were cut since the last start; active held in shadow */
	FG_LSRC__COUNT
};
const char *fg_audit_line_source_name(unsigned src);

/* One line in START and LINES records. */
struct fg_audit_line_entry {
	uint8_t base;          /* enum fg_line_state: DISABLED, SHADOW or ACTIVE */
	uint8_t auto_promote;  /* 0 or 1 */
	uint8_t source;        /* enum fg_audit_line_source */
	uint8_t event;         /* enum fg_line_event of the record the state came from, or FG_AUDIT_UNKNOWN */
	uint64_t seq;          /* that record's seq, or FG_AUDIT_NO_SEQ */
	char why[FG_AUDIT_ENTRY_WHY_MAX]; /* its reason (cut on a character boundary) */
};

#define FG_ASTART_RESET 0x01u   /* started with --reset-lines */
#define FG_ASTART_CLUSTER 0x02u /* [cluster]: lines held in shadow until etcd answers */

struct fg_audit_start {
	uint32_t uid;  /* the daemon's uid (the operator who ran it) */
	int32_t pid;
	uint8_t flags; /* FG_ASTART_* */
	char who[FG_AUDIT_PEER_MAX];     /* "fanogate 0.1.0" */
	char config[FG_AUDIT_CONFIG_MAX]; /* config path, or "embedded default" */
	struct fg_audit_line_entry line[FG_AUDIT_LINES];
};

struct fg_audit_lines {
	struct fg_audit_line_entry line[FG_AUDIT_LINES];
};

enum fg_audit_reload_result { FG_RELOAD_APPLIED = 0, FG_RELOAD_UNCHANGED, FG_RELOAD_REFUSED };
const char *fg_audit_reload_result_name(unsigned r);

struct fg_audit_reload {
	uint8_t result;  /* enum fg_audit_reload_result */
	uint32_t uid;
	int32_t pid;
	char origin[FG_AUDIT_PEER_MAX]; /* "fanoctl", "SIGHUP" */
	char error[32];                 /* stable reason when refused ("needs_restart", ...), else "" */
	char what[FG_AUDIT_TEXT_MAX];   /* the changes ("[lines] auto_promote: false -> true; ...") or why refused */
};

union fg_audit_payload {
	struct fg_audit_genesis genesis;
	struct fg_audit_verdict verdict;
	struct fg_audit_line line;
	struct fg_audit_epoch epoch;
	struct fg_audit_conflict conflict;
	struct fg_audit_peer_auth peer_auth;
	struct fg_audit_recovery recovery;
	struct fg_audit_rotation rotation;
	struct fg_audit_start start;
	struct fg_audit_lines lines;
	struct fg_audit_reload reload;
};

/* One decoded record. */
struct fg_audit_rec {
	uint32_t len;
	uint16_t type;
	uint16_t version; /* payload version (1..fg_audit_type_version(type)) */
	uint64_t seq;
	uint64_t time_ns;
	uint8_t prev[FG_AUDIT_HASH_LEN];
	uint8_t hash[FG_AUDIT_HASH_LEN]; /* this record's own SHA-256 */
	union fg_audit_payload p;
};

/* Stable reasons for a bad record. Names are part of the CLI contract. */
enum fg_audit_reason {
	FG_AR_OK = 0,
	FG_AR_TRUNCATED,  /* "truncated": the buffer ends inside the record */
	FG_AR_LENGTH,     /* "bad_length": len below the minimum or above FG_AUDIT_REC_MAX */
	FG_AR_ZERO,       /* "zeroed": the record's bytes are all zero (allocated, never written) */
	FG_AR_CHECKSUM,   /* "bad_checksum": XXH3 trailer mismatch */
	FG_AR_VERSION,    /* "bad_version" */
	FG_AR_TYPE,       /* "bad_type" */
	FG_AR_PAYLOAD,    /* "bad_payload": payload length/fields wrong for the type */
	FG_AR_SEQ,        /* "bad_sequence": seq != previous + 1 */
	FG_AR_CHAIN,      /* "broken_chain": prev != hash of the previous record */
	FG_AR_GENESIS,    /* "bad_start": a log must start with GENESIS (seq 0) or ROTATION */
	FG_AR_NOSPACE,    /* "no_space": encoder output too small */
	FG_AR_HEAD,       /* "head_mismatch": the file does not reach, or does not match, the
			   * durable chain head pinned in <log>.head (records acknowledged
			   * as durable are missing or were replaced) */
	FG_AR__COUNT
};
const char *fg_audit_reason_name(int r);
/* Reasons a crash can produce in a tail that was never made durable. */
static inline bool fg_audit_reason_is_torn(int r)
{
	if (r < 0)
		r = -r;
	return r == FG_AR_TRUNCATED || r == FG_AR_LENGTH || r == FG_AR_ZERO || r == FG_AR_CHECKSUM;
}

/* The running chain: the next sequence number and the head hash (hash of
 * the last record; zeros before genesis). */
struct fg_audit_chain {
	uint64_t next_seq;
	uint8_t head[FG_AUDIT_HASH_LEN];
};
/* A fresh chain (next_seq 0, head zero): the next record must be GENESIS. */
void fg_audit_chain_init(struct fg_audit_chain *ch);

/* Encode one record at buf[0..cap) with seq = ch->next_seq and prev = ch->head,
 * and advance ch (next_seq + 1, head = this record's hash). Strings in the
 * payload are written up to their NUL, truncated to their field size.
 * Returns the record length, -FG_AR_NOSPACE (ch unchanged) or -FG_AR_TYPE. */
FG_MUST_CHECK ssize_t fg_audit_encode(struct fg_audit_chain *ch, unsigned type, uint64_t time_ns,
				      const union fg_audit_payload *p, uint8_t *buf, size_t cap);
/* The same with an older payload version (1..fg_audit_type_version(type)):
 * what a reader of old logs sees (tests), and a decoded record written
 * back byte for byte (fuzz). -FG_AR_VERSION for another version. */
FG_MUST_CHECK ssize_t fg_audit_encode_version(struct fg_audit_chain *ch, unsigned type, unsigned version,
					      uint64_t time_ns, const union fg_audit_payload *p, uint8_t *buf,
					      size_t cap);

/* Decode and self-check one record at buf[0..len) (length, checksum,
 * version, type, payload; NOT the chain). Returns the record length and
 * fills *out, or -FG_AR_xxx. */
FG_MUST_CHECK ssize_t fg_audit_decode(const uint8_t *buf, size_t len, struct fg_audit_rec *out);

/* Result of scanning a buffer of records (one file, or the part read). */
struct fg_audit_scan {
	uint64_t good_bytes;   /* bytes of intact, chained records from the start */
	uint64_t records;      /* how many */
	uint64_t first_seq, last_seq; /* of the intact records (when records > 0) */
	struct fg_audit_chain chain;  /* chain after the last intact record */
	int reason;            /* FG_AR_OK, or the first bad record's reason */
	uint64_t bad_offset;   /* offset of the first bad record (== good_bytes) */
	uint64_t bad_seq;      /* its seq if its header could be read, else last_seq + 1 */
	bool anchored;         /* the chain was checked from GENESIS or from `from` */
	bool from_given;       /* the scan started from a previous file's chain */
};

/* Check every record of buf[0..len) in order: self-check, sequence and
 * chain. When from is non-NULL the first record must continue it (seq ==
 * from->next_seq, prev == from->head: the previous file's end); when NULL
 * the first record must be GENESIS, or a ROTATION record whose prev and seq
 * are then taken as given (anchored = false). Stops at the first bad record.
 * Returns 0 when the whole buffer is good, else -reason; *out is filled in
 * both cases. */
FG_MUST_CHECK int fg_audit_verify(const uint8_t *buf, size_t len, const struct fg_audit_chain *from,
				  struct fg_audit_scan *out);

/* Called once for each record a scan accepts (self-checked and chained),
 * in order; r is valid during the call. */
typedef void (*fg_audit_visit_fn)(void *arg, const struct fg_audit_rec *r);
/* fg_audit_verify and fg_audit_verify_more that also hand every accepted
 * record to visit (NULL: none). */
FG_MUST_CHECK int fg_audit_verify_visit(const uint8_t *buf, size_t len, const struct fg_audit_chain *from,
					struct fg_audit_scan *out, fg_audit_visit_fn visit, void *arg);
FG_MUST_CHECK int fg_audit_verify_more_visit(const uint8_t *buf, size_t len, struct fg_audit_scan *s,
					     fg_audit_visit_fn visit, void *arg);

/* Continue a scan over the next bytes of the same file: buf[0..len) must
 * start at file offset s->good_bytes (re-read from there after a failure,
 * e.g. a record cut by the end of the previous chunk). Offsets in *s stay
 * file offsets. Lets a caller verify a file of any size in bounded memory.
 * Returns 0 or -reason like fg_audit_verify. */
FG_MUST_CHECK int fg_audit_verify_more(const uint8_t *buf, size_t len, struct fg_audit_scan *s);

/* Recovery decision for a file whose scan stopped at a bad record: true when
 * everything from the bad record on may be cut as a torn tail (reason is a
 * torn reason and the bad region starts within FG_AUDIT_TAIL_MAX of the
 * end), false when it is corruption a person must look at. */
bool fg_audit_tail_is_torn(const struct fg_audit_scan *s, uint64_t file_len);

/* The chain hash of one encoded record at rec (its len field is trusted:
 * call on records this process encoded or decoded). */
void fg_audit_record_hash(const uint8_t *rec, uint8_t out[FG_AUDIT_HASH_LEN]);

/* Hex of a hash into out[65]. */
void fg_audit_hex(const uint8_t hash[FG_AUDIT_HASH_LEN], char out[2 * FG_AUDIT_HASH_LEN + 1]);

#endif
