/*
 * util-netplan-fit.h - the planner's "no kernel takes this" answers
 * (netplan_fit callbacks), shared by the plan tests that build a fit of
 * their own from them.
 */
#ifndef VRSEG_UTIL_NETPLAN_FIT_H
#define VRSEG_UTIL_NETPLAN_FIT_H

#include "net_plan.h"

static inline int no_stem(const struct conv_geom *g, const void *out)
{
    (void)g;
    (void)out;
    return 0;
}

static inline size_t no_ir(const struct cu_ir_args *a)
{
    (void)a;
    return 0;
}

static inline int no_tail(const struct cu_tail_args *a)
{
    (void)a;
    return 0;
}

static inline int no_pwdw(const struct cu_pwdw_args *a)
{
    (void)a;
    return 0;
}

#endif
