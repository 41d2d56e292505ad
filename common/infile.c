#include "common/infile.h"
#include "common/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int infile_check(const char *path, const char *what, size_t max_bytes, int status) {
    struct stat st;
    if (!path || !*path) return ss_error_set(status, "%s: no file given", what);
    if (stat(path, &st) != 0)
        return ss_error_set(status, "%s %s: cannot open: %s", what, path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ss_error_set(status, "%s %s: %s, not a file (give a regular file)", what, path,
                            kind_of(st.st_mode));
    if ((unsigned long long)st.st_size > max_bytes)
        return ss_error_set(status, "%s %s: %lld bytes, more than the %zu a file may have here",
                            what, path, (long long)st.st_size, max_bytes);
    return SS_OK;
}

int infile_read(const char *path, const char *what, size_t max_bytes, int status, char **text,
                size_t *len) {
    *text = NULL;
    *len = 0;
    int rc = infile_check(path, what, max_bytes, status);
    if (rc != SS_OK) return rc;
    FILE *fp = fopen(path, "rb");
    if (!fp) return ss_error_set(status, "%s %s: cannot open: %s", what, path, strerror(errno));
    /* read up to one byte past the bound: the file may have grown since stat */
    size_t cap = 4096, n = 0, k;
    char *buf = ss_malloc(cap + 1);
    while ((k = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += k;
        if (n > max_bytes) break;
        if (n == cap) {
            cap *= 2;
            char *bigger = realloc(buf, cap + 1);
            if (!bigger) {
                free(buf);
                fclose(fp);
                return ss_error_set(SS_ENOMEM, "%s %s: out of memory", what, path);
            }
            buf = bigger;
        }
    }
    const int failed = ferror(fp);
    fclose(fp);
    if (failed || n > max_bytes) {
        free(buf);
        if (failed) return ss_error_set(status, "%s %s: read error", what, path);
        return ss_error_set(status, "%s %s: more than the %zu bytes a file may have here", what,
                            path, max_bytes);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return SS_OK;
}

int infile_check_text(const char *path, const char *what, const char *text, size_t len,
                      size_t max_line, int status) {
    long line = 1;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == '\0')
            return ss_error_set(status, "%s %s:%ld: a NUL byte (a binary file? give a text file)",
                                what, path, line);
        if (i == len || text[i] == '\n') {
            if (i - start > max_line)
                return ss_error_set(status, "%s %s:%ld: line too long (%zu bytes, at most %zu)",
                                    what, path, line, i - start, max_line);
            line++;
            start = i + 1;
        }
    }
    return SS_OK;
}
