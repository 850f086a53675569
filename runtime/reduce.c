/*
 * reduce.c - element-wise reduction kernels for every dtype and op.
 *
 * The executor calls these when a received segment is folded into a chunk
 * (rt_reduce2: in place) or when the chunk's current value still lives in
 * the caller's send buffer (rt_reduce3: out of place, which saves the
 * initial copy of an out-of-place collective).  Loops are simple and use
 * restrict so that GCC vectorises them at -O2.  Integer sums and products
 * wrap modulo 2^bits (computed in unsigned arithmetic: no signed overflow);
 * fp16 and bf16 are widened to float, combined, and rounded to nearest even;
 * float min/max return the second operand when either is NaN-free equal or
 * unordered (like `a < b ? a : b`).
 *
 * The _nt variants write their destination with non-temporal stores
 * (x86-64's movntdq, in SSE2, which every x86-64 has; elsewhere they are
 * the plain ones).  The executor uses them for large results that nothing
 * reads again during the call: a plain store first reads the line it
 * writes (read for ownership) and then evicts something else to make room,
 * which for a 64 MiB receive buffer is 64 MiB of memory traffic and cache
 * for nothing.  On the 2-core development VM a copy of 64 MiB from a
 * cache-resident 256 KiB slot into a cold buffer took 3.5-3.9 ms against
 * 5.8-7.2 ms with memcpy.  A smaller result may still be in cache when
 * the caller reads it, so exec.c asks only in calls of at least
 * comm->nt_bytes (COLL_NT_BYTES, 16 MiB).
 */
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define RT_HAVE_NT 1
#endif

#include "rt.h"

/* --- fp16 / bf16 conversions (round to nearest even) ---------------------- */

float rt_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | (man << 13);      /* inf / nan */
	} else if (exp != 0) {
		bits = sign | ((exp + 112) << 23) | (man << 13);
	} else if (man == 0) {
		bits = sign;
	} else {                                           /* subnormal: normalise */
		int e = -1;
		do { man <<= 1; e++; } while (!(man & 0x400));
		bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t rt_float_to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u)                             /* inf or nan */
		return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
	if (ax >= 0x477ff000u)                             /* rounds to >= 65520: inf */
		return (uint16_t)(sign | 0x7c00);
	if (ax < 0x38800000u) {                            /* result is subnormal or zero */
		if (ax < 0x33000000u)                          /* < 2^-25: rounds to 0 */
			return (uint16_t)sign;
		uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
		uint32_t shift = 126 - e;                      /* 14 .. 24 */
		uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	uint32_t r = ax - 0x38000000u;                     /* rebias exponent 127 -> 15 */
	r += 0xfff + ((r >> 13) & 1);                      /* round to nearest even */
	return (uint16_t)(sign | (r >> 13));
}

float rt_bf16_to_float(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

uint16_t rt_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)              /* nan: keep it quiet */
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

/* --- kernels -------------------------------------------------------------- */

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAX(a, b) ((b) > (a) ? (b) : (a))

/* Integers: sum/prod in the unsigned type U, min/max in the type T. */
#define INT_KERNELS(name, T, U)                                                              \
	static void name##_2(void *d_, const void *s_, size_t n, coll_op op)                     \
	{                                                                                        \
		T *restrict d = d_;                                                                  \
		const T *restrict s = s_;                                                            \
		switch (op) {                                                                        \
		case COLL_SUM: for (size_t i = 0; i < n; i++) d[i] = (T)(U)((U)d[i] + (U)s[i]); break; \
		case COLL_PROD: for (size_t i = 0; i < n; i++) d[i] = (T)(U)((U)d[i] * (U)s[i]); break; \
		case COLL_MIN: for (size_t i = 0; i < n; i++) d[i] = OP_MIN(d[i], s[i]); break;     \
		default: for (size_t i = 0; i < n; i++) d[i] = OP_MAX(d[i], s[i]); break;           \
		}                                                                                    \
	}                                                                                        \
	static void name##_3(void *d_, const void *a_, const void *b_, size_t n, coll_op op)     \
	{                                                                                        \
		T *restrict d = d_;                                                                  \
		const T *restrict a = a_, *restrict b = b_;                                          \
		switch (op) {                                                                        \
		case COLL_SUM: for (size_t i = 0; i < n; i++) d[i] = (T)(U)((U)a[i] + (U)b[i]); break; \
		case COLL_PROD: for (size_t i = 0; i < n; i++) d[i] = (T)(U)((U)a[i] * (U)b[i]); break; \
		case COLL_MIN: for (size_t i = 0; i < n; i++) d[i] = OP_MIN(a[i], b[i]); break;     \
		default: for (size_t i = 0; i < n; i++) d[i] = OP_MAX(a[i], b[i]); break;           \
		}                                                                                    \
	}

/* The kernels' element types carry no alignment: coll.h asks nothing of a
 * buffer's address (an MPI program may reduce inside a packed buffer), so
 * an element may sit anywhere, which with the natural types would be
 * undefined (and UBSan says so).  x86-64's unaligned vector loads and
 * stores cost what aligned ones do on aligned data, and GCC vectorises
 * these loops the same (the same packed instructions in reduce.o). */
typedef int32_t __attribute__((aligned(1))) i32_u;
typedef uint32_t __attribute__((aligned(1))) u32_u;
typedef int64_t __attribute__((aligned(1))) i64_u;
typedef uint64_t __attribute__((aligned(1))) u64_u;
typedef float __attribute__((aligned(1))) f32_u;
typedef double __attribute__((aligned(1))) f64_u;

/* uint8/int8 products promote to int; (U) casts keep them modular. */
INT_KERNELS(k_i8, int8_t, uint32_t)
INT_KERNELS(k_u8, uint8_t, uint32_t)
INT_KERNELS(k_i32, i32_u, uint32_t)
INT_KERNELS(k_u32, u32_u, uint32_t)
INT_KERNELS(k_i64, i64_u, uint64_t)
INT_KERNELS(k_u64, u64_u, uint64_t)

#define FLOAT_KERNELS(name, T)                                                               \
	static void name##_2(void *d_, const void *s_, size_t n, coll_op op)                     \
	{                                                                                        \
		T *restrict d = d_;                                                                  \
		const T *restrict s = s_;                                                            \
		switch (op) {                                                                        \
		case COLL_SUM: for (size_t i = 0; i < n; i++) d[i] = d[i] + s[i]; break;             \
		case COLL_PROD: for (size_t i = 0; i < n; i++) d[i] = d[i] * s[i]; break;            \
		case COLL_MIN: for (size_t i = 0; i < n; i++) d[i] = OP_MIN(d[i], s[i]); break;     \
		default: for (size_t i = 0; i < n; i++) d[i] = OP_MAX(d[i], s[i]); break;           \
		}                                                                                    \
	}                                                                                        \
	static void name##_3(void *d_, const void *a_, const void *b_, size_t n, coll_op op)     \
	{                                                                                        \
		T *restrict d = d_;                                                                  \
		const T *restrict a = a_, *restrict b = b_;                                          \
		switch (op) {                                                                        \
		case COLL_SUM: for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i]; break;             \
		case COLL_PROD: for (size_t i = 0; i < n; i++) d[i] = a[i] * b[i]; break;            \
		case COLL_MIN: for (size_t i = 0; i < n; i++) d[i] = OP_MIN(a[i], b[i]); break;     \
		default: for (size_t i = 0; i < n; i++) d[i] = OP_MAX(a[i], b[i]); break;           \
		}                                                                                    \
	}

FLOAT_KERNELS(k_f32, f32_u)
FLOAT_KERNELS(k_f64, f64_u)

/* Half types: widen each element to float, combine, narrow. */
static float combine_f(float a, float b, coll_op op)
{
	switch (op) {
	case COLL_SUM: return a + b;
	case COLL_PROD: return a * b;
	case COLL_MIN: return OP_MIN(a, b);
	default: return OP_MAX(a, b);
	}
}

static void half3(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n, coll_op op, int bf)
{
	for (size_t i = 0; i < n; i++) {
		float x = bf ? rt_bf16_to_float(a[i]) : rt_half_to_float(a[i]);
		float y = bf ? rt_bf16_to_float(b[i]) : rt_half_to_float(b[i]);
		float r = combine_f(x, y, op);
		d[i] = bf ? rt_float_to_bf16(r) : rt_float_to_half(r);
	}
}

void rt_reduce2(void *dst, const void *src, size_t n, coll_dtype dt, coll_op op)
{
	switch (dt) {
	case COLL_INT8: k_i8_2(dst, src, n, op); break;
	case COLL_UINT8: k_u8_2(dst, src, n, op); break;
	case COLL_INT32: k_i32_2(dst, src, n, op); break;
	case COLL_UINT32: k_u32_2(dst, src, n, op); break;
	case COLL_INT64: k_i64_2(dst, src, n, op); break;
	case COLL_UINT64: k_u64_2(dst, src, n, op); break;
	case COLL_FLOAT32: k_f32_2(dst, src, n, op); break;
	case COLL_FLOAT64: k_f64_2(dst, src, n, op); break;
	case COLL_FLOAT16: half3(dst, dst, src, n, op, 0); break;
	case COLL_BFLOAT16: half3(dst, dst, src, n, op, 1); break;
	default: break;
	}
}

void rt_reduce3(void *dst, const void *a, const void *b, size_t n, coll_dtype dt, coll_op op)
{
	switch (dt) {
	case COLL_INT8: k_i8_3(dst, a, b, n, op); break;
	case COLL_UINT8: k_u8_3(dst, a, b, n, op); break;
	case COLL_INT32: k_i32_3(dst, a, b, n, op); break;
	case COLL_UINT32: k_u32_3(dst, a, b, n, op); break;
	case COLL_INT64: k_i64_3(dst, a, b, n, op); break;
	case COLL_UINT64: k_u64_3(dst, a, b, n, op); break;
	case COLL_FLOAT32: k_f32_3(dst, a, b, n, op); break;
	case COLL_FLOAT64: k_f64_3(dst, a, b, n, op); break;
	case COLL_FLOAT16: half3(dst, a, b, n, op, 0); break;
	case COLL_BFLOAT16: half3(dst, a, b, n, op, 1); break;
	default: break;
	}
}

/* --- non-temporal writes -------------------------------------------------- */

#ifdef RT_HAVE_NT
/* The copy without the closing fence. */
static void stream_copy(char *d, const char *s, size_t len)
{
	size_t head = (16 - ((uintptr_t)d & 15)) & 15;
	if (len < 256) {
		memcpy(d, s, len);
		return;
	}
	memcpy(d, s, head);
	d += head, s += head, len -= head;
	for (; len >= 64; d += 64, s += 64, len -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_stream_si128((__m128i *)d, a);
		_mm_stream_si128((__m128i *)(d + 16), b);
		_mm_stream_si128((__m128i *)(d + 32), c);
		_mm_stream_si128((__m128i *)(d + 48), e);
	}
	memcpy(d, s, len);
}
#endif

/* Streaming stores are weakly ordered: both writers end with a fence, so
 * the data is visible before anything that says it is there (the call's
 * return, another thread of the caller). */
void rt_copy_nt(void *dst, const void *src, size_t len)
{
#ifdef RT_HAVE_NT
	stream_copy(dst, src, len);
	_mm_sfence();
#else
	memcpy(dst, src, len);
#endif
}

/* Through a cache-resident block: one kernel per dtype and op serves both,
 * and the block costs little next to the read for ownership it saves. */
void rt_reduce3_nt(void *dst, const void *a, const void *b, size_t n, coll_dtype dt, coll_op op)
{
#ifdef RT_HAVE_NT
	_Alignas(64) char blk[8192];
	size_t esz = coll_dtype_size(dt), per = esz ? sizeof blk / esz : 0;
	if (!per)
		return;   /* not a dtype: like rt_reduce3, nothing to do */
	char *d = dst;
	const char *x = a, *y = b;
	for (size_t i = 0; i < n; i += per) {
		size_t m = n - i < per ? n - i : per;
		rt_reduce3(blk, x + i * esz, y + i * esz, m, dt, op);
		stream_copy(d + i * esz, blk, m * esz);
	}
	_mm_sfence();
#else
	rt_reduce3(dst, a, b, n, dt, op);
#endif
}
