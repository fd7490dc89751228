/* common/log.c - operator log on stderr, one write(2) per line */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "common/log.h"

static const char *log_prog = "sluice";
static int log_verbose;

void
log_init(const char *progname, int verbose)
{
	log_prog = progname;
	log_verbose = verbose;
}

static void
vlog(const char *level, int with_errno, const char *fmt, va_list ap)
{
	char line[2048];
	int saved = errno, n, m;
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s: ",
	             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	             ts.tv_nsec / 1000000, log_prog, (int)getpid(), level);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
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

#define LOGFN(name, level, err)            \
	void name(const char *fmt, ...)        \
	{                                      \
		va_list ap;                        \
		va_start(ap, fmt);                 \
		vlog(level, err, fmt, ap);         \
		va_end(ap);                        \
	}

LOGFN(log_warn, "warning", 1)
LOGFN(log_warnx, "warning", 0)
LOGFN(log_info, "info", 0)

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	vlog("debug", 0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal", 1, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("fatal", 0, fmt, ap);
	va_end(ap);
	exit(1);
}

char *
log_escape(char *out, size_t cap, const char *in, size_t len)
{
	static const char hex[] = "0123456789abcdef";
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
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		if (need == 1) {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o < cap ? o : cap - 1] = '\0';
	return out;
}
