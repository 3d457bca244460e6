/* wake_lat.c - the machine's floor for any idle mode that sleeps: how long
 * a thread blocked in ppoll() on an eventfd takes to run after another
 * thread, on another CPU, writes the eventfd (the idle lcore's wake-up,
 * dataplane/dp_idle.h, minus the network), beside the same hand-over to a
 * thread that spins on the eventfd with poll(fd, 0). One write every
 * --gap-us (2000) us, so the sleeper's CPU has gone idle each time, as the
 * lcore's does between isolated seeds. bench/dp/idle.sh prints it first.
 *
 * usage: wake_lat [--count N] [--gap-us US] [--cpus A,B]   (default 2000,
 * 2000, 0,1). Output: one JSON line, p50/p99 us of both modes. */
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int efd_go, efd_back, count = 2000, gap_us = 2000, cpu_tx = 0, cpu_rx = 1, spin;
static _Atomic uint64_t t_sent;
static uint64_t *lat;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

static void *receiver(void *arg)
{
	(void)arg;
	pin(cpu_rx);
	for (int i = 0; i < count; i++) {
		struct pollfd p = {.fd = efd_go, .events = POLLIN};
		while (poll(&p, 1, spin ? 0 : -1) == 0)
			;
		uint64_t v;
		(void)!read(efd_go, &v, sizeof(v));
		lat[i] = now_ns() - t_sent;
		(void)!write(efd_back, &(uint64_t){1}, sizeof(uint64_t));
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void run(double *p50, double *p99)
{
	pthread_t t;
	if (pthread_create(&t, NULL, receiver, NULL) != 0) {
		perror("pthread_create");
		exit(1);
	}
	for (int i = 0; i < count; i++) {
		struct timespec g = {.tv_sec = gap_us / 1000000, .tv_nsec = (long)(gap_us % 1000000) * 1000};
		clock_nanosleep(CLOCK_MONOTONIC, 0, &g, NULL);
		t_sent = now_ns();
		(void)!write(efd_go, &(uint64_t){1}, sizeof(uint64_t));
		uint64_t v;
		(void)!read(efd_back, &v, sizeof(v));
	}
	pthread_join(t, NULL);
	qsort(lat, (size_t)count, sizeof(*lat), cmp_u64);
	*p50 = (double)lat[count / 2] / 1e3;
	*p99 = (double)lat[(size_t)(count - 1) * 99 / 100] / 1e3;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"count", 1, 0, 'n'}, {"gap-us", 1, 0, 'g'}, {"cpus", 1, 0, 'c'}, {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': count = atoi(optarg); break;
		case 'g': gap_us = atoi(optarg); break;
		case 'c':
			if (sscanf(optarg, "%d,%d", &cpu_tx, &cpu_rx) != 2) {
				fprintf(stderr, "wake_lat: --cpus wants A,B\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: wake_lat [--count N] [--gap-us US] [--cpus A,B]\n");
			return 2;
		}
	}
	if (count < 1 || gap_us < 0) {
		fprintf(stderr, "wake_lat: --count >= 1, --gap-us >= 0\n");
		return 2;
	}
	lat = calloc((size_t)count, sizeof(*lat));
	efd_go = eventfd(0, EFD_NONBLOCK);
	efd_back = eventfd(0, 0);
	if (!lat || efd_go < 0 || efd_back < 0) {
		perror("wake_lat");
		return 1;
	}
	pin(cpu_tx);
	double s50, s99, p50, p99;
	spin = 0;
	run(&s50, &s99);
	spin = 1;
	run(&p50, &p99);
	printf("{\"wake_lat\":{\"count\":%d,\"gap_us\":%d,\"sleeping_p50_us\":%.1f,\"sleeping_p99_us\":%.1f,"
	       "\"spinning_p50_us\":%.1f,\"spinning_p99_us\":%.1f}}\n",
	       count, gap_us, s50, s99, p50, p99);
	return 0;
}
