#pragma once
/*
 * metrics.h - orchd's Prometheus metrics (DESIGN.md §8): the counters of
 * counters.h and gauges read from the registry, rendered when scraped.
 */
#include "base/sbuf.h"
#include "counters.h"

struct orchd;

/* metrics_render - the Prometheus text exposition of @d into @out. */
void metrics_render(struct orchd *d, struct sbuf *out);
