/*
 * common/log.h - operator log (stderr or syslog-style lines), relayd's API.
 *
 * log_warn appends strerror(errno); log_warnx does not.  fatal/fatalx exit(1).
 * Never pass secret values or unescaped peer bytes: use log_escape() for the
 * latter.  Lines from connection code start with the connection id ("c42: ").
 */
#ifndef SLUICE_COMMON_LOG_H
#define SLUICE_COMMON_LOG_H

#include <stddef.h>

#define LOG_FMT(a, b) __attribute__((format(printf, a, b)))

/*
 * <verbose>: 0 info, 1 debug. Thread-safe (one write(2) per line).  When
 * stderr is the journal stream systemd gave us (log_journal_stream), every
 * line from then on starts with its priority: <3> fatal, <4> warning,
 * <6> info, <7> debug.
 */
void log_init(const char *progname, int verbose);
/* 1 when $JOURNAL_STREAM ("DEV:INODE") is the file stderr refers to now, else 0. */
int log_journal_stream(void);
void log_warn(const char *fmt, ...) LOG_FMT(1, 2);
void log_warnx(const char *fmt, ...) LOG_FMT(1, 2);
void log_info(const char *fmt, ...) LOG_FMT(1, 2);
void log_debug(const char *fmt, ...) LOG_FMT(1, 2);
__attribute__((noreturn)) void fatal(const char *fmt, ...) LOG_FMT(1, 2);
__attribute__((noreturn)) void fatalx(const char *fmt, ...) LOG_FMT(1, 2);

/*
 * Copies <len> peer-controlled bytes from <in> into <out> (capacity <cap>,
 * always NUL-terminated), escaping anything outside printable ASCII and
 * backslash/quote as \xHH.  Truncates with "..." when <out> is too small.
 * Returns <out>.
 */
char *log_escape(char *out, size_t cap, const char *in, size_t len);

#endif
