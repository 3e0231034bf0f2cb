/*
 * cost.cc - the cost counters: what each operation the simulated device
 * runs would cost a GPU (include/cusim/cost.h; README.md "Cost counters").
 *
 * Design notes
 * - Off unless ORCH_CUDA_SIM_COST is set: then each launch turns on the
 *   executor's flag that sends its global accesses here (check.cc), after
 *   the accesses to shared memory, the stack and the arguments are sorted
 *   out. With it off, a global access and a block cost one test of that flag.
 * - Distinct sectors: a stamp of 32 bits per 32-byte sector of a device's
 *   reserved range (mapped on demand, so only sectors touched cost pages),
 *   one array stamped with the launch's serial, one with the block's: the
 *   high 30 bits the serial, the low two whether it was read and written.
 *   A sector whose stamp is not the current serial is new to the launch (or
 *   block). When a serial wraps, its array is cleared.
 * - Arithmetic and collectives are counted always (a plain add each in
 *   device.h and exec.cc: cheaper than a test); a launch's record takes the
 *   difference of the counts across it.
 * - One host thread runs device work at a time, holding the API lock, so
 *   the state needs no lock of its own; cusim_cost_take takes the API lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cusim/cost.h"
#include "exec.h"

namespace cusim
{

op_counts counts;
bool cost_in_graph;
bool cost_skip;

void
count_slow(uint64_t *c)
{
	++*c;
}

namespace
{

constexpr uint32_t SERIAL_END = 1u << 30;

struct stamps {
	uintptr_t base;
	size_t reserved;
	uint32_t *launch, *block; /* per sector */
};

struct cost_state {
	std::vector<cusim_cost_rec> recs;
	cusim_cost_rec cur;
	op_counts at_begin;
	uint32_t launch_serial, block_serial;
	stamps dev[8];
	int n_dev = -1;
	FILE *out;
};

cost_state &
cs(void)
{
	static cost_state *s = new cost_state();
	return *s;
}

uint32_t *
map_stamps(size_t reserved)
{
	size_t bytes = reserved / 32 * sizeof(uint32_t);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "cusim: no memory for the cost counters' stamps (%zu bytes)\n",
		        bytes);
		abort();
	}
	return (uint32_t *)p;
}

void
init_devices(cost_state &c)
{
	if (c.n_dev >= 0)
		return;
	c.n_dev = 0;
	for (int d = 0; d < 8 && d < cfg().devices; d++) {
		stamps *s = &c.dev[c.n_dev];
		if (!device_span(d, &s->base, &s->reserved))
			break;
		s->launch = map_stamps(s->reserved);
		s->block = map_stamps(s->reserved);
		c.n_dev++;
	}
}

/* The next serial of an array of stamps; the array cleared when the serials wrap. */
uint32_t
next_serial(cost_state &c, uint32_t *serial, bool launch)
{
	if (++*serial < SERIAL_END)
		return *serial;
	for (int d = 0; d < c.n_dev; d++) {
		uint32_t *a = launch ? c.dev[d].launch : c.dev[d].block;
		madvise(a, c.dev[d].reserved / 32 * sizeof(uint32_t), MADV_DONTNEED);
	}
	return *serial = 1;
}

/* Mark a sector's stamp @p with @bits (1 read, 2 write) under @serial; count what is new. */
inline void
mark(uint32_t *p, uint32_t serial, uint32_t bits, uint64_t *rd, uint64_t *wr)
{
	uint32_t v = *p, tag = serial << 2;
	uint32_t have = (v & ~3u) == tag ? v & 3u : 0, add = bits & ~have;

	if (add == 0)
		return;
	*p = tag | have | add;
	*rd += add & 1;
	*wr += add >> 1;
}

void
put_line(FILE *f, const cusim_cost_rec *r)
{
	static const char *const kinds[] = {"kernel", "library", "memcpy", "memset", "graph"};

	fprintf(f,
	        "%s\t%s\t%d\t%u,%u,%u\t%u,%u,%u\t%u\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t"
	        "%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\t%llu\n",
	        r->name, kinds[r->kind], r->in_graph, r->grid[0], r->grid[1], r->grid[2],
	        r->block[0], r->block[1], r->block[2], r->smem, (unsigned long long)r->dram_rd,
	        (unsigned long long)r->dram_wr, (unsigned long long)r->l2_rd,
	        (unsigned long long)r->l2_wr, (unsigned long long)r->req_rd,
	        (unsigned long long)r->req_wr, (unsigned long long)r->host_rd,
	        (unsigned long long)r->host_wr, (unsigned long long)r->const_rd,
	        (unsigned long long)r->atomics, (unsigned long long)r->collectives,
	        (unsigned long long)r->barriers, (unsigned long long)r->fma32,
	        (unsigned long long)r->dp4a, (unsigned long long)r->tensor_flops,
	        (unsigned long long)r->fp32_flops);
}

void
push(cost_state &c, const cusim_cost_rec &r)
{
	c.recs.push_back(r);
	if (cfg().cost_file == NULL)
		return;
	if (c.out == NULL) {
		c.out = fopen(cfg().cost_file, "a");
		if (c.out == NULL) {
			fprintf(stderr, "cusim: ORCH_CUDA_SIM_COST=%s: cannot open it: %m\n",
			        cfg().cost_file);
			exit(2);
		}
		fseek(c.out, 0, SEEK_END);
		if (ftell(c.out) == 0)
			fputs("# name\tkind\tin_graph\tgrid\tblock\tsmem\tdram_rd\tdram_wr\tl2_rd\t"
			      "l2_wr\treq_rd\treq_wr\thost_rd\thost_wr\tconst_rd\tatomics\t"
			      "collectives\tbarriers\tfma32\tdp4a\ttensor_flops\tfp32_flops\n",
			      c.out);
	}
	put_line(c.out, &r);
	fflush(c.out);
}

void
set_name(cusim_cost_rec *r, const char *name)
{
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "?");
}

} // namespace

void
cost_launch_begin(const exec *e, size_t smem)
{
	cost_state &c = cs();
	cusim_cost_rec *r = &c.cur;

	init_devices(c);
	memset(r, 0, sizeof(*r));
	set_name(r, e->k->name);
	r->kind = CUSIM_COST_KERNEL;
	r->in_graph = cost_in_graph;
	r->grid[0] = e->grid.x, r->grid[1] = e->grid.y, r->grid[2] = e->grid.z;
	r->block[0] = e->block.x, r->block[1] = e->block.y, r->block[2] = e->block.z;
	r->smem = (uint32_t)smem;
	r->blocks = (uint64_t)e->grid.x * e->grid.y * e->grid.z;
	r->threads = r->blocks * e->n_threads;
	c.at_begin = counts;
	next_serial(c, &c.launch_serial, true);
}

void
cost_block_begin(void)
{
	cost_state &c = cs();

	next_serial(c, &c.block_serial, false);
}

void
cost_access(uintptr_t a, size_t n, int flags)
{
	cost_state &c = cs();
	cusim_cost_rec *r = &c.cur;
	bool w = flags & ACC_WRITE;

	if (n == 0)
		return;
	if ((flags & ACC_ATOMIC) && w) { /* read-modify-write (an atomic store counts so too) */
		r->atomics++;
		r->req_rd += n;
		r->req_wr += n;
	} else {
		r->atomics += (flags & ACC_ATOMIC) != 0; /* an atomic load: a read */
		*(w ? &r->req_wr : &r->req_rd) += n;
	}
	for (int d = 0; d < c.n_dev; d++) {
		const stamps *s = &c.dev[d];
		size_t off = a - s->base;
		if (off >= s->reserved)
			continue;
		uint32_t bits = (flags & ACC_ATOMIC) && w ? 3u : w ? 2u : 1u;
		size_t last = (off + n - 1) >> 5, end = s->reserved >> 5; /* an overrun faults later */
		for (size_t k = off >> 5; k <= last && k < end; k++) {
			mark(&s->launch[k], c.launch_serial, bits, &r->dram_rd, &r->dram_wr);
			mark(&s->block[k], c.block_serial, bits, &r->l2_rd, &r->l2_wr);
		}
		return;
	}
	if (is_pinned(a, n))
		*(w ? &r->host_wr : &r->host_rd) += n;
	else
		r->const_rd += n; /* a __constant__ table of the loaded images */
}

void
cost_launch_end(const exec *e)
{
	cost_state &c = cs();
	cusim_cost_rec *r = &c.cur;

	r->smem += (uint32_t)e->smem_static;
	r->fma32 = counts.fma32 - c.at_begin.fma32;
	r->dp4a = counts.dp4a - c.at_begin.dp4a;
	r->collectives = counts.collectives - c.at_begin.collectives;
	r->barriers = counts.barriers - c.at_begin.barriers;
	push(c, *r);
}

void
cost_op(const char *name, int kind, uint64_t rd, uint64_t wr, uint64_t host_rd, uint64_t host_wr,
        uint64_t tensor_flops, uint64_t fp32_flops)
{
	if (!cfg().cost)
		return;
	cost_state &c = cs();
	cusim_cost_rec r;

	memset(&r, 0, sizeof(r));
	set_name(&r, name);
	r.kind = kind;
	r.in_graph = kind != CUSIM_COST_GRAPH && cost_in_graph;
	r.dram_rd = r.l2_rd = (rd + 31) / 32;
	r.dram_wr = r.l2_wr = (wr + 31) / 32;
	r.req_rd = rd;
	r.req_wr = wr;
	r.host_rd = host_rd;
	r.host_wr = host_wr;
	r.tensor_flops = tensor_flops;
	r.fp32_flops = fp32_flops;
	push(c, r);
}

} // namespace cusim

extern "C" int
cusim_cost_enabled(void)
{
	return cusim::cfg().cost;
}

extern "C" size_t
cusim_cost_take(struct cusim_cost_rec **out)
{
	cusim::api_lock l;
	cusim::cost_state &c = cusim::cs();
	size_t n = c.recs.size();

	*out = NULL;
	if (n == 0)
		return 0;
	*out = (cusim_cost_rec *)malloc(n * sizeof(cusim_cost_rec));
	if (*out == NULL)
		return 0;
	memcpy(*out, c.recs.data(), n * sizeof(cusim_cost_rec));
	c.recs.clear();
	return n;
}

extern "C" int
cusim_cost_skip(int on)
{
	cusim::api_lock l;
	bool was = cusim::cost_skip;

	cusim::drain_all(); /* what was queued before runs as it would have */
	cusim::cost_skip = on != 0;
	return was;
}
