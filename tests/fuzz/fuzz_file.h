/* Helper of the libFuzzer targets whose reader takes a path (fuzz_config: options_parse reads
 * --config FILE; fuzz_nccl_log, fuzz_torch_trace): writes the input to a private temporary file
 * once per input (or its two parts to two files). The platform and
 * sweep targets call their readers' memory variants instead (no file written and opened per input).
 * Usage: const char *p = fuzz_file_write(data, size);  (fuzz_file_write_n(1, ...): a second file)
 */
#ifndef SS_FUZZ_FUZZ_FILE_H
#define SS_FUZZ_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_file_paths[2][64];

static void fuzz_file_remove(void) {
    for (int k = 0; k < 2; k++)
        if (fuzz_file_paths[k][0]) unlink(fuzz_file_paths[k]);
}

/* The path of file k (0 or 1) holding exactly data[0..size) (two per process at most, rewritten
 * each call and removed at exit), or NULL when it cannot be written (the input is then skipped). */
static inline const char *fuzz_file_write_n(int k, const uint8_t *data, size_t size) {
    char *path = fuzz_file_paths[k];
    /* tmpfs when there is one: a disk-backed /tmp costs milliseconds per input */
    if (!path[0]) {
        if (!fuzz_file_paths[0][0] && !fuzz_file_paths[1][0]) atexit(fuzz_file_remove);
        snprintf(path, sizeof fuzz_file_paths[k], "%s/syncsim-fuzz-%ld-%d",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid(), k);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || w != size) return NULL;
    return path;
}

static inline const char *fuzz_file_write(const uint8_t *data, size_t size) {
    return fuzz_file_write_n(0, data, size);
}

#endif
