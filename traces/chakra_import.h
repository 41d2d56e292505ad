/* A model profile imported from a Chakra execution trace (MLCommons Chakra, the workload format
 * of ASTRA-sim): the binary form (length-delimited protobuf messages, a GlobalMetadata and then
 * one Node each, gzip-compressed or not) or the JSON form Chakra's feeder reads
 * ({"workload_graph": [...]}). profile_import (profile_import.h) reads the file, tells the forms
 * apart by content and calls one of the two importers below; the mapping from a data-parallel
 * trace's compute and all-reduce nodes to layers is traces/FORMAT.md "Chakra execution traces".
 *
 *     unsigned char *data; size_t len; int gz;
 *     if (chakra_read_file(path, valid, &data, &len, &gz) != SS_OK) ...;
 *     if (chakra_is_binary(data, len)) rc = chakra_import_binary(&o, data, len, gz, &p, notes, n);
 */
#ifndef SS_TRACES_CHAKRA_IMPORT_H
#define SS_TRACES_CHAKRA_IMPORT_H

#include "traces/profile_import.h"

#include <stddef.h>

struct cJSON;

/* The whole file, decompressed when it is gzip (zlib reads a plain file as it is), with a NUL
 * after its len bytes; *gz: it was compressed. SS_EINPUT naming the file when it cannot be read,
 * is larger than PROFILE_IMPORT_MAX_BYTES on disk or uncompressed, or is a damaged gzip file. */
int chakra_read_file(const char *path, const char *valid, unsigned char **out, size_t *len,
                     int *gz);

/* Whether the text is no JSON: its first byte that is not white space is neither '{' nor '['
 * (an empty file counts as JSON, which then fails to parse). */
int chakra_is_binary(const unsigned char *data, size_t len);

/* Whether parsed JSON is Chakra's JSON form (an object with a "workload_graph" array). */
int chakra_is_json(const struct cJSON *root);

/* The profile of a binary Chakra trace (data: len bytes, uncompressed; gz: how it was stored)
 * or of its JSON form, with provenance in notes. SS_EUSAGE for a missing --batch or a --params
 * file (a Chakra trace has no use for one); SS_EINPUT naming the file and the byte offset and
 * message, or the node, on bad input or on a trace that is not data-parallel. */
int chakra_import_binary(const profile_import_opts *o, const unsigned char *data, size_t len,
                         int gz, model_profile *out, char *notes, size_t n);
int chakra_import_json(const profile_import_opts *o, const struct cJSON *root, int gz,
                       model_profile *out, char *notes, size_t n);

#endif
