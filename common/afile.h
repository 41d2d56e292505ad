/* Output files that never look finished before they are: data goes to "PATH.tmp.PID" and is
 * renamed to PATH only by afile_commit(). An interrupted run leaves at most a .tmp file.
 *
 *     afile f; if (afile_open(&f, "out/metrics.csv") != SS_OK) return ...;
 *     fprintf(f.fp, ...); return afile_commit(&f);   (or afile_abort(&f) on failure)
 */
#ifndef SS_COMMON_AFILE_H
#define SS_COMMON_AFILE_H

#include <stdio.h>

typedef struct afile {
    FILE *fp;        /* write here */
    char path[1024]; /* final name */
    char tmp[1100];  /* temporary name while writing */
} afile;

int afile_open(afile *f, const char *path);
int afile_commit(afile *f); /* flush, fsync, close, rename; SS_EIO with a message on failure */
void afile_abort(afile *f); /* close and remove the temporary file */

/* Creates a directory and its parents (like mkdir -p); SS_EIO naming the path on failure. */
int ss_mkdir_p(const char *path);

#endif
