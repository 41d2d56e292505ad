/* The policy configuration as "key = value" lines (the "# policy" lines of a trace header,
 * traces/FORMAT.md): one writer and one strict parser of a key, with the enumerations' names of
 * the registry (sim/policy/policy_registry.h). Keys and spellings are part of the trace format.
 *
 *     policy_codec_write(&pc, "# policy ", fp);         // "# policy delta = 0.05\n" ...
 *     char why[160];
 *     int i = policy_codec_parse("delta", "0.3", &pc, why, sizeof why);
 *     // i >= 0: the key's index; POLICY_CODEC_UNKNOWN; POLICY_CODEC_INVALID (message in why)
 */
#ifndef SS_SIM_POLICY_CODEC_H
#define SS_SIM_POLICY_CODEC_H

#include "sim/policy/policy.h"

#include <stddef.h>
#include <stdio.h>

#define POLICY_CODEC_MAX_KEYS 64
#define POLICY_CODEC_UNKNOWN  (-1)
#define POLICY_CODEC_INVALID  (-2)

/* Every key, in the order written; `slowdown` lists one factor per worker ("none": all 1). */
void policy_codec_write(const policy_config *pc, const char *prefix, FILE *fp);
/* Sets the field of `key` from `value`. The "slowdown" value is not parsed here (it needs the
 * worker count): its text is the caller's to check. */
int policy_codec_parse(const char *key, const char *value, policy_config *pc, char *why, size_t n);
/* The keys: how many, the i-th, and whether a header must hold it (keys added since the format
 * began are optional, read as their defaults). */
int policy_codec_count(void);
const char *policy_codec_key(int i);
int policy_codec_required(int i);

#endif
