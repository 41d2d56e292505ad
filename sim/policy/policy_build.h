/* The one builder of a policy configuration from the resolved options (common/run_config.h),
 * shared by train, compare, sweep (emulation) and replay.
 *
 *     policy_build_env env = {.mode = POLICY_BUILD_RUN, .train_samples = train.n};
 *     policy_config pc;
 *     if (policy_config_build(cfg, &env, &pc) != SS_OK) ...   // SS_EUSAGE naming the option
 *     ... env.steps_per_epoch ...; free((void *)pc.slowdown);
 */
#ifndef SS_SIM_POLICY_BUILD_H
#define SS_SIM_POLICY_BUILD_H

#include "common/run_config.h"
#include "sim/policy/policy_registry.h"

typedef enum policy_build_mode {
    POLICY_BUILD_RUN,   /* emulation: every option; steps, rounds and evaluations from --epochs */
    POLICY_BUILD_REPLAY /* replay: the policy, its options and the exchange; the trace source gives
                           workers, steps, compute, stragglers and cross traffic */
} policy_build_mode;

typedef struct policy_build_env {
    policy_build_mode mode;
    size_t train_samples; /* RUN: |D|, the samples of one epoch (0: check the options only) */
    long steps_per_epoch; /* RUN, set by the builder: steps of one pass over |D| */
} policy_build_env;

/* Fills *pc from cfg (cfg->policy "" is the baseline policy). RUN: pc->slowdown, when set, is
 * owned by the caller (free((void *)pc->slowdown)). SS_EUSAGE naming the option otherwise. */
int policy_config_build(const run_config *cfg, policy_build_env *env, policy_config *pc);
/* pc->compute's framework from --framework (model mode; ideal otherwise) and host_sync from the
 * policy (pc->kind set); SS_EUSAGE for an unknown framework. */
int policy_compute_framework(const run_config *cfg, policy_config *pc);

/* Sets the policy_config field of option `o` from its value (the option's slot). SS_EUSAGE for a
 * name or a duration that is not valid. */
int policy_option_apply(const policy_option *o, const run_policy_value *v, policy_config *pc);
/* Fills a slot from the option's text form, checking the range; `where` names the source. */
int policy_option_parse(const policy_option *o, const char *text, run_policy_value *v);

#endif
