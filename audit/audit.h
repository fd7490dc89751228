/*
 * audit/audit.h - the audit log READER: line reading, record parsing, chain
 * verification, key files, checkpoints, query filters and terminal-safe
 * display.  The bytes it checks are fixed by docs/audit-schema.md and
 * audit/format.h, which the writer (audit/writer.h) shares; nothing here
 * writes a log.
 *
 * Everything read from a log is hostile: every line is bounded
 * (AUDIT_READ_LINE_MAX), every value shown on a terminal goes through
 * audit_term_escape(), and no input can make these functions abort.
 */
#ifndef SLUICE_AUDIT_AUDIT_H
#define SLUICE_AUDIT_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "audit/format.h"

#define AUDIT_READ_LINE_MAX (1024 * 1024)      /* bytes in one record line, without its "\n" */
#define AUDIT_SEQ_MAX ((int64_t)1 << 53)  /* larger seq values are refused as malformed */
#define AUDIT_KEY_EVOLVE_MAX ((int64_t)1 << 28) /* SHA-256 steps verify takes to reach one record's key */
#define AUDIT_CHECKPOINTS_MAX (4 * 1024 * 1024) /* checkpoint lines read from one file */
#define AUDIT_MSG_MAX 512                 /* one verify message */

/* ---- lines ---- */

/*
 * Finds the end of the first line of <buf>/<len> (a parser, STYLE.md 5):
 * returns the bytes consumed including the "\n", -2 when no "\n" came yet
 * (and the line may still fit), -1 when the line exceeds <max> bytes.
 */
long audit_line_split(const char *buf, size_t len, size_t max);

/* A line reader over a file descriptor, for files that may still grow (tail -f). */
struct audit_reader {
	int fd;
	char *buf;      /* <cap> + 1 bytes, owned */
	size_t cap;     /* the longest line accepted */
	size_t start, end;
	uint64_t lineno;  /* number of the line last returned (1-based) */
	int skipping;     /* inside a too-long line: dropping bytes up to its "\n" */
	int eof;          /* the last read returned 0 */
};

/* Initialises <r> over <fd> (borrowed; not closed by dispose), lines up to <cap> bytes. */
void audit_reader_init(struct audit_reader *r, int fd, size_t cap);
void audit_reader_dispose(struct audit_reader *r);
/*
 * The next complete line (without "\n") in *<line> and *<len>, valid until the next
 * call.  Returns 1 with a line; 0 when no complete line is available now (call
 * again once the file grew; audit_reader_pending() tells whether a partial line
 * waits); SLUICE_ETOOBIG when line r->lineno is longer than the cap (the reader
 * then skips it: the next call goes on after it); SLUICE_EIO on a read error.
 */
int audit_reader_next(struct audit_reader *r, const char **line, size_t *len);
/* Bytes of an incomplete line waiting after the last complete one. */
size_t audit_reader_pending(const struct audit_reader *r);

/* ---- keys (the line hash, the key evolution and the mac are audit/format.h's) ---- */


struct audit_key {
	int64_t seq;                   /* this is K_seq */
	uint8_t key[AUDIT_KEY_BYTES];  /* wipe with sluice_wipe() when done */
};

/*
 * Parses a key file's text "sluice-audit-key v1 <seq> <64 hex>\n" (the final
 * "\n" optional, nothing else allowed).  Returns 0, or SLUICE_EPARSE with *<err>
 * a static reason.
 */
int audit_key_parse(const char *buf, size_t len, struct audit_key *out, const char **err);
/*
 * The text of key file <k>, "sluice-audit-key v1 <seq> <64 hex>\n", into
 * <out>: returns its length, or -1 (and <out> wiped) when <cap> is too small
 * (AUDIT_KEY_FILE_MAX is enough).  The writer's key file and keygen's.
 */
int audit_key_format(const struct audit_key *k, char *out, size_t cap);
/* Reads and parses key file <path> (at most 256 bytes).  Returns 0 or a SLUICE_E* with *<err>. */
int audit_key_load(const char *path, struct audit_key *out, const char **err);
/*
 * Creates key file <path> (O_EXCL, mode 0600) holding K_1 from RAND_priv_bytes,
 * fsyncs it.  Returns 0, SLUICE_EEXIST when it exists, else a SLUICE_E* with *<err>.
 */
int audit_key_generate(const char *path, const char **err);
/*
 * Checks the mac of record <line>/<len> with K_<key->seq>: the line must end in
 * `,"mac":"<64 hex>"}`; the covered bytes are the line before that member,
 * then "}".  Returns 0 when it matches, 1 when it does not, -1 when the line
 * has no mac member in last position.
 */
int audit_mac_check(const struct audit_key *key, const char *line, size_t len);

/*
 * The audit fingerprint of an MCP message's arguments (params.arguments of a
 * tools/call or prompts/get), for the "args_hmac" member of the record it is
 * written into (docs/audit-schema.md):
 *
 *   K_args    = HMAC-SHA-256(K_seq, "sluice-mcp-args-v1")
 *   args_hmac = lowercase hex of HMAC-SHA-256(K_args, JCS(arguments))
 *
 * where <key> is K_seq, the mac key of that record (the writer's current
 * key: proxy/audit_chain.c), and JCS is RFC 8785 (common/jcs.h).  Keyed, so
 * that a reader of the log without the key file cannot test guesses of
 * small values; keyed with the record's evolving key, so that a key stolen
 * later cannot test guesses of earlier records either (an auditor holding
 * K_1 can: evolve it to K_seq).  The same arguments give different
 * fingerprints in different records.  <arguments> NULL (no arguments
 * member) is fingerprinted as {} (a server reads both alike).
 * Writes AUDIT_HASH_HEX digits and a NUL to <hex>.  Returns 0;
 * SLUICE_ETOOBIG when the canonical form exceeds AUDIT_ARGS_MAX or nests
 * deeper than JCS_DEPTH_MAX; SLUICE_EINVAL for text that is not UTF-8;
 * SLUICE_ENOMEM.  On an error <hex> is "" (the writer records null).
 * Thread-safe; no allocation but OpenSSL's MAC context.
 */
#define AUDIT_ARGS_LABEL "sluice-mcp-args-v1"
#define AUDIT_ARGS_MAX (16u * 1024 * 1024)  /* canonical bytes fingerprinted (a held body is at most 16 MiB) */
int audit_args_hmac(const uint8_t key[AUDIT_KEY_BYTES], const json_t *arguments, char hex[AUDIT_HASH_HEX + 1]);

/* ---- checkpoints ---- */

struct audit_checkpoint {
	int64_t seq;
	char hash[AUDIT_HASH_HEX + 1];
	uint64_t lineno;  /* where in the checkpoints file */
};

struct audit_checkpoints {
	struct audit_checkpoint *v;  /* sorted by seq (then file order), owned */
	size_t n, cap;
	char *path;                  /* for messages, owned */
};

/*
 * Adds every checkpoint in <buf>/<len>: each line (up to AUDIT_READ_LINE_MAX; longer
 * ones are ignored) holding ` seq=<N> hash=<64 hex>` (or starting with
 * `seq=`).  Call audit_checkpoints_sort() after the last buffer.  Returns the
 * number added, or SLUICE_ETOOBIG past AUDIT_CHECKPOINTS_MAX.
 */
long audit_checkpoints_parse(struct audit_checkpoints *cp, const char *buf, size_t len, uint64_t first_lineno);
void audit_checkpoints_sort(struct audit_checkpoints *cp);
/* Reads file <path> into <cp> (initialised to zero by the caller).  Returns 0 or a SLUICE_E* with *<err>. */
int audit_checkpoints_load(struct audit_checkpoints *cp, const char *path, const char **err);
void audit_checkpoints_dispose(struct audit_checkpoints *cp);

/* ---- verify ---- */

enum audit_fault {
	AUDIT_FAULT_NONE = 0,
	AUDIT_FAULT_EDITED,       /* a line no longer hashes to the next prev, a mac or checkpoint mismatch */
	AUDIT_FAULT_REMOVED,      /* seq jumps forward and the missing ones never come */
	AUDIT_FAULT_REORDERED,    /* seq goes backwards, repeats, or a missing one comes later */
	AUDIT_FAULT_TRUNCATED,    /* an incomplete line followed by more lines */
	AUDIT_FAULT_SHORT,        /* the log ends before a checkpoint's seq */
	AUDIT_FAULT_UNREADABLE,   /* a line too long, or a file that cannot be read */
};

struct audit_verify_opts {
	const struct audit_key *key;          /* NULL: macs not checked */
	const struct audit_checkpoints *cp;   /* NULL: none */
	int64_t evolve_max;                   /* 0: AUDIT_KEY_EVOLVE_MAX */
};

struct audit_verify;

/* A verifier over one chain; <opts> and what it points to are borrowed for its life. */
struct audit_verify *audit_verify_create(const struct audit_verify_opts *opts);
void audit_verify_destroy(struct audit_verify *v);
/* Lines that follow belong to file <name> (copied); line numbers restart at 1. */
void audit_verify_file(struct audit_verify *v, const char *name);
/*
 * Feeds line <lineno> of the current file (without its "\n").  <complete> is 0
 * for a last line that had no "\n".  Returns 0 to go on (the verdict may still
 * be open: a seq gap is "removed" or "reordered" depending on what follows),
 * 1 once the verdict is final (a fault: the caller may stop reading).
 */
int audit_verify_line(struct audit_verify *v, const char *line, size_t len, uint64_t lineno, int complete);
/* Line <lineno> of the current file exceeded AUDIT_READ_LINE_MAX (a fault).  Returns as audit_verify_line(). */
int audit_verify_too_long(struct audit_verify *v, uint64_t lineno);
/*
 * Ends the chain.  Returns the fault (AUDIT_FAULT_NONE for a good log), and
 * the seq it names in *<seq> (may be NULL).
 */
enum audit_fault audit_verify_finish(struct audit_verify *v, int64_t *seq);
/*
 * The report: for a fault, ONE line "FILE:LINE: seq N: <why>"; for a good log
 * "ok: N records, seq A..B, T1 .. T2, final hash H" then note lines, each
 * ending in "\n".  Valid until destroy.
 */
const char *audit_verify_report(struct audit_verify *v);

/* ---- records ---- */

/* One parsed line; strings point into <obj> (NULL when absent or not a string). */
struct audit_record {
	json_t *obj;            /* owned */
	int64_t seq;            /* -1 when absent */
	int64_t time_ms;        /* INT64_MIN when absent or unparsable */
	const char *time, *type, *sandbox, *host, *sni, *verdict, *id, *method, *path;
	enum audit_kind kind;   /* <type> parsed (audit_kind_parse): AUDIT_KIND_UNKNOWN when absent or unknown */
	enum audit_verdict verdict_kind;  /* <verdict> parsed: AUDIT_VERDICT_NONE when absent or another text */
	int64_t status;         /* -1 when absent */
};

/* Parses <line>/<len>; returns 0, or SLUICE_EPARSE (not a JSON object). */
int audit_record_parse(struct audit_record *rec, const char *line, size_t len);
void audit_record_dispose(struct audit_record *rec);

/*
 * Parses a time: RFC 3339 ("2026-12-01T04:07:07.123Z", "...+02:00", a bare
 * date "2026-12-01" meaning its midnight UTC), or a relative one: a number and
 * s, m, h, d or w, meaning that long before <now_ms>.  Writes milliseconds
 * since the epoch.  Returns 0 or SLUICE_EINVAL.
 */
int audit_time_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/*
 * Appends to <out> (<cap> bytes, always NUL-terminated) the string <s>/<n>
 * made harmless for a terminal: printable ASCII as is, '\\' as "\\\\", other
 * bytes below 0x20 and 0x7f as \xNN, code points U+0080..U+00FF (what the
 * writer's \u00XX escapes of raw bytes decode to) as \xNN, any other non-ASCII
 * code point as \u{X}, invalid UTF-8 bytes as \xNN.  At most <width> output
 * columns: a longer result ends in "...".  Returns the columns written.
 */
size_t audit_term_escape(char *out, size_t cap, const char *s, size_t n, size_t width);

/* ---- query ---- */

struct audit_filter {
	int64_t since_ms, until_ms;   /* INT64_MIN / INT64_MAX: no bound (both inclusive) */
	const char *sandbox, *host, *type, *verdict, *secret;  /* NULL: any */
	const char *tool;             /* NULL: any; else an MCP tool, prompt or resource the record (or its request) names */
	int status;                   /* -1 any; 100..599 exact; 1..5: the class Nxx */
};

void audit_filter_init(struct audit_filter *f);
/* Parses --status: "404" or "4xx".  Returns 0 or SLUICE_EINVAL. */
int audit_filter_status(struct audit_filter *f, const char *s);

/*
 * Remembers allowed requests by "id" so that the response, scrub and
 * exfiltration_attempt records naming the same id match --host, --sandbox
 * and --verdict as their request does, and show its method, host and path.
 * Bounded: the oldest entries are forgotten past AUDIT_JOIN_MAX.
 */
#define AUDIT_JOIN_MAX (256 * 1024)
struct audit_join;
struct audit_join *audit_join_create(void);
void audit_join_destroy(struct audit_join *j);
/* Learns from <rec> (a request: remembered; others: nothing). */
void audit_join_add(struct audit_join *j, const struct audit_record *rec);
/* The request <rec> refers to by "id", or NULL. */
const struct audit_record *audit_join_find(const struct audit_join *j, const struct audit_record *rec);

/*
 * 1 when <rec> names MCP tool (or prompt, or resource URI) <tool>: its "tool"
 * member, or one of its "mcp_batch" elements' (docs/audit-schema.md, the mcp
 * fields).
 */
int audit_record_has_tool(const json_t *obj, const char *tool);

/* 1 when <rec> (with its request <req>, may be NULL) passes every filter of <f>. */
int audit_filter_match(const struct audit_filter *f, const struct audit_record *rec, const struct audit_record *req);

/* Writes the table header / one row (escaped, aligned, "\n"-terminated) to <out>. */
void audit_table_header(FILE *out);
void audit_table_row(FILE *out, const struct audit_record *rec, const struct audit_record *req);

/* ---- summary ---- */

#define AUDIT_SUMMARY_SANDBOXES_MAX 4096  /* more are counted under "(other)" */
#define AUDIT_SUMMARY_NAMES_MAX 4096      /* hosts or secrets per sandbox; more under "(other)" */
struct audit_summary;
struct audit_summary *audit_summary_create(void);
void audit_summary_destroy(struct audit_summary *s);
/* Counts <rec> per sandbox, and, for a request naming MCP tools, per tool (each element of a batch). */
void audit_summary_add(struct audit_summary *s, const struct audit_record *rec);
/*
 * Prints the per-sandbox table (sandboxes sorted by name), then, when any
 * request named an MCP tool, the per-tool table: calls, denials, held
 * (approval asked), sandboxes that called it (tools sorted by name).
 */
void audit_summary_print(struct audit_summary *s, FILE *out);

#endif
