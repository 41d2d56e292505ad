/* Opening and reading user files (input_file.h). */
#include "traces/input_file.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_type_name(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a plain file";
}

int traces_input_open(const char *path, const char *what, const char *valid, long long max_bytes,
                      FILE **out) {
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before its type is known */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ss_error_set(SS_EINPUT, "cannot open %s %s: %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ss_error_set(SS_EINPUT, "cannot open %s %s: %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ss_error_set(SS_EINPUT, "%s %s is %s, not a regular file: %s", what, path,
                            file_type_name(st.st_mode), valid);
    }
    if (max_bytes > 0 && (long long)st.st_size > max_bytes) {
        close(fd);
        return ss_error_set(SS_EINPUT, "%s %s holds %lld bytes, more than a %s can (%lld): %s",
                            what, path, (long long)st.st_size, what, max_bytes, valid);
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *fp = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "r");
    if (!fp) {
        int e = errno;
        close(fd);
        return ss_error_set(SS_EINPUT, "cannot open %s %s: %s", what, path, strerror(e));
    }
    *out = fp;
    return SS_OK;
}

int traces_input_line(FILE *fp, char **buf, size_t *cap, size_t max_chars, int *had_newline) {
    size_t len = 0;
    int c, nul = 0;
    *had_newline = 0;
    /* one character past the bound, and a '\r' before the '\n', are still read to tell a line
     * that is too long from one that is exactly max_chars long */
    while ((c = getc_unlocked(fp)) != EOF && c != '\n') {
        if (len + 2 >= *cap) {
            *cap = *cap ? 2 * *cap : 256;
            *buf = realloc(*buf, *cap);
            SS_ASSERT(*buf);
        }
        (*buf)[len++] = (char)c;
        nul |= c == '\0';
        if (len > max_chars + 1) break;
    }
    if (c == EOF && len == 0) return 0;
    if (!*buf) { /* an empty last line */
        *cap = 256;
        *buf = ss_malloc(*cap);
    }
    *had_newline = c == '\n';
    if (len > 0 && (*buf)[len - 1] == '\r') len--;
    (*buf)[len] = '\0';
    if (len > max_chars) return -1;
    return nul ? -2 : 1;
}
