/* SPDX-License-Identifier: MIT */
/*
 * test_rt_filter - filters at the source (WEFT_FILTER, weft_rt_filter_set;
 * docs/runtime.md, "Filters"). A thread emits the same ten events in each
 * case (ovni thread states, marks, bursts and kernel context switches);
 * each filter form keeps exactly the events it names, in order, and
 * stream.json says what it dropped (weft.filter, weft.filtered). Then
 * weft check, weft dump and weft emu report the counts, and weft emu
 * refuses exactly the filters that would make a model wrong, with its
 * message. Each case runs in a forked child (a process is initialized
 * once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_setting.h"
#include "weft/rt.h"

/* What the thread emits, in order. */
static const char *const script[] = {"OHx", "OM[", "KCO", "KCI", "OB.", "OHp", "OHr", "OB.", "OM]", "OHe"};
#define NSCRIPT (sizeof script / sizeof script[0])

enum cb { CB_NONE, CB_NO_BURSTS };

struct fcase {
	const char *env;  /* WEFT_FILTER in the environment (NULL: unset) */
	const char *call; /* weft_rt_set("WEFT_FILTER", call) (NULL: none) */
	enum cb cb;
	const char *kept; /* the events left, space-separated */
};

/* Shared with the child. */
struct child {
	struct fcase c;
	char dir[512];
	int pid;
};

static int no_bursts(const struct ovni_ev *ev, void *arg)
{
	(*(int *) arg)++;
	return ev->header.category != 'B';
}

static void child_main(void *p)
{
	struct child *ch = p;
	static int asked;
	ch->pid = (int) getpid();
	setenv("OVNI_TRACEDIR", ch->dir, 1);
	if (ch->c.env != NULL)
		setenv("WEFT_FILTER", ch->c.env, 1);
	else
		unsetenv("WEFT_FILTER");
	if (ch->c.call != NULL)
		weft_rt_set("WEFT_FILTER", ch->c.call);
	if (ch->c.cb == CB_NO_BURSTS)
		weft_rt_filter_set(no_bursts, &asked);
	ovni_proc_init(1, "flt", ch->pid);
	ovni_thread_init(ch->pid);
	ovni_thread_require("kernel", "1.0.0");
	ovni_add_cpu(0, 0);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	for (size_t i = 0; i < NSCRIPT; i++) {
		if (strcmp(script[i], "OHx") == 0) {
			uint8_t pl[16] = {0};
			int32_t tid = -1;
			memcpy(pl + 4, &tid, sizeof tid);
			rt_test_emit("OHx", ovni_clock_now(), pl, (int) sizeof pl);
		} else if (strcmp(script[i], "OM[") == 0) {
			ovni_mark_push(1, 5);
		} else if (strcmp(script[i], "OM]") == 0) {
			ovni_mark_pop(1, 5);
		} else {
			rt_test_emit(script[i], ovni_clock_now(), NULL, 0);
		}
	}
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	/* The callback is asked about the events the rules keep only. */
	if (ch->c.cb == CB_NO_BURSTS && ch->c.call == NULL && asked != (ch->c.env != NULL ? 8 : 10))
		_exit(3);
}

/* Runs the case into a trace directory of its own (malloc'ed, returned)
 * and checks the stream; *pid gets the child's pid. */
static char *run_case(const struct fcase *c, const char *name, int *pid)
{
	struct child ch;
	memset(&ch, 0, sizeof ch);
	ch.c = *c;
	snprintf(ch.dir, sizeof ch.dir, "%s/%s", rt_test_dir, name);
	assert_true(rt_test_in_proc(child_main, &ch, sizeof ch));
	*pid = ch.pid;
	char *obs = rt_test_path("%s/loom.flt/proc.%d/thread.%d/stream.obs", ch.dir, ch.pid, ch.pid);
	struct rt_test_stream st;
	rt_test_stream_load(&st, obs);
	char got[256] = "";
	for (size_t i = 0; i < st.nev; i++) {
		strcat(got, i > 0 ? " " : "");
		strcat(got, st.ev[i].mcv);
	}
	assert_string_equal(got, c->kept);
	/* weft.filter and weft.filtered */
	size_t nkept = st.nev;
	rt_test_stream_free(&st);
	char *jpath = rt_test_path("%s/loom.flt/proc.%d/thread.%d/stream.json", ch.dir, ch.pid, ch.pid);
	json_error_t jerr;
	json_t *doc = json_load_file(jpath, 0, &jerr);
	assert_non_null(doc);
	json_t *w = json_object_get(doc, "weft");
	const char *rules = c->call != NULL ? c->call : c->env != NULL ? c->env : "";
	assert_string_equal(json_string_value(json_object_get(json_object_get(w, "filter"), "rules")), rules);
	assert_true(json_is_boolean(json_object_get(json_object_get(w, "filter"), "callback")));
	assert_int_equal(json_is_true(json_object_get(json_object_get(w, "filter"), "callback")), c->cb != CB_NONE);
	assert_int_equal(json_integer_value(json_object_get(w, "filtered")), (json_int_t) (NSCRIPT - nkept));
	json_decref(doc);
	free(jpath);
	free(obs);
	return rt_test_path("%s", ch.dir);
}

static void check_case(const struct fcase *c, const char *name)
{
	int pid;
	char *dir = run_case(c, name, &pid);
	free(dir);
}

static void test_forms(void **s)
{
	(void) s;
	/* by model byte */
	check_case(&(struct fcase){"-K", NULL, CB_NONE, "OHx OM[ OB. OHp OHr OB. OM] OHe"}, "model");
	/* a list of what to keep: the rest is dropped */
	check_case(&(struct fcase){"+O", NULL, CB_NONE, "OHx OM[ OB. OHp OHr OB. OM] OHe"}, "keep");
	check_case(&(struct fcase){"+K", NULL, CB_NONE, "KCO KCI"}, "keepk");
	/* by MCV prefix, of 2 and 3 bytes (marks go through libovni's own
	 * emit: ovni_mark_push) */
	check_case(&(struct fcase){"-OB", NULL, CB_NONE, "OHx OM[ KCO KCI OHp OHr OM] OHe"}, "prefix2");
	check_case(&(struct fcase){"-OHp,-OHr", NULL, CB_NONE, "OHx OM[ KCO KCI OB. OB. OM] OHe"}, "prefix3");
	check_case(&(struct fcase){"-OM[", NULL, CB_NONE, "OHx KCO KCI OB. OHp OHr OB. OM] OHe"}, "mark");
	/* the longest rule wins; a "+" rule makes the default "drop" */
	check_case(&(struct fcase){"-O,+OHx", NULL, CB_NONE, "OHx"}, "longest");
	check_case(&(struct fcase){"-*,+K,+OH", NULL, CB_NONE, "OHx KCO KCI OHp OHr OHe"}, "star");
	check_case(&(struct fcase){"+*,-O,+OH", NULL, CB_NONE, "OHx KCO KCI OHp OHr OHe"}, "starkeep");
	/* the program's callback, alone and after the rules */
	check_case(&(struct fcase){NULL, NULL, CB_NO_BURSTS, "OHx OM[ KCO KCI OHp OHr OM] OHe"}, "callback");
	check_case(&(struct fcase){"-K", NULL, CB_NO_BURSTS, "OHx OM[ OHp OHr OM] OHe"}, "both");
	/* weft_rt_set wins over the environment */
	check_case(&(struct fcase){"+K", "-K", CB_NONE, "OHx OM[ OB. OHp OHr OB. OM] OHe"}, "call");
}

/* Whether line is one whole line of out. */
static int has_line(const char *out, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = out; (p = strstr(p, line)) != NULL; p++)
		if ((p == out || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	fprintf(stderr, "missing line: %s\nin:\n%s\n", line, out);
	return 0;
}

static void test_reports(void **s)
{
	(void) s;
	if (getenv("WEFT_BIN") == NULL) {
		print_message("WEFT_BIN is unset: the reports are not checked\n");
		return;
	}
	int pid, rc;
	char *dir = run_case(&(struct fcase){"-K", NULL, CB_NONE, "OHx OM[ OB. OHp OHr OB. OM] OHe"}, "reports",
			     &pid);
	char *out = rt_test_weft("check", dir, &rc);
	assert_int_equal(rc, 0);
	char *want = rt_test_path("weft check: %s/loom.flt/proc.%d/thread.%d/stream.json: 2 events filtered at the "
				  "source by WEFT_FILTER='-K': dropped on purpose, not lost",
				  dir, pid, pid);
	assert_true(has_line(out, want));
	free(want);
	free(out);
	out = rt_test_weft("dump", dir, &rc);
	assert_int_equal(rc, 0);
	want = rt_test_path("# loom.flt/proc.%d/thread.%d: 2 events filtered at the source by WEFT_FILTER='-K' "
			    "(dropped on purpose)",
			    pid, pid);
	assert_true(has_line(out, want));
	free(want);
	free(out);
	/* the kernel model lost all its events: emulated, with a warning */
	out = rt_test_weft("emu -q", dir, &rc);
	assert_int_equal(rc, 0);
	assert_true(has_line(out, "weft emu: warning: 1 thread had 2 events filtered at the source "
				  "(WEFT_FILTER='-K'): whole models or families of events dropped on "
				  "purpose, emulated as if never emitted"));
	free(out);
	free(dir);

	/* the ovni model's bursts as a whole: emulated */
	dir = run_case(&(struct fcase){"-OB", NULL, CB_NONE, "OHx OM[ KCO KCI OHp OHr OM] OHe"}, "bursts", &pid);
	out = rt_test_weft("emu -q", dir, &rc);
	assert_int_equal(rc, 0);
	free(out);
	free(dir);

	/* part of the ovni model's thread states: refused, naming the filter */
	dir = run_case(&(struct fcase){"-OHp,-OHr", NULL, CB_NONE, "OHx OM[ KCO KCI OB. OB. OM] OHe"}, "states",
		       &pid);
	out = rt_test_weft("emu -q", dir, &rc);
	assert_int_equal(rc, 1);
	want = rt_test_path("weft emu: %s/loom.flt/proc.%d/thread.%d/stream.json: 2 events were filtered at the "
			    "source by WEFT_FILTER='-OHp,-OHr', whose rule '-OHp' keeps or drops only part of the "
			    "events of the ovni model (byte 'O'): its emulation would be wrong; filter whole "
			    "models (one-byte rules), or the ovni model's bursts, flushes or marks (-OB, -OF, "
			    "-OM), to emulate such a trace",
			    dir, pid, pid);
	assert_true(has_line(out, want));
	free(want);
	free(out);
	free(dir);

	/* the ovni model gone while the kernel model stays */
	dir = run_case(&(struct fcase){"+K", NULL, CB_NONE, "KCO KCI"}, "noovni", &pid);
	out = rt_test_weft("emu -q", dir, &rc);
	assert_int_equal(rc, 1);
	want = rt_test_path("weft emu: %s/loom.flt/proc.%d/thread.%d/stream.json: 8 events were filtered at the "
			    "source by WEFT_FILTER='+K', which drops every event of the ovni model (byte 'O'), "
			    "whose thread states the kernel model needs: its emulation would be wrong",
			    dir, pid, pid);
	assert_true(has_line(out, want));
	free(want);
	free(out);
	free(dir);

	/* a callback: what it dropped is not known, emulated as lost */
	dir = run_case(&(struct fcase){NULL, NULL, CB_NO_BURSTS, "OHx OM[ KCO KCI OHp OHr OM] OHe"}, "cb", &pid);
	out = rt_test_weft("check", dir, &rc);
	assert_int_equal(rc, 0);
	want = rt_test_path("weft check: %s/loom.flt/proc.%d/thread.%d/stream.json: 2 events filtered at the "
			    "source by the program's filter callback: dropped on purpose, not lost",
			    dir, pid, pid);
	assert_true(has_line(out, want));
	free(want);
	free(out);
	out = rt_test_weft("emu -q", dir, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "weft emu: warning: 1 thread lost events (2 dropped by the program's filter "
				    "callback (weft_rt_filter_set)): it is emulated leniently"));
	free(out);
	out = rt_test_weft("emu", dir, &rc);
	assert_int_equal(rc, 0);
	assert_true(has_line(out, "lost events: 2 dropped by the program's filter callback on 1 thread; the "
				  "thread that lost events was emulated leniently (in an unknown state after a "
				  "loss) and the end checks were waived for it"));
	free(out);
	free(dir);
}

static void test_bad(void **s)
{
	(void) s;
	char *err = rt_test_refused("WEFT_FILTER", "K");
	assert_string_equal(err, "libovni: ovni_proc_init: WEFT_FILTER='K' is not a filter (comma-separated rules, "
				 "+P to keep or -P to drop the events whose model, category and value start with P, "
				 "1 to 3 printable bytes, or * for every event; at most 64 rules, 511 bytes)\n");
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
