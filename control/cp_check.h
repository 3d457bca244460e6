/* cp_check.h - what a start-up checks of the files and directories a
 * configuration names, without starting anything: `fanogate
 * --check-config`, `fanoctl config check`, a config reload (SIGHUP or
 * `fanoctl config reload`) and the daemon's own start all ask here, so the
 * check and the start cannot disagree.
 *
 *   CP_CHECK_KINDS  every file the configuration names is a regular file
 *                   (stat: never opened, so a FIFO or a device cannot block
 *                   the caller): [tls] cert, key, ca, tokens_file (not a
 *                   symbolic link), [cluster] ca, cert, key, [dataplane]
 *                   profile when it is a path; [audit] path and its head
 *                   file, when they exist, are regular files; [operator]
 *                   socket, when it exists, is a socket. A path the caller
 *                   may not search (EACCES: a daemon that dropped its
 *                   privileges) is left to the start that reads it.
 *   CP_CHECK_PARSE  the TLS material parses and matches (cp_tls_files.h:
 *                   certificate chain, key, CA bundle) and the tokens file
 *                   is mode 0600, owned by the caller's uid and well formed;
 *                   [tls] cert and key go together (both unset: the
 *                   self-signed pair the daemon generates).
 *   CP_CHECK_DIRS   the directories the daemon writes (that of [audit] path:
 *                   the log, its rotations, the self-signed pair; that of
 *                   [operator] socket) exist and are writable, or can be
 *                   created: the nearest existing ancestor is a writable
 *                   directory.
 * The answers hold for the caller's uid: run a check as the user that
 * starts fanogate (root), as systemd's ExecStartPre does.
 *
 * Who may call: any thread; blocking (small reads). Nothing is logged. */
#ifndef CP_CHECK_H
#define CP_CHECK_H

#include <stddef.h>

#include "fg/common.h"
#include "fg/config.h"

enum {
	CP_CHECK_KINDS = 1u << 0,
	CP_CHECK_PARSE = 1u << 1,
	CP_CHECK_DIRS = 1u << 2,
	CP_CHECK_ALL = CP_CHECK_KINDS | CP_CHECK_PARSE | CP_CHECK_DIRS,
};

/* The checks in what (CP_CHECK_*) of cfg, in the order above, stopping at
 * the first refusal. Returns 0, or -errno with one line in why that names
 * the key, the path and what is wrong ("[tls] cert /etc/x.pem is a FIFO,
 * not a regular file"). */
FG_MUST_CHECK int cp_check_files(const struct fg_config *cfg, unsigned what, char *why, size_t why_len);

#endif
