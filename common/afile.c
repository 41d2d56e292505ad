#include "afile.h"
#include "status.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int afile_open(afile *f, const char *path) {
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path)
        return ss_error_set(SS_EUSAGE, "output path too long: %s", path);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, (long)getpid());
    f->fp = fopen(f->tmp, "w");
    if (!f->fp) return ss_error_set(SS_EIO, "cannot write %s: %s", f->tmp, strerror(errno));
    return SS_OK;
}

int afile_commit(afile *f) {
    int bad = ferror(f->fp) || fflush(f->fp) != 0 || fsync(fileno(f->fp)) != 0;
    int err = errno;
    if (fclose(f->fp) != 0) bad = 1;
    f->fp = NULL;
    if (bad) {
        unlink(f->tmp);
        return ss_error_set(SS_EIO, "writing %s failed: %s", f->path, strerror(err));
    }
    if (rename(f->tmp, f->path) != 0) {
        err = errno;
        unlink(f->tmp);
        return ss_error_set(SS_EIO, "cannot rename %s to %s: %s", f->tmp, f->path, strerror(err));
    }
    return SS_OK;
}

void afile_abort(afile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
    if (f->tmp[0]) unlink(f->tmp);
}

int ss_mkdir_p(const char *path) {
    char buf[1024];
    if (strlen(path) >= sizeof buf) return ss_error_set(SS_EUSAGE, "path too long: %s", path);
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return ss_error_set(SS_EIO, "cannot create directory %s: %s", buf, strerror(errno));
            *p = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return ss_error_set(SS_EIO, "%s exists and is not a directory", path);
    return SS_OK;
}
