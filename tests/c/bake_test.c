/* Built and run by `make test` against crates/xlat-host/include/xlat_bake.h and the static
 * runtime: every mode runs over a never-touched mapping and touches what it says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "xlat_bake.h"

#define PAGES 4096
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "bake_test: " __VA_ARGS__); fputc('\n', stderr); exit(1); } } while (0)

static size_t resident(void *p, size_t len) {
    unsigned char v[PAGES];
    size_t n = 0;
    if (mincore(p, len, v) != 0) return (size_t)-1;
    for (size_t i = 0; i < len / 4096; i++) n += v[i] & 1;
    return n;
}

static void run(int mode, size_t want_resident) {
    size_t len = (size_t)PAGES * 4096;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED, "mmap failed");
    madvise(p, len, MADV_NOHUGEPAGE);
    xlat_region r = { p, len };
    xlat_bake_params prm;
    xlat_bake_default_params(&prm);
    prm.mode = mode;
    prm.cpu = XLAT_BAKE_UNPINNED;
    xlat_baker *b = xlat_bake_start(&r, 1, &prm);
    CHECK(b, "start (mode %d): %s", mode, xlat_bake_last_error());
    for (int i = 0; i < 10000 && xlat_bake_passes(b) < 2; i++) usleep(1000);
    xlat_bake_stats s;
    CHECK(xlat_bake_stop(b, &s) == 0, "stop failed");
    CHECK(s.passes >= 2, "mode %d made %llu passes", mode, (unsigned long long)s.passes);
    size_t got = resident(p, len);
    CHECK(got == want_resident, "mode %d: %zu pages resident, expected %zu", mode, got, want_resident);
    printf("mode %d: %llu passes, %llu touches, %llu minor faults, %zu pages resident\n", mode,
           (unsigned long long)s.passes, (unsigned long long)s.touches, (unsigned long long)s.minor_faults, got);
    munmap(p, len);
}

int main(void) {
    run(XLAT_BAKE_LOAD, PAGES / 8);  /* one load per 8 pages faults in one page in eight */
    run(XLAT_BAKE_PREFETCH, 0);      /* prefetches never fault */
    run(XLAT_BAKE_MINCORE, 0);       /* mincore walks the tables, touches no data */
    /* Errors are a NULL and one line, not a crash. */
    xlat_region bad = { (void *)4096, 4096 };
    CHECK(xlat_bake_start(&bad, 1, NULL) == NULL, "an unmapped region was accepted");
    CHECK(strlen(xlat_bake_last_error()) > 0 && !strchr(xlat_bake_last_error(), '\n'), "no one-line error");
    printf("error path: %s\n", xlat_bake_last_error());
    CHECK(xlat_bake_stop(NULL, NULL) == -1, "stop(NULL) did not fail");
    printf("ok\n");
    return 0;
}
