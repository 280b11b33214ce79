/* SPDX-License-Identifier: MIT */
/*
 * paraver_cfg.c - the Paraver view files (the "paraver-cfg" output): a
 * directory cfg/ beside the .prv files with one Paraver configuration file
 * (.cfg, one timeline window each) per view of each channel of the
 * catalogue that has a Paraver type:
 *
 *   cfg/thread/<channel>.cfg     the channel in thread.prv (one row per thread)
 *   cfg/cpu/<channel>.cfg        the channel in cpu.prv (one row per CPU)
 *   cfg/breakdown/<view>.cfg     a breakdown view (-b), in <view>.prv
 *
 * <channel> is the catalogue's dotted name (ovni.thread.state,
 * nosv.subsystem), a character other than [A-Za-z0-9._-] written '_'.
 * A channel has a file in a view only when that view's .pcf lists its
 * type (paraver_pcf_lists): the CPU's running thread pid, tid and count
 * (types 1 to 3 of cpu.prv, which cpu.pcf does not list, as the
 * reference's does not) have none.
 * Each window filters the channel's Paraver type, shows each row's last
 * event value of that type (the thread level: weft's .prv files describe
 * their rows, CPUs included, as the threads of one task, so a CPU level has
 * no objects there) and colours it by code (states, labelled values) or as
 * a gradient (counters). The text follows the .cfg format of Paraver's
 * kernel (a "#ParaverCFG" header, then "tag value" lines per window).
 *
 * The files are written at the close, as temporaries (out_file.h), and
 * renamed at the commit; the directories are made at the close, and a
 * discard removes those this run made (when empty), so a failed run leaves
 * an earlier cfg/ as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out_file.h"
#include "paraver.h"

enum { D_ROOT, D_THREAD, D_CPU, D_BD, ND };
static const char *const dir_names[ND] = { "cfg", "cfg/thread", "cfg/cpu", "cfg/breakdown" };

struct pcfg {
	struct out base;
	const struct emu *emu;
	char *dir;
	char *dirs[ND];
	int made[ND];
	struct out_file *files;
	size_t nfiles, cap;
};

/* The window: what the file says. */
struct win {
	const char *name;   /* the view's label of the channel */
	const char *chan;   /* the channel's dotted name (the description) */
	const char *prv;    /* the .prv file it opens on */
	int type;
	int gradient;
};

static void put_window(FILE *f, const struct win *w)
{
	fputs("#ParaverCFG\n", f);
	fputs("ConfigFile.Version: 3.4\n", f);
	fputs("ConfigFile.NumWindows: 1\n", f);
	fputs("ConfigFile.BeginDescription\n", f);
	fputs("weft: the channel ", f);
	paraver_put_label(f, w->chan);
	fprintf(f, " as a timeline of %s\n", w->prv);
	fputs("ConfigFile.EndDescription\n\n", f);
	static const char rule[] =
		"################################################################################\n";
	fputs(rule, f);
	fputs("< NEW DISPLAYING WINDOW ", f);
	paraver_put_label(f, w->name);
	fputs(" >\n", f);
	fputs(rule, f);
	fputs("window_name ", f);
	paraver_put_label(f, w->name);
	fputc('\n', f);
	fputs("window_type single\n", f);
	fputs("window_id 1\n", f);
	fputs("window_position_x 64\n", f);
	fputs("window_position_y 64\n", f);
	fputs("window_width 800\n", f);
	fputs("window_height 240\n", f);
	fputs("window_comm_lines_enabled false\n", f);
	fputs("window_flags_enabled false\n", f);
	fputs("window_noncolor_mode true\n", f);
	fprintf(f, "window_color_mode %s\n",
			w->gradient ? "window_in_gradient_mode" : "window_in_code_mode");
	fputs("window_logical_filtered true\n", f);
	fputs("window_physical_filtered false\n", f);
	fputs("window_units Nanoseconds\n", f);
	fputs("window_minimum_y 0.0\n", f);
	fputs("window_compute_y_max true\n", f);
	fputs("window_level thread\n", f);
	fputs("window_scale_relative 1.000000000000\n", f);
	fputs("window_end_time_relative 1.000000000000\n", f);
	fputs("window_object appl { 1, { All } }\n", f);
	fputs("window_begin_time_relative 0.000000000000\n", f);
	fputs("window_open true\n", f);
	const char *draw = w->gradient ? "draw_maximum" : "draw_randnotzero";
	fprintf(f, "window_drawmode %s\n", draw);
	fprintf(f, "window_drawmode_rows %s\n", draw);
	fputs("window_pixel_size 1\n", f);
	fputs("window_labels_to_draw 1\n", f);
	fputs("window_selected_functions { 14, { {cpu, Active Thd}, {appl, Adding}, "
			"{task, Adding}, {thread, Last Evt Val}, {node, Adding}, {system, Adding}, "
			"{workload, Adding}, {from_obj, All}, {to_obj, All}, {tag_msg, All}, "
			"{size_msg, All}, {bw_msg, All}, {evt_type, =}, {evt_value, All} } }\n", f);
	fputs("window_compose_functions { 9, { {compose_cpu, As Is}, {compose_appl, As Is}, "
			"{compose_task, As Is}, {compose_thread, As Is}, {compose_node, As Is}, "
			"{compose_system, As Is}, {compose_workload, As Is}, {topcompose1, As Is}, "
			"{topcompose2, As Is} } }\n", f);
	fprintf(f, "window_filter_module evt_type 1 %d\n", w->type);
}

/* A file name from a channel's name: [A-Za-z0-9._-] kept, others '_'. */
static void file_name(char *buf, size_t len, const char *name)
{
	size_t k = 0;
	for (const char *p = name; *p != '\0' && k + 5 < len; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '_' || c == '-' || (c == '.' && k > 0);
		buf[k++] = ok ? c : '_';
	}
	memcpy(buf + k, ".cfg", 5);
}

static int add_file(struct pcfg *pc, int d, const char *name, const struct win *w, char *err,
		size_t errlen)
{
	if (pc->nfiles == pc->cap) {
		size_t cap = pc->cap ? pc->cap * 2 : 32;
		struct out_file *n = realloc(pc->files, cap * sizeof *n);
		if (n == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		pc->files = n;
		pc->cap = cap;
	}
	char fname[256];
	file_name(fname, sizeof fname, name);
	struct out_file *of = &pc->files[pc->nfiles];
	if (out_file_open(of, pc->dirs[d], fname, err, errlen) != 0)
		return -1;
	pc->nfiles++;
	FILE *f = out_file_stream(of, "w", err, errlen);
	if (f == NULL)
		return -1;
	errno = 0;
	put_window(f, w);
	int e = ferror(f) ? (errno ? errno : EIO) : 0;
	if (fclose(f) != 0 && e == 0)
		e = errno ? errno : EIO;
	if (e != 0) {
		snprintf(err, errlen, "cannot write %s: %s", of->path, strerror(e));
		return -1;
	}
	return 0;
}

/* Makes dir d (absent) or checks it is a directory (not a link). */
static int make_dir(struct pcfg *pc, int d, char *err, size_t errlen)
{
	struct stat sb;
	if (lstat(pc->dirs[d], &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			return 0;
		snprintf(err, errlen, "%s: is %s, not a directory: the Paraver view files are not "
				"written (weft does not write through links)", pc->dirs[d],
				S_ISLNK(sb.st_mode) ? "a symbolic link" : "a file");
		return -1;
	}
	if (errno != ENOENT || mkdir(pc->dirs[d], 0777) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", pc->dirs[d], strerror(errno));
		return -1;
	}
	pc->made[d] = 1;
	return 0;
}

static int pcfg_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	(void) self;
	(void) b;
	(void) err;
	(void) errlen;
	return 0;
}

static int pcfg_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	(void) duration;
	struct pcfg *pc = (struct pcfg *) o;
	const struct emu *e = pc->emu;
	for (int d = 0; d < ND; d++) {
		if (d == D_BD && emu_nviews(e) <= 2)
			break;
		if (make_dir(pc, d, err, errlen) != 0)
			return -1;
	}
	int lost = emu_has_lost(e);
	for (size_t view = 0; view < 2; view++) {
		for (size_t i = 0; i < emu_cat_count(e); i++) {
			const struct emu_cat_entry *c = emu_cat_at(e, i);
			/* only the types its .pcf lists: the CPU's running thread
			 * (cpu.running.pid, .tid, .count: types 1 to 3 in cpu.prv)
			 * has records but no type block, so no file; cfg/cpu's
			 * running-thread windows are the channels "... of the
			 * RUNNING thread" that cpu.pcf names */
			if (!paraver_pcf_lists(c, view, lost) || c->bd_view >= 0)
				continue;
			const char *label = view == EMU_FILE_CPU ? c->cpu_label : c->thread_label;
			struct win w = { label != NULL ? label : c->name, c->name,
				view == EMU_FILE_CPU ? "cpu.prv" : "thread.prv", c->prv_type,
				c->kind == EMU_CAT_COUNTER };
			if (add_file(pc, view == EMU_FILE_CPU ? D_CPU : D_THREAD, c->name, &w, err,
					errlen) != 0)
				return -1;
		}
	}
	for (size_t view = 2; view < emu_nviews(e); view++) {
		const struct emu_view *v = emu_view_at(e, view);
		const struct emu_value_label *vals;
		size_t nv;
		if (!emu_view_values(e, view, &vals, &nv))
			continue; /* its .pcf has no type block */
		char prv[256];
		snprintf(prv, sizeof prv, "%s.prv", v->name);
		struct win w = { v->label, v->name, prv, v->prv_type, 0 };
		if (add_file(pc, D_BD, v->name, &w, err, errlen) != 0)
			return -1;
	}
	for (size_t k = 0; k < pc->nfiles; k++)
		if (out_file_check(&pc->files[k], err, errlen) != 0)
			return -1;
	return 0;
}

static int pcfg_end(struct pcfg *pc, int commit, char *err, size_t errlen)
{
	int r = 0;
	for (size_t k = 0; k < pc->nfiles; k++) {
		if (commit && r == 0)
			r = out_file_commit(&pc->files[k], err, errlen);
		else
			out_file_discard(&pc->files[k]);
	}
	if (!commit || r != 0)
		for (int d = ND - 1; d >= 0; d--)
			if (pc->made[d])
				rmdir(pc->dirs[d]); /* only when empty */
	for (int d = 0; d < ND; d++)
		free(pc->dirs[d]);
	free(pc->files);
	free(pc->dir);
	free(pc);
	return r;
}

static int pcfg_commit(struct out *o, char *err, size_t errlen)
{
	return pcfg_end((struct pcfg *) o, 1, err, errlen);
}

static void pcfg_discard(struct out *o)
{
	char e2[256];
	pcfg_end((struct pcfg *) o, 0, e2, sizeof e2);
}

static const struct out_ops pcfg_ops = {
	.name = "paraver-cfg",
	.records = pcfg_records,
	.close = pcfg_close,
	.commit = pcfg_commit,
	.discard = pcfg_discard,
};

struct out *out_paraver_cfg_open(const char *dir, const struct emu *emu,
		const struct out_params *p, char *err, size_t errlen)
{
	(void) p;
	struct pcfg *pc = calloc(1, sizeof *pc);
	if (pc == NULL || (pc->dir = strdup(dir)) == NULL) {
		free(pc);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pc->base.ops = &pcfg_ops;
	pc->emu = emu;
	for (int d = 0; d < ND; d++) {
		size_t n = strlen(dir) + strlen(dir_names[d]) + 2;
		if ((pc->dirs[d] = malloc(n)) == NULL) {
			pcfg_discard(&pc->base);
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		snprintf(pc->dirs[d], n, "%s/%s", dir, dir_names[d]);
	}
	return &pc->base;
}
