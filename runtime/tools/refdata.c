/*
 * refdata.c - reference inputs and results for checking collectives (see
 * refdata.h): the values, fp16/bf16 encodings of our own, and the
 * reduction per residue in 64-bit integers and in double.
 */
#include <math.h>
#include <string.h>

#include "refdata.h"

int ref_is_float(coll_dtype dt) { return dt >= COLL_FLOAT16; }

int ref_is_signed(coll_dtype dt) { return dt == COLL_INT8 || dt == COLL_INT32 || dt == COLL_INT64; }

int ref_residue(int r, uint64_t i) { return (int)((i * REF_STEP + (uint64_t)r * 131) % REF_M); }

double ref_value(coll_dtype dt, coll_op op, int k)
{
	if (ref_is_float(dt)) {
		switch (op) {
		case COLL_SUM: return (k % 128) / 64.0 - 1.0;
		case COLL_PROD: return 0.5 + (k % 64) / 64.0;
		default: return (k % 256 - 128) / 4.0;
		}
	}
	int sgn = ref_is_signed(dt);
	switch (op) {
	case COLL_SUM: return sgn ? k % 251 - 125 : k % 251;
	case COLL_PROD: return (sgn && k % 7 == 0) ? -(k % 3 + 1) : k % 3 + 1;
	default: return sgn ? k % 201 - 100 : k % 201;
	}
}

static uint16_t enc_half(double v)
{
	if (v == 0)
		return signbit(v) ? 0x8000 : 0;
	uint16_t s = v < 0 ? 0x8000 : 0;
	v = fabs(v);
	int e;
	frexp(v, &e);                 /* v = f * 2^e, f in [0.5, 1) */
	e -= 1;                       /* v = 1.xxx * 2^e */
	if (e < -14)
		return (uint16_t)(s | (uint16_t)nearbyint(v / ldexp(1, -24)));
	double m = nearbyint(v / ldexp(1, e - 10));
	if (m >= 2048)
		m /= 2, e++;
	if (e > 15)
		return s | 0x7c00;
	return (uint16_t)(s | ((e + 15) << 10) | ((int)m - 1024));
}

static double dec_half(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
	if (e == 31)
		v = m ? NAN : INFINITY;
	return (h & 0x8000) ? -v : v;
}

static uint16_t enc_bf16(double v)
{
	float f = (float)v;   /* exact for our inputs */
	uint32_t x;
	memcpy(&x, &f, 4);
	return (uint16_t)(x >> 16);
}

static double dec_bf16(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

void ref_store(coll_dtype dt, void *buf, size_t i, double v)
{
	switch (dt) {
	case COLL_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
	case COLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
	case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
	case COLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
	case COLL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case COLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
	case COLL_FLOAT16: ((uint16_t *)buf)[i] = enc_half(v); break;
	case COLL_BFLOAT16: ((uint16_t *)buf)[i] = enc_bf16(v); break;
	case COLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
	default: ((double *)buf)[i] = v; break;
	}
}

uint64_t ref_load_int(coll_dtype dt, const void *buf, size_t i)
{
	switch (dt) {
	case COLL_INT8: return (uint64_t)(int64_t)((const int8_t *)buf)[i];
	case COLL_UINT8: return ((const uint8_t *)buf)[i];
	case COLL_INT32: return (uint64_t)(int64_t)((const int32_t *)buf)[i];
	case COLL_UINT32: return ((const uint32_t *)buf)[i];
	default: return ((const uint64_t *)buf)[i];
	}
}

double ref_load_float(coll_dtype dt, const void *buf, size_t i)
{
	switch (dt) {
	case COLL_FLOAT16: return dec_half(((const uint16_t *)buf)[i]);
	case COLL_BFLOAT16: return dec_bf16(((const uint16_t *)buf)[i]);
	case COLL_FLOAT32: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

double ref_load(coll_dtype dt, const void *buf, size_t i)
{
	return ref_is_float(dt) ? ref_load_float(dt, buf, i) : (double)(int64_t)ref_load_int(dt, buf, i);
}

uint64_t ref_wrap(coll_dtype dt, uint64_t v)
{
	switch (dt) {
	case COLL_INT8: return (uint64_t)(int64_t)(int8_t)v;
	case COLL_UINT8: return (uint8_t)v;
	case COLL_INT32: return (uint64_t)(int64_t)(int32_t)v;
	case COLL_UINT32: return (uint32_t)v;
	default: return v;
	}
}

double ref_unit_roundoff(coll_dtype dt)
{
	switch (dt) {
	case COLL_FLOAT16: return ldexp(1, -11);
	case COLL_BFLOAT16: return ldexp(1, -8);
	case COLL_FLOAT32: return ldexp(1, -24);
	default: return ldexp(1, -53);
	}
}

void ref_reduce(coll_dtype dt, coll_op op, int nranks, int j, uint64_t *iv, double *fv, double *mag)
{
	uint64_t acc = 0;
	double f = 0, m = 0;
	for (int r = 0; r < nranks; r++) {
		double v = ref_value(dt, op, ref_residue(r, (uint64_t)j));
		uint64_t x = (uint64_t)(int64_t)v;
		if (r == 0) {
			acc = x, f = v, m = fabs(v);
			continue;
		}
		m += fabs(v);
		switch (op) {
		case COLL_SUM: acc += x, f += v; break;
		case COLL_PROD: acc *= x, f *= v; break;
		case COLL_MIN: f = v < f ? v : f, acc = (int64_t)x < (int64_t)acc ? x : acc; break;
		default: f = v > f ? v : f, acc = (int64_t)x > (int64_t)acc ? x : acc; break;
		}
	}
	*iv = ref_wrap(dt, acc);
	*fv = f;
	*mag = op == COLL_PROD ? fabs(f) : m;
}
