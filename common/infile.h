/* Input files checked before they are read: a reader given a directory, a device (/dev/zero,
 * /dev/urandom) or a named pipe would read nothing, or forever; one given a file of gigabytes, or
 * of one endless line, would fill the memory. Every reader of a user's file goes through these.
 *
 *     char *text; size_t len;
 *     if ((rc = infile_read(path, "--config", INFILE_MAX_TEXT, SS_EUSAGE, &text, &len))) return rc;
 *     if ((rc = infile_check_text(path, "--config", text, len, INFILE_MAX_LINE, SS_EUSAGE))) ...
 *
 * Each failure is reported with `status` (SS_EUSAGE for a file named by an option whose problem
 * is a usage error, else SS_EINPUT) and a message naming `what` (the option or the kind of file),
 * the path and, for a line, its number. */
#ifndef SS_COMMON_INFILE_H
#define SS_COMMON_INFILE_H

#include <stddef.h>

#define INFILE_MAX_TEXT ((size_t)64 << 20) /* a configuration, a CSV table, a platform */
#define INFILE_MAX_LINE ((size_t)64 << 10) /* one line of a text file */

/* path exists, is a regular file (not a directory, device, pipe or socket) of at most max_bytes. */
int infile_check(const char *path, const char *what, size_t max_bytes, int status);
/* infile_check(), then the whole file in *text (NUL-terminated, malloc'ed: the caller frees) and
 * its length in *len. */
int infile_read(const char *path, const char *what, size_t max_bytes, int status, char **text,
                size_t *len);
/* Text that a line-based reader can take: no NUL byte, no line longer than max_line (the line
 * number is named). */
int infile_check_text(const char *path, const char *what, const char *text, size_t len,
                      size_t max_line, int status);

#endif
