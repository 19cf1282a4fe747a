/*
 * net_plan_step.c - what a step of the GPU plan reads (net_plan.h): its
 * input tensors, whether a tensor is a graph output the plan keeps, and
 * how many reads a tensor has.
 * The planner's fusions (net_plan.c) and the move ops' (net_plan_move.c)
 * both ask; plain C, no CUDA call.
 */
#include "net_plan.h"

int netplan_step_inputs(const struct netplan_step *s, int in[6])
{
    int k = 0;
    const int c[5] = {s->x, s->x2, s->a_scale, s->bsum, s->e_scale};
    for (int i = 0; i < 5; i++)
        if (c[i] >= 0)
            in[k++] = c[i];
    if (s->res >= 0)
        in[k++] = s->res;
    if (s->kind == NETPLAN_CONCAT && s->mv.x3 >= 0)   /* x, x2 and x3 only: k < 6 here */
        in[k++] = s->mv.x3;
    return k;
}

int netplan_is_output(const struct netplan *plan, int t)
{
    for (int k = 0; plan->o.all_outputs && k < plan->m->n_outputs; k++)
        if (plan->m->outputs[k] == t)
            return 1;
    return 0;
}

int netplan_uses(const struct netplan *plan, int t)
{
    int u = t == plan->m->output || netplan_is_output(plan, t);
    for (int i = 0; i < plan->m->n_ops; i++) {
        if (plan->st[i].kind == NETPLAN_DEAD)
            continue;
        int in[6], k = netplan_step_inputs(&plan->st[i], in);
        for (int j = 0; j < k; j++)
            u += in[j] == t;
    }
    return u;
}
