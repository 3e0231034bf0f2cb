/*
 * counters.c - the histograms' buckets (counters.h).
 */
#include "counters.h"

const double histo_bounds[MET_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                          0.5,   1,      2.5,   5,    10,    30,   120, 600};

void
histo_observe(struct histo *h, double seconds)
{
	for (int i = 0; i < MET_BUCKETS; i++)
		if (seconds <= histo_bounds[i]) {
			h->counts[i]++;
			break;
		}
	h->count++;
	h->sum += seconds;
}
