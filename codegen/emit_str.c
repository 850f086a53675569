/*
 * emit_str.c - the one way text enters generated C and CUDA: as a string
 * literal (emit_cstr) or inside a comment (emit_comment).
 *
 * Pipeline position: called by the emitters (emit_c.c, emit_cuda.c) for
 * every name, label, rail list and file path they write.  The front end
 * already limits what a cluster's strings may hold (lang/cluster.c), but
 * what is written here is C whatever it is given: a generated library is
 * a trust boundary, so no byte of a .coll file or a command line can end
 * a literal, close a comment or start a preprocessor line.
 *
 * Escapes: \" \\ \n \t \r by name, every other byte outside printable
 * ASCII as three octal digits (never hex, which would swallow a following
 * hex digit; three octal digits end the escape whatever follows), and a
 * '?' after a '?' as \? so that no trigraph (??/ is a backslash under
 * -std=c11) forms.  In a comment the same spelling, and also "*\/" and
 * "/\*" so that the text neither closes the comment nor opens a nested one
 * (-Wcomment), and a final backslash as \134 so that it cannot splice the
 * line after it into the comment; with every newline escaped no line of
 * it starts with '#'.
 */
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "xalloc.h"

/* s escaped into out (room for 4 * strlen(s) + 3); comment: for the
 * inside of a comment, no quotes. */
static void escape(char *out, const char *s, bool comment)
{
	char *o = out;
	if (!comment)
		*o++ = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned c = *p;
		const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\\' ? "\\\\"
				  : c == '"' && !comment ? "\\\"" : NULL;
		if (comment && c == '\\' && !p[1])
			o += sprintf(o, "\\134");   /* a final "\\" then a line break would splice lines */
		else if (named)
			o += sprintf(o, "%s", named);
		else if (c < 0x20 || c >= 0x7f)
			o += sprintf(o, "\\%03o", c);
		else if (c == '?' && p > (const unsigned char *)s && p[-1] == '?')
			o += sprintf(o, "\\?");
		else if (comment && ((c == '/' && p[1] == '*') || (c == '*' && p[1] == '/')))
			o += sprintf(o, "%c\\", c);   /* the pair split: "*\/", "/\*" */
		else
			*o++ = (char)c;
	}
	if (!comment)
		*o++ = '"';
	*o = '\0';
}

char *emit_cstr(const char *s)
{
	char *out = xmalloc(4 * strlen(s) + 3);
	escape(out, s, false);
	return out;
}

char *emit_comment(const char *s)
{
	char *out = xmalloc(4 * strlen(s) + 3);
	escape(out, s, true);
	return out;
}

bool emit_is_ident(const char *s)
{
	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}
