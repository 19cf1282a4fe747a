/*
 * s3_put.h - an output written to S3 (s3://bucket/key; AWS, MinIO, Ceph,
 * R2 ... as http_s3.h maps and signs it): the destination of `-o s3://...`
 * for `vr-worker process`, `vrctl run` and a fleet's stitched output
 * (README.md, "A fleet without shared storage").
 *
 * Never half written under its name. An output of one part or less goes
 * up in one PUT, which S3 stores whole or not at all. A larger one goes by
 * multipart upload: CreateMultipartUpload, one UploadPart per part of
 * $VR_S3_PART_SIZE bytes (16 MiB by default; AWS wants 5 MiB or more for
 * every part but the last), then CompleteMultipartUpload, before which no
 * object exists under the name. A part or a Complete that fails for good
 * aborts the upload (AbortMultipartUpload), so no parts are left billed.
 * Without replace, an object already there is refused (HEAD) and the PUT
 * or Complete carries If-None-Match: * so a store that keeps conditional
 * writes (AWS since 2024, moto) refuses one that appeared meanwhile.
 *
 * Each request follows s3_req.h (retries, address rule, no redirects,
 * messages naming s3://bucket/key, the operation and the HTTP status).
 */
#ifndef VR_S3_PUT_H
#define VR_S3_PUT_H

#include "vr_err.h"

/* Uploads the regular file at local_path to s3url as above. replace: an
 * object already there may be replaced. 0 or VR_E*. */
int s3_put_file(const char *s3url, const char *local_path, int replace, vr_err *err);

/* 1 when an object answers at s3url (HEAD 200), 0 when not (404), VR_E*
 * otherwise. */
int s3_exists(const char *s3url, vr_err *err);

/* DELETE of s3url; an object already gone is no error. 0 or VR_E*. */
int s3_delete(const char *s3url, vr_err *err);

#endif
