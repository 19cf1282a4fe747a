/*
 * fuzz_job_spec.c - libFuzzer target for the job spec and chunk task
 * parsers (queue/job.c): the JSON a submit, or anyone who can write Redis,
 * puts in a job's record, and the task a worker reads from a chunk's.
 *
 * The first byte picks the parser; the rest is the text. A parse must fail
 * with a message, or succeed with a value that writes back to JSON which
 * parses again to the same JSON (so a "successful" parse of garbage that
 * would not survive its own round trip is a finding too). Built and run by
 * `make fuzz` (mk/fuzz.mk); seeds in tests/data/fuzz-seeds/job/.
 */
#include "job.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void round_trip_spec(const struct job_spec *j)
{
    char *a = NULL, *b = NULL;
    struct job_spec again;
    if (job_spec_to_json(j, &a, NULL) < 0)
        abort();
    if (job_spec_parse(a, strlen(a), &again, NULL) < 0 || job_spec_to_json(&again, &b, NULL) < 0 ||
        strcmp(a, b))
        abort();
    free(a);
    free(b);
}

static void round_trip_task(const struct chunk_task *t)
{
    char *a = NULL, *b = NULL;
    struct chunk_task again;
    if (chunk_task_to_json(t, &a, NULL) < 0)
        abort();
    if (chunk_task_parse(a, strlen(a), &again, NULL) < 0 ||
        chunk_task_to_json(&again, &b, NULL) < 0 || strcmp(a, b))
        abort();
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    vr_err e = { 0 };
    if (data[0] & 1) {
        struct chunk_task t;
        if (chunk_task_parse(text, len, &t, &e) == 0)
            round_trip_task(&t);
        else if (!e.msg[0])
            abort(); /* a refusal must say why */
    } else {
        struct job_spec j;
        if (job_spec_parse(text, len, &j, &e) == 0)
            round_trip_spec(&j);
        else if (!e.msg[0])
            abort();
    }
    return 0;
}
