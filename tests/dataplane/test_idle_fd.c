/* test_idle_fd.c - dp_idle_fd.h: the sockets of one address family found
 * in /proc/self/fd (real sockets, a pipe and a file beside them), and the
 * "one new socket across a call" rule dp.c uses to find af_xdp's queue
 * socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "dp_idle_fd.h"

static bool has(const int *fds, int n, int fd)
{
	for (int i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

static void test_socks_by_family(void **state)
{
	(void)state;
	int before[DP_IDLE_MAX_SOCKS], after[DP_IDLE_MAX_SOCKS];
	int nb = dp_idle_socks(AF_INET6, before, DP_IDLE_MAX_SOCKS);
	assert_true(nb >= 0);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	int file = open("/proc/self/stat", O_RDONLY);
	assert_true(file >= 0);
	int u = socket(AF_UNIX, SOCK_DGRAM, 0);
	int a = socket(AF_INET6, SOCK_DGRAM, 0);
	int b = socket(AF_INET6, SOCK_STREAM, 0);
	int v4 = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(u >= 0 && a >= 0 && b >= 0 && v4 >= 0);
	int na = dp_idle_socks(AF_INET6, after, DP_IDLE_MAX_SOCKS);
	assert_int_equal(na, nb + 2);
	assert_true(has(after, na, a) && has(after, na, b));
	assert_false(has(after, na, u) || has(after, na, v4) || has(after, na, pfd[0]) || has(after, na, file));
	for (int i = 1; i < na; i++)
		assert_true(after[i - 1] < after[i]); /* ascending */
	/* two new sockets across the "call": ambiguous */
	assert_int_equal(dp_idle_new_fd(before, nb, after, na), -1);
	close(b);
	na = dp_idle_socks(AF_INET6, after, DP_IDLE_MAX_SOCKS);
	assert_int_equal(dp_idle_new_fd(before, nb, after, na), a);
	/* max bounds what is stored */
	assert_int_equal(dp_idle_socks(AF_INET6, after, 0), 0);
	close(a);
	close(u);
	close(v4);
	close(file);
	close(pfd[0]);
	close(pfd[1]);
	na = dp_idle_socks(AF_INET6, after, DP_IDLE_MAX_SOCKS);
	assert_int_equal(dp_idle_new_fd(before, nb, after, na), -1); /* none new */
}

static void test_new_fd_rule(void **state)
{
	(void)state;
	const int before[] = {3, 7, 9};
	const int one[] = {3, 7, 8, 9};
	const int two[] = {3, 5, 7, 8, 9};
	const int gone[] = {3, 9};
	assert_int_equal(dp_idle_new_fd(before, 3, one, 4), 8);
	assert_int_equal(dp_idle_new_fd(before, 3, two, 5), -1);
	assert_int_equal(dp_idle_new_fd(before, 3, gone, 2), -1);
	assert_int_equal(dp_idle_new_fd(NULL, 0, one, 1), 3);
	assert_int_equal(dp_idle_new_fd(before, 3, NULL, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socks_by_family),
		cmocka_unit_test(test_new_fd_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
