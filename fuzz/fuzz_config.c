/*
 * fuzz_config.c - libFuzzer target for the profile parser (common/config.c):
 * the JSON of the profiles in configs/, of `-c FILE`, and of a job's config
 * overrides, which a submit carries to every worker.
 *
 * A text applied on the defaults must fail with a message naming the
 * problem, or give a config that writes back to JSON which applies again to
 * the same config. Built and run by `make fuzz` (mk/fuzz.mk); seeds in
 * tests/data/fuzz-seeds/config/ (the shipped profiles among them).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct vr_config c;
    vr_err e = { 0 };
    config_defaults(&c);
    if (config_apply_text(&c, text, "fuzz", &e) == 0) {
        char a[8192], b[8192];
        struct vr_config again;
        config_defaults(&again);
        if (config_to_json(&c, a, sizeof a) < 0 || config_apply_text(&again, a, "again", NULL) < 0 ||
            config_to_json(&again, b, sizeof b) < 0 || strcmp(a, b))
            abort();
    } else if (!e.msg[0]) {
        abort(); /* a refusal must say why */
    }
    free(text);
    return 0;
}
