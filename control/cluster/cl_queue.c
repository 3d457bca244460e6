/* cl_queue.c - the queues between the loop and the cluster thread (see
 * cl_queue.h for the contract and which thread calls what). */
#include "cl_queue.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

int cl_queue_init(struct cl_queue *q)
{
	memset(q, 0, sizeof(*q));
	q->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (q->evfd < 0)
		return -errno;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->in_space, NULL);
	return 0;
}

void cl_queue_fini(struct cl_queue *q)
{
	if (q->evfd < 0)
		return;
	close(q->evfd);
	q->evfd = -1;
	pthread_cond_destroy(&q->in_space);
	pthread_mutex_destroy(&q->lock);
}

void cl_queue_stop(struct cl_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_broadcast(&q->in_space);
	pthread_mutex_unlock(&q->lock);
}

int cl_queue_push_out(struct cl_queue *q, const struct cl_out *m)
{
	pthread_mutex_lock(&q->lock);
	if (q->out_n == CL_QUEUE_MAX) {
		q->out_dropped++;
		pthread_mutex_unlock(&q->lock);
		return -ENOBUFS;
	}
	q->out[(q->out_head + q->out_n++) % CL_QUEUE_MAX] = *m;
	pthread_mutex_unlock(&q->lock);
	return 0;
}

bool cl_queue_peek_out(struct cl_queue *q, struct cl_out *m)
{
	pthread_mutex_lock(&q->lock);
	bool have = q->out_n > 0;
	if (have)
		*m = q->out[q->out_head];
	pthread_mutex_unlock(&q->lock);
	return have;
}

void cl_queue_drop_out(struct cl_queue *q)
{
	pthread_mutex_lock(&q->lock);
	if (q->out_n) {
		q->out_head = (q->out_head + 1) % CL_QUEUE_MAX;
		q->out_n--;
	}
	pthread_mutex_unlock(&q->lock);
}

void cl_queue_push_in(struct cl_queue *q, const struct cl_in *m)
{
	pthread_mutex_lock(&q->lock);
	while (q->in_n == CL_QUEUE_MAX && !q->stopping)
		pthread_cond_wait(&q->in_space, &q->lock);
	if (q->in_n == CL_QUEUE_MAX) {
		pthread_mutex_unlock(&q->lock);
		return;
	}
	bool edge = q->in_n == 0;
	q->in[(q->in_head + q->in_n++) % CL_QUEUE_MAX] = *m;
	pthread_mutex_unlock(&q->lock);
	if (edge) {
		uint64_t one = 1;
		if (write(q->evfd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is already non-zero, the loop will wake */
		}
	}
}

unsigned cl_queue_pop_in(struct cl_queue *q, struct cl_in *out, unsigned max)
{
	uint64_t v;
	if (read(q->evfd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled; drain anyway */
	}
	pthread_mutex_lock(&q->lock);
	unsigned n = 0;
	while (n < max && q->in_n) {
		out[n++] = q->in[q->in_head];
		q->in_head = (q->in_head + 1) % CL_QUEUE_MAX;
		q->in_n--;
	}
	bool more = q->in_n > 0;
	pthread_cond_signal(&q->in_space);
	pthread_mutex_unlock(&q->lock);
	if (more) {
		uint64_t one = 1;
		if (write(q->evfd, &one, sizeof(one)) < 0) {
			/* already signalled */
		}
	}
	return n;
}

uint64_t cl_queue_out_dropped(struct cl_queue *q)
{
	pthread_mutex_lock(&q->lock);
	uint64_t n = q->out_dropped;
	pthread_mutex_unlock(&q->lock);
	return n;
}
