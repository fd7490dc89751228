/*
 * common/log.c - operator log on stderr, one write(2) per line.  Under systemd
 * (JOURNAL_STREAM names the stderr we write to) each line starts with its
 * syslog priority, "<4>" for a warning, so journald keeps the level.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "common/clock.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/sluice.h"

static const char *log_prog = "sluice";
static int log_verbose;
static int log_journal;

/* syslog(3) priorities, as sd-daemon.h's SD_ERR .. SD_DEBUG prefixes */
enum log_prio {
	LOG_PRIO_ERR = 3,
	LOG_PRIO_WARNING = 4,
	LOG_PRIO_INFO = 6,
	LOG_PRIO_DEBUG = 7,
};

/*
 * systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected to
 * stderr; a child whose stderr was redirected elsewhere inherits the variable,
 * so it counts only when stderr is still that stream (sd_journal_stream_fd(3)).
 */
int
log_journal_stream(void)
{
	const char *v = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (v == NULL || sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) != 2 || fstat(STDERR_FILENO, &st) == -1)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, int verbose)
{
	log_prog = progname;
	log_verbose = verbose;
	log_journal = log_journal_stream();
}

static void __attribute__((format(printf, 4, 0)))
vlog(enum log_prio prio, const char *level, int with_errno, const char *fmt, va_list ap)
{
	char line[2048];
	int saved = errno, n, m;
	struct timespec ts;
	struct tm tm;

	clock_wall(&ts);
	gmtime_r(&ts.tv_sec, &tm);
	/* "<N>" only for journald; it must be the first thing on the line */
	n = log_journal ? snprintf(line, sizeof(line), "<%d>", (int)prio) : 0;
	m = snprintf(line + n, sizeof(line) - n, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s: ",
	             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	             ts.tv_nsec / 1000000, log_prog, (int)getpid(), level);
	if (m < 0 || (size_t)(n + m) >= sizeof(line))
		m = 0;
	n += m;
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(line) - 2)
		n = sizeof(line) - 2;
	if (with_errno) {
		m = snprintf(line + n, sizeof(line) - n, ": %s", strerror(saved));
		if (m > 0)
			n += m;
		if ((size_t)n >= sizeof(line) - 2)
			n = sizeof(line) - 2;
	}
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) == -1) {
		/* nowhere left to report it */
	}
	errno = saved;
}

#define LOGFN(name, prio, level, err)      \
	void name(const char *fmt, ...)        \
	{                                      \
		va_list ap;                        \
		va_start(ap, fmt);                 \
		vlog(prio, level, err, fmt, ap);   \
		va_end(ap);                        \
	}

LOGFN(log_warn, LOG_PRIO_WARNING, "warning", 1)
LOGFN(log_warnx, LOG_PRIO_WARNING, "warning", 0)
LOGFN(log_info, LOG_PRIO_INFO, "info", 0)

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	vlog(LOG_PRIO_DEBUG, "debug", 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_PRIO_ERR, "fatal", 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_PRIO_ERR, "fatal", 0, fmt, ap);
	va_end(ap);
	exit(1);
}

char *
log_escape(char *out, size_t cap, const char *in, size_t len)
{
	size_t o = 0, i, total = 0, reserve;

	if (cap == 0)
		return out;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		total += (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') ? 1 : 4;
	}
	reserve = total < cap ? 1 : 4;  /* room for "..." only when truncating */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		size_t need = (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') ? 1 : 4;

		if (o + need + reserve > cap) {
			if (o + 4 <= cap) {
				memcpy(out + o, SLUICE_LIT("..."));
				o += 3;
			}
			break;
		}
		if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			hex_pair(out + o, c, 0);
			o += 2;
		}
	}
	out[o < cap ? o : cap - 1] = '\0';
	return out;
}
