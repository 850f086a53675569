/*
 * driver.c - the straight-line compiler driver (see driver.h):
 * load (lex + parse, following imports) -> resolve -> eval -> verify.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "driver.h"
#include "eval.h"
#include "verify.h"

long long drv_max_steps = 200000000LL;
static char stdlib_dir[PATH_MAX];

/* The standard library: $COLL_STDLIB, else where an installed collc has it
 * (PREFIX/bin/collc -> PREFIX/share/coll/stdlib), else the source tree's
 * (build/collc -> stdlib/).  Relative to the binary, not to a configured
 * prefix, so a tree installed with DESTDIR or moved elsewhere still works. */
void drv_init_stdlib(const char *argv0)
{
	const char *env = getenv("COLL_STDLIB");
	if (env && *env) {
		snprintf(stdlib_dir, sizeof stdlib_dir, "%s", env);
		return;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		snprintf(exe, sizeof exe, "%s", argv0);
	else
		exe[n] = '\0';
	stdlib_dir[0] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	static const char *const beside[] = { "../share/coll/stdlib", "../stdlib" };
	for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
		char guess[PATH_MAX + 32];
		snprintf(guess, sizeof guess, "%s/%s", exe, beside[i]);
		if (realpath(guess, stdlib_dir))
			return;
	}
	stdlib_dir[0] = '\0';
}

/* Where a relative `import "name"` that is not beside the importing file
 * is found: each directory of $COLL_PATH (colon-separated) in order, then
 * the standard library.  out := the first existing path; false when none. */
static bool find_import(const char *name, char *out, size_t len)
{
	const char *path = getenv("COLL_PATH");
	while (path && *path) {
		size_t k = strcspn(path, ":");
		if (k > 0) {
			snprintf(out, len, "%.*s/%s", (int)k, path, name);
			if (access(out, F_OK) == 0)
				return true;
		}
		path += k + (path[k] == ':');
	}
	if (stdlib_dir[0]) {
		snprintf(out, len, "%s/%s", stdlib_dir, name);
		if (access(out, F_OK) == 0)
			return true;
	}
	return false;
}

struct drv_prog {
	ast_prog ast;
	char **real;          /* realpath of each loaded file, for import dedup */
	bool *named;          /* file was named by the caller, not imported */
	bool quiet;
	bool unsupported;
	bool limit;           /* the last drv_run stopped at the step limit or the memory budget */
	char why[256];
};

/* Load and parse one file unless it is already loaded; returns errors. */
static int load_one(drv_prog *p, const char *path, srcpos from)
{
	char *real = realpath(path, NULL);
	if (!real) {
		if (from.file)
			diag_error(from, "cannot import '%s': %s", path, strerror(errno));
		else
			diag_file_error(path, "cannot open: %s", strerror(errno));
		return 1;
	}
	for (int i = 0; i < p->ast.nfiles; i++)
		if (strcmp(p->real[i], real) == 0) {
			p->named[i] |= from.file == NULL;
			free(real);
			return 0;
		}
	src_file *f = diag_load_from(path, from);
	if (!f) {
		free(real);
		return 1;
	}
	p->ast.files = realloc(p->ast.files, (p->ast.nfiles + 1) * sizeof *p->ast.files);
	p->real = realloc(p->real, (p->ast.nfiles + 1) * sizeof *p->real);
	p->named = realloc(p->named, (p->ast.nfiles + 1) * sizeof *p->named);
	p->named[p->ast.nfiles] = from.file == NULL;
	p->ast.files[p->ast.nfiles] = f;
	p->real[p->ast.nfiles] = real;
	p->ast.nfiles++;
	int first = p->ast.decls.n;
	int errs = parse_file(&p->ast, f);
	/* imports are relative to the importing file, then $COLL_PATH, then the stdlib */
	for (int i = first; i < p->ast.decls.n; i++) {
		ast *d = p->ast.decls.v[i];
		if (d->kind != A_IMPORT)
			continue;
		/* a line break or an escape sequence in a path would break the
		 * message about it (and no file worth importing is named so) */
		const unsigned char *cc = (const unsigned char *)d->str;
		while (*cc >= 0x20 && *cc != 0x7f)
			cc++;
		if (*cc) {
			diag_error(d->pos, "cannot import a path holding a control character (byte 0x%02x at byte %d)", *cc,
				   (int)(cc - (const unsigned char *)d->str) + 1);
			errs++;
			continue;
		}
		char buf[PATH_MAX];
		const char *slash = strrchr(f->name, '/');
		if (d->str[0] == '/' || !slash)
			snprintf(buf, sizeof buf, "%s", d->str);
		else
			snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - f->name), f->name, d->str);
		char lib[PATH_MAX * 2];
		if (access(buf, F_OK) != 0 && d->str[0] != '/' && find_import(d->str, lib, sizeof lib))
			errs += load_one(p, lib, d->pos);   /* $COLL_PATH or the standard library */
		else
			errs += load_one(p, buf, d->pos);
	}
	return errs;
}

drv_prog *drv_load(int nfiles, char *const *paths)
{
	drv_prog *p = calloc(1, sizeof *p);
	p->ast.arena = arena_new();
	int errs = 0;
	for (int i = 0; i < nfiles; i++)
		errs += load_one(p, paths[i], (srcpos){ 0 });
	if (!errs)
		errs = resolve_prog(&p->ast);
	if (errs) {
		drv_free(p);
		return NULL;
	}
	return p;
}

void drv_free(drv_prog *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->ast.nfiles; i++) {
		diag_free_file(p->ast.files[i]);
		free(p->real[i]);
	}
	free(p->ast.files);
	free(p->real);
	free(p->named);
	arena_free(p->ast.arena);
	free(p);
}

static ast *algo_at(const drv_prog *p, int i)
{
	int k = 0;
	for (int j = 0; j < p->ast.decls.n; j++)
		if (p->ast.decls.v[j]->kind == A_ALGO && k++ == i)
			return p->ast.decls.v[j];
	return NULL;
}

int drv_nalgos(const drv_prog *p)
{
	int k = 0;
	for (int j = 0; j < p->ast.decls.n; j++)
		k += p->ast.decls.v[j]->kind == A_ALGO;
	return k;
}

const char *drv_algo_name(const drv_prog *p, int i) { return algo_at(p, i)->str; }
srcpos drv_algo_pos(const drv_prog *p, int i) { return algo_at(p, i)->pos; }
ir_kind drv_algo_kind(const drv_prog *p, int i) { return (ir_kind)algo_at(p, i)->kindof; }

int drv_find_algo(const drv_prog *p, const char *name)
{
	for (int i = 0, n = drv_nalgos(p); i < n; i++)
		if (strcmp(algo_at(p, i)->str, name) == 0)
			return i;
	return -1;
}

int drv_algo_params(const drv_prog *p, int i, const char **names, int max)
{
	ast *a = algo_at(p, i);
	int k = 0;
	for (int j = 0; j < a->b->list.n; j++)
		if (a->b->list.v[j]->kind == A_PARAM && k < max)
			names[k++] = a->b->list.v[j]->str;
	if (k < max && ir_kind_info((ir_kind)a->kindof)->rooted)
		names[k++] = "root";
	return k;
}

bool drv_algo_named(const drv_prog *p, int i)
{
	const src_file *f = algo_at(p, i)->pos.file;
	for (int j = 0; j < p->ast.nfiles; j++)
		if (p->ast.files[j] == f)
			return p->named[j];
	return false;
}

const char *drv_main_file(const drv_prog *p)
{
	for (int j = 0; j < p->ast.nfiles; j++)
		if (p->named[j])
			return p->ast.files[j]->name;
	return diag_tool;
}

int drv_policy_list(const drv_prog *p, bool named_only, ast **out, int max)
{
	int k = 0;
	for (int j = 0; j < p->ast.decls.n; j++) {
		ast *d = p->ast.decls.v[j];
		if (d->kind != A_POLICY)
			continue;
		bool named = false;
		for (int f = 0; f < p->ast.nfiles; f++)
			if (p->ast.files[f] == d->pos.file)
				named = p->named[f];
		if (named || !named_only) {
			if (k < max)
				out[k] = d;
			k++;
		}
	}
	return k;
}

struct ast *drv_policy_ast(const drv_prog *p, const char *name)
{
	for (int j = 0; j < p->ast.decls.n; j++) {
		ast *d = p->ast.decls.v[j];
		if (d->kind == A_POLICY && (!name || strcmp(d->str, name) == 0))
			return d;
	}
	return NULL;
}

struct ast *drv_cluster_ast(const drv_prog *p, const char *name)
{
	for (int j = 0; j < p->ast.decls.n; j++) {
		ast *d = p->ast.decls.v[j];
		if (d->kind != A_CLUSTER)
			continue;
		if (name ? strcmp(d->str, name) == 0 : true)
			return d;
	}
	return NULL;
}

const char *drv_unknown_define(const drv_prog *p, const drv_define *defs, int ndefs)
{
	for (int d = 0; d < ndefs; d++) {
		bool found = false;
		for (int i = 0; i < drv_nalgos(p) && !found; i++) {
			const char *names[64];
			int k = drv_algo_params(p, i, names, 64);
			for (int j = 0; j < k; j++)
				found |= strcmp(names[j], defs[d].name) == 0;
		}
		if (!found)
			return defs[d].name;
	}
	return NULL;
}

void drv_set_quiet_require(drv_prog *p, bool quiet) { p->quiet = quiet; }

bool drv_hit_limit(const drv_prog *p) { return p->limit; }

bool drv_unsupported(const drv_prog *p, const char **why)
{
	if (why)
		*why = p->why;
	return p->unsupported;
}

ir_sched *drv_run(drv_prog *p, const char *algo, int n, const drv_define *defs, int ndefs, bool verify)
{
	p->unsupported = false;
	p->limit = false;
	p->why[0] = '\0';
	int i = drv_find_algo(p, algo);
	if (i < 0) {
		char have[1024] = "";
		size_t at = 0;
		for (int j = 0, k = drv_nalgos(p); j < k && at < sizeof have; j++)
			at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", j ? ", " : " (have: ", drv_algo_name(p, j));
		diag_tool_error("no algorithm named '%s'%s%s", algo, have, drv_nalgos(p) ? ")" : "");
		return NULL;
	}
	if (n < 1 || n > 65536) {
		diag_tool_error("rank count %d out of range 1..65536", n);
		return NULL;
	}
	eval_opts o = { .max_steps = drv_max_steps, .quiet_require = p->quiet };
	ir_sched *s = eval_algorithm(&p->ast, algo_at(p, i), n, defs, ndefs, &o);
	if (!s) {
		p->unsupported = o.unsupported;
		p->limit = o.limit;
		snprintf(p->why, sizeof p->why, "%s", o.why);
		return NULL;
	}
	if (verify && verify_sched(s) != 0) {
		ir_free(s);
		return NULL;
	}
	return s;
}

int drv_parse_define(const char *arg, drv_define *d)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg) {
		diag_tool_error("-D expects name=value, found '%s'", arg);
		return -1;
	}
	char *end;
	errno = 0;
	long long v = strtoll(eq + 1, &end, 0);
	if (errno || end == eq + 1 || *end) {
		diag_tool_error("-D %.*s: value '%s' is not an integer", (int)(eq - arg), arg, eq + 1);
		return -1;
	}
	d->name = strndup(arg, eq - arg);
	d->value = v;
	return 0;
}
