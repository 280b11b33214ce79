/* SPDX-License-Identifier: MIT */
/*
 * cmd_version.c - `weft version`: weft's version and the libovni a program
 * would load: where it is and its version (read with dlopen, so that weft
 * does not link libovni). Also the probe behind `ovniver` (ovni_names.c).
 *
 * The search, in order: the directories of LD_LIBRARY_PATH; weft's own
 * library directory (PREFIX/lib next to PREFIX/bin/weft, where weft installs
 * its libovni); then the system's library search: ldconfig's cache
 * (`ldconfig -p`), then the default directories.
 *
 * Then what the dynamic loader does for a program linked with -lovni (and
 * no RUNPATH): dlopen("libovni.so.1") by its soname, from weft, which has no
 * RUNPATH of its own (the top-level CMakeLists.txt sees to that), and the
 * path the loader resolved, or its error and what to do about it (a libovni
 * in weft's library directory that the loader does not find: run ldconfig,
 * or LD_LIBRARY_PATH).
 */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_opts.h"
#include "commands.h"
#include "weft_version.h"

#ifndef WEFT_CLI_INSTALL_LIBDIR
#define WEFT_CLI_INSTALL_LIBDIR "lib"
#endif

#define SONAME "libovni.so.1"

static int is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dir/libovni.so.1 into out if it is a file; 1 if found. */
static int try_dir(const char *dir, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", dir[0] != '\0' ? dir : ".", SONAME);
	if (n < 0 || (size_t) n >= outlen)
		return 0;
	return is_file(out);
}

static int search_ld_library_path(char *out, size_t outlen)
{
	const char *env = getenv("LD_LIBRARY_PATH");
	if (env == NULL)
		return 0;
	const char *p = env;
	for (;;) {
		size_t len = strcspn(p, ":;");
		char dir[PATH_MAX];
		if (len < sizeof dir) {
			memcpy(dir, p, len);
			dir[len] = '\0';
			if (try_dir(dir, out, outlen))
				return 1;
		}
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* The directory of the weft binary's parent (PREFIX), or "" if unknown. */
static void weft_prefix(char *out, size_t outlen)
{
	char exe[PATH_MAX];
	out[0] = '\0';
	if (realpath("/proc/self/exe", exe) == NULL)
		return;
	char *slash = strrchr(exe, '/');
	if (slash == NULL)
		return;
	*slash = '\0'; /* PREFIX/bin */
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return;
	if (slash == exe)
		slash[1] = '\0';
	else
		*slash = '\0'; /* PREFIX */
	snprintf(out, outlen, "%s", exe);
}

static int search_weft_libdir(char *out, size_t outlen, char *dir, size_t dirlen)
{
	char prefix[PATH_MAX];
	weft_prefix(prefix, sizeof prefix);
	if (prefix[0] == '\0')
		return 0;
	static const char *const subdirs[] = { "lib", WEFT_CLI_INSTALL_LIBDIR };
	for (size_t i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
		const char *sep = prefix[strlen(prefix) - 1] == '/' ? "" : "/";
		int n = snprintf(dir, dirlen, "%s%s%s", prefix, sep, subdirs[i]);
		if (n < 0 || (size_t) n >= dirlen)
			continue;
		if (try_dir(dir, out, outlen))
			return 1;
	}
	return 0;
}

/* The path of libovni.so.1 in ldconfig's cache (`ldconfig -p`), if any. */
static int search_ldconfig(char *out, size_t outlen)
{
	static const char *const bins[] = { "/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig" };
	for (size_t i = 0; i < sizeof bins / sizeof bins[0]; i++) {
		if (bins[i][0] == '/' && access(bins[i], X_OK) != 0)
			continue;
		char cmd[64];
		snprintf(cmd, sizeof cmd, "%s -p 2>/dev/null", bins[i]);
		FILE *f = popen(cmd, "r");
		if (f == NULL)
			continue;
		char line[PATH_MAX + 128];
		int found = 0;
		while (fgets(line, sizeof line, f) != NULL) {
			const char *s = line + strspn(line, " \t");
			const char *arrow = strstr(s, "=> ");
			if (found || strncmp(s, SONAME " ", strlen(SONAME) + 1) != 0 || arrow == NULL)
				continue;
			arrow += 3;
			size_t len = strcspn(arrow, "\n");
			if (len < outlen) {
				memcpy(out, arrow, len);
				out[len] = '\0';
				found = is_file(out);
			}
		}
		int st = pclose(f);
		if (found)
			return 1;
		if (st == 0)
			return 0; /* ldconfig ran: its cache has no libovni */
	}
	return 0;
}

static int search_system(char *out, size_t outlen)
{
	if (search_ldconfig(out, outlen))
		return 1;
	static const char *const dirs[] = {
		"/lib64", "/usr/lib64", "/lib", "/usr/lib",
#ifdef __x86_64__
		"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
#endif
#ifdef __aarch64__
		"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
#endif
	};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		if (try_dir(dirs[i], out, outlen))
			return 1;
	}
	return 0;
}

typedef void (*version_get_fn)(const char **version, const char **commit);

/* Loads l->path with dlopen and reads its version. */
static void read_version(struct weft_libovni *l)
{
	dlerror();
	void *h = dlopen(l->path, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(l->err, sizeof l->err, "cannot load it: %s", e != NULL ? e : "dlopen failed");
		return;
	}
	void *sym = dlsym(h, "ovni_version_get");
	if (sym == NULL) {
		snprintf(l->err, sizeof l->err, "version unknown: it has no ovni_version_get");
		dlclose(h);
		return;
	}
	version_get_fn get;
	memcpy(&get, &sym, sizeof get);
	const char *v = NULL, *c = NULL;
	get(&v, &c);
	snprintf(l->version, sizeof l->version, "%s", v != NULL ? v : "?");
	snprintf(l->commit, sizeof l->commit, "%s", c != NULL ? c : "?");
	l->loaded = 1;
	dlclose(h);
}

int weft_libovni_probe(struct weft_libovni *l)
{
	memset(l, 0, sizeof *l);
	char dir[PATH_MAX];
	if (search_ld_library_path(l->path, sizeof l->path)) {
		l->found_by = "LD_LIBRARY_PATH";
	} else if (search_weft_libdir(l->path, sizeof l->path, dir, sizeof dir)) {
		l->found_by = "weft's library directory";
		/* A program without a RUNPATH to that directory would load the
		 * system's libovni instead, if there is one. */
		char a[PATH_MAX], b[PATH_MAX];
		if (search_system(l->other, sizeof l->other) && (realpath(l->other, a) == NULL
				|| realpath(l->path, b) == NULL || strcmp(a, b) != 0))
			l->has_other = 1;
	} else if (search_system(l->path, sizeof l->path)) {
		l->found_by = "the system's library search (ldconfig's cache, default directories)";
	} else {
		l->path[0] = '\0';
		weft_prefix(dir, sizeof dir);
		snprintf(l->err, sizeof l->err,
				"searched LD_LIBRARY_PATH, %s%s%s, ldconfig's cache and the default directories",
				dir[0] != '\0' ? dir : "weft's library directory",
				dir[0] != '\0' && dir[strlen(dir) - 1] != '/' ? "/" : "",
				dir[0] != '\0' ? WEFT_CLI_INSTALL_LIBDIR : "");
		return -1;
	}
	read_version(l);
	return 0;
}

/* What the dynamic loader loads for SONAME from weft (which has no RUNPATH):
 * 1 and the path it resolved, or 0 and its error. Done before anything
 * else loads a libovni into weft (an object already loaded would match the
 * soname whatever the search would find). */
static int loader_probe(char *out, size_t outlen)
{
	dlerror();
	void *h = dlopen(SONAME, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(out, outlen, "%s", e != NULL ? e : "dlopen failed");
		return 0;
	}
	struct link_map *map = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL && map->l_name[0] != '\0')
		snprintf(out, outlen, "%s", map->l_name);
	else
		snprintf(out, outlen, "%s (its path is unknown)", SONAME);
	dlclose(h);
	return 1;
}

/* The "loader:" line, and what to do when weft's library directory has a
 * libovni that the loader does not find. */
static void print_loader(int ok, const char *what, const struct weft_libovni *l, int found)
{
	static const char who[] = "loader: a program linked with -lovni (no RUNPATH)";
	if (ok) {
		printf("%s loads %s\n", who, what);
		return;
	}
	printf("%s cannot load it: %s\n", who, what);
	if (!found || strcmp(l->found_by, "weft's library directory") != 0)
		return;
	char dir[sizeof l->path];
	snprintf(dir, sizeof dir, "%s", l->path);
	char *slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	printf("note: %s is not in the loader's search path: as root, run ldconfig (with %s listed in "
	       "/etc/ld.so.conf or /etc/ld.so.conf.d/*.conf, as /usr/local/lib is on Debian), or run "
	       "the program with LD_LIBRARY_PATH=%s, or link it with -Wl,-rpath,%s\n",
	       dir, dir, dir, dir);
}

static const char usage[] =
	"Usage: weft version\n"
	"\n"
	"Print weft's version and the libovni.so.1 a program would load, where it is\n"
	"and its version. The search: the directories of LD_LIBRARY_PATH, then weft's\n"
	"library directory (PREFIX/lib next to PREFIX/bin/weft), then ldconfig's cache\n"
	"and the default directories. libovni is loaded with dlopen to read its version\n"
	"(ovni_version_get).\n"
	"\n"
	"Then the line 'loader:' says what the dynamic loader itself loads for a program\n"
	"linked with -lovni and no RUNPATH (dlopen of libovni.so.1 by its name): the\n"
	"path it resolved, or its error. A libovni in weft's library directory that the\n"
	"loader does not find (after cmake --install without ldconfig) gets a note on\n"
	"what to do: run ldconfig as root, or use LD_LIBRARY_PATH or -Wl,-rpath.\n"
	"\n"
	"Exit status: 0 (also when no libovni is found).\n";

int weft_cmd_version(int argc, char **argv)
{
	static const struct cli_opt opts[] = { { NULL, 0, NULL, 0 } };
	const char **pos = calloc((size_t) argc + 1, sizeof *pos);
	if (pos == NULL)
		abort();
	int npos = 0;
	int r = cli_opts_parse("version", opts, argc, argv, NULL, NULL, pos, &npos);
	const char *extra = npos > 0 ? pos[0] : NULL;
	free(pos);
	if (r == CLI_OPTS_HELP) {
		fputs(usage, stdout);
		return 0;
	}
	if (r != 0)
		return 2;
	if (extra != NULL) {
		fprintf(stderr, "weft version: unexpected argument '%s'; run `weft version --help`\n",
				extra);
		return 2;
	}
	char ld[4096 + 256];
	int ld_ok = loader_probe(ld, sizeof ld);
	printf("weft %s (ovni API %s, trace format v3)\n", WEFT_VERSION, WEFT_OVNI_API_VERSION);
	struct weft_libovni l;
	if (weft_libovni_probe(&l) != 0) {
		printf("libovni: not found (%s)\n", l.err);
		print_loader(ld_ok, ld, &l, 0);
		return 0;
	}
	if (l.loaded)
		printf("libovni: %s (%s, commit %s)\n", l.path, l.version, l.commit);
	else
		printf("libovni: %s (%s)\n", l.path, l.err);
	char real[PATH_MAX];
	if (realpath(l.path, real) != NULL && strcmp(real, l.path) != 0)
		printf("libovni is: %s\n", real);
	printf("libovni found by: %s\n", l.found_by);
	if (l.has_other)
		printf("note: a program without a RUNPATH to that directory (and without "
				"LD_LIBRARY_PATH) loads %s instead\n", l.other);
	print_loader(ld_ok, ld, &l, 1);
	return 0;
}
