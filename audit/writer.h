/*
 * audit/writer.h - the audit log WRITER as the gateway uses it: one record
 * (struct audit_rec) and the calls workers and the main thread make
 * (audit/writer.c, writer_thread.c, chain.c, file.c, export.c, sd.c, ocsf.c; library
 * sluice_audit_writer).  The record format it shares with the reader is
 * audit/format.h.  It knows no policy and no gateway: its settings come in
 * as struct audit_opts, and what counts its records is a callback.
 */
#ifndef SLUICE_AUDIT_WRITER_H
#define SLUICE_AUDIT_WRITER_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <event2/event.h>
#include "audit/format.h"

/* ---- the tamper-evident audit log (docs/audit-schema.md) ---- */

/*
 * One audit record.  Which members are written depends on <kind> (see
 * audit_rec_format).  NULL strings and negative numbers are omitted.  A
 * connection with verdict deny is written as a "denial".  Fields a kind does
 * not write (a response's host) may still be set: metrics_audit reads them.
 */
struct audit_rec {
	enum audit_kind kind;
	const char *sandbox;      /* NULL: "-" (records no sandbox caused) */
	const char *id;           /* request id "<conn>-<n>" (request, response, exfiltration_attempt, scrub) */
	const char *client;
	const char *dest;
	const char *sni;
	const char *host;
	const char *method;
	const char *path;
	const char *http_version;
	enum audit_verdict verdict;
	const char *rule;
	const char *reason;
	int status;               /* -1: none */
	int http_status;          /* request: the HTTP status the answer had, when not <status> (a denial answered
	                           * as a JSON-RPC error at 200 on an MCP endpoint); 0: <status> */
	int64_t bytes_up;
	int64_t bytes_down;
	int64_t duration_ms;
	int upstream_tls;         /* -1: not applicable */
	uint64_t conn_id;         /* 0: none */
	const char *event;        /* "exfiltration_attempt" on such records (metrics; not written) */
	const char *secret;       /* exfiltration_attempt: the secret and where its placeholder was */
	const char *place;
	const char *const *secret_names;  /* secrets injected: names and places (never values) */
	const char *const *secret_places;
	size_t nsecrets;
	const char *const *scrubbed;      /* secrets whose values were scrubbed from the response */
	size_t nscrubbed;
	const char *dns_qtype;            /* type "dns": the question's type ("A", "AAAA", "TYPE15") */
	const char *dns_answer;           /* ... and the answer ("A 198.18.0.7", "NXDOMAIN", ...) */
	const char *result;               /* config_reload: "ok" / "error", with <generation>, <error> */
	int64_t generation;
	const char *error;
	int64_t warnings;                 /* config_reload: the new policy's warnings (count); -1: none given */
	const char *decision;             /* approval: "approved", "rejected", "timeout", "shutdown", "cancelled" */
	const char *by;                   /* approval: who decided ("uid:N(name)", "timeout", "shutdown", "client") */
	const char *body_sha256;          /* approval: hex SHA-256 of the held body the decision binds */
	const char *request_id;           /* approval: the held request's id (<id> is the approval's) */
	const char *gateway;              /* approval: the gateway that held it, when another (a fleet decision made
	                                   * here); NULL: omitted */
	/* request (issue 6, proxy/judge/semantic.c): the semantic decision's members; NULL: omitted */
	const char *mode;                 /* "report": the request passed only because of report mode */
	const char *report_verdict;       /* "report":{"verdict","rule","reason"}: what a report-mode rule, */
	const char *report_rule;          /* or enforcement on a host in report mode, would have done */
	const char *report_reason;
	const char *limit_key;            /* "limit":{"key","kind","retry_after","reset"}: the counter that refused (429) */
	const char *limit_kind;           /* "rate" / "budget" */
	int64_t limit_retry_after;        /* seconds */
	const char *limit_reset;          /* RFC 3339 UTC */
	const char *hold_id;              /* "hold":{"id","outcome","by"}: the approval the request waited for */
	const char *hold_outcome;         /* approvals_decision_name() */
	const char *hold_by;
	const char *budget_key;           /* "budget":{"key","amount"}: the budget this request took from */
	const char *budget_amount;        /* its amount, a decimal */
	/* request on an MCP endpoint (issue 23, proxy/judge/mcp_req.c); NULL: omitted */
	const char *mcp_method;           /* "mcp_method": the JSON-RPC method */
	const char *mcp_answers;          /* "mcp_answers": a response POSTed: the server request's method it answers */
	const char *mcp_tool;             /* "tool": params.name, or params.uri of resources/read */
	const char *mcp_rpc_id;           /* "rpc_id": the id as JSON text (written as is) */
	const char *mcp_args;             /* "args": the clear values of the rule's audit: paths, a JSON object text */
	const char *mcp_batch;            /* "mcp_batch": a batch's elements, a JSON array text */
	/* "args_hmac": the writer thread fingerprints these with the record's key (audit_args_hmac): one per
	 * placeholder (AUDIT_ARGS_HMAC_PH) in the record, in order: a single message's (written by the formatter
	 * when mcp_batch is NULL) or those inside mcp_batch; an entry NULL is fingerprinted as {} */
	const struct json_t *const *mcp_hmac_args;
	size_t mcp_nhmac;
	const char *limits_counted;       /* "local": state.on_error: local counted a limit with this gateway's own
	                                   * counters (the shared ones did not answer); NULL: omitted */
	int64_t suppressed;               /* denial "audit.refusals": refusals on the connection not recorded one by one; 0: omitted */
	/* response (issue 23, proxy/judge/mcp_resp.c): an MCP list result filtered; NULL / 0: omitted */
	const char *mcp_list;             /* "mcp_method": the list method answered */
	int64_t mcp_removed;              /* "removed": entries the filter removed */
};

/*
 * The placeholder of an "args_hmac" member in a record's text: the writer
 * thread puts the fingerprint in place of its zeros, or removes the member
 * (no key file, or the fingerprint cannot be made).  It cannot occur in any
 * other member: every other string is JSON-escaped (its quotes are \").
 */
#define AUDIT_ARGS_HMAC_ZEROS "0000000000000000000000000000000000000000000000000000000000000000"
#define AUDIT_ARGS_HMAC_PH ",\"args_hmac\":\"" AUDIT_ARGS_HMAC_ZEROS "\""
#define AUDIT_ARGS_HMAC_AT 14   /* the offset of its zeros */
#define AUDIT_ARGS_PER_REC 64   /* fingerprints of one record, at most (a batch's elements) */

/* A record of kind <k> with every optional number "none" (-1); set the members it has after this. */
#define AUDIT_REC_INIT(k)                                                                                    \
	((struct audit_rec){.kind = (k), .status = -1, .bytes_up = -1, .bytes_down = -1, .duration_ms = -1,   \
	                    .upstream_tls = -1, .limit_retry_after = -1, .generation = -1, .warnings = -1})

/*
 * What the log reports of each record it is given (audit_write), for the
 * gateway's /metrics: called on the writing thread, before the record is
 * queued, with <arg> as given to audit_open.  The audit queue calls no
 * counter of its own, so it sits below metrics (docs/architecture.md).
 */
typedef void (*audit_count_cb)(void *arg, const struct audit_rec *rec);

/*
 * The writer's settings: the audit.* keys of the configuration
 * (policy_audit_opts fills them from a loaded one).  Strings are borrowed
 * for the audit_open call only (it copies what it keeps).
 */
struct audit_opts {
	const char *file;             /* audit.file; NULL: no log (records are only counted) */
	const char *key_file;         /* audit.key_file; NULL: records carry no mac */
	const char *checkpoint_file;  /* audit.checkpoint_file; NULL: checkpoints go to syslog only */
	unsigned fsync_ms;            /* audit.fsync; 0: fsync after every write */
	unsigned checkpoint_ms;       /* audit.checkpoint_interval */
	uint64_t rotate_size;         /* audit.rotate.size in bytes; 0: never by size */
	unsigned rotate_ms;           /* audit.rotate.every; 0: never by age */
	int syslog;                   /* audit.syslog.enabled: every line also to syslog (RFC 5424) */
	const char *syslog_address;   /* audit.syslog.address; NULL: "local" */
	const char *syslog_enterprise; /* audit.syslog.enterprise: the SD-ID's number; NULL: 32473 */
	const char *ocsf_file;        /* audit.ocsf.file: OCSF events, one a line; NULL: none */
	unsigned queue;               /* audit.queue; 0: 65536 */
};

/*
 * 0 when <s> is an enterprise number for audit.syslog.enterprise, the SD-ID
 * "sluice@<s>": digits in dot-separated parts ("32473", "32473.1.2"), at most
 * AUDIT_SD_PEN_MAX characters; else -1.  Inline: the loader (policy/config.c)
 * checks the key with it and links no writer.
 */
#define AUDIT_SD_PEN_MAX 25  /* 32 (SD-NAME) - sizeof("sluice@") + 1 */
static inline int
audit_sd_enterprise_ok(const char *s)
{
	size_t i, n = strlen(s);
	int digit = 0;

	if (n == 0 || n > AUDIT_SD_PEN_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digit = 1;
		else if (s[i] == '.' && digit)
			digit = 0;
		else
			return -1;
	}
	return digit ? 0 : -1;
}

/*
 * Opens the audit log of <opts> (audit.file and the other audit.* keys):
 * recovers the file after a crash (a partial last line is cut off and
 * reported in the start record; an unreadable last record refuses), reads
 * and evolves the key file.  With no audit.file the log is off: records are
 * only counted (<count> with <count_arg>, borrowed; NULL: not counted).  NULL with *<err> on failure
 * (static text, valid until the next call).  Main thread, before any other
 * audit call.
 */
struct audit *audit_open(const struct audit_opts *opts, const char *config_path, audit_count_cb count,
                         void *count_arg, const char **err);
/* Starts the writer thread and queues the start record.  0, or -1 with *<err>. */
int audit_start(struct audit *a, const char **err);
/*
 * Queues <rec> (any thread): its members are formatted here, its seq, prev
 * and mac are added by the writer thread in seq order.  Returns its seq, or
 * 0 when it was not queued: the log is off, or the queue is at audit.queue
 * (then the gateway is failing closed and the record is counted as lost).
 * A request's record must be written before its first byte goes upstream:
 * see audit_park.
 */
uint64_t audit_write(struct audit *a, const struct audit_rec *rec);
/* 1 when audit.file is set (records are written), 0 when the log is off. */
int audit_enabled(struct audit *a);
/* 1 when the log takes new work (writable, queue below audit.queue, or off); 0: refuse new requests (503). */
int audit_healthy(struct audit *a);
/* Records queued or being written, not yet in the file. */
size_t audit_queue_depth(struct audit *a);
/* Failed write(2)/fsync(2) calls plus records dropped because the queue was full. */
uint64_t audit_write_errors(struct audit *a);
/* Lines the syslog copy dropped (collector down or slow), and OCSF events not written; 0 when off. */
uint64_t audit_syslog_dropped(struct audit *a);
uint64_t audit_ocsf_errors(struct audit *a);
/* 1 when record <seq> is in the file (0 and the log off count as written). */
int audit_written(struct audit *a, uint64_t seq);
/*
 * Worker threads: audit_worker_attach() once the thread's <base> exists,
 * audit_worker_detach() at its end.  In between, audit_park() waits for
 * record <seq>: 1 when it is written already (go on), 0 when parked: the
 * writer wakes the thread and <resume>(<arg>) runs on it once the record is
 * in the file.  audit_unpark(<arg>) cancels every wait of <arg> (a
 * connection going away must call it).
 */
void audit_worker_attach(struct audit *a, struct event_base *base);
void audit_worker_detach(void);
int audit_park(struct audit *a, uint64_t seq, void (*resume)(void *), void *arg);
void audit_unpark(void *arg);
/*
 * A passthrough tunnel may move client bytes once the connection record
 * that allowed it (type "connection", verdict "allow", conn <conn_id>,
 * queued on this thread) is written: 0 go on, 1 parked (<resume>(<arg>)
 * follows).
 */
int audit_conn_gate(struct audit *a, uint64_t conn_id, void (*resume)(void *), void *arg);
/* SIGUSR1 (any thread): the writer rotates the file (or reopens it, when logrotate moved it). */
void audit_rotate(struct audit *a);
/* Queues the stop record (<reason>), writes everything, fsyncs and stops the writer.  Idempotent. */
void audit_stop(struct audit *a, const char *reason);
/* Stops (if needed) and frees; the key is wiped.  NULL is fine. */
void audit_close(struct audit *a);

#endif
