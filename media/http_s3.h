/*
 * http_s3.h - s3://bucket/key as a signed HTTPS request (AWS SigV4, by
 * libcurl's CURLOPT_AWS_SIGV4).
 *
 * Where: $VR_S3_ENDPOINT (or $AWS_ENDPOINT_URL), path style
 * "<endpoint>/<bucket>/<key>" (MinIO, Ceph, R2 ...); else AWS,
 * "https://<bucket>.s3.<region>.amazonaws.com/<key>". Region:
 * $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1.
 *
 * Credentials, never from a job spec, never logged nor put in Redis:
 * $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (and $AWS_SESSION_TOKEN),
 * else the file $VR_S3_CREDENTIALS, whose first line is
 * "<access key id>:<secret access key>[:<session token>]" and which only
 * its owner may read (storage_read_secret's rule).
 */
#ifndef VR_HTTP_S3_H
#define VR_HTTP_S3_H

#include "vr_err.h"

#include <curl/curl.h>
#include <stddef.h>

/* Sets h up to sign its requests for s3url, the URL to request into url
 * (n bytes), and the extra headers into *hs (the caller frees them after
 * h's last request). Returns 0 or VR_EINVAL / VR_EACCES naming what is
 * missing (no secret in a message). */
int http_s3_prepare(CURL *h, const char *s3url, char *url, size_t n, struct curl_slist **hs,
                    vr_err *err);

/* 1 when this process has S3 credentials to sign with (the environment's
 * or $VR_S3_CREDENTIALS named), 0 when none; nothing is read or logged. */
int http_s3_have_credentials(void);

/* The same for a request with a body whose SHA-256 is payload_hex (64
 * lowercase hex digits; a write's, media/s3_put.h): it goes into the
 * signed x-amz-content-sha256, so the store checks the body it got. */
int http_s3_prepare_payload(CURL *h, const char *s3url, const char *payload_hex, char *url,
                            size_t n, struct curl_slist **hs, vr_err *err);

#endif
