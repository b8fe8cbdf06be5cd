/* xlat_bake.h: the PT-Baker runtime of xlat (crates/xlat-host), for C and C++ programs.
 *
 * A helper thread keeps the page-table entries of your big regions warm in the shared
 * caches while your main computation runs:
 *
 *     xlat_region r = { data, bytes };
 *     xlat_bake_params p;
 *     xlat_bake_default_params(&p);          // load sweep, 32 KB stride, helper on the same L3
 *     xlat_baker *b = xlat_bake_start(&r, 1, &p);
 *     if (!b) { fprintf(stderr, "%s\n", xlat_bake_last_error()); ... }
 *     ... main computation ...
 *     xlat_bake_stop(b, NULL);
 *
 * Link with target/release/libxlat_host.a (and -lpthread -ldl -lm) or libxlat_host.so.
 * Every region must stay mapped until xlat_bake_stop. See docs/host.md.
 */
#ifndef XLAT_BAKE_H
#define XLAT_BAKE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xlat_baker xlat_baker;

typedef struct {
    const void *addr;
    size_t len;
} xlat_region;

enum { XLAT_BAKE_LOAD = 0, XLAT_BAKE_PREFETCH = 1, XLAT_BAKE_MINCORE = 2 };
enum { XLAT_BAKE_SAME_LLC = -1, XLAT_BAKE_SIBLING = -2, XLAT_BAKE_UNPINNED = -3 };

typedef struct {
    int mode;                /* XLAT_BAKE_LOAD, _PREFETCH or _MINCORE */
    size_t stride;           /* bytes between touches (load, prefetch) */
    uint32_t nops;           /* idle nops after each touch or mincore call */
    uint64_t sleep_us;       /* sleep after each pass */
    int cpu;                 /* a CPU number, or XLAT_BAKE_SAME_LLC, _SIBLING, _UNPINNED */
    uint64_t timer_slack_ns; /* the helper's PR_SET_TIMERSLACK */
} xlat_bake_params;

typedef struct {
    uint64_t passes;       /* full passes over all regions */
    uint64_t touches;      /* loads/prefetches, or pages covered by mincore */
    uint64_t minor_faults; /* minor faults the helper thread took */
    int64_t cpu;           /* the helper's CPU, or -1 */
    double seconds;
} xlat_bake_stats;

void xlat_bake_default_params(xlat_bake_params *params);
/* NULL on error; xlat_bake_last_error() says why in one line. params may be NULL. */
xlat_baker *xlat_bake_start(const xlat_region *regions, size_t n, const xlat_bake_params *params);
uint64_t xlat_bake_passes(const xlat_baker *baker);
/* Stops and frees the baker; stats may be NULL. 0 on success. */
int xlat_bake_stop(xlat_baker *baker, xlat_bake_stats *stats);
const char *xlat_bake_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* XLAT_BAKE_H */
