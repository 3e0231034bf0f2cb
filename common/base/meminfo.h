#pragma once
/*
 * meminfo.h - the host's memory as the kernel reports it (/proc/meminfo):
 * what orchd places on the cpu device against, and what a worker's KV pool
 * takes its kv_cache_fraction of.
 */
#include <stdint.h>

/*
 * orch_meminfo - MemTotal into *@total and MemAvailable (what can be
 * allocated without swapping) into *@avail, in bytes; each is left as it
 * was when /proc/meminfo cannot be read or lacks the line.
 */
void orch_meminfo(uint64_t *total, uint64_t *avail);
