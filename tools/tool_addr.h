/* tool_addr.h - numeric socket addresses on the command lines of the
 * test tools (fanofleet, fanorelay): the text forms of fg_addr_parse
 * (include/fg/config.h) turned into a struct sockaddr_storage.
 *
 * Who may call: any thread; the functions keep no state. */
#ifndef FG_TOOL_ADDR_H
#define FG_TOOL_ADDR_H

#include <stdbool.h>
#include <sys/socket.h>

#include "fg/common.h"

/* Parse "a.b.c.d:port", "[v6]:port", "localhost:port" or "*:port" (no name
 * lookup) into *ss / *len. Port 0 is accepted only when allow_port0.
 * 0 or -EINVAL; *ss and *len are written only on success. */
FG_MUST_CHECK int tool_addr_parse(const char *s, bool allow_port0, struct sockaddr_storage *ss, socklen_t *len);

/* A source address to bind: HOST, HOST:PORT, [V6]:PORT or a bare V6
 * address; a missing port is 0 (the kernel picks). 0 or -EINVAL; *ss and
 * *len are written only on success. */
FG_MUST_CHECK int tool_bind_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len);

#endif
