/*
 * sandbox-glue/run_console.c - a VM's serial console cut into lines: the
 * command's output, the exit status, the start marker (see run_int.h).
 *
 * Everything here comes from the guest, which is hostile: lines are bounded
 * (RUN_CONSOLE_LINE_MAX), the status is parsed strictly, and nothing a line
 * says can do more than decide where the guest's own bytes go and what it
 * claims its command returned.
 */
#include <string.h>
#include "common/sluice.h"
#include "run_int.h"

void
run_console_init(struct run_console *c, run_console_emit_fn *emit, void *arg, int firecracker)
{
	memset(c, 0, sizeof(*c));
	c->emit = emit;
	c->arg = arg;
	c->firecracker = firecracker;
	c->status = -1;
}

static int
starts(const char *p, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	return n >= l && memcmp(p, lit, l) == 0;
}

static int
digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* "SLUICE_EXIT n", n 0..255 in 1..3 digits and nothing after: n, else -1 */
static int
exit_line(const char *p, size_t n)
{
	size_t l = strlen(RUN_CONSOLE_EXIT), i;
	int v = 0;

	if (!starts(p, n, RUN_CONSOLE_EXIT) || n == l || n > l + 3)
		return -1;
	for (i = l; i < n; i++) {
		if (!digit(p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v <= 255 ? v : -1;
}

/* the kernel's printk prefix: "[", blanks, digits, ".", digits, "]" */
static int
kernel_line(const char *p, size_t n)
{
	size_t i = 1, d;

	if (n < 4 || p[0] != '[')
		return 0;
	while (i < n && p[i] == ' ')
		i++;
	for (d = i; i < n && digit(p[i]); i++)
		;
	if (i == d || i >= n || p[i++] != '.')
		return 0;
	for (d = i; i < n && digit(p[i]); i++)
		;
	return i > d && i < n && p[i] == ']';
}

/* Firecracker's log prefix: "YYYY-MM-DDTHH:MM:SS" then '.' */
static int
firecracker_line(const char *p, size_t n)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.";
	size_t i;

	if (n < sizeof(shape) - 1)
		return 0;
	for (i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] == 'd' ? !digit(p[i]) : p[i] != shape[i])
			return 0;
	return 1;
}

static void
early_keep(struct run_console *c, const char *p, size_t n)
{
	char *slot = c->_early[c->_nearly % RUN_CONSOLE_EARLY_MAX];

	if (n >= RUN_CONSOLE_EARLY_LINE)
		n = RUN_CONSOLE_EARLY_LINE - 1;
	memcpy(slot, p, n);
	slot[n] = '\0';
	c->_nearly++;
}

/* one whole line, its "\r"s at the end removed */
static void
judge(struct run_console *c, const char *p, size_t n)
{
	int st;

	while (n > 0 && p[n - 1] == '\r')
		n--;
	if ((st = exit_line(p, n)) >= 0) {
		c->status = st;
		return;
	}
	if (!c->started) {
		if (starts(p, n, RUN_CONSOLE_START)) {
			c->started = c->started_now = 1;
			return;
		}
		if (starts(p, n, "sluice-init: error:"))
			c->emit(c->arg, RUN_CONSOLE_STDERR, p, n, 1);
		else
			early_keep(c, p, n);
		return;
	}
	if (kernel_line(p, n)) {
		if (c->status < 0)
			c->emit(c->arg, RUN_CONSOLE_STDERR, p, n, 1);
		return;
	}
	if (starts(p, n, "sluice-init: ") || (c->firecracker && firecracker_line(p, n))) {
		c->emit(c->arg, RUN_CONSOLE_STDERR, p, n, 1);
		return;
	}
	c->emit(c->arg, RUN_CONSOLE_STDOUT, p, n, 1);
}

/* the line buffer is full without a line end: pass it on as a piece (or keep its start, before the command) */
static void
overflow(struct run_console *c)
{
	if (!c->_piece && !c->started)
		early_keep(c, c->_line, c->_len);
	else if (c->started)
		c->emit(c->arg, RUN_CONSOLE_STDOUT, c->_line, c->_len, 0);
	c->_piece = 1;
	c->_len = 0;
}

/* the end of a line whose start went on as pieces: the rest goes the same way, unjudged */
static void
piece_end(struct run_console *c)
{
	size_t n = c->_len;

	while (n > 0 && c->_line[n - 1] == '\r')
		n--;
	if (c->started)
		c->emit(c->arg, RUN_CONSOLE_STDOUT, c->_line, n, 1);
	c->_piece = 0;
	c->_len = 0;
}

void
run_console_feed(struct run_console *c, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl != NULL ? (size_t)(nl - p) : n, room = sizeof(c->_line) - c->_len;

		if (take >= room) {
			/* fill the buffer, pass it on, go on with the same line */
			memcpy(c->_line + c->_len, p, room);
			c->_len += room;
			p += room;
			n -= room;
			overflow(c);
			continue;
		}
		memcpy(c->_line + c->_len, p, take);
		c->_len += take;
		p += take;
		n -= take;
		if (nl == NULL)
			break;
		p++;  /* the '\n' */
		n--;
		if (c->_piece) {
			piece_end(c);
		} else {
			judge(c, c->_line, c->_len);
			c->_len = 0;
		}
	}
}

void
run_console_end(struct run_console *c)
{
	unsigned i, first;

	if (c->_piece)
		piece_end(c);
	else if (c->_len > 0)
		judge(c, c->_line, c->_len);
	c->_len = 0;
	if (c->started)
		return;
	first = c->_nearly > RUN_CONSOLE_EARLY_MAX ? c->_nearly - RUN_CONSOLE_EARLY_MAX : 0;
	for (i = first; i < c->_nearly; i++) {
		const char *l = c->_early[i % RUN_CONSOLE_EARLY_MAX];

		c->emit(c->arg, RUN_CONSOLE_STDERR, l, strlen(l), 1);
	}
	c->_nearly = 0;
}
