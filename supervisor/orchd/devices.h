#pragma once
/*
 * devices.h - orchd's inventory of devices: "cpu" always, and "cuda:N" for
 * each GPU NVML reports. NVML (libnvidia-ml, part of the driver) is loaded
 * with dlopen, so orchd runs where it is absent: then only cpu is listed.
 * cuda:N is NVML's index N, which is PCI bus order; orchd runs workers with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers the GPUs the same way.
 */
#include <stdbool.h>
#include <stdint.h>

#define DEVICES_MAX 17 /* cpu + 16 GPUs */

struct device_info {
	char id[16];          /* "cpu", "cuda:0" */
	char name[96];        /* "NVIDIA H200", or the CPU's model name */
	uint64_t total, free; /* bytes; refreshed by devices_refresh() */
};

struct nvml_api;

struct devices {
	struct device_info dev[DEVICES_MAX];
	uint32_t n;
	void *nvml;           /* the dlopen() handle, NULL without NVML */
	struct nvml_api *api; /* its entry points (devices.c), NULL without NVML */
	char nvml_note[160];  /* why there is no GPU, for status and the log */
};

/*
 * devices_open - build the inventory; loads @nvml_library when it can and
 * notes why not otherwise (never an error: cpu is always there). Call
 * devices_close() even then.
 */
void devices_open(struct devices *inv, const char *nvml_library);

/* devices_refresh - read every device's total and free memory now. */
void devices_refresh(struct devices *inv);

/* devices_find - the device named @id, or NULL. */
struct device_info *devices_find(struct devices *inv, const char *id);

void devices_close(struct devices *inv);
