/* SPDX-License-Identifier: MIT */
/*
 * weft_sync.c - weft-sync (installed also as ovnisync): measures the offset of
 * every MPI rank's CLOCK_MONOTONIC against rank 0's and writes
 * clock-offsets.txt, the file weft emu (and the reference's ovniemu) add to
 * the clocks of each host's looms. See docs/sync.md.
 *
 * The measurement is a ping-pong, one rank at a time: rank 0 reads its clock
 * (t0) and sends a ping to rank r, which reads its clock (t1) on arrival and
 * sends t1 back; rank 0 reads its clock again (t2) when the pong arrives.
 * Assuming the two legs take equally long, rank 0's clock read (t0 + t2) / 2
 * when rank r read t1, so one sample of the offset to add to r's clock is
 * (t0 + t2) / 2 - t1. A few warm-up exchanges are discarded, then N samples
 * give the median (the offset that is applied), the mean and the standard
 * deviation. Ranks that wait for their turn poll with short sleeps, so that
 * they leave the CPUs to the pair being measured.
 *
 * Only rank 0 writes, into a temporary file next to FILE, renamed over FILE
 * once complete: a reader never sees half a table.
 *
 * --drift measures twice, -w seconds apart, and writes the table of the
 * first measurement followed, after a line of blanks (where the reference's
 * reader stops), by each host's drift: "drift HOST T0 PPB", T0 the host's
 * clock at the first measurement and PPB the change of its offset per 10^9
 * ns of its clock, so that libweft corrects a clock c of the host to
 * c + offset + floor(PPB * (c - T0) / 10^9).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "weft_version.h"

#define DEFAULT_OUTPUT "ovni/clock-offsets.txt"
#define DEFAULT_SAMPLES 100
#define DEFAULT_WAIT 5
#define MAX_SAMPLES 1000000
#define MAX_DRIFT 1000000
#define MAX_WAIT 86400
#define MAX_WARMUP 20
#define HOST_LEN 256 /* gethostname() names: at most HOST_NAME_MAX (64) bytes */
#define POLL_NS 20000L /* how long a waiting rank sleeps between two polls */

enum { TAG_PING = 1, TAG_PONG = 2 };

struct options {
	const char *output;
	int nsamples;
	int ndrift;
	int wait; /* seconds between two drift measurements */
	int verbose;
	int drift; /* --drift: measure at the start and after wait seconds */
};

/* One rank's offset against rank 0, in ns. */
struct offset {
	double median;
	double mean;
	double std;
	int64_t at; /* the rank's clock at the middle sample */
};

static const char *progname = "weft-sync";
static int quiet_errors; /* ranks other than 0 do not repeat usage errors */

static void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void err_msg(const char *fmt, ...)
{
	if (quiet_errors)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void print_usage(FILE *f)
{
	fprintf(f, "Usage: mpirun -np N %s [-o FILE] [-n NSAMPLES] [-d NDRIFT | --drift] "
			"[-w SECONDS] [-v]\n", progname);
}

static void print_help(void)
{
	print_usage(stdout);
	printf("\n"
		"Measures each MPI rank's CLOCK_MONOTONIC offset against rank 0 with ping-pong\n"
		"exchanges and writes one row per host (rank, hostname, median, mean and\n"
		"standard deviation of the offset in ns), the clock-offsets.txt that weft emu\n"
		"and ovniemu apply to the looms of each host.\n"
		"\n"
		"  -o FILE      write into FILE (default %s; missing directories are\n"
		"               created)\n"
		"  -n NSAMPLES  ping-pong exchanges per rank and measurement (default %d,\n"
		"               1..%d)\n"
		"  -d NDRIFT    drift mode when NDRIFT > 1: measure NDRIFT times and write the\n"
		"               drift table (wall clock, then each rank's offset), which\n"
		"               weft emu does not load (default 1, 1..%d)\n"
		"  --drift      measure at the start and again after -w SECONDS, and write\n"
		"               the table of the first measurement plus each host's drift,\n"
		"               which weft emu applies (ovniemu reads the offsets only)\n"
		"  -w SECONDS   wait between two drift measurements (default %d, 0..%d)\n"
		"  -v           print every sample and each rank's result on stdout\n"
		"  -h, --help   print this help and exit\n"
		"\n"
		"weft %s; see docs/sync.md.\n",
		DEFAULT_OUTPUT, DEFAULT_SAMPLES, MAX_SAMPLES, MAX_DRIFT, DEFAULT_WAIT, MAX_WAIT,
		WEFT_VERSION);
}

/*
 * The rank given by the launcher's environment, before MPI_Init: only rank 0
 * prints the help and usage errors (-1: not started by a known launcher).
 */
static long env_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v != NULL && *v != '\0')
			return strtol(v, NULL, 10);
	}
	return -1;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
		err_msg("%s needs an integer from %d to %d, not '%s'; run `%s -h`", opt, lo, hi, s,
				progname);
		return -1;
	}
	*out = (int) v;
	return 0;
}

/* 0: run; 1: help printed, exit 0; -1: usage error, exit 2. */
static int parse_options(int argc, char **argv, struct options *o, int quiet)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "drift", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 },
	};
	o->output = DEFAULT_OUTPUT;
	o->nsamples = DEFAULT_SAMPLES;
	o->ndrift = 1;
	o->wait = DEFAULT_WAIT;
	o->verbose = 0;
	o->drift = 0;
	int wait_given = 0;
	quiet_errors = quiet;
	int r = 0;
	opterr = 0;
	int c;
	while (r == 0 && (c = getopt_long(argc, argv, ":ho:n:d:w:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			if (!quiet)
				print_help();
			r = 1;
			break;
		case 'o':
			if (*optarg == '\0') {
				err_msg("-o needs a file name, not an empty name; run `%s -h`", progname);
				r = -1;
			}
			o->output = optarg;
			break;
		case 'n':
			r = parse_int("-n", optarg, 1, MAX_SAMPLES, &o->nsamples);
			break;
		case 'd':
			r = parse_int("-d", optarg, 1, MAX_DRIFT, &o->ndrift);
			break;
		case 'w':
			r = parse_int("-w", optarg, 0, MAX_WAIT, &o->wait);
			wait_given = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'D':
			o->drift = 1;
			break;
		case ':':
			err_msg("option '%s' needs an argument; run `%s -h`", argv[optind - 1], progname);
			r = -1;
			break;
		default:
			if (optopt != 0)
				err_msg("unknown option '-%c'; run `%s -h`", optopt, progname);
			else
				err_msg("unknown option '%s'; run `%s -h`", argv[optind - 1], progname);
			r = -1;
			break;
		}
	}
	if (r == 0 && optind < argc) {
		err_msg("unexpected argument '%s' (the output file is given with -o FILE); run `%s -h`",
				argv[optind], progname);
		r = -1;
	}
	if (r == 0 && o->drift && o->ndrift > 1) {
		err_msg("--drift and -d NDRIFT cannot be combined (--drift measures twice, -w "
				"SECONDS apart); run `%s -h`", progname);
		r = -1;
	}
	if (r == 0 && wait_given && o->ndrift == 1 && !o->drift)
		err_msg("warning: -w has no effect without -d NDRIFT (NDRIFT > 1) or --drift");
	quiet_errors = 0;
	return r;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC cannot fail with a valid pointer; abort if it does. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		abort();
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double wall_seconds(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		abort();
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Completes req, sleeping between polls: a waiting rank leaves the CPU. */
static void wait_sleeping(MPI_Request *req)
{
	const struct timespec pause = { 0, POLL_NS };
	for (;;) {
		int done = 0;
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done)
			return;
		nanosleep(&pause, NULL);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

static int warmup_of(int nsamples)
{
	return nsamples < MAX_WARMUP ? nsamples : MAX_WARMUP;
}

/* Rank r > 0: answer every ping of one measurement with its clock reading. */
static void answer_pings(int nsamples)
{
	int total = warmup_of(nsamples) + nsamples;
	for (int i = 0; i < total; i++) {
		int64_t dummy;
		if (i == 0) {
			/* Our turn may be far away: wait without spinning. */
			MPI_Request req;
			MPI_Irecv(&dummy, 1, MPI_INT64_T, 0, TAG_PING, MPI_COMM_WORLD, &req);
			wait_sleeping(&req);
		} else {
			MPI_Recv(&dummy, 1, MPI_INT64_T, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		int64_t t1 = now_ns();
		MPI_Send(&t1, 1, MPI_INT64_T, 0, TAG_PONG, MPI_COMM_WORLD);
	}
}

/* Rank 0: measure rank r; samples holds nsamples doubles. */
static void measure_rank(int r, int nsamples, double *samples, int verbose, struct offset *out)
{
	int warm = warmup_of(nsamples);
	for (int i = 0; i < warm + nsamples; i++) {
		int64_t t0 = now_ns(), t1;
		MPI_Send(&t0, 1, MPI_INT64_T, r, TAG_PING, MPI_COMM_WORLD);
		MPI_Recv(&t1, 1, MPI_INT64_T, r, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		int64_t t2 = now_ns();
		if (i < warm)
			continue;
		if (i - warm == nsamples / 2)
			out->at = t1;
		/* (t0 + t2) / 2 - t1 without overflow or loss of precision */
		double d = (double) (t0 - t1) + (double) (t2 - t0) / 2.0;
		samples[i - warm] = d;
		if (verbose)
			printf("rank %d sample %d: offset %.1f ns, round trip %" PRId64 " ns\n", r,
					i - warm, d, t2 - t0);
	}
	double sum = 0;
	for (int i = 0; i < nsamples; i++)
		sum += samples[i];
	double mean = sum / nsamples;
	double ss = 0;
	for (int i = 0; i < nsamples; i++)
		ss += (samples[i] - mean) * (samples[i] - mean);
	qsort(samples, (size_t) nsamples, sizeof *samples, cmp_double);
	out->median = samples[nsamples / 2];
	out->mean = mean;
	out->std = nsamples > 1 ? sqrt(ss / (nsamples - 1)) : 0.0;
}

/* The offset applied: the median truncated toward zero, as the readers do. */
static int64_t applied(const struct offset *o)
{
	return (int64_t) o->median;
}

/* ---- rank 0's output file ---- */

struct outfile {
	const char *path;
	char *tmp;
	FILE *f;
};

/* Creates the missing directories above path (like mkdir -p of its dirname). */
static int make_parents(const char *path)
{
	char *p = strdup(path);
	if (p == NULL)
		return -1;
	for (char *s = strchr(p + 1, '/'); s != NULL; s = strchr(s + 1, '/')) {
		if (s[-1] == '/')
			continue;
		*s = '\0';
		struct stat st;
		if (stat(p, &st) != 0) {
			if (errno != ENOENT || (mkdir(p, 0777) != 0 && errno != EEXIST)) {
				err_msg("%s: cannot create the directory %s (%s)", path, p,
						strerror(errno));
				free(p);
				return -1;
			}
		} else if (!S_ISDIR(st.st_mode)) {
			err_msg("%s: %s is not a directory", path, p);
			free(p);
			return -1;
		}
		*s = '/';
	}
	free(p);
	return 0;
}

static int out_open(struct outfile *o, const char *path)
{
	o->path = path;
	o->tmp = NULL;
	o->f = NULL;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		err_msg("%s: is a directory; give the file to write, e.g. -o %s%sclock-offsets.txt",
				path, path, path[strlen(path) - 1] == '/' ? "" : "/");
		return -1;
	}
	if (make_parents(path) != 0)
		return -1;
	size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
	o->tmp = malloc(n);
	if (o->tmp == NULL) {
		err_msg("%s: out of memory", path);
		return -1;
	}
	snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		err_msg("%s: cannot create a file next to it (%s)", path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	/* mkstemp makes it 0600; give it the mode a new file would get. */
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || (o->f = fdopen(fd, "w")) == NULL) {
		err_msg("%s: cannot prepare %s (%s)", path, o->tmp, strerror(errno));
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return 0;
}

static void out_discard(struct outfile *o)
{
	if (o->f != NULL)
		fclose(o->f);
	if (o->tmp != NULL)
		unlink(o->tmp);
	free(o->tmp);
	o->f = NULL;
	o->tmp = NULL;
}

static int out_commit(struct outfile *o)
{
	int bad = ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
	int e = errno;
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	o->f = NULL;
	if (bad) {
		err_msg("%s: cannot write %s (%s)", o->path, o->tmp, strerror(e));
		out_discard(o);
		return -1;
	}
	if (rename(o->tmp, o->path) != 0) {
		err_msg("%s: cannot rename %s to it (%s)", o->path, o->tmp, strerror(errno));
		out_discard(o);
		return -1;
	}
	free(o->tmp);
	o->tmp = NULL;
	return 0;
}

/* ---- the two output formats (those of the reference's ovnisync) ---- */

static void write_table(FILE *f, int nranks, char (*hosts)[HOST_LEN], const struct offset *off)
{
	fprintf(f, "%-10s %-20s %-20s %-20s %-20s\n", "rank", "hostname", "offset_median",
			"offset_mean", "offset_std");
	for (int r = 0; r < nranks; r++) {
		int seen = 0;
		for (int q = 0; q < r && !seen; q++)
			seen = strcmp(hosts[q], hosts[r]) == 0;
		if (seen)
			continue; /* one row per host: its first rank */
		fprintf(f, "%-10d %-20s %-20" PRId64 " %-20f %-20f\n", r, hosts[r], applied(&off[r]),
				off[r].mean, off[r].std);
	}
}

/* The drift of every host (its first rank) between the measurements a and
 * b, after the table of a (docs/sync.md, "Drift"). 0, or -1 when a drift
 * cannot be written (an error printed). */
static int write_drift_section(FILE *f, int nranks, char (*hosts)[HOST_LEN],
		const struct offset *a, const struct offset *b, int verbose)
{
	fprintf(f, " \n%-10s %-20s %-20s %-20s\n", "drift", "hostname", "t0", "drift_ppb");
	for (int r = 0; r < nranks; r++) {
		int seen = 0;
		for (int q = 0; q < r && !seen; q++)
			seen = strcmp(hosts[q], hosts[r]) == 0;
		if (seen)
			continue;
		int64_t ppb = 0;
		if (r > 0) {
			int64_t span = b[r].at - a[r].at;
			if (span <= 0) {
				err_msg("rank %d (%s): its clock did not advance between the two "
						"measurements (%" PRId64 " then %" PRId64 ")", r, hosts[r],
						a[r].at, b[r].at);
				return -1;
			}
			/* (offset change) * 10^9 / span, rounded half away from zero */
			__int128 num = ((__int128) applied(&b[r]) - applied(&a[r])) * 1000000000;
			__int128 q = (num < 0 ? num - span / 2 : num + span / 2) / span;
			if (q <= -1000000000 || q >= 1000000000) {
				err_msg("rank %d (%s): the offset moved by %" PRId64 " ns in %" PRId64
						" ns: a drift out of range (-999999999 to 999999999 ppb)",
						r, hosts[r], applied(&b[r]) - applied(&a[r]), span);
				return -1;
			}
			ppb = (int64_t) q;
		}
		if (verbose)
			printf("rank %d (%s): drift %" PRId64 " ppb over %" PRId64 " ns\n", r,
					hosts[r], ppb, b[r].at - a[r].at);
		fprintf(f, "%-10s %-20s %-20" PRId64 " %-20" PRId64 "\n", "drift", hosts[r],
				a[r].at, ppb);
	}
	return 0;
}

static void write_drift_header(FILE *f, int nranks, char (*hosts)[HOST_LEN])
{
	fprintf(f, "%-20s", "wallclock");
	for (int r = 0; r < nranks; r++)
		fprintf(f, " %-20s", hosts[r]);
	fputc('\n', f);
}

static void write_drift_row(FILE *f, int nranks, double wall, const struct offset *off)
{
	fprintf(f, "%-20f", wall);
	for (int r = 0; r < nranks; r++)
		fprintf(f, " %-20" PRId64, applied(&off[r]));
	fputc('\n', f);
}

/* A host name must be one field of the table: non-empty, no blanks. */
static const char *bad_hostname(const char *h)
{
	if (*h == '\0')
		return "it is empty";
	for (const unsigned char *p = (const unsigned char *) h; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return "it holds a blank or control character";
	return NULL;
}

/* Waits, sleeping, until every rank arrives. */
static void barrier_sleeping(void)
{
	MPI_Request req;
	MPI_Ibarrier(MPI_COMM_WORLD, &req);
	wait_sleeping(&req);
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "ovnisync") == 0)
		progname = "ovnisync";

	/* Options first, without MPI: -h and usage errors need no launcher. */
	long erank = env_rank();
	struct options opt;
	int pr = parse_options(argc, argv, &opt, erank > 0);
	if (pr != 0)
		return pr > 0 ? 0 : 2;

	MPI_Init(&argc, &argv);
	int rank, nranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	char host[HOST_LEN];
	memset(host, 0, sizeof host);
	if (gethostname(host, sizeof host - 1) != 0) {
		fprintf(stderr, "%s: rank %d: gethostname failed (%s)\n", progname, rank,
				strerror(errno));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	char (*hosts)[HOST_LEN] = NULL;
	struct offset *off = NULL, *first = NULL;
	double *samples = NULL;
	int status = 0;
	struct outfile out = { 0 };
	if (rank == 0) {
		hosts = calloc((size_t) nranks, sizeof *hosts);
		off = calloc((size_t) nranks, sizeof *off);
		first = calloc((size_t) nranks, sizeof *first);
		samples = malloc((size_t) opt.nsamples * sizeof *samples);
		if (hosts == NULL || off == NULL || first == NULL || samples == NULL) {
			err_msg("out of memory (%d ranks, %d samples)", nranks, opt.nsamples);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	MPI_Gather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		for (int r = 0; r < nranks && status == 0; r++) {
			const char *why = bad_hostname(hosts[r]);
			if (why != NULL) {
				err_msg("rank %d: host name '%s' cannot be written into %s: %s", r,
						hosts[r], opt.output, why);
				status = 1;
			}
		}
		if (status == 0 && out_open(&out, opt.output) != 0)
			status = 1;
	}
	/* Everyone learns whether rank 0 can go on. */
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);

	int rounds = opt.drift ? 2 : opt.ndrift;
	for (int round = 0; status == 0 && round < rounds; round++) {
		if (rank != 0) {
			answer_pings(opt.nsamples);
			continue;
		}
		if (round > 0 && opt.wait > 0)
			sleep((unsigned) opt.wait);
		off[0] = (struct offset) { 0.0, 0.0, 0.0, now_ns() };
		for (int r = 1; r < nranks; r++) {
			measure_rank(r, opt.nsamples, samples, opt.verbose, &off[r]);
			if (opt.verbose)
				printf("rank %d (%s): median %" PRId64 " ns, mean %f ns, std %f ns\n", r,
						hosts[r], applied(&off[r]), off[r].mean, off[r].std);
		}
		if (opt.drift) {
			if (round == 0) {
				memcpy(first, off, (size_t) nranks * sizeof *off);
			} else {
				write_table(out.f, nranks, hosts, first);
				if (write_drift_section(out.f, nranks, hosts, first, off,
							opt.verbose) != 0)
					status = 1;
			}
		} else if (opt.ndrift > 1) {
			if (round == 0)
				write_drift_header(out.f, nranks, hosts);
			write_drift_row(out.f, nranks, wall_seconds(), off);
		} else {
			write_table(out.f, nranks, hosts, off);
		}
		if (opt.verbose)
			fflush(stdout);
	}
	if (rank == 0 && status != 0)
		out_discard(&out);
	if (rank == 0 && status == 0) {
		if (out_commit(&out) != 0)
			status = 1;
		else if (opt.verbose)
			printf("wrote %s (%d ranks)\n", opt.output, nranks);
	}
	barrier_sleeping();
	free(hosts);
	free(off);
	free(first);
	free(samples);
	MPI_Finalize();
	return rank == 0 ? status : 0;
}
