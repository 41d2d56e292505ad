/* Helper of the libFuzzer targets whose reader takes a path (fuzz_config: options_parse reads
 * --config FILE): writes the input to a private temporary file once per input. The platform and
 * sweep targets call their readers' memory variants instead (no file written and opened per input).
 * Usage: const char *p = fuzz_file_write(data, size); */
#ifndef SS_FUZZ_FUZZ_FILE_H
#define SS_FUZZ_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_file_path[64];

static void fuzz_file_remove(void) {
    unlink(fuzz_file_path);
}

/* The path of a file holding exactly data[0..size) (one per process, rewritten each call and
 * removed at exit), or NULL when it cannot be written (the input is then skipped). */
static inline const char *fuzz_file_write(const uint8_t *data, size_t size) {
    char *path = fuzz_file_path;
    /* tmpfs when there is one: a disk-backed /tmp costs milliseconds per input */
    if (!path[0]) {
        snprintf(path, sizeof fuzz_file_path, "%s/syncsim-fuzz-%ld",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (long)getpid());
        atexit(fuzz_file_remove);
    }
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    if (fclose(f) != 0 || w != size) return NULL;
    return path;
}

#endif
