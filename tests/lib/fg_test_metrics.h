/* fg_test_metrics.h - the snapshot fixture of the /metrics unit tests: a
 * default config, an engine in lanes mode, a server, an event loop,
 * FG_TEST_LANES lanes of dataplane counters behind a boundary, and the
 * cp_metrics wired to them; render() of the exposition.
 * Callers: tests/control/test_metrics.c, tests/control/test_counters.c; the
 * test's own thread. Header only, one fixture per test program (file-scope
 * statics): include it after <cmocka.h>. */
#ifndef FG_TEST_METRICS_H
#define FG_TEST_METRICS_H

#include <string.h>

#include "cp_metrics.h"

#define FG_TEST_LANES 2u

static struct fg_config cfg;
static struct cp_engine eng;
static struct cp_server srv;
static struct cp_loop loop;
static struct fg_dp_counters dpk[FG_TEST_LANES];
static struct fg_boundary bnd;
static struct cp_metrics met;

/* A fresh snapshot: everything zero but the default config, the engine's
 * lines from it (lanes mode) and the server's max_conns; the boundary has
 * FG_TEST_LANES lanes of dpk (no extended counters); met sees all of it. */
static void fg_test_metrics_reset(void)
{
	memset(&eng, 0, sizeof(eng));
	memset(&srv, 0, sizeof(srv));
	memset(dpk, 0, sizeof(dpk));
	memset(&bnd, 0, sizeof(bnd));
	fg_config_default(&cfg);
	fg_lines_init(&eng.lines, cfg.line_initial, &cfg.policy, 0);
	eng.lanes_mode = true;
	srv.max_conns = cfg.max_connections;
	bnd.n_lanes = FG_TEST_LANES;
	bnd.counters = dpk;
	memset(&met, 0, sizeof(met));
	met.loop = &loop;
	met.cfg = &cfg;
	met.engine = &eng;
	met.srv = &srv;
	met.b = &bnd;
}

/* The exposition of the snapshot (malloc'd, the caller frees it); an
 * empty or mis-sized one fails the test. */
static char *render(void)
{
	char *out = NULL;
	ssize_t n = cp_metrics_render(&met, &out);

	assert_true(n > 0);
	assert_int_equal(strlen(out), (size_t)n);
	return out;
}

#endif
