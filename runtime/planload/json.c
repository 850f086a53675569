/*
 * json.c - a recursive-descent JSON parser (RFC 8259) for planload.c,
 * which collbench and the PMPI library read collc's JSON through.
 *
 * Strict on syntax, with a depth limit; strings are decoded (escapes,
 * \uXXXX including surrogate pairs, to UTF-8).  Errors name the line and
 * what was expected there.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

typedef struct {
	const char *p, *end, *start;
	char *err;
	size_t errlen;
	int depth, failed;
} parser;

static void fail(parser *ps, const char *fmt, ...)
{
	if (ps->failed++)
		return;
	int line = 1;
	for (const char *q = ps->start; q < ps->p && q < ps->end; q++)
		line += *q == '\n';
	int o = snprintf(ps->err, ps->errlen, "line %d: ", line);
	va_list ap;
	va_start(ap, fmt);
	if (o >= 0 && (size_t)o < ps->errlen)
		vsnprintf(ps->err + o, ps->errlen - (size_t)o, fmt, ap);
	va_end(ap);
}

static void skip_ws(parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static json *new_value(parser *ps, json_kind k)
{
	json *v = calloc(1, sizeof *v);
	if (!v)
		fail(ps, "out of memory");
	else
		v->kind = k;
	return v;
}

void json_free(json *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->len; i++) {
		json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static int hex4(parser *ps, unsigned *out)
{
	unsigned x = 0;
	for (int i = 0; i < 4; i++) {
		char c = ps->p < ps->end ? *ps->p++ : 0;
		x <<= 4;
		if (c >= '0' && c <= '9')
			x |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			x |= (unsigned)(c - 'A' + 10);
		else
			return fail(ps, "expected 4 hex digits after \\u"), -1;
	}
	*out = x;
	return 0;
}

static char *parse_string(parser *ps)
{
	ps->p++;   /* opening quote */
	size_t cap = 16, n = 0;
	char *s = malloc(cap);
	while (s) {
		if (ps->p >= ps->end) {
			fail(ps, "unterminated string");
			break;
		}
		unsigned c = (unsigned char)*ps->p++;
		if (c == '"') {
			s[n] = 0;
			return s;
		}
		if (c < 0x20) {
			fail(ps, "control character in string");
			break;
		}
		if (n + 5 >= cap) {
			char *t = realloc(s, cap *= 2);
			if (!t)
				break;
			s = t;
		}
		if (c != '\\') {
			s[n++] = (char)c;
			continue;
		}
		char e = ps->p < ps->end ? *ps->p++ : 0;
		switch (e) {
		case '"': case '\\': case '/': s[n++] = e; break;
		case 'b': s[n++] = '\b'; break;
		case 'f': s[n++] = '\f'; break;
		case 'n': s[n++] = '\n'; break;
		case 'r': s[n++] = '\r'; break;
		case 't': s[n++] = '\t'; break;
		case 'u': {
			unsigned u, lo;
			if (hex4(ps, &u))
				goto bad;
			if (u >= 0xd800 && u < 0xdc00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
				ps->p += 2;
				if (hex4(ps, &lo))
					goto bad;
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (u < 0x80) {
				s[n++] = (char)u;
			} else if (u < 0x800) {
				s[n++] = (char)(0xc0 | (u >> 6));
				s[n++] = (char)(0x80 | (u & 63));
			} else if (u < 0x10000) {
				s[n++] = (char)(0xe0 | (u >> 12));
				s[n++] = (char)(0x80 | ((u >> 6) & 63));
				s[n++] = (char)(0x80 | (u & 63));
			} else {
				s[n++] = (char)(0xf0 | (u >> 18));
				s[n++] = (char)(0x80 | ((u >> 12) & 63));
				s[n++] = (char)(0x80 | ((u >> 6) & 63));
				s[n++] = (char)(0x80 | (u & 63));
			}
			break;
		}
		default: fail(ps, "bad escape '\\%c' in string", e ? e : '0'); goto bad;
		}
	}
bad:
	if (!s)
		fail(ps, "out of memory");
	free(s);
	return NULL;
}

static json *parse_value(parser *ps);

static int push(parser *ps, json *v, char *key, json *item)
{
	json **it = realloc(v->items, (v->len + 1) * sizeof *it);
	if (it)
		v->items = it;
	if (it && key) {
		char **k = realloc(v->keys, (v->len + 1) * sizeof *k);
		if (k)
			v->keys = k;
		else
			it = NULL;
	}
	if (!it) {
		fail(ps, "out of memory");
		return -1;
	}
	if (key)
		v->keys[v->len] = key;
	v->items[v->len++] = item;
	return 0;
}

static json *parse_container(parser *ps, int object)
{
	json *v = new_value(ps, object ? JSON_OBJECT : JSON_ARRAY);
	char close = object ? '}' : ']';
	if (!v)
		return NULL;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		skip_ws(ps);
		if (object) {
			if (ps->p >= ps->end || *ps->p != '"') {
				fail(ps, "expected a string key in object");
				break;
			}
			if (!(key = parse_string(ps)))
				break;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				fail(ps, "expected ':' after key \"%s\"", key);
				free(key);
				break;
			}
			ps->p++;
		}
		json *item = parse_value(ps);
		if (!item || push(ps, v, key, item)) {
			free(key);
			json_free(item);
			break;
		}
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return v;
		}
		fail(ps, "expected ',' or '%c' in %s", close, object ? "object" : "array");
		break;
	}
	json_free(v);
	return NULL;
}

static json *parse_number(parser *ps)
{
	const char *q = ps->p;
	if (q < ps->end && *q == '-')
		q++;
	if (q >= ps->end || *q < '0' || *q > '9') {
		fail(ps, "expected a value");
		return NULL;
	}
	while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
	                       *q == '-'))
		q++;
	char buf[64];
	size_t n = (size_t)(q - ps->p);
	if (n >= sizeof buf) {
		fail(ps, "number too long");
		return NULL;
	}
	memcpy(buf, ps->p, n);
	buf[n] = 0;
	char *e;
	double d = strtod(buf, &e);
	if (*e) {
		fail(ps, "bad number '%s'", buf);
		return NULL;
	}
	ps->p = q;
	json *v = new_value(ps, JSON_NUMBER);
	if (v)
		v->num = d;
	return v;
}

static int word(parser *ps, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
		ps->p += n;
		return 1;
	}
	return 0;
}

static json *parse_value(parser *ps)
{
	skip_ws(ps);
	if (ps->p >= ps->end) {
		fail(ps, "unexpected end of input");
		return NULL;
	}
	if (++ps->depth > 64) {
		fail(ps, "nested too deeply");
		return NULL;
	}
	json *v = NULL;
	switch (*ps->p) {
	case '{': v = parse_container(ps, 1); break;
	case '[': v = parse_container(ps, 0); break;
	case '"': {
		char *s = parse_string(ps);
		if (s && (v = new_value(ps, JSON_STRING)))
			v->str = s;
		else
			free(s);
		break;
	}
	default:
		if (word(ps, "true") || word(ps, "false")) {
			if ((v = new_value(ps, JSON_BOOL)))
				v->num = ps->p[-1] == 'e' && ps->p[-2] == 'u';
		} else if (word(ps, "null")) {
			v = new_value(ps, JSON_NULL);
		} else {
			v = parse_number(ps);
		}
	}
	ps->depth--;
	return v;
}

json *json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	parser ps = {text, text + len, text, err, errlen, 0, 0};
	json *v = parse_value(&ps);
	skip_ws(&ps);
	if (v && ps.p < ps.end) {
		fail(&ps, "unexpected text after the document");
		json_free(v);
		v = NULL;
	}
	return v;
}

const json *json_get(const json *v, const char *key)
{
	if (!v || v->kind != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < v->len; i++)
		if (strcmp(v->keys[i], key) == 0)
			return v->items[i];
	return NULL;
}
