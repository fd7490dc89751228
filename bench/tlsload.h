/*
 * bench/tlsload.h - private to the tlsload benchmark tool: what tlsload.c
 * (event loop, slots, TLS) and tlsload_report.c (command line, usage, error
 * lines, latency samples, percentiles, results) share.  No globals cross the
 * two files; the options and the counters are passed by pointer.
 */
#ifndef SLUICE_BENCH_TLSLOAD_H
#define SLUICE_BENCH_TLSLOAD_H

#include <stdint.h>
#include <sys/socket.h>

#define SLOTS_MAX 20000          /* -C and idle -N bound */

enum tl_mode { TL_MODE_NEWCONN = 1, TL_MODE_LATENCY, TL_MODE_IDLE };

/* The command line, validated. */
struct tl_opts {
	enum tl_mode mode;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	const char *name;        /* SNI and the name verified; borrowed from argv */
	const char *cafile;
	const char *path;
	const char *header;      /* one extra request header line ("Name: value"), or NULL */
	unsigned conc;
	double dur;
	unsigned long count;
	double hold;
};

/* What the event loop counts; the result lines print it. */
struct tl_counts {
	unsigned long ok;        /* complete 200 responses */
	unsigned long err;       /* failed connections or requests */
	unsigned long started;   /* connections started */
	uint64_t bytes_in;       /* decrypted bytes read */
};

/* Prints the usage text to stderr and exits with status 2. */
_Noreturn void report_usage(void);

/*
 * Fills <o> from <argv> (argv[1] is the mode).  On any invalid or missing
 * option it calls report_usage(), so it returns only with <o> valid.
 */
void report_opts_parse(int argc, char **argv, struct tl_opts *o);

/*
 * Prints "tlsload: error in state <state>: <what>" plus the last OpenSSL
 * error, for the first few errors only, and clears OpenSSL's error queue.
 */
void report_error(const char *state, const char *what);

/* Allocates the latency sample store.  Returns 0, or -1 if out of memory. */
int report_samples_init(void);

/* Records a latency of <ns> nanoseconds; dropped once the store is full. */
void report_sample_add(uint64_t ns);

/* Idle mode: the line printed once all connections are open, then flushed. */
void report_ready_print(const struct tl_counts *c, unsigned alive, double setup_s);

/* Idle mode: the final line. */
void report_idle_print(const struct tl_counts *c, unsigned alive);

/*
 * Newconn and latency modes: sorts the samples and prints the final line.
 * <el> is the elapsed time in seconds.
 */
void report_newconn_print(const struct tl_counts *c, double el);
void report_latency_print(const struct tl_counts *c, double el);

#endif
