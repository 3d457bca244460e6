/* text.c - operator-supplied text: UTF-8 boundaries, JSON-valid UTF-8,
 * terminal escaping (see fg/text.h). Pure; any thread. */
#include "fg/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t fg_utf8_seq_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (n == 0)
		return 0;
	unsigned char c = u[0];
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp, min;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2, cp = c & 0x1Fu, min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3, cp = c & 0x0Fu, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4, cp = c & 0x07u, min = 0x10000;
	} else {
		return 0; /* continuation byte, C0/C1 overlong lead, F5..FF */
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3Fu);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

size_t fg_text_copy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src), o = 0;
	while (o < n) {
		size_t k = fg_utf8_seq_len(src + o, n - o);
		if (k == 0)
			k = 1; /* not UTF-8: one byte is one character */
		if (o + k > cap - 1)
			break;
		o += k;
	}
	memmove(dst, src, o);
	dst[o] = '\0';
	return o;
}

size_t fg_text_utf8_fix(char *dst, size_t cap, const char *src)
{
	static const char repl[] = "\xEF\xBF\xBD"; /* U+FFFD */
	size_t n = strlen(src), i = 0, o = 0;
	while (i < n) {
		size_t k = fg_utf8_seq_len(src + i, n - i);
		const char *from = k ? src + i : repl;
		size_t w = k ? k : 3;
		if (o + w > cap - 1)
			break;
		memcpy(dst + o, from, w);
		o += w;
		i += k ? k : 1;
	}
	dst[o] = '\0';
	return o;
}

size_t fg_text_escape(char *dst, size_t cap, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(src), i = 0, o = 0;
	while (i < n) {
		const unsigned char *u = (const unsigned char *)src + i;
		size_t k = fg_utf8_seq_len(src + i, n - i);
		/* C1 controls are U+0080..U+009F: C2 80 .. C2 9F */
		bool plain = k > 1 ? !(u[0] == 0xC2 && u[1] <= 0x9F) : k == 1 && u[0] >= 0x20 && u[0] != 0x7F && u[0] != '\\';
		if (plain) {
			if (o + k > cap - 1)
				break;
			memcpy(dst + o, src + i, k);
			o += k;
			i += k;
			continue;
		}
		/* escape every byte of the character (or the one bad byte) */
		size_t bytes = k ? k : 1;
		size_t need = u[0] == '\\' ? 2 : 4 * bytes;
		if (o + need > cap - 1)
			break;
		if (u[0] == '\\') {
			dst[o++] = '\\';
			dst[o++] = '\\';
		} else {
			for (size_t b = 0; b < bytes; b++) {
				dst[o++] = '\\';
				dst[o++] = 'x';
				dst[o++] = hex[u[b] >> 4];
				dst[o++] = hex[u[b] & 15];
			}
		}
		i += bytes;
	}
	dst[o] = '\0';
	return o;
}
