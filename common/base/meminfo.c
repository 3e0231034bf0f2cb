/*
 * meminfo.c - /proc/meminfo's MemTotal and MemAvailable (meminfo.h).
 */
#include "meminfo.h"

#include <stdio.h>

void
orch_meminfo(uint64_t *total, uint64_t *avail)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	unsigned long long kib;

	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
			*total = kib * 1024;
		else if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			*avail = kib * 1024;
	}
	fclose(f);
}
