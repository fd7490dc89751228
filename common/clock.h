/*
 * common/clock.h - the one place the program reads its clocks.
 *
 * Monotonic time measures durations and deadlines (never steps back); wall
 * time (CLOCK_REALTIME) is for what people and other machines read: log and
 * audit timestamps, period windows that must line up with the calendar.
 */
#ifndef SLUICE_COMMON_CLOCK_H
#define SLUICE_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, into <ts> (0 on the impossible failure). */
void clock_mono(struct timespec *ts);
/* CLOCK_MONOTONIC now in milliseconds, microseconds or nanoseconds. */
uint64_t clock_mono_ms(void);
uint64_t clock_mono_us(void);
uint64_t clock_mono_ns(void);
/* CLOCK_MONOTONIC now in whole seconds. */
uint64_t clock_mono_s(void);
/* Milliseconds from the monotonic instant <t0> to now (negative if <t0> is later). */
int64_t clock_ms_since(const struct timespec *t0);
/* Seconds from <a> to <b> as a double. */
double clock_ts_diff(const struct timespec *a, const struct timespec *b);

/* CLOCK_REALTIME now, into <ts>. */
void clock_wall(struct timespec *ts);
/* CLOCK_REALTIME now in milliseconds since the epoch. */
uint64_t clock_wall_ms(void);

#endif
