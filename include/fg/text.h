/* fg/text.h - operator-supplied text: cut on UTF-8 character boundaries,
 * made valid for JSON, escaped for a terminal.
 *
 * Owns nothing; pure functions (no allocation, no locale), any thread.
 * Callers: whoever copies an operator's reason into a fixed-size field
 * (core/line.c, control/audit/cp_shadow.c, control/cp_reload.c) and
 * whoever prints one (tools/fanoctl_audit.c). */
#ifndef FG_TEXT_H
#define FG_TEXT_H

#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 sequence at s (at most n bytes
 * readable), or 0 when s[0] starts none (a stray continuation byte, an
 * overlong form, a surrogate, past U+10FFFF, or cut short). */
size_t fg_utf8_seq_len(const char *s, size_t n);

/* Copy src into dst (cap bytes, cap >= 1), NUL-terminated, cut so that no
 * UTF-8 sequence is split: the longest prefix of src that fits and ends on
 * a character boundary (bytes that are not UTF-8 count as one character
 * each). Returns the bytes copied (without the NUL). */
size_t fg_text_copy(char *dst, size_t cap, const char *src);

/* Copy src into dst with every byte that is not part of a well-formed
 * UTF-8 sequence replaced by U+FFFD (3 bytes), cut on a character boundary
 * to fit cap. The result is always valid UTF-8 (for JSON). Returns the bytes
 * written (without the NUL). */
size_t fg_text_utf8_fix(char *dst, size_t cap, const char *src);

/* Copy src into dst for a terminal: valid UTF-8 characters that are not
 * control characters are kept; C0 controls, DEL, C1 controls (U+0080..9F),
 * invalid bytes and the backslash itself are written as \xNN (backslash:
 * \\), so no escape sequence reaches the terminal and the text stays
 * unambiguous. Cut on a character (or escape) boundary to fit cap. Returns
 * the bytes written (without the NUL). */
size_t fg_text_escape(char *dst, size_t cap, const char *src);

#endif
