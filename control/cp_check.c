/* cp_check.c - the start-up checks of a configuration's files and
 * directories (see cp_check.h). */
#include "cp_check.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp_tls.h"
#include "cp_tls_files.h"

#define ST_OK 0
#define ST_SKIP 1

/* path is a regular file (lstat when nofollow). 0 (or ST_SKIP: the caller
 * may not search its directory), or -errno with why. */
static int kind_regular(const char *key, const char *path, int nofollow, char *why, size_t why_len)
{
	struct stat st;
	if ((nofollow ? lstat(path, &st) : stat(path, &st)) < 0) {
		int e = errno;
		if (e == EACCES)
			return ST_SKIP;
		snprintf(why, why_len, "%s %s: %s", key, path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "%s %s %s, not a regular file%s", key, path, fg_file_kind(st.st_mode),
			 S_ISLNK(st.st_mode) ? " (a link is refused here: name the file itself)" : "");
		return -EINVAL;
	}
	return ST_OK;
}

/* path, when it exists, is of type want (S_IFREG, S_IFSOCK). */
static int kind_if_exists(const char *key, const char *path, unsigned want, char *why, size_t why_len)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return ST_OK; /* missing (created at start), or its directory is wrong: CP_CHECK_DIRS says */
	if ((st.st_mode & S_IFMT) == want)
		return ST_OK;
	snprintf(why, why_len, "%s %s %s, not a %s", key, path, fg_file_kind(st.st_mode),
		 want == S_IFSOCK ? "socket (fanogate removes only a stale socket)" : "regular file");
	return -EINVAL;
}

static int check_kinds(const struct fg_config *c, char *why, size_t why_len)
{
	const struct {
		const char *key, *path;
		int nofollow;
	} files[] = {
		{"[tls] cert", c->tls_cert, 0},
		{"[tls] key", c->tls_key, 0},
		{"[tls] ca", c->tls_ca, 0},
		{"[tls] tokens_file", c->tokens_file, 1},
		{"[cluster] ca", c->cluster.ca, 0},
		{"[cluster] cert", c->cluster.cert, 0},
		{"[cluster] key", c->cluster.key, 0},
		/* a profile name (no '/') is looked up by the dataplane */
		{"[dataplane] profile", strchr(c->dp_profile, '/') ? c->dp_profile : "", 0},
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(files); i++) {
		if (!files[i].path[0])
			continue;
		int r = kind_regular(files[i].key, files[i].path, files[i].nofollow, why, why_len);
		if (r < 0)
			return r;
	}
	char head[FG_PATH_MAX + 8];
	snprintf(head, sizeof(head), "%s.head", c->audit_path);
	int r = kind_if_exists("[audit] path", c->audit_path, S_IFREG, why, why_len);
	if (r == 0)
		r = kind_if_exists("[audit] path's head file", head, S_IFREG, why, why_len);
	if (r == 0 && c->op_socket[0])
		r = kind_if_exists("[operator] socket", c->op_socket, S_IFSOCK, why, why_len);
	return r;
}

static void tokens_free(struct cp_tls *t)
{
	if (t->tokens)
		OPENSSL_cleanse(t->tokens, t->n_tokens * sizeof(*t->tokens));
	free(t->tokens);
	free(t->cnmap);
	memset(t, 0, sizeof(*t));
}

static int check_parse(const struct fg_config *c, char *why, size_t why_len)
{
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		snprintf(why, why_len, "[tls] cert and key go together: set both, or neither for a self-signed pair");
		return -EINVAL;
	}
	if (c->tls_require_client_cert && !c->tls_ca[0]) {
		snprintf(why, why_len, "[tls] require_client_cert needs [tls] ca");
		return -EINVAL;
	}
	if (c->tls_cert[0]) {
		SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
		if (!ctx) {
			ERR_clear_error();
			snprintf(why, why_len, "[tls]: out of memory for a TLS context");
			return -ENOMEM;
		}
		int r = cp_tls_files_load(ctx, c->tls_cert, c->tls_key, c->tls_ca, why, why_len);
		SSL_CTX_free(ctx);
		if (r < 0)
			return r;
	}
	if (c->tokens_file[0]) {
		struct cp_tls t;
		memset(&t, 0, sizeof(t));
		int r = cp_tokens_load(&t, c->tokens_file, why, why_len);
		tokens_free(&t);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The directory of path (".." of the file), created when missing: its
 * nearest existing ancestor must be a directory the caller may write. */
static int dir_writable(const char *key, const char *path, char *why, size_t why_len)
{
	char dir[FG_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	for (;;) {
		struct stat st;
		if (stat(dir, &st) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				snprintf(why, why_len, "%s %s: %s %s, not a directory", key, path, dir,
					 fg_file_kind(st.st_mode));
				return -ENOTDIR;
			}
			if (access(dir, W_OK | X_OK) < 0) {
				int e = errno;
				snprintf(why, why_len, "%s %s: directory %s is not writable by uid %u: %s", key, path, dir,
					 (unsigned)geteuid(), strerror(e));
				return -e;
			}
			return 0;
		}
		if (errno != ENOENT) {
			int e = errno;
			snprintf(why, why_len, "%s %s: %s: %s", key, path, dir, strerror(e));
			return -e;
		}
		char *up = strrchr(dir, '/'); /* missing: the daemon creates it in its parent */
		if (!up)
			snprintf(dir, sizeof(dir), ".");
		else if (up == dir)
			dir[1] = '\0';
		else
			*up = '\0';
	}
}

int cp_check_files(const struct fg_config *cfg, unsigned what, char *why, size_t why_len)
{
	int r = 0;
	if (what & CP_CHECK_KINDS)
		r = check_kinds(cfg, why, why_len);
	if (r == 0 && (what & CP_CHECK_PARSE))
		r = check_parse(cfg, why, why_len);
	if (r == 0 && (what & CP_CHECK_DIRS)) {
		r = dir_writable("[audit] path", cfg->audit_path, why, why_len);
		if (r == 0 && cfg->op_socket[0])
			r = dir_writable("[operator] socket", cfg->op_socket, why, why_len);
	}
	return r < 0 ? r : 0;
}
