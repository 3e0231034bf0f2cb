#pragma once
/*
 * device_segmented_sort.cuh (simulated device) - CUB's segmented sort of
 * key/value pairs, as CPU code with CUB's contract: a first call with
 * d_temp_storage NULL gives the temporary bytes; the sort is enqueued on
 * the stream and reads the segment offsets from device memory when it
 * runs. Keys order as CUB's radix sort orders them (by their bits: -0.0
 * before +0.0 ascending, NaNs at the ends). Stable variants keep equal keys
 * in input order; the others here are stable too.
 */
#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#include "cuda_runtime_api.h"

namespace cusim
{
enum sort_key { SORT_F32, SORT_I32, SORT_U32 };
/* segmented_sort - the type-erased sort (cub.cc). */
cudaError_t segmented_sort(void *temp, size_t *temp_bytes, const void *keys_in, void *keys_out,
                           sort_key kind, const void *vals_in, void *vals_out, size_t val_bytes,
                           int num_items, int num_segments, const void *begin, const void *end,
                           size_t offset_bytes, bool descending, cudaStream_t st);

template <typename K>
constexpr sort_key
sort_key_of(void)
{
	static_assert(std::is_same<K, float>::value || std::is_same<K, int32_t>::value ||
	                      std::is_same<K, uint32_t>::value,
	              "the simulated CUB sorts float, int32 and uint32 keys");
	return std::is_same<K, float>::value     ? SORT_F32
	       : std::is_same<K, int32_t>::value ? SORT_I32
	                                         : SORT_U32;
}
} // namespace cusim

namespace cub
{

struct DeviceSegmentedSort {
	template <typename K, typename V, typename BeginIt, typename EndIt>
	static cudaError_t StableSortPairsDescending(void *d_temp_storage,
	                                             size_t &temp_storage_bytes, const K *d_keys_in,
	                                             K *d_keys_out, const V *d_values_in,
	                                             V *d_values_out, int num_items,
	                                             int num_segments, BeginIt d_begin_offsets,
	                                             EndIt d_end_offsets, cudaStream_t stream = 0)
	{
		static_assert(std::is_pointer<BeginIt>::value && std::is_pointer<EndIt>::value,
		              "segment offsets as device pointers");
		return cusim::segmented_sort(
		        d_temp_storage, &temp_storage_bytes, d_keys_in, d_keys_out,
		        cusim::sort_key_of<K>(), d_values_in, d_values_out, sizeof(V), num_items,
		        num_segments, (const void *)d_begin_offsets, (const void *)d_end_offsets,
		        sizeof(*d_begin_offsets), true, stream);
	}

	template <typename K, typename V, typename BeginIt, typename EndIt>
	static cudaError_t StableSortPairs(void *d_temp_storage, size_t &temp_storage_bytes,
	                                   const K *d_keys_in, K *d_keys_out, const V *d_values_in,
	                                   V *d_values_out, int num_items, int num_segments,
	                                   BeginIt d_begin_offsets, EndIt d_end_offsets,
	                                   cudaStream_t stream = 0)
	{
		static_assert(std::is_pointer<BeginIt>::value && std::is_pointer<EndIt>::value,
		              "segment offsets as device pointers");
		return cusim::segmented_sort(
		        d_temp_storage, &temp_storage_bytes, d_keys_in, d_keys_out,
		        cusim::sort_key_of<K>(), d_values_in, d_values_out, sizeof(V), num_items,
		        num_segments, (const void *)d_begin_offsets, (const void *)d_end_offsets,
		        sizeof(*d_begin_offsets), false, stream);
	}
};

} // namespace cub
