/*
 * cpu_pool.c - a fixed pool of threads for parallel loops.
 *
 * Design notes: the caller's thread is worker 0; workers 1..n-1 wait for a
 * new generation number, run their slice, and count themselves done. A job
 * is published and collected under one mutex; no allocation per job.
 */
#include "alloc.h"
#include "cpu.h"

struct cpu_pool {
	uint32_t n;
	pthread_t *threads;
	pthread_mutex_t mtx;
	pthread_cond_t wake, done;
	uint64_t gen;     /* guarded_by: mtx */
	uint32_t running; /* guarded_by: mtx; workers still busy with gen */
	bool stop;        /* guarded_by: mtx */
	cpu_task_fn fn;   /* guarded_by: mtx */
	void *ctx;
	uint64_t total;
};

struct worker_arg {
	struct cpu_pool *p;
	uint32_t id;
};

static void
slice(uint64_t total, uint32_t n, uint32_t id, uint64_t *b, uint64_t *e)
{
	*b = total * id / n;
	*e = total * (id + 1) / n;
}

static void *
worker(void *arg)
{
	struct cpu_pool *p = ((struct worker_arg *)arg)->p;
	uint32_t id = ((struct worker_arg *)arg)->id;
	uint64_t seen = 0, b, e;

	orch_free(arg);
	pthread_mutex_lock(&p->mtx);
	for (;;) {
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->wake, &p->mtx);
		if (p->stop)
			break;
		seen = p->gen;
		cpu_task_fn fn = p->fn;
		void *ctx = p->ctx;
		slice(p->total, p->n, id, &b, &e);
		pthread_mutex_unlock(&p->mtx);
		if (b < e)
			fn(ctx, id, b, e);
		pthread_mutex_lock(&p->mtx);
		if (--p->running == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mtx);
	return NULL;
}

orch_err
cpu_pool_new(uint32_t n, struct cpu_pool **ret)
{
	struct cpu_pool *p = orch_calloc(1, sizeof(*p));

	if (p == NULL || n == 0 || (p->threads = orch_calloc(n, sizeof(*p->threads))) == NULL) {
		orch_free(p);
		return ORCH_ENOMEM;
	}
	p->n = 1;
	pthread_mutex_init(&p->mtx, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	for (uint32_t i = 1; i < n; i++) {
		struct worker_arg *a = orch_malloc(sizeof(*a));
		if (a == NULL)
			break;
		*a = (struct worker_arg){p, i};
		if (pthread_create(&p->threads[i], NULL, worker, a) != 0) {
			orch_free(a);
			break;
		}
		p->n++;
	}
	*ret = p;
	return ORCH_OK;
}

void
cpu_pool_free(struct cpu_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mtx);
	p->stop = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mtx);
	for (uint32_t i = 1; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mtx);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->done);
	orch_free(p->threads);
	orch_free(p);
}

uint32_t
cpu_pool_threads(const struct cpu_pool *p)
{
	return p->n;
}

void
cpu_pool_for(struct cpu_pool *p, uint64_t n, cpu_task_fn fn, void *ctx)
{
	uint64_t b, e;

	if (p->n == 1 || n < 2) {
		if (n > 0)
			fn(ctx, 0, 0, n);
		return;
	}
	pthread_mutex_lock(&p->mtx);
	p->fn = fn;
	p->ctx = ctx;
	p->total = n;
	p->running = p->n - 1;
	p->gen++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mtx);
	slice(n, p->n, 0, &b, &e);
	if (b < e)
		fn(ctx, 0, b, e);
	pthread_mutex_lock(&p->mtx);
	while (p->running > 0)
		pthread_cond_wait(&p->done, &p->mtx);
	pthread_mutex_unlock(&p->mtx);
}
