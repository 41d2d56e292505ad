/* A generated platform in a file without a name (platform_gen.h, platform_temp_generate). */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp, mkostemps */
#include "sim/platform/platform_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/status.h"

const char *platform_temp_dir(void) {
    const char *d = getenv("TMPDIR");
    return d && *d ? d : "/tmp";
}

/* A descriptor of a new, empty file in dir that no name reaches, or -1 (errno set). */
static int nameless_file(const char *dir, char *scratch, size_t scratch_bytes) {
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
#endif
    /* a file system without O_TMPFILE: a name of its own, removed once the file is open */
    snprintf(scratch, scratch_bytes, "%s/syncsim-platform-XXXXXX", dir);
    int fd2 = mkostemp(scratch, O_CLOEXEC);
    if (fd2 >= 0) unlink(scratch);
    return fd2;
}

int platform_temp_generate(const platform_gen_spec *spec, platform_temp *t) {
    SS_ASSERT(spec != NULL && t != NULL);
    memset(t, 0, sizeof *t);
    t->fd = -1;
    const char *dir = platform_temp_dir();
    int fd;
    if (access("/proc/self/fd", X_OK) == 0) {
        fd = nameless_file(dir, t->path, sizeof t->path);
        if (fd >= 0) snprintf(t->path, sizeof t->path, "/proc/self/fd/%d", fd);
    } else { /* no /proc: SimGrid needs a name, kept until platform_temp_close() */
        snprintf(t->path, sizeof t->path, "%s/syncsim-platform-XXXXXX.xml", dir);
        fd = mkostemps(t->path, 4, O_CLOEXEC);
        t->named = fd >= 0;
    }
    if (fd < 0) {
        const int e = errno;
        t->path[0] = '\0';
        return ss_error_set(SS_EIO,
                            "platform: cannot create a temporary file in %s: %s (TMPDIR names "
                            "the directory; it must exist and be writable)",
                            dir, strerror(e));
    }
    t->fd = fd;
    const int wfd = dup(fd);
    FILE *f = wfd >= 0 ? fdopen(wfd, "w") : NULL;
    if (!f) {
        const int e = errno;
        if (wfd >= 0) close(wfd);
        platform_temp_close(t);
        return ss_error_set(SS_EIO, "platform: cannot write a temporary file in %s: %s", dir,
                            strerror(e));
    }
    int rc = platform_generate(spec, f);
    if (fclose(f) != 0 && rc == SS_OK)
        rc = ss_error_set(SS_EIO, "platform: writing a temporary file in %s failed: %s", dir,
                          strerror(errno));
    if (rc != SS_OK) platform_temp_close(t);
    return rc;
}

void platform_temp_close(platform_temp *t) {
    if (!t) return;
    if (t->named && t->path[0]) unlink(t->path);
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    t->named = 0;
    t->path[0] = '\0';
}
