/*
 * sandbox-glue/run_int.h - what the parts of `sluice run` share (run.c: the
 * common path; run_netns.c: bubblewrap; run_vm.c: QEMU and Firecracker on a
 * tap; run_console.c: the VM's serial console).  Internal to sandbox-glue.
 */
#ifndef SLUICE_SANDBOX_RUN_INT_H
#define SLUICE_SANDBOX_RUN_INT_H

#include <stddef.h>
#include <stdint.h>
#include "sandbox-glue/netns.h"
#include "sandbox-glue/run.h"

/* One run, whatever the backend: run_sandbox makes it, a backend fills it, run_sandbox tears it down. */
struct run_common {
	const struct run_opts *o;
	struct netns_sandbox sb;      /* lock, addresses, table, veth or tap, VM directory */
	const char *backend;          /* "netns", "qemu" or "firecracker": what the gateway is told */
	int registered;               /* POST /sandboxes succeeded: DELETE at the end */
	int sfd;                      /* signalfd for SIGINT, SIGTERM, SIGHUP and SIGCHLD (all blocked) */
	int dns_sink;                 /* the UDP socket standing in for a missing DNS responder, or -1 */
	uint64_t t_in;                /* run_sandbox entered */
	uint64_t t_claim, t_net, t_reg; /* claim, network and registration done */
};

/* "sluice run: " <fmt> "\n" on stderr. */
void run_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* milliseconds from <a> to <b> (0 when b <= a) */
double run_ms(uint64_t a, uint64_t b);

/*
 * The start every backend shares: a UDP sink when there is no DNS responder,
 * netns_claim (stale cleanup, index, lock), the stale registrations removed
 * at our gateway.  Sets c->t_claim.  0, or SLUICE_E* (message printed).
 */
int run_claim(struct run_common *c);

/* POST /sandboxes with c->backend (when there is an admin socket); sets c->t_reg.  0 or SLUICE_E* (printed). */
int run_register(struct run_common *c);

/* The status `sluice run` returns when SIGINT, SIGTERM or SIGHUP is pending (128+N), else 0. */
int run_pending_signal(void);

/* The backends: each returns what `sluice run` exits with, its own processes reaped. */
int run_netns(struct run_common *c);
int run_vm(struct run_common *c);

/* ---------------------------------------------------------------- the VM's serial console */

#define RUN_CONSOLE_LINE_MAX 4096    /* bytes of one console line judged whole; longer ones are passed on in
                                        pieces, unjudged */
#define RUN_CONSOLE_EARLY_MAX 24     /* boot lines kept, to show when the command never started */
#define RUN_CONSOLE_EARLY_LINE 160   /* bytes kept of each */
#define RUN_CONSOLE_START "sluice-init: ready"  /* vm-init.sh's line just before it runs the command */
#define RUN_CONSOLE_EXIT "SLUICE_EXIT "         /* vm-init.sh's last line: "SLUICE_EXIT <0..255>" */

enum run_console_to {
	RUN_CONSOLE_STDOUT = 1,      /* the command's output */
	RUN_CONSOLE_STDERR = 2,      /* the guest kernel, /init, the monitor's log: prefixed "sluice run: guest: " */
};

/* Called with one line (without its end) or piece; <nl>: a line end follows. */
typedef void run_console_emit_fn(void *arg, enum run_console_to to, const char *p, size_t len, int nl);

/*
 * The console as the guest writes it (its tty turns "\n" into "\r\n"), cut
 * into lines:
 *   - "SLUICE_EXIT n" (0..255, nothing else on the line) is never passed on;
 *     status becomes n: the last one counts, since /init prints its own after
 *     the command (the command can print one too, but only lies about itself);
 *   - before RUN_CONSOLE_START (the kernel, /init's boot) lines are kept, the
 *     last RUN_CONSOLE_EARLY_MAX of them, for run_console_end; /init's
 *     "sluice-init: error: ..." lines go to stderr at once; the start line
 *     itself is not passed on and sets started and started_now;
 *   - after it, the guest kernel's lines ("[ seconds.micros] ...") go to
 *     stderr (and are dropped once a SLUICE_EXIT came: the power-off
 *     messages), /init's ("sluice-init: ...") too, and with <firecracker>
 *     Firecracker's own log lines ("YYYY-MM-DDTHH:MM:SS.nnn [...") as well;
 *     every other line goes to stdout, a trailing "\r" removed.
 */
struct run_console {
	run_console_emit_fn *emit;
	void *arg;
	int firecracker;
	int started;                 /* RUN_CONSOLE_START seen */
	int started_now;             /* set when it was seen: the caller reads and clears it (timing) */
	int status;                  /* the last SLUICE_EXIT, -1 when none */
	char _line[RUN_CONSOLE_LINE_MAX];
	size_t _len;
	int _piece;                  /* the current line was over the bound: its rest goes on unjudged */
	char _early[RUN_CONSOLE_EARLY_MAX][RUN_CONSOLE_EARLY_LINE];
	unsigned _nearly;            /* early lines seen (the ring holds the last RUN_CONSOLE_EARLY_MAX) */
};

void run_console_init(struct run_console *c, run_console_emit_fn *emit, void *arg, int firecracker);
/* Feeds <n> bytes of console output. */
void run_console_feed(struct run_console *c, const char *p, size_t n);
/* The console ended: an unfinished last line is judged; without a start, the kept boot lines go to stderr. */
void run_console_end(struct run_console *c);

#endif
