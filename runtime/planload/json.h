/*
 * json.h - a small JSON reader for planload.c (collbench, the PMPI
 * library): parses a whole document into a tree of values (one heap
 * block per value), enough to read the schedule `collc show --format
 * json` prints (codegen/README.md, "The schedule as JSON").
 */
#ifndef COLL_PLANLOAD_JSON_H
#define COLL_PLANLOAD_JSON_H

#include <stddef.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json {
	json_kind kind;
	double num;              /* NUMBER; BOOL: 0 or 1 */
	char *str;               /* STRING: the decoded text (NUL-terminated) */
	struct json **items;     /* ARRAY elements, OBJECT values */
	char **keys;             /* OBJECT keys (same index as items) */
	size_t len;              /* number of items */
} json;

/* Parse text[0..len).  Returns the root, or NULL with a message ("line L:
 * what was expected") in err[0..errlen).  Free with json_free. */
json *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(json *v);
/* Member `key` of an object, or NULL (also when v is not an object). */
const json *json_get(const json *v, const char *key);

#endif
