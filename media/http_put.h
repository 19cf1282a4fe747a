/*
 * http_put.h - an output written to an HTTP(S) WebDAV store (nginx with
 * dav_methods PUT DELETE MOVE, Apache mod_dav, ...): the destination of a
 * `vr-worker process -o https://...` (README.md, "A fleet without shared
 * storage").
 *
 * Never half written under its name: the bytes go up by PUT to a temporary
 * name beside the output ("<name>.vrseg-part-<pid>-<n>"), then one MOVE
 * (Destination: the output) makes them the output; a PUT or MOVE that
 * fails for good deletes the temporary object. Overwrite: F when the
 * output may not be replaced, so the store itself refuses (HTTP 412) an
 * object that appeared meanwhile.
 *
 * Same rules as a read (http_io.h): 5xx, 429, 408, resets and timeouts are
 * retried with the doubling back-off of http_io_configure; every address
 * connected to passes the address rule unless --storage-allow-private; a
 * redirect is not followed (a write goes where it was told or fails);
 * messages name the object without query or user info. A URL with a query
 * (a presigned PUT, which cannot be renamed) is refused "not yet". An
 * s3:// URL goes to s3_put.h (one PUT or a multipart upload, no MOVE).
 */
#ifndef VR_HTTP_PUT_H
#define VR_HTTP_PUT_H

#include "vr_err.h"

#include <signal.h>

/* Uploads the regular file at local_path to url as above. replace: an
 * object already at url may be replaced. Returns 0 or VR_E* naming the
 * object, the method and the HTTP status. */
int http_put_file(const char *url, const char *local_path, int replace, vr_err *err);

/* DELETE of url; an object already gone is no error. 0 or VR_E*. */
int http_delete(const char *url, vr_err *err);

/* DELETE of the collection url (ending in '/') and all beneath it (Depth:
 * infinity, RFC 4918 9.6.1); one already gone is no error. Given up, with
 * its retries, once *stop is set (NULL: never). 0, VR_ENOTSUP when the
 * store deletes no collection (HTTP 405 or 501), VR_EIO on a Multi-Status
 * (some of it left), or VR_E* naming the status. */
int http_delete_tree(const char *url, const volatile sig_atomic_t *stop, vr_err *err);

/* 1 when an object answers at url (HEAD 200), 0 when not (404), VR_E*
 * otherwise. */
int http_exists(const char *url, vr_err *err);

#endif
