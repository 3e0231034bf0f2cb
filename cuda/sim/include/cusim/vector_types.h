#pragma once
/*
 * vector_types.h (simulated device) - CUDA's built-in vector types with
 * their device alignments (a float4 is 16-byte aligned, so a misaligned
 * 16-byte load is as visible here as on a GPU), dim3, and the make_*
 * functions. C and C++.
 */

#define CUSIM_VEC2(T, N, A)                    \
	struct __attribute__((aligned(A))) N { \
		T x, y;                        \
	};                                     \
	typedef struct N N
#define CUSIM_VEC3(T, N)   \
	struct N {         \
		T x, y, z; \
	};                 \
	typedef struct N N
#define CUSIM_VEC4(T, N, A)                    \
	struct __attribute__((aligned(A))) N { \
		T x, y, z, w;                  \
	};                                     \
	typedef struct N N

CUSIM_VEC2(signed char, char2, 2);
CUSIM_VEC4(signed char, char4, 4);
CUSIM_VEC2(unsigned char, uchar2, 2);
CUSIM_VEC4(unsigned char, uchar4, 4);
CUSIM_VEC2(short, short2, 4);
CUSIM_VEC4(short, short4, 8);
CUSIM_VEC2(unsigned short, ushort2, 4);
CUSIM_VEC4(unsigned short, ushort4, 8);
CUSIM_VEC2(int, int2, 8);
CUSIM_VEC3(int, int3);
CUSIM_VEC4(int, int4, 16);
CUSIM_VEC2(unsigned int, uint2, 8);
CUSIM_VEC3(unsigned int, uint3);
CUSIM_VEC4(unsigned int, uint4, 16);
CUSIM_VEC2(long long, longlong2, 16);
CUSIM_VEC2(unsigned long long, ulonglong2, 16);
CUSIM_VEC2(float, float2, 8);
CUSIM_VEC3(float, float3);
CUSIM_VEC4(float, float4, 16);
CUSIM_VEC2(double, double2, 16);

#undef CUSIM_VEC2
#undef CUSIM_VEC3
#undef CUSIM_VEC4

struct dim3 {
	unsigned int x, y, z;
#ifdef __cplusplus
	constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
	    : x(vx), y(vy), z(vz)
	{
	}
	constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z)
	{
	}
	constexpr operator uint3() const
	{
		return uint3{x, y, z};
	}
#endif
};
typedef struct dim3 dim3;

#ifdef __cplusplus
static inline constexpr int2
make_int2(int x, int y)
{
	return int2{x, y};
}
static inline constexpr int4
make_int4(int x, int y, int z, int w)
{
	return int4{x, y, z, w};
}
static inline constexpr uint2
make_uint2(unsigned x, unsigned y)
{
	return uint2{x, y};
}
static inline constexpr uint3
make_uint3(unsigned x, unsigned y, unsigned z)
{
	return uint3{x, y, z};
}
static inline constexpr uint4
make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
	return uint4{x, y, z, w};
}
static inline constexpr float2
make_float2(float x, float y)
{
	return float2{x, y};
}
static inline constexpr float4
make_float4(float x, float y, float z, float w)
{
	return float4{x, y, z, w};
}
#endif
