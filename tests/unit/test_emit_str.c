/*
 * test_emit_str.c - the emitters' string writer (codegen/emit_str.c)
 * against a real C compiler, for tests/harden_gen.test.
 *
 * This program writes a C program to stdout: for every test string, the
 * string inside a comment (emit_comment) and as a literal (emit_cstr),
 * and beside it the same bytes spelt as numbers.  Compiled with -std=c11
 * (trigraphs on) and -Wall -Wextra -Werror and run, that program checks
 * every literal holds exactly its bytes and prints "ok N strings".  A
 * string that ended its literal or its comment early, formed a trigraph
 * or had an escape swallow the digit after it would fail to compile, warn,
 * or print "FAIL".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

static int n;

static void emit(const char *s)
{
	char *c = emit_comment(s), *q = emit_cstr(s);
	printf("/*\n * %d: %s\n */\nstatic const char s%d[] = %s;\nstatic const unsigned char w%d[] = {", n, c, n, q, n);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		printf("%s%u", p == (const unsigned char *)s ? " " : ", ", *p);
	printf("%s0 };\n// %s\n\n", *s ? ", " : " ", c);   /* a line comment: no line break of s may end it */
	free(c);
	free(q);
	n++;
}

int main(void)
{
	/* "?\?" in this file: under -std=c11 "??/" here would itself be a trigraph */
	static const char *const strs[] = {
		"", "plain", "quote\"", "\"", "back\\slash", "\\", "ends in a backslash\\", "new\nline",
		"\n#error from a string\n", "*/ int injected = 1; /*", "/* nested", "a*/b", "*/", "/*/",
		"?\?/", "?\?=define x", "?\?)?\?(?\?<?\?>?\?!?\?'?\?-", "?\?\?/", "?\?\?\?", "?", "?\"?", "tab\there\r\n",
		"lo\"};\nint/**/injected_by_rails=42;/*", "\x01" "7", "\x7f" "0", "\377" "9", "\303\251t\303\251",
		"x\\0", "\\x41", "%s%n", "line end \\\n# not a directive",
	};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		emit(strs[i]);
	/* every byte, each followed by every octal digit an escape could swallow */
	char all[256 * 2 + 1];
	size_t k = 0;
	for (int b = 1; b < 256; b++) {
		all[k++] = (char)b;
		all[k++] = (char)('0' + b % 10);
	}
	all[k] = '\0';
	emit(all);
	/* a long one */
	size_t big = 70000;
	char *l = malloc(big + 1);
	for (size_t i = 0; i < big; i++)
		l[i] = "?\"\\*/\n#"[i % 7];
	l[big] = '\0';
	emit(l);
	free(l);
	printf("#include <stdio.h>\n#include <string.h>\n\nint main(void)\n{\n\tint bad = 0;\n");
	for (int i = 0; i < n; i++)
		printf("\tif (sizeof s%d != sizeof w%d || memcmp(s%d, w%d, sizeof w%d) != 0) {\n"
		       "\t\tprintf(\"FAIL %d\\n\");\n\t\tbad++;\n\t}\n", i, i, i, i, i, i);
	printf("\tif (!bad)\n\t\tprintf(\"ok %d strings\\n\");\n\treturn bad != 0;\n}\n", n);
	return 0;
}
