/* Opening and reading the files that traces/ reads from users (a trace, a real log, a profile):
 * only a regular file is opened, so a directory, a device (/dev/zero never ends) or a FIFO is
 * refused by its type before a byte is read, and a line is read only up to a bound, so that a
 * file without line ends cannot fill the memory.
 *
 *     FILE *fp; if (traces_input_open(path, "trace", TRACE_VALID, 0, &fp) != SS_OK) ...;
 *     while ((got = traces_input_line(fp, &buf, &cap, 65536, &nl)) > 0) ...;
 */
#ifndef SS_TRACES_INPUT_FILE_H
#define SS_TRACES_INPUT_FILE_H

#include <stdio.h>

/* Opens `path` for reading. SS_EINPUT "cannot open WHAT PATH: reason" when it cannot be opened,
 * "WHAT PATH is a directory|character device|..., not a regular file: VALID" for any other type
 * of file, and, with max_bytes > 0, "WHAT PATH holds N bytes, more than ..." for a larger file. */
int traces_input_open(const char *path, const char *what, const char *valid, long long max_bytes,
                      FILE **out);

/* Reads one line into *buf (malloc'ed, grown as needed; without its "\n" or "\r\n"): 1 a line,
 * 0 the end of the file, -1 a line of more than max_chars characters (reading stops there), -2 a
 * NUL byte in the line. *had_newline: the line ended with "\n" (not the end of the file). */
int traces_input_line(FILE *fp, char **buf, size_t *cap, size_t max_chars, int *had_newline);

#endif
