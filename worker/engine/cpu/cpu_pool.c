/*
 * cpu_pool.c - a fixed pool of threads for parallel loops.
 *
 * Design notes: the caller's thread is worker 0; workers 1..n-1 wait for a
 * new generation number, take chunks of the range from a shared counter
 * until none is left, and count themselves done. Chunks, not one slice a
 * thread: a thread that starts late (woken from sleep, or its core taken
 * for a while by another process or the hypervisor) takes fewer of them,
 * instead of the others waiting for its half. Both
 * sides spin on atomics for a short while (a decode step runs hundreds of
 * loops a few tens of microseconds apart) before sleeping on a condition
 * variable; the mutex only guards the sleeping, so no wake-up is lost.
 * Loops whose total cost is below a threshold run on the caller alone.
 */
#include <immintrin.h>

#include "base/alloc.h"
#include "cpu.h"

#define SPIN_ROUNDS 4000 /* pause instructions before sleeping: tens of microseconds */

struct cpu_pool {
	uint32_t n;
	pthread_t *threads;
	pthread_mutex_t mtx;
	pthread_cond_t wake, done;
	uint64_t gen;     /* atomic; published after the job fields */
	uint32_t running; /* atomic; workers still busy with gen */
	bool stop;        /* atomic */
	cpu_task_fn fn;   /* written before gen is bumped */
	void *ctx;
	uint64_t total, chunk;
	uint64_t next; /* atomic: the first item no thread has taken */
};

struct worker_arg {
	struct cpu_pool *p;
	uint32_t id;
};

#define CHUNKS_PER_THREAD 4

/* Run chunks of the current loop as thread @id until none is left. */
static void
take_chunks(struct cpu_pool *p, uint32_t id)
{
	for (;;) {
		uint64_t b = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED);
		if (b >= p->total)
			return;
		p->fn(p->ctx, id, b, p->total - b < p->chunk ? p->total : b + p->chunk);
	}
}

/* Wait until gen moves past @seen (or stop): spin, then sleep. */
static uint64_t
wait_gen(struct cpu_pool *p, uint64_t seen)
{
	uint64_t g;

	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if ((g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE)) != seen ||
		    __atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
			return g;
		_mm_pause();
	}
	pthread_mutex_lock(&p->mtx);
	while ((g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE)) == seen &&
	       !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&p->wake, &p->mtx);
	pthread_mutex_unlock(&p->mtx);
	return g;
}

static void *
worker(void *arg)
{
	struct cpu_pool *p = ((struct worker_arg *)arg)->p;
	uint32_t id = ((struct worker_arg *)arg)->id;
	uint64_t seen = 0;

	orch_free(arg);
	for (;;) {
		seen = wait_gen(p, seen);
		if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
			break;
		take_chunks(p, id);
		if (__atomic_sub_fetch(&p->running, 1, __ATOMIC_ACQ_REL) == 0) {
			pthread_mutex_lock(&p->mtx);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mtx);
		}
	}
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
	__atomic_store_n(&p->stop, true, __ATOMIC_RELEASE);
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
cpu_pool_for(struct cpu_pool *p, uint64_t n, uint64_t cost, cpu_task_fn fn, void *ctx)
{
	uint64_t chunks = (uint64_t)p->n * CHUNKS_PER_THREAD;

	if (p->n == 1 || n < 2 || n * cost < CPU_POOL_MIN_COST) {
		if (n > 0)
			fn(ctx, 0, 0, n);
		return;
	}
	p->fn = fn;
	p->ctx = ctx;
	p->total = n;
	p->chunk = (n + chunks - 1) / chunks;
	__atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->running, p->n - 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&p->gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&p->mtx);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mtx);
	take_chunks(p, 0);
	for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&p->running, __ATOMIC_ACQUIRE) > 0; i++)
		_mm_pause();
	pthread_mutex_lock(&p->mtx);
	while (__atomic_load_n(&p->running, __ATOMIC_ACQUIRE) > 0)
		pthread_cond_wait(&p->done, &p->mtx);
	pthread_mutex_unlock(&p->mtx);
}
