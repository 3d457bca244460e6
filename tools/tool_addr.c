/* tool_addr.c - numeric socket addresses for the test tools' command
 * lines (see tool_addr.h). The text is parsed by the core's fg_addr_parse
 * family, so the tools accept what fanogate.ini accepts.
 *
 * Who may call: fanofleet and fanorelay, any thread (no state). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "fg/config.h"
#include "tool_addr.h"

int tool_addr_parse(const char *s, bool allow_port0, struct sockaddr_storage *ss, socklen_t *len)
{
	struct fg_addr a;
	int rc = allow_port0 ? fg_addr_parse_port0(s, &a) : fg_addr_parse(s, &a);

	if (rc < 0)
		return rc;
	memset(ss, 0, sizeof *ss);
	if (a.family == AF_INET) {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
		a4->sin_family = AF_INET;
		a4->sin_port = htons(a.port);
		memcpy(&a4->sin_addr, a.addr, 4);
		*len = sizeof *a4;
	} else {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(a.port);
		memcpy(&a6->sin6_addr, a.addr, 16);
		*len = sizeof *a6;
	}
	return 0;
}

int tool_bind_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	char b[160];

	if (tool_addr_parse(s, true, ss, len) == 0)
		return 0;
	/* no port: a bare V6 address has colons of its own and needs brackets */
	if ((size_t)snprintf(b, sizeof b, strchr(s, ':') ? "[%s]:0" : "%s:0", s) >= sizeof b)
		return -EINVAL;
	return tool_addr_parse(b, true, ss, len);
}
