/*
 * Microbenchmarks for the co-run bench (bench/corun.py).
 *
 * One program, one workload per process, so that two of them can be
 * pinned to the machine's two cores and measured side by side:
 *
 *   corun chase MIB SECONDS      random pointer chase over MIB MiB,
 *                                one dependent load per access:
 *                                prints ns per access
 *   corun triad MIB SECONDS      STREAM-like a[i] = b[i] + s * c[i] over
 *                                three arrays of MIB MiB each: prints GB/s
 *                                (24 bytes counted per element, as STREAM)
 *   corun cpu 0 SECONDS          integer work in registers: prints
 *                                Mops per second
 *   corun service MIB SECONDS
 *                                request/response service: each request
 *                                does an exponentially distributed number
 *                                of lookups (mean REQ_LOOKUPS) in a MIB
 *                                MiB table; prints the service time of a
 *                                mean request in us
 *
 * Every rate is per second of the process's own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), not wall time, and is the median over short
 * chunks of work: the machine is shared, and a process descheduled by
 * someone else's job (which also refills the caches meanwhile) must not
 * look slowed by its co-runner. The service's chunk is a request (its
 * CPU time per lookup); its request sizes are seeded, so every run
 * replays the same requests. Its response time is the driver's: the
 * queue a fixed arrival rate would build on that service time
 * (bench/corun.py), not one replayed here, since a replayed queue turns
 * a burst of another tenant's traffic into a backlog that outlasts it.
 *
 * Protocol: after its setup (allocation, building the chase cycle) the
 * program prints "ready" and waits for one byte on stdin, so the driver
 * can start both members of a pair together; then it runs SECONDS of wall
 * time and prints one line "RESULT <value> <on-CPU share> ...": the
 * share of that wall time the process was on a CPU, which tells the driver
 * how much of the time the two members of a pair really ran together.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <unistd.h>

#define LINE 64
#define REQ_LOOKUPS 20000

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t xorshift(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A single random cycle through every cache line of the buffer
 * (Sattolo's shuffle), so each access depends on the one before and the
 * hardware prefetchers cannot guess the next line. */
static void **build_chase(size_t bytes)
{
    size_t n = bytes / LINE;
    char *buf = aligned_alloc(4096, n * LINE);
    size_t *order = malloc(n * sizeof(size_t));
    if (!buf || !order) {
        perror("alloc");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = xorshift() % i;
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        *(void **)(buf + order[i] * LINE) = buf + order[(i + 1) % n] * LINE;
    free(order);
    return (void **)buf;
}

#define MAX_CHUNKS 200000
static double chunk[MAX_CHUNKS];
static size_t n_chunks;

/* Record one chunk's cost (CPU seconds per unit of work). */
static void record(double value)
{
    if (n_chunks < MAX_CHUNKS)
        chunk[n_chunks++] = value;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_chunk(void)
{
    if (!n_chunks)
        return NAN;
    qsort(chunk, n_chunks, sizeof(double), cmp_double);
    return chunk[n_chunks / 2];
}

static double wall0, cpu0;

static void wait_start(void)
{
    char c;
    printf("ready\n");
    fflush(stdout);
    if (read(0, &c, 1) != 1)
        exit(1);
    wall0 = now(CLOCK_MONOTONIC);
    cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
}

/* Share of the wall time since the start that this thread was on a CPU. */
static double on_cpu(void)
{
    double wall = now(CLOCK_MONOTONIC) - wall0;
    return wall > 0 ? (now(CLOCK_THREAD_CPUTIME_ID) - cpu0) / wall : 0.0;
}

static void run_chase(size_t mib, double seconds)
{
    void **p = build_chase(mib << 20);
    /* Warm the cache and the TLB with one full lap. */
    size_t lap = (mib << 20) / LINE;
    for (size_t i = 0; i < lap; i++)
        p = (void **)*p;
    wait_start();
    double end = now(CLOCK_MONOTONIC) + seconds;
    while (now(CLOCK_MONOTONIC) < end) {
        double t0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < 20000; i++)
            p = (void **)*p;
        record((now(CLOCK_THREAD_CPUTIME_ID) - t0) / 20000);
    }
    printf("RESULT %.3f %.3f %p\n", median_chunk() * 1e9, on_cpu(),
           (void *)p);
}

static void run_triad(size_t mib, double seconds)
{
    size_t n = (mib << 20) / sizeof(double);
    double *a = aligned_alloc(4096, n * sizeof(double));
    double *b = aligned_alloc(4096, n * sizeof(double));
    double *c = aligned_alloc(4096, n * sizeof(double));
    if (!a || !b || !c) {
        perror("alloc");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    wait_start();
    double end = now(CLOCK_MONOTONIC) + seconds;
    const double s = 3.0;
    const size_t step = 1 << 16;
    while (now(CLOCK_MONOTONIC) < end) {
        for (size_t j = 0; j < n; j += step) {
            size_t stop = j + step < n ? j + step : n;
            double t0 = now(CLOCK_THREAD_CPUTIME_ID);
            for (size_t i = j; i < stop; i++)
                a[i] = b[i] + s * c[i];
            record((now(CLOCK_THREAD_CPUTIME_ID) - t0) / (stop - j));
        }
    }
    printf("RESULT %.3f %.3f %g\n", 24.0 / median_chunk() / 1e9, on_cpu(),
           a[n / 2]);
}

static void run_cpu(double seconds)
{
    wait_start();
    double end = now(CLOCK_MONOTONIC) + seconds;
    uint64_t x = 12345;
    while (now(CLOCK_MONOTONIC) < end) {
        double t0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < 100000; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        record((now(CLOCK_THREAD_CPUTIME_ID) - t0) / 100000);
    }
    printf("RESULT %.3f %.3f %llu\n", 1e-6 / median_chunk(), on_cpu(),
           (unsigned long long)x);
}

static double expo(double mean)
{
    double u = (xorshift() >> 11) * (1.0 / 9007199254740992.0);
    return -mean * log(1.0 - u);
}

static void run_service(size_t mib, double seconds)
{
    void **p = build_chase(mib << 20);
    size_t lap = (mib << 20) / LINE;
    for (size_t i = 0; i < lap; i++)
        p = (void **)*p;
    rng_state = 0x9E3779B97F4A7C15ULL;   /* same requests every run */
    wait_start();
    double end = now(CLOCK_MONOTONIC) + seconds;
    while (now(CLOCK_MONOTONIC) < end) {
        long lookups = (long)expo(REQ_LOOKUPS) + 1;
        double t0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < lookups; i++)
            p = (void **)*p;
        record((now(CLOCK_THREAD_CPUTIME_ID) - t0) / lookups);
    }
    /* A mean request does REQ_LOOKUPS + 1 lookups on average. */
    printf("RESULT %.3f %.3f %p\n",
           median_chunk() * (REQ_LOOKUPS + 1) * 1e6, on_cpu(), (void *)p);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s chase|triad|cpu|service MIB SECONDS\n",
                argv[0]);
        return 2;
    }
    size_t mib = strtoul(argv[2], NULL, 10);
    double seconds = atof(argv[3]);
    if (!strcmp(argv[1], "chase"))
        run_chase(mib, seconds);
    else if (!strcmp(argv[1], "triad"))
        run_triad(mib, seconds);
    else if (!strcmp(argv[1], "cpu"))
        run_cpu(seconds);
    else if (!strcmp(argv[1], "service"))
        run_service(mib, seconds);
    else {
        fprintf(stderr, "unknown workload %s\n", argv[1]);
        return 2;
    }
    return 0;
}
