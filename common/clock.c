/*
 * common/clock.c - monotonic and wall clocks (clock.h).
 */
#include <string.h>

#include "common/clock.h"

/* clock_gettime cannot fail for these clocks and a valid pointer; zero stands in if it ever does */
static void
read_clock(clockid_t id, struct timespec *ts)
{
	if (clock_gettime(id, ts) == -1)
		memset(ts, 0, sizeof(*ts));
}

void
clock_mono(struct timespec *ts)
{
	read_clock(CLOCK_MONOTONIC, ts);
}

/* <id> now in nanoseconds (dividing it gives the same whole ms, us and s as the timespec's fields would) */
static uint64_t
now_ns(clockid_t id)
{
	struct timespec ts;

	read_clock(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
clock_mono_ms(void)
{
	return now_ns(CLOCK_MONOTONIC) / 1000000u;
}

uint64_t
clock_mono_us(void)
{
	return now_ns(CLOCK_MONOTONIC) / 1000u;
}

uint64_t
clock_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t
clock_mono_s(void)
{
	return now_ns(CLOCK_MONOTONIC) / 1000000000u;
}

int64_t
clock_ms_since(const struct timespec *t0)
{
	struct timespec now;

	read_clock(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

double
clock_ts_diff(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void
clock_wall(struct timespec *ts)
{
	read_clock(CLOCK_REALTIME, ts);
}

uint64_t
clock_wall_ms(void)
{
	return now_ns(CLOCK_REALTIME) / 1000000u;
}
